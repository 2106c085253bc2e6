"""The fixes of red-team session 6 on their own (the candidates are in tests/candidates/redteam/s6_*.py): a call
plan whose first calls look like a user's program and whose autograd mode and training flag vary, the interpreter's
raw memory functions only inside a running kernel (and atomics bounds-checked), tensor data refused to DLPack,
pickling and ``torch.save`` from the candidate's code. Guard cases that install process-wide hooks run in a fresh
interpreter (an audit hook cannot be removed once installed)."""

from __future__ import annotations

import random
import textwrap

import pytest
from test_audit_guard import ATTEMPT_EACH, guard_report

from evaluator.callplan import AUTOGRAD_MODES, InputSet, plain_prefix, plan_checks


def _inputs(cases: int = 3, seeds: int = 5) -> list[InputSet]:
    return [InputSet(case, seed, f"in-{case}-{seed}") for seed in range(seeds) for case in range(cases)]


# ---------------------------------------------------------------------------------------------- the call plan


@pytest.mark.parametrize("seed", range(40))
def test_the_first_calls_are_plain_and_every_case_is_still_guarded_and_poisoned_after_them(seed):
    """A kernel that latches "verifier" on the first guard region or poisoned allocation it sees must meet plain
    calls first (judged like every other), and the guard/poison checks must still reach every case."""
    calls = plan_checks(_inputs(), random.Random(seed))
    plain = next(k for k, c in enumerate(calls) if c.guarded or c.poison)
    assert 1 <= plain <= len(calls) // 2
    assert not any(c.guarded or c.poison for c in calls[:plain])
    for case in range(3):
        after = [c for c in calls[plain:] if c.inputs.case == case]
        assert after and after[0].guarded and after[0].poison and after[0].storage == "fresh", (seed, case)
    first_of_case = {}
    for c in calls:
        first_of_case.setdefault(c.inputs.case, c)
    assert all(c.storage == "fresh" for c in first_of_case.values())  # nothing to reuse yet


def test_the_number_of_plain_calls_is_secret():
    lengths = {next(k for k, c in enumerate(plan_checks(_inputs(), random.Random(s))) if c.guarded or c.poison)
               for s in range(60)}
    assert len(lengths) >= 5 and min(lengths) >= 1


def test_the_plain_prefix_leaves_each_case_a_call_after_it():
    assert plain_prefix([0, 1, 1, 1, 1, 1, 1, 1], random.Random(0)) == 0  # case 0 has no call after its first
    for seed in range(50):
        assert 1 <= plain_prefix([0, 1, 1, 1, 1, 1, 1, 1, 0, 1], random.Random(seed)) <= 5
    assert plain_prefix([0], random.Random(0)) == 0


@pytest.mark.parametrize("seed", range(20))
def test_every_autograd_mode_is_planned_and_a_repeat_group_shares_its_states(seed):
    """``torch.is_grad_enabled()`` and ``self.training`` are allowed queries: a kernel right only under no_grad (or
    only in the mode the verifier leaves the module in) must meet the other states."""
    calls = plan_checks(_inputs(), random.Random(seed), vary_training=True, vary_input_grad=True)
    assert {c.autograd for c in calls} == set(AUTOGRAD_MODES)
    assert {c.training for c in calls} == {False, True}
    assert {c.input_grad for c in calls if c.autograd == "grad"} == {False, True}
    assert {c.input_grad for c in calls if c.autograd != "grad"} == {False, True}
    for group in {c.group for c in calls if c.group}:
        members = [c for c in calls if c.group == group]
        assert len(members) == 3 and len({(c.autograd, c.training, c.input_grad) for c in members}) == 1
    request = calls[0].request(0)
    assert request["autograd"] in AUTOGRAD_MODES and isinstance(request["training"], bool)
    assert isinstance(request["input_grad"], bool)


def test_the_training_flag_stays_the_references_unless_both_modes_agree_and_inputs_stay_leaves_without_autograd():
    calls = plan_checks(_inputs(), random.Random(3))
    assert {c.training for c in calls} == {False} and not any(c.input_grad for c in calls if c.autograd == "grad")


# ------------------------------------------------------------------------ the reference: does the mode matter?

_MODE_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = {norm}

    def forward(self, x):
        return self.norm(x)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(8, 16)]
'''


@pytest.mark.parametrize("norm,free", [("nn.Softmax(dim=-1)", True), ("nn.Dropout(0.5)", False),
                                       ("nn.BatchNorm1d(16)", False)])
def test_the_reference_says_whether_its_answer_depends_on_the_training_flag(tmp_path, norm, free):
    import torch

    from evaluator.sandboxed import taskspec
    from evaluator.sandboxed.reference import ReferenceRunner

    path = tmp_path / "task.py"
    path.write_text(_MODE_TASK.format(norm=norm))
    runner = ReferenceRunner(tmp_path / "private", "cpu")
    runner.task, runner.init_seed = taskspec.load_task(path), 7
    model = runner._build_model()
    inputs = [torch.randn(8, 16)]
    with torch.no_grad():
        native = [model(*inputs)]
    assert runner._training_mode_free([(inputs, native)]) is free


# -------------------------------------------------------------- the interpreter's raw memory, atomics' bounds

_RAW_DRIVER = textwrap.dedent('''
    import functools, json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import torch, triton, triton.language as tl
    from torch.utils._pytree import tree_map
    from triton.runtime import interpreter
    from evaluator.sandboxed.bounds import BoundsChecker

    checker = BoundsChecker()
    checker.install()
    raw = interpreter._interpreter

    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    @triton.jit
    def atomic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.atomic_add(x_ptr + offs, 0.0), mask=offs < n)  # unmasked atomic: past the end

    big = torch.randn(300)
    x, out = big[:100], torch.empty(100)  # the atomics past x's end stay inside big's memory
    addresses = np.arange(4, dtype=np.uint64) * 4 + np.uint64(x.data_ptr())

    def host_load():
        return raw.load(addresses, np.ones(4, dtype=bool), np.zeros(4, dtype=np.float32), np.dtype(np.float32))

    def attempt(fn):
        try:
            fn()
            return "allowed"
        except PermissionError:
            return "refused"

    def grid(meta):
        return (1 + (host_load() is None),)

    results = {
        "kernel": attempt(lambda: copy_kernel[(1,)](x, out, 100, BLOCK=128)),
        "kernel_copied": bool(torch.equal(out, x)),
        "host_load": attempt(host_load),
        "host_load_through_a_library": attempt(lambda: tree_map(lambda _: host_load(), [0])),
        "builder_load_from_host": attempt(lambda: interpreter.interpreter_builder.create_masked_load(
            interpreter.TensorHandle(addresses, tl.pointer_type(tl.float32)),
            interpreter.TensorHandle(np.ones(4, dtype=bool), tl.int1), None, None, False)),
        "load_in_a_grid_callable": attempt(lambda: copy_kernel[grid](x, out, 100, BLOCK=128)),
    }
    clean = list(checker.violations)
    checker.violations.clear()
    try:  # an access past the tensors is refused before it happens: the launch stops with the refusal as its cause
        atomic_kernel[(1,)](x, out, 100, BLOCK=128)
        results["atomic_kernel"] = "allowed"
    except Exception as exc:
        results["atomic_kernel"] = "stopped" if type(exc.__cause__).__name__ == "OutOfBounds" else repr(exc)
    print(json.dumps({"results": results, "violations": clean, "atomic": checker.violations}))
''')


def test_the_interpreters_raw_memory_functions_run_only_inside_a_kernel_and_atomics_are_bounds_checked():
    report = guard_report(_RAW_DRIVER)
    assert report["results"] == {"kernel": "allowed", "kernel_copied": True, "host_load": "refused",
                                 "host_load_through_a_library": "refused", "builder_load_from_host": "refused",
                                 "load_in_a_grid_callable": "refused", "atomic_kernel": "stopped"}
    assert report["violations"] and all("outside a running kernel" in v for v in report["violations"])
    assert any("atomic_kernel atomically updated 28 element(s) outside every tensor argument" in v
               for v in report["atomic"]), report["atomic"]


# ---------------------------------------------------------------- host exports of tensor data (DLPack, pickle)

_EXPORT_DRIVER = ATTEMPT_EACH + textwrap.dedent('''
    import io, json, pickle, sys, textwrap
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import torch
    from triton.runtime import interpreter
    from evaluator.sandboxed.guards import AuditGuard, HostConversionGuard

    private = Path(sys.argv[2])
    guard = AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}))
    host = HostConversionGuard(guard)
    guard.install()
    host.install()
    source = """
    def attempts(torch, interpreter, io, pickle, x):
        return {
            "from_dlpack": lambda: interpreter.np.from_dlpack(x),
            "to_dlpack": lambda: torch.utils.dlpack.to_dlpack(x),
            "pickle_tensor": lambda: pickle.dumps(x),
            "pickle_storage": lambda: pickle.dumps(x.untyped_storage()),
            "torch_save_to_memory": lambda: torch.save(x, io.BytesIO()),
            "storage_write_file": lambda: x.untyped_storage()._write_file(io.BytesIO(), True, True, 4),
            "numpy": lambda: x.numpy(),
            "library_clone": lambda: torch.clone(x),
        }
    """
    namespace = {}
    exec(compile(textwrap.dedent(source), str(private / "candidate.py"), "exec"), namespace)
    x = torch.randn(8)
    results = attempt_each(guard, namespace["attempts"](torch, interpreter, io, pickle, x))
    buffer = io.BytesIO()
    torch.save(x, buffer)  # the harness's own hand-off (guard inactive)
    print(json.dumps({"results": results, "harness_save": len(buffer.getvalue()) > 0,
                      "audit": guard.violations}))
''')


def test_tensor_data_cannot_leave_through_dlpack_pickling_or_torch_save(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    report = guard_report(_EXPORT_DRIVER, private)
    assert report["results"] == {"from_dlpack": "refused", "to_dlpack": "refused", "pickle_tensor": "refused",
                                 "pickle_storage": "refused", "torch_save_to_memory": "refused",
                                 "storage_write_file": "refused", "numpy": "refused", "library_clone": "allowed"}
    assert report["harness_save"] and report["audit"] == []



# ------------------------------------------------------------------------------------------------ the judge


def test_integer_outputs_are_compared_as_integers_not_through_float64():
    """Through float64 an int64 above 2**53 off by one compared equal (a hash, a large index sum)."""
    import torch

    from evaluator.sandboxed.compare import compare, tolerance_for

    ref = torch.tensor([2**60 + 1, 7, -3], dtype=torch.int64)
    assert compare(ref.clone(), ref, tolerance_for(torch.int64)).ok
    result = compare(ref + torch.tensor([1, 0, 0]), ref, tolerance_for(torch.int64))
    assert not result.ok and result.mismatched == 1 and "exact" in result.problem
    mask = torch.tensor([True, False, True])
    assert compare(mask.clone(), mask, tolerance_for(torch.bool)).ok
    assert not compare(~mask, mask, tolerance_for(torch.bool)).ok
    empty = torch.zeros(0, dtype=torch.int32)
    assert compare(empty, empty.clone(), tolerance_for(torch.int32)).ok


def test_complex_outputs_are_judged_on_both_parts_with_the_real_dtypes_tolerance():
    """``double()`` of a complex tensor drops the imaginary part: a wrong imaginary part passed, while the real part
    had to match exactly (an honest kernel's rounding failed)."""
    import torch

    from evaluator.sandboxed.compare import Tolerance, compare, tolerance_for

    assert tolerance_for(torch.complex64) == Tolerance(1e-4, 1e-4, 1e-5)
    ref = torch.randn(256, dtype=torch.complex128)
    assert compare(ref.to(torch.complex64), ref, tolerance_for(torch.complex64)).ok
    assert not compare(ref.to(torch.complex64).conj(), ref, tolerance_for(torch.complex64)).ok
