"""The plain run (evaluator/plain_run.py, evaluator/sandboxed/plain.py): an accepted candidate once more with no
instrumentation, in a process that has loaded what a user's program with KernelEvo's dispatcher loads."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from evaluator import processes
from evaluator.callplan import InputSet
from evaluator.plain_run import (
    AUTOGRAD_STATES,
    MAX_CALLS,
    plan_plain_calls,
    run_length,
    with_near_duplicates,
    with_parameter_step,
)
from evaluator.sandboxed import handoff
from evaluator.sandboxed.near import NEAR_KINDS, SIGNED_KINDS, near_duplicate_inputs
from evaluator.sandboxed.plain import VISIBLE_PACKAGES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _sets(n: int) -> list[InputSet]:
    return [InputSet(case=k % 3, seed=100 + k, file=f"/inputs/{k}.pt") for k in range(n)]


@pytest.mark.parametrize("n", [1, 2, 7, 15])
def test_every_input_set_is_called_and_repeats_are_grouped(n):
    sets = _sets(n)
    calls = plan_plain_calls(sets, random.Random(n))
    files = [c.inputs.file for c in calls]
    assert set(files) == {s.file for s in sets}
    assert len({c.name for c in calls}) == len(calls)
    assert all(c.autograd in AUTOGRAD_STATES for c in calls)
    repeated = {f for f in files if files.count(f) > 1}
    assert repeated, "at least one input set is called twice (its outputs must agree bitwise)"
    for call in calls:
        assert (call.group is not None) == (call.inputs.file in repeated)
    assert all(files.count(f) <= 2 for f in files)


def test_other_constructor_arguments_get_the_task_s_own_draw_of_each_case_and_a_random_one():
    distributions = ("task", "signed", "scaled")
    sets = [InputSet(case=k % 3, seed=100 + k, file=f"/inputs/{k}.pt", distribution=distributions[k // 3])
            for k in range(9)]
    for seed in range(20):  # whatever the random pick, the task's own draw is among them (a baked-in eps shows there)
        calls = plan_plain_calls(sets, random.Random(seed), varied_init=True)
        varied = [c for c in calls if c.varied_init]
        assert {c.inputs.case for c in varied} == {0, 1, 2} and 3 <= len(varied) <= 6
        assert {c.inputs.case for c in varied if c.inputs.distribution == "task"} == {0, 1, 2}
        assert all(c.group is None for c in varied)  # never judged bitwise against the task's own model
    sets = _sets(9)
    calls = plan_plain_calls(sets, random.Random(4), varied_init=True)
    assert {c.inputs.file for c in calls if not c.varied_init} == {s.file for s in sets}
    assert not any(c.varied_init for c in plan_plain_calls(sets, random.Random(4)))


@pytest.mark.parametrize("total", [0, 5, 60, 333])
def test_unjudged_calls_make_the_run_as_long_as_asked(total):
    sets = _sets(10)
    calls = plan_plain_calls(sets, random.Random(total), varied_init=True, total=total)
    judged = [c for c in calls if c.judged]
    assert len(calls) == max(total, len(judged))
    assert {c.inputs.file for c in judged if not c.varied_init} == {s.file for s in sets}
    assert all(c.group is None and not c.varied_init for c in calls if not c.judged)
    if total > 100:  # judged calls are spread over the run, not bunched at its start
        positions = [k for k, c in enumerate(calls) if c.judged]
        assert positions[-1] > total // 2


def test_the_plain_run_is_longer_than_the_guarded_one():
    rng = random.Random(1)
    for guarded in (0, 1, 51, 400):
        lengths = {run_length(guarded, rng) for _ in range(50)}
        assert min(lengths) > 1.5 * guarded and max(lengths) <= 2.5 * guarded + 2
        assert len(lengths) > 1 or guarded == 0
    assert run_length(10**6, rng) == MAX_CALLS


def test_near_duplicates_each_follow_a_call_of_their_base_input_set():
    sets = _sets(9)
    calls = plan_plain_calls(sets, random.Random(2), total=40)
    duplicates = [InputSet(case=sets[4].case, seed=sets[4].seed, file=f"/inputs/near{k}.pt") for k in range(3)]
    out = with_near_duplicates(calls, [(sets[4], d, 70 + k) for k, d in enumerate(duplicates)], random.Random(3))
    assert len(out) == len(calls) + 3 + 2  # each duplicate, and a call of the base before the second and third
    for k, duplicate in enumerate(duplicates):
        at = next(n for n, c in enumerate(out) if c.near == 70 + k)
        assert out[at].inputs == duplicate and out[at].judged and out[at].kind == "near"
        assert out[at - 1].inputs == sets[4]  # right after a call of its base
        assert out[at].autograd == out[at - 1].autograd and out[at].training == out[at - 1].training
    first = next(n for n, c in enumerate(out) if c.near == 70)
    assert out[first - 1].judged  # the first right after the base's first judged call
    added = [c for c in out if c not in calls]
    assert [c.judged for c in added] == [True, False, True, False, True]


def _changed(before: torch.Tensor, after: torch.Tensor) -> list[int]:
    return (before.reshape(-1) != after.reshape(-1)).nonzero().reshape(-1).tolist()


def test_near_duplicate_inputs_change_only_what_their_kind_names():
    x, ids, kept = torch.randn(16, 128), torch.arange(10), torch.randn(32)
    n = x.numel()
    for kind in NEAR_KINDS:
        moved = near_duplicate_inputs([x, ids, kept, 0.5], key=1234, kind=kind, keep=frozenset({2}))
        assert moved[1] is ids and moved[2] is kept and moved[3] == 0.5  # integers, kept inputs and values untouched
        changed = _changed(x, moved[0])
        assert changed, kind
        assert set(moved[0].reshape(-1).tolist()) <= set(x.reshape(-1).tolist())  # no value new to the op
        assert torch.equal(near_duplicate_inputs([x], key=1234, kind=kind)[0], moved[0])  # the key decides
        if kind == "head":
            assert changed == [0]
        elif kind == "tail":
            assert changed == [n - 1]
        elif kind == "point":
            assert len(changed) == 1
        elif kind == "first_half":
            assert max(changed) < n // 2 and len(changed) > n // 4
        elif kind == "second_half":
            assert min(changed) >= n // 2 and len(changed) > n // 4
        elif kind == "rows_reversed":  # every row reversed (red team s29: a key blind to where a value sits)
            assert torch.equal(moved[0], x.flip(-1))
        elif kind == "rows_shuffled":  # the rows in another order, each whole (a key blind to where a row sits)
            assert not torch.equal(moved[0], x)
            assert sorted(map(tuple, moved[0].tolist())) == sorted(map(tuple, x.tolist()))
        elif kind == "swap":  # two values exchanged in each of some rows: every row holds the same values
            rows = sorted({at // 128 for at in changed})
            assert len(changed) == 2 * len(rows) and len(rows) > 1
            for row in rows:
                assert torch.equal(moved[0][row].sort().values, x[row].sort().values)
        else:  # an interior block: the first and the last value stay
            assert 0 < min(changed) and max(changed) < n - 1 and len(changed) > n // 8
    points = {tuple(_changed(x, near_duplicate_inputs([x], key=k, kind="point")[0])) for k in range(20)}
    assert len(points) > 10  # the point is the key's


def test_a_cache_keyed_by_a_few_values_misses_some_near_duplicate():
    """Whatever few positions a cache compares (a prefix, a suffix, both ends, a sparse sample), some kind of
    near-duplicate leaves them all as they were and changes other values: the cache answers it stale."""
    x = torch.randn(8, 64)
    n = x.numel()
    for key_positions in ([*range(8)], [*range(n - 8, n)], [0, n - 1], [0, 1, n // 2, n - 1], [*range(0, n, 97)]):
        missed = []
        for kind in NEAR_KINDS:
            changed = set(_changed(x, near_duplicate_inputs([x], key=5, kind=kind)[0]))
            if changed and not changed & set(key_positions):
                missed.append(kind)
        assert missed, key_positions


def test_a_cache_keyed_by_magnitudes_misses_the_negated_near_duplicate():
    """Every floating input's sign flipped, nothing else (integers and kept inputs as drawn): a key of magnitudes or
    even moments (a sum of |x| or of squares, per row or over all rows, weighted by position or not) stays as it was,
    which no kind that moves values the tensor holds can do to a key over every row (red team s28's sign-blind
    cache); the plain process rebuilds it from its patch as the reference made it."""
    from evaluator.sandboxed.near import apply_patches, near_duplicate_patches
    from evaluator.sandboxed.plain import _Staged

    x, ids, kept = torch.randn(6, 40), torch.arange(5), torch.randn(7)
    negated = near_duplicate_inputs([x, ids, kept], key=9, kind="negated", keep=frozenset({2}))
    assert torch.equal(negated[0], -x) and negated[1] is ids and negated[2] is kept
    weights = torch.arange(1, 41, dtype=torch.float64)
    for key in (lambda t: (t.double().abs() * weights).sum(), lambda t: (t.double() ** 2 * weights).sum(dim=1)):
        assert torch.equal(key(negated[0]), key(x))
    patches = near_duplicate_patches([x, ids], key=9, kind="negated")
    assert torch.equal(_Staged([[x, ids], patches], "cpu").fresh(0, 1)[0], -x)
    assert torch.equal(apply_patches([x, ids], patches)[0], -x)


def test_the_plain_process_rebuilds_a_near_duplicate_from_its_patches():
    """The plain process gets a near-duplicate as the values it replaces and applies them to a fresh copy of the
    base it holds: the set is the one the reference answered, in memory of its own (the base is left as it was)."""
    from evaluator.sandboxed.near import apply_patches, near_duplicate_patches
    from evaluator.sandboxed.plain import _Staged

    x, ids = torch.randn(8, 33).t(), torch.arange(6)  # a transposed (non-contiguous) base
    for kind in NEAR_KINDS:
        patches = near_duplicate_patches([x, ids], key=77, kind=kind)
        expected = near_duplicate_inputs([x, ids], key=77, kind=kind)
        staged = _Staged([[x, ids], patches], "cpu")
        for _ in range(2):
            got = staged.fresh(0, 1)
            assert torch.equal(got[0], expected[0]) and torch.equal(got[1], ids) and got[0].is_contiguous()
            assert got[0].data_ptr() != x.data_ptr() and got[1].data_ptr() != ids.data_ptr()
        assert torch.equal(staged.fresh(0)[0], x)  # the base itself, untouched by the patched copies
        assert torch.equal(apply_patches([x, ids], patches)[0], expected[0])


def test_a_moved_value_is_far_from_the_one_it_replaces():
    """A point near-duplicate moves in a value far from the one it replaces (the farthest of a sample), so the answer
    changes by more than a tolerance: at magnitudes near 1e-3, a neighbouring value left a softmax within it."""
    x = torch.randn(16, 128) * 1e-3
    flat = x.reshape(-1)
    typical = float((flat[:, None] - flat[None, :]).abs().median())
    for key in range(30):
        moved = near_duplicate_inputs([x], key=key, kind="point")[0].reshape(-1)
        at = _changed(x, moved.reshape(x.shape))[0]
        assert abs(float(moved[at] - flat[at])) > typical
        change = torch.softmax(moved.double().reshape(x.shape), -1) - torch.softmax(x.double(), -1)
        assert float(change.norm() / torch.softmax(x.double(), -1).norm()) > 1e-5  # float32's relative L2 bound


def test_each_input_of_a_set_is_also_changed_alone():
    """Where a set has two floating inputs or more, one kind per input changes it alone (a cache keyed by the others
    answers stale); a kept input, an integer one and a set of one floating input get no such kind."""
    from evaluator.sandboxed.near import kinds_for

    x, y, ids = torch.randn(64), torch.randn(64), torch.arange(64)
    assert kinds_for([x, ids]) == (*NEAR_KINDS, *SIGNED_KINDS)
    assert kinds_for([x, y], keep=frozenset({1})) == (*NEAR_KINDS, *SIGNED_KINDS)
    assert kinds_for([x, ids, y]) == (*NEAR_KINDS, "only-0", "only-2", *SIGNED_KINDS)
    for k, other in ((0, 2), (2, 0)):
        moved = near_duplicate_inputs([x, ids, y], key=9, kind=f"only-{k}")
        changed = _changed([x, ids, y][k], moved[k])
        assert len(changed) > 64 // 8 and moved[other] is [x, ids, y][other] and moved[1] is ids
    with pytest.raises(ValueError, match="unknown near-duplicate kind"):
        near_duplicate_inputs([x, y], key=9, kind="only-5")


def _sequential(values: np.ndarray) -> np.float32:
    return np.add.accumulate(values, dtype=np.float32)[-1]


def _threads(threads: int, width: int = 1):
    """A block's threads each holding ``width`` neighbouring values per tile of ``width * threads`` (one value each:
    every ``threads``-th value; more: a vectorised load), summing them in register order, then a butterfly over the
    threads (lane t adds lane t + half)."""
    def total(values: np.ndarray) -> np.float32:
        tile = width * threads
        padded = np.zeros(-(-len(values) // tile) * tile, np.float32)
        padded[:len(values)] = values
        held = padded.reshape(-1, threads, width).transpose(1, 0, 2).reshape(threads, -1)  # each thread's registers
        partial = np.add.accumulate(held, axis=1, dtype=np.float32)[:, -1]
        while len(partial) > 1:
            half = len(partial) // 2
            partial = partial[:half] + partial[half:]
        return partial[0]
    return total


REDUCTIONS = {"a loop": _sequential, "numpy's pairwise sum": lambda v: np.sum(v, dtype=np.float32),
              "torch.sum": lambda v: torch.from_numpy(v).sum().numpy(), "32 lanes, one value each": _threads(32),
              "128 threads, strided": _threads(128), "256 threads, strided": _threads(256),
              "128 threads, 4 values each": _threads(128, 4), "64 threads, 8 values each": _threads(64, 8)}


def _row_key(t: torch.Tensor, row: int, reduce) -> tuple[bytes, bytes, bytes]:
    """A cache's key for a row: its sum, its sum of squares (added in ``reduce``'s order) and its maximum, bitwise."""
    values = t[row].numpy()
    return reduce(values).tobytes(), reduce(values * values).tobytes(), values.max().tobytes()


@pytest.mark.parametrize("shape", [(8, 64), (13, 97), (6, 1025), (16, 2048), (3, 128)])
def test_a_cache_keyed_by_what_a_row_holds_misses_a_swap(shape):
    """A key of a row's order-blind summaries (sum, sum of squares, max) is the same for the swap kind in some row,
    bitwise, whichever usual order a reduction adds in (a key compared bitwise is what a cache reads); the answers
    differ (softmax of a row with two values exchanged)."""
    for key in range(6):
        x = torch.randn(shape, generator=torch.Generator().manual_seed(key))
        moved = near_duplicate_inputs([x], key=key, kind="swap")[0]
        rows = sorted({at // shape[1] for at in _changed(x, moved)})
        assert rows
        for name, reduce in REDUCTIONS.items():
            assert any(_row_key(moved, r, reduce) == _row_key(x, r, reduce) for r in rows), (shape, key, name)
        assert not torch.allclose(torch.softmax(moved, -1), torch.softmax(x, -1))


def test_the_run_ends_with_the_same_inputs_before_and_after_a_parameter_step():
    """One set per case, then the step, then the same sets in the reverse order, judged against the stepped model: the
    call right after the step repeats the call right before it (a cache of the previous call, or of the shape)."""
    sets = _sets(9)
    calls = plan_plain_calls(sets, random.Random(1))
    out = with_parameter_step(calls, sets, "/inputs/step.pt", random.Random(2))
    assert out[:len(calls)] == calls
    added = out[len(calls):]
    before, after = added[:3], added[3:]
    assert [c.inputs.case for c in before] == [0, 1, 2] and not any(c.judged for c in before)
    assert [c.inputs for c in after] == [c.inputs for c in reversed(before)]
    assert all(c.judged and c.stepped and c.kind == "stepped" for c in after)
    assert [c.step for c in after] == ["/inputs/step.pt", None, None]
    index = {c.inputs.file: k for k, c in enumerate(out)} | {"/inputs/step.pt": 99}
    assert after[0].request(index)["step"] == 99 and after[1].request(index)["step"] is None


def test_a_parameter_step_moves_every_trainable_parameter_and_nothing_else():
    from evaluator.sandboxed.reference import parameter_step

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    model[1].bias.requires_grad_(False)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    deltas = parameter_step(model, key=5)
    assert sorted(deltas) == ["0.bias", "0.weight", "1.weight"]
    for name, parameter in model.named_parameters():
        expected = before[name] + deltas[name] if name in deltas else before[name]
        assert torch.equal(parameter.detach(), expected)
    again = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    again.load_state_dict({n: before[n] for n in before})
    again[1].bias.requires_grad_(False)
    assert all(torch.equal(deltas[n], d) for n, d in parameter_step(again, key=5).items())  # the key decides


def test_a_constant_tensor_and_two_values_are_handled():
    const = torch.full((5,), 2.0)
    assert torch.equal(near_duplicate_inputs([const], key=1, kind="head")[0], const)  # nothing else to move in
    two = torch.tensor([1.0, 2.0])
    for kind in NEAR_KINDS:
        assert near_duplicate_inputs([two], key=3, kind=kind)[0].shape == (2,)
    with pytest.raises(ValueError, match="unknown near-duplicate kind"):
        near_duplicate_inputs([two], key=3, kind="middle")


def test_the_order_is_not_the_plans():
    sets = _sets(12)
    orders = {tuple(c.inputs.seed for c in plan_plain_calls(sets, random.Random(seed))) for seed in range(8)}
    assert len(orders) > 1


def test_no_input_sets_no_calls():
    assert plan_plain_calls([], random.Random(0)) == []


def _program_modules() -> set[str]:
    """The modules of the visible packages a program that imports torch, triton and the dispatcher has loaded."""
    code = ("import sys, json, torch, triton, kernelevo.dispatch\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {VISIBLE_PACKAGES!r})))")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_plain_process_has_loaded_what_a_users_program_has(tmp_path):
    worker = processes.spawn_worker("plain", "cpu", tmp_path, 4096)
    try:
        worker.wait_ready(120)
        reply = worker.request({"op": "loaded_modules"}, 60)
    finally:
        worker.kill()
    assert reply["ok"], reply
    loaded, program = set(reply["modules"]), _program_modules()
    assert loaded == program, {"only the plain process": sorted(loaded - program)[:20],
                               "only the program": sorted(program - loaded)[:20]}
    assert "torch.utils.cpp_extension" not in loaded and "torch._dynamo" not in loaded


# -- the raw hand-off the reference reads ----------------------------------------------------------------------------
def _raw_file(tmp_path, tensors):
    outbox = tmp_path / "outbox"
    outbox.mkdir(exist_ok=True)
    path = outbox / "p0.raw"
    with open(path, "wb") as handle:
        for t in tensors:
            if t.numel():
                handle.write(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    described = [{"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)} for t in tensors]
    return {"file": str(path), "raw": described}


def test_raw_outputs_come_back_bit_for_bit(tmp_path):
    tensors = [torch.randn(3, 5), torch.randn(4).to(torch.bfloat16), torch.tensor(2.5), torch.zeros(0, 3),
               torch.tensor([True, False, True]), torch.arange(6, dtype=torch.int8).reshape(2, 3)]
    received = handoff.receive(_raw_file(tmp_path, tensors), "cpu", None)
    assert len(received) == len(tensors)
    for got, want in zip(received, tensors):
        assert type(got) is torch.Tensor and got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got, want)


@pytest.mark.parametrize("change,message", [
    (lambda item: item["raw"][0].update(shape=[3, 6]), "holds"),  # more bytes described than written
    (lambda item: item["raw"][0].update(shape=[3, 4]), "holds"),  # fewer
    (lambda item: item["raw"][0].update(dtype="object"), "malformed"),
    (lambda item: item["raw"][0].update(shape=[-3, -5]), "malformed"),
    (lambda item: item["raw"][0].update(extra=1), "malformed"),
    (lambda item: item.update(raw="3x5 float32"), "malformed"),
    (lambda item: item.update(raw=None), "malformed"),
])
def test_raw_outputs_must_be_exactly_what_they_say(tmp_path, change, message):
    item = _raw_file(tmp_path, [torch.randn(3, 5)])
    change(item)
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.receive(item, "cpu", None)
    assert caught.value.kind == "invalid" and message in str(caught.value)


def test_a_link_in_place_of_the_raw_file_is_refused(tmp_path):
    item = _raw_file(tmp_path, [torch.randn(3, 5)])
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 60)
    os.unlink(item["file"])
    os.symlink(secret, item["file"])
    with pytest.raises(handoff.HandoffError):
        handoff.receive(item, "cpu", None)


def test_a_block_repeats_no_value_of_distinct_inputs():
    """A block takes other values of the tensor, each at most once: within it no value repeats, so a row inside it
    meets no tie (for an argmax or a sort) that the base inputs did not have."""
    x = torch.randperm(4096).to(torch.float32).reshape(32, 128)  # every value distinct
    for kind in ("first_half", "second_half", "block"):
        for key in range(5):
            moved = near_duplicate_inputs([x], key=key, kind=kind)[0].reshape(-1)
            changed = _changed(x, moved)
            assert len(changed) > 4096 // 8
            assert moved[changed].unique().numel() == len(changed), (kind, key)


def test_a_masked_pair_keeps_the_mask_and_changes_the_rest():
    """``masked``: the last quarter of every row -inf (a padded attention mask), the rest as in the base;
    ``masked_changed``: the same mask and the rest of each row reversed, called right after ``masked``: a key that
    is -inf for any masked row whatever else it holds answers the second stale (red team s28)."""
    x, ids = torch.randn(5, 12), torch.arange(4)
    masked = near_duplicate_inputs([x, ids], key=1, kind="masked")
    changed = near_duplicate_inputs([x, ids], key=1, kind="masked_changed")
    assert masked[1] is ids and changed[1] is ids
    assert bool((masked[0][:, 9:] == float("-inf")).all()) and torch.equal(masked[0][:, :9], x[:, :9])
    assert bool((changed[0][:, 9:] == float("-inf")).all()) and torch.equal(changed[0][:, :9], x[:, :9].flip(1))


def test_a_following_near_duplicate_comes_right_after_the_one_before_it():
    sets = _sets(6)
    duplicates = [InputSet(case=sets[2].case, seed=sets[2].seed, file=f"/inputs/near{k}.pt") for k in range(3)]
    calls = plan_plain_calls(sets, random.Random(4))
    out = with_near_duplicates(calls, [(sets[2], d, 80 + k) for k, d in enumerate(duplicates)], random.Random(5),
                               follows=frozenset({82}))
    at = [k for k, c in enumerate(out) if c.near is not None]
    assert [out[k].near for k in at] == [80, 81, 82]
    assert at[2] == at[1] + 1  # the follower right after its predecessor, no call of the base between
    assert out[at[1] - 1].inputs == sets[2] and not out[at[1] - 1].judged  # the others after a call of the base
