"""Timing helpers that do not need a GPU: statistics and per-trial input perturbation."""

import random
import re

import torch

from evaluator.sandboxed.taskspec import rescaled
from evaluator.sandboxed.timing import VariedInputs, summarize


def test_summary_is_median_with_quartiles_and_min():
    stats = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert stats["median_ms"] == 3.0 and stats["min_ms"] == 1.0 and stats["n"] == 5
    assert stats["p25_ms"] <= stats["median_ms"] <= stats["p75_ms"]


def test_varied_inputs_change_every_float_value_in_place_and_restore():
    x, w, idx = torch.randn(64, 8), torch.randn(8), torch.arange(4)
    originals = [x.clone(), w.clone(), idx.clone()]
    varied = VariedInputs([[x, w, idx, 3.0]], random.Random(0))
    pointer = x.data_ptr()
    args, scale = varied.prepare(0)
    assert args[0] is x and x.data_ptr() == pointer  # same storage, new values
    assert scale != 1.0 and bool((x != originals[0]).all()) and bool((w != originals[1]).all())
    assert torch.equal(idx, originals[2]) and args[3] == 3.0  # indices and scalars untouched
    varied.restore()
    assert all(torch.equal(a, b) for a, b in zip((x, w, idx), originals))


def test_reference_side_reproduces_the_varied_values_bitwise():
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        base = torch.randn(1000).to(dtype)
        x = base.clone()
        varied = VariedInputs([[x]], random.Random(3))
        _, scale = varied.prepare(5)
        [again] = rescaled([base.clone()], scale)
        assert torch.equal(x.view(torch.uint8), again.view(torch.uint8))


def test_successive_calls_get_different_scales():
    varied = VariedInputs([[torch.ones(4)]], random.Random(1))
    scales = {varied.prepare(i)[1] for i in range(10)}
    assert len(scales) == 10 and all(0.95 <= s <= 1.05 for s in scales)


def test_launch_counter_records_triton_style_compiled_kernel_resources():
    from types import SimpleNamespace

    from evaluator.sandboxed.guards import LaunchCounter

    counter = LaunchCounter()

    def softmax_kernel():
        pass

    compiled = SimpleNamespace(n_regs=40, n_spills=2, metadata=SimpleNamespace(shared=2048, num_warps=8))
    counter.note_resources(softmax_kernel, compiled)
    counter.note_resources(softmax_kernel, None)  # later launches change nothing
    assert counter.resources == {"softmax_kernel": {"registers": 40, "spills": 2, "shared_bytes": 2048,
                                                    "num_warps": 8}}


def test_reference_process_answers_for_rescaled_inputs(tmp_path):
    from pathlib import Path

    from evaluator.sandboxed.reference import ReferenceRunner

    task = Path(__file__).resolve().parents[1] / "tasks" / "softmax.py"
    runner = ReferenceRunner(tmp_path, "cpu")
    plan = runner.load({"task": str(task), "small": True, "seeds": [11], "init_seed": 5,
                        "inputs_dir": str(tmp_path / "inputs")}, [])
    [x] = torch.load(next(i["file"] for i in plan["inputs"] if i["case"] == 0), weights_only=True)
    refs, _tolerances = runner.reference(0, 11, 1.03)
    expected = torch.softmax((x * 1.03).double(), dim=-1)
    assert torch.allclose(refs[0], expected, rtol=0, atol=1e-12)
    assert (0, 11, 1.03) not in runner.refs  # one-off answers are not kept
    # files are named by a random token, not by case and seed
    names = [Path(i["file"]).name for i in plan["inputs"]]
    assert all(re.fullmatch(r"in-[0-9a-f]{16}\.pt", name) for name in names), names
    assert len(set(names)) == len(names)


def test_a_revalidated_timed_call_maps_the_timing_set_it_was_given(tmp_path):
    """The reference answers a timed call from the input file it wrote for the candidate (drawing a large case's
    seed again cost seconds per call): the same values and the generator's state as drawing them again."""
    from pathlib import Path

    from evaluator.sandboxed import taskspec
    from evaluator.sandboxed.reference import ReferenceRunner
    from evaluator.sandboxed.timing_ops import _timing_sets

    task = Path(__file__).resolve().parents[1] / "tasks" / "softmax.py"
    runner = ReferenceRunner(tmp_path, "cpu")
    (tmp_path / "inputs").mkdir()
    runner.load({"task": str(task), "small": True, "seeds": [11], "init_seed": 5,
                 "inputs_dir": str(tmp_path / "inputs")}, [])
    sets, states = _timing_sets(runner.task, True, [21, 22])
    runner.timing_inputs = {(ci, seed): (runner._write_inputs(inputs), state) for ci, per_seed in enumerate(sets)
                            for seed, inputs, state in zip((21, 22), per_seed, states)}
    drawn = taskspec.generate_case(runner.task, True, 22, "task", 0)
    drawn_state = torch.get_rng_state()
    torch.manual_seed(0)  # the generator elsewhere: mapping must leave it as drawing does
    mapped = runner._timing_case(0, 22, "task")
    assert torch.equal(torch.get_rng_state(), drawn_state)
    assert len(mapped) == len(drawn) and all(torch.equal(a, b) for a, b in zip(mapped, drawn))
    refs, _tolerances = runner.reference(0, 22, 1.03)
    assert torch.allclose(refs[0], torch.softmax((drawn[0] * 1.03).double(), dim=-1), rtol=0, atol=1e-12)
    # another distribution, or a seed it did not write, is drawn as before
    assert runner._timing_case(0, 23, "task")[0].shape == drawn[0].shape
