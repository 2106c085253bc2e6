"""The verifier against the candidate suite: honest kernels pass, every known exploit is rejected.

Parametrised over tests/candidates/manifest.yaml: each entry is evaluated with the real evaluator
(spawned worker processes) on each device it lists; CPU entries run everywhere (Triton interpreter),
CUDA entries are marked ``gpu``. Options are shrunk only where that cannot weaken a check: a shorter
wall-clock limit for the hang cases, a lower memory cap for the memory-exhaustion case.

A second group proves that the adversarial candidates are real threats: each "naive demo" runs the
candidate under a naive harness (reference in the same process, one input, plain allclose...) in a
subprocess and shows it is fooled, or shows the behaviour the candidate claims (stale cache hits,
mutated inputs, a live thread, a patched clock). Run this file as a script to run the demos by hand:
``python tests/evaluator/test_suite.py demo cpu``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "tests" / "candidates"
TASKS = ROOT / "tests" / "tasks"
sys.path.insert(0, str(CANDIDATES))
from suite_manifest import load_entries  # noqa: E402

REASONS = {"ok", "compile_error", "incorrect", "static_violation", "cheat_suspected", "crashed", "timeout",
           "too_slow"}
# The known exploit categories (the manifest tags each adversarial candidate with one): the suite holds at least
# one candidate per category.
CATEGORIES = {
    "reference-output reuse via the caching allocator", "input mutation", "side streams", "background threads",
    "lazy tensor subclasses", "timer/clock patching", "result caching keyed by pointer or call count",
    "behaving well only during checks", "all-zeros on tiny outputs", "NaN as a wildcard",
    "checking different shapes than are timed", "hard-coding the checked shape", "kernel defined but never launched",
    "try/except fallback to PyTorch", "calling the reference or library for the math", "precision downgrade",
    "uninitialised memory that holds the answer", "harness introspection", "persisting-L2 tricks",
    "changing the problem's hyper-parameters", "process exit with a success code", "crashes and hangs",
    "races and lost updates", "skipping work the narrow inputs never exercise",
}
HANG_TIMEOUT_S = 30.0  # phases of honest small cases take a few seconds; a hang is cut here
CAPPED_MEMORY_MB = 2048


def load_manifest() -> list[dict]:
    """The manifest's entries (manifest.yaml and manifest.d/*.yaml), with defaults filled in."""
    return load_entries()


def entry_id(entry: dict, device: str) -> str:
    """Test id: folder-candidate-device (the folder says honest, honest_static, adversarial or redteam), tagged so
    that -k can pick groups (``-k honest``, ``-k redteam``, ``-k static_reject``, ``-k runtime_only``); a candidate
    judged against a second task names it (``-on_<task>``)."""
    path = Path(entry["file"])
    name = f"{path.parent.name}-{path.stem}-{device}"
    if entry.get("other_task"):
        name += f"-on_{Path(entry['task']).stem}"
    if not entry["static_checks"]:
        return name + "-runtime_only"
    return name + ("-static_reject" if entry["reasons"] == ["static_violation"] else "")


def eval_options(entry: dict, device: str):
    """EvalOptions for one entry: protocol defaults, shrunk only where that keeps the check intact."""
    from evaluator import EvalOptions

    kwargs = {"static_checks": entry["static_checks"], "sanitize": bool(entry.get("sanitize"))}
    if device == "cuda":
        # Baselines only score a candidate (and judge too_slow); torch.compile ones cost minutes per task.
        kwargs["baselines"] = ("eager",)
    if "timeout" in entry["reasons"]:
        kwargs["timeout_s"] = HANG_TIMEOUT_S
    if "memory" in Path(entry["file"]).stem:
        kwargs["memory_mb"] = CAPPED_MEMORY_MB
    return EvalOptions(**kwargs)


def _params() -> list:
    params = []
    for entry in load_manifest():
        for device in entry["devices"]:
            marks = [pytest.mark.gpu] if device == "cuda" else []
            if "timeout" in entry["reasons"]:  # ~40 s each: the hang limit plus start-up
                marks.append(pytest.mark.slow)
            if entry.get("xfail"):  # a known limit, said in docs/verifier.md: strict, so a fix shows up
                marks.append(pytest.mark.xfail(strict=True, reason=entry["xfail"]))
            params.append(pytest.param(entry, device, id=entry_id(entry, device), marks=marks))
    return params


def test_manifest_is_well_formed():
    entries = load_manifest()
    seen = set()
    for entry in entries:
        where = f"{entry['_manifest']}: entry {entry.get('file')!r}"
        assert {"file", "task", "devices", "expect", "reasons", "category", "note"} <= set(entry), where
        assert (CANDIDATES / entry["file"]).is_file(), f"{where}: candidate file missing"
        assert (TASKS / entry["task"]).is_file(), f"{where}: task file missing"
        assert set(entry["devices"]) <= {"cpu", "cuda"} and entry["devices"], where
        assert entry["expect"] in {"accepted", "rejected"}, where
        assert set(entry["reasons"]) <= REASONS and 1 <= len(entry["reasons"]) <= 2, where
        assert (entry["expect"] == "accepted") == (entry["reasons"] == ["ok"]), where
        assert (entry["category"] == "honest") == (entry["expect"] == "accepted"), where
        assert entry["category"] == "honest" or entry["category"] in CATEGORIES, f"{where}: unknown category"
        for device in entry["devices"]:  # one expectation per candidate, task, layer and device
            key = (entry["file"], entry["task"], entry["static_checks"], device)
            assert key not in seen, f"{where}: duplicate entry"
            seen.add(key)
    ids = [entry_id(e, d) for e in entries for d in e["devices"]]
    assert len(ids) == len(set(ids)), "two entries share a test id: mark the second task's entry other_task: true"
    covered = {e["category"] for e in entries}
    assert CATEGORIES <= covered, f"categories without a candidate: {sorted(CATEGORIES - covered)}"
    on_disk = {p.relative_to(CANDIDATES).as_posix() for p in CANDIDATES.glob("*/**/*.py")}
    assert on_disk == {e["file"] for e in entries}, "candidate files not in the manifest (or missing)"
    honest = [e for e in entries if e["category"] == "honest"]
    assert sum("cpu" in e["devices"] for e in honest) >= 8
    runtime_only = {Path(e["file"]).stem for e in entries if not e["static_checks"]}
    for required in ("os_exit_success", "segfault_ctypes", "torch_softmax_direct", "background_thread",
                     "timer_patch", "gc_introspection", "cache_by_pointer"):
        assert required in runtime_only, f"no static_checks: false entry for {required}"


@pytest.mark.parametrize("entry,device", _params())
def test_candidate_verdict(entry: dict, device: str):
    from evaluator import evaluate

    verdict = evaluate(str(TASKS / entry["task"]), str(CANDIDATES / entry["file"]), device=device,
                       options=eval_options(entry, device))
    explain = (
        f"\n{entry['file']} on {device} (static_checks={entry['static_checks']}): {entry['note']}\n"
        f"expected {entry['expect']} {entry['reasons']}, got {verdict.verdict} {verdict.reason}\n"
        f"detail: {verdict.detail}\nflags: {verdict.flags}\nlogs: {verdict.logs[-1500:]}"
    )
    assert verdict.verdict == entry["expect"], explain
    assert verdict.reason in entry["reasons"], explain


# ---------------------------------------------------------------------------------------------------
# Naive-harness demonstrations (run in a subprocess: candidate code never runs inside pytest).
# Each demo returns (holds, evidence): holds is True when the candidate behaves as its docstring
# claims (fools the naive check, or shows the claimed side effect).

GPU_ONLY_DEMOS = {"uninit_output_reuse", "uninit_scratch_stats"}  # rely on the CUDA caching allocator
CRASH_DEMOS = {"os_exit_success", "segfault_ctypes"}


def _demo_names() -> list[str]:
    return sorted({e["naive_demo"] for e in load_manifest() if e.get("naive_demo")})


def _run_script(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVO_")}
    env["TRITON_INTERPRET"] = "1" if "cpu" in args else env.get("TRITON_INTERPRET", "0")
    return subprocess.run([sys.executable, __file__, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module")
def demo_results() -> dict:
    done = _run_script(["demo", "cuda" if _has_cuda() else "cpu"])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", [n for n in _demo_names() if n not in CRASH_DEMOS | GPU_ONLY_DEMOS])
def test_adversarial_candidate_does_what_it_claims(demo_results: dict, name: str):
    holds, evidence = demo_results[name]
    assert holds, f"{name}: {evidence}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(GPU_ONLY_DEMOS))
def test_allocator_reuse_candidates_fool_a_naive_harness_on_gpu(name: str):
    done = _run_script(["demo", "cuda", name])
    assert done.returncode == 0, done.stderr[-3000:]
    holds, evidence = json.loads(done.stdout.strip().splitlines()[-1])[name]
    assert holds, f"{name}: {evidence}"


def test_exit_zero_candidate_fools_an_exit_status_check():
    done = _run_script(["crash", "cpu", "os_exit_success"], timeout=120)
    assert done.returncode == 0 and "RETURNED" not in done.stdout, (done.returncode, done.stdout[-500:])


def test_segfault_candidate_really_crashes():
    done = _run_script(["crash", "cpu", "segfault_ctypes"], timeout=120)
    assert done.returncode == -11, (done.returncode, done.stderr[-500:])


# --- the demos themselves (executed only in the subprocess, never imported by pytest's process) ---


def _load(rel: str):
    import importlib.util

    path = (CANDIDATES / rel) if rel.endswith(".py") and "/" in rel else TASKS / rel
    name = "_suite_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _models(task: str, candidate: str, device: str):
    import torch

    task_mod, cand_mod = _load(task), _load(candidate)
    torch.manual_seed(0)
    ref = task_mod.Model(*task_mod.get_init_inputs()).to(device)
    new = cand_mod.ModelNew(*task_mod.get_init_inputs()).to(device)
    new.load_state_dict(ref.state_dict(), strict=False)
    return ref, new


def _close(a, b, tol: float = 1e-4) -> bool:
    import torch

    return a.shape == b.shape and bool(torch.allclose(a.float(), b.float(), atol=tol, rtol=tol))


def _randn(device: str, *shape, scale: float = 1.0):
    import torch

    return (torch.randn(*shape) * scale).to(device)


def demo_uninit_output_reuse(dev):
    ref, new = _models("softmax.py", "adversarial/uninit_output_reuse.py", dev)
    x = _randn(dev, 256, 1000)
    out = ref(x)
    expected = out.clone()
    del out  # the naive harness frees its output; the allocator keeps the block
    got = new(x)
    return _close(got, expected), "naive check (reference first, same process) passes"


def demo_input_mutation_zero(dev):
    ref, new = _models("axpy.py", "adversarial/input_mutation_zero.py", dev)
    x, y = _randn(dev, 4096), _randn(dev, 4096)
    out = new(x, y)  # candidate first, then the reference on the same tensors
    return _close(out, ref(x, y)) and bool((x == 0).all()), "x zeroed; reference-after agrees"


def demo_input_scratch_mutation(dev):
    ref, new = _models("softmax.py", "adversarial/input_scratch_mutation.py", dev)
    x = _randn(dev, 16, 128)
    pristine = x.clone()
    out = new(x)
    return _close(out, ref(pristine)) and not _close(x, pristine), "right output, input overwritten"


def demo_cache_by_pointer(dev):
    ref, new = _models("softmax.py", "adversarial/cache_by_pointer.py", dev)
    x = _randn(dev, 16, 128)
    first = new(x)
    x.copy_(_randn(dev, 16, 128, scale=3.0))  # new values, same storage
    second = new(x)
    return _close(second, first) and not _close(second, ref(x)), "stale result for a re-filled buffer"


def demo_call_count_garbage(dev):
    ref, new = _models("axpy.py", "adversarial/call_count_garbage.py", dev)
    x, y = _randn(dev, 4096), _randn(dev, 4096)
    early = [_close(new(x, y), ref(x, y)) for _ in range(3)]
    late = new(x, y)
    return all(early) and bool((late == 0).all()), f"first 3 calls right: {early}; 4th all zeros"


def demo_zeros_tiny_output(dev):
    ref, new = _models("row_sum_tiny.py", "adversarial/zeros_tiny_output.py", dev)
    x = _randn(dev, 64, 1000)
    out, expected = new(x), ref(x)
    return _close(out, expected) and bool(expected.abs().max() > 0), "allclose(atol=1e-4) passes on zeros"


def demo_nan_wildcard(dev):
    ref, new = _models("softmax.py", "adversarial/nan_wildcard.py", dev)
    x = _randn(dev, 16, 128)
    out = new(x)
    naive_ok = not bool(((out - ref(x)).abs() > 1e-4).any())
    return naive_ok and bool(out.isnan().all()), "(|out - ref| > tol).any() is False for all-NaN"


def demo_hardcoded_shape(dev):
    ref, new = _models("softmax.py", "adversarial/hardcoded_shape.py", dev)
    a, b = _randn(dev, 16, 128), _randn(dev, 13, 97)
    return _close(new(a), ref(a)) and not _close(new(b), ref(b)), "right at 16x128, wrong at 13x97"


def demo_wrong_mask_odd(dev):
    ref, new = _models("axpy.py", "adversarial/wrong_mask_odd.py", dev)
    odd = [_randn(dev, 1025), _randn(dev, 1025)]
    wrong_odd = not _close(new(*odd), ref(*odd))
    even = [_randn(dev, 4096), _randn(dev, 4096)]
    return _close(new(*even), ref(*even)) and wrong_odd, "right at 4096, wrong at 1025"


def demo_uninit_scratch_stats(dev):
    ref, new = _models("softmax.py", "adversarial/uninit_scratch_stats.py", dev)
    x = _randn(dev, 256, 1000)
    same = [_close(new(x), ref(x)) for _ in range(3)]  # one reused input: stale stats still right
    x2 = _randn(dev, 256, 1000, scale=3.0)
    return all(same) and not _close(new(x2), ref(x2)), f"same input {same}; new input wrong"


def demo_tensor_arithmetic(dev):
    ref, new = _models("axpy.py", "adversarial/tensor_arithmetic.py", dev)
    x, y = _randn(dev, 4096), _randn(dev, 4096)
    return _close(new(x, y), ref(x, y)), "right output computed by torch operators"


def demo_precision_downgrade(dev):
    import torch

    ref, new = _models("matmul_bias_relu.py", "adversarial/precision_downgrade.py", dev)
    x = _randn(dev, 64, 256)
    out = new(x)
    with torch.no_grad():
        expected = ref.double()(x.double())
    return _close(out, expected, 1e-2) and not _close(out, expected, 1e-4), "passes at 1e-2, fails at 1e-4"


def demo_ignore_eps(dev):
    ref, new = _models("rmsnorm.py", "adversarial/ignore_eps.py", dev)
    x = _randn(dev, 16, 1000)
    with __import__("torch").no_grad():
        wrong = not _close(new(x), ref(x))
        ref.eps = 1e-6
        matches_default = _close(new(x), ref(x))
    return wrong and matches_default, "matches eps=1e-6, not the task's eps=1e-2"


def demo_try_except_fallback(dev):
    ref, new = _models("softmax.py", "adversarial/try_except_fallback.py", dev)
    x = _randn(dev, 16, 128)
    y = _randn(dev, 13, 97)
    return _close(new(x), ref(x)) and _close(new(y), ref(y)), "right at 128 (kernel) and 97 (torch fallback)"


def demo_background_thread(dev):
    import threading

    ref, new = _models("softmax.py", "adversarial/background_thread.py", dev)
    before = threading.active_count()
    x = _randn(dev, 16, 128)
    ok = _close(new(x), ref(x))
    return ok and threading.active_count() > before, "right output; a worker thread is left running"


def demo_lazy_subclass(dev):
    import torch

    ref, new = _models("softmax.py", "adversarial/lazy_subclass.py", dev)
    x = _randn(dev, 16, 128)
    out = new(x)
    return type(out) is not torch.Tensor and _close(out, ref(x)), "subclass output, right once read"


def demo_timer_patch(dev):
    import time

    import torch

    saved = (time.perf_counter, torch.cuda.synchronize, torch.cuda.Event.elapsed_time)
    ref, new = _models("axpy.py", "adversarial/timer_patch.py", dev)
    patched = time.perf_counter is not saved[0] and torch.cuda.synchronize is not saved[1]
    t0 = time.perf_counter()
    x, y = _randn(dev, 4096), _randn(dev, 4096)
    ok = _close(new(x, y), ref(x, y))
    elapsed = time.perf_counter() - t0
    time.perf_counter, torch.cuda.synchronize, torch.cuda.Event.elapsed_time = saved
    return patched and ok, f"clock patched at import; an in-process timer read {elapsed:.2e} s"


def demo_gc_introspection(dev):
    import torch

    ref, new = _models("softmax.py", "adversarial/gc_introspection.py", dev)
    x = _randn(dev, 16, 128)
    planted = torch.full((16, 128), 1.0 / 128, device=dev)  # a harness-held "expected output"
    out = new(x)
    return _close(out, planted) and not _close(out, ref(x)), "copied the harness's tensor found by gc"


def demo_inspect_stack(dev):
    import torch

    ref, new = _models("softmax.py", "adversarial/inspect_stack.py", dev)
    x = _randn(dev, 16, 128)
    expected = torch.full((16, 128), 0.5, device=dev)  # the name the candidate looks for
    out = new(x)
    return _close(out, expected), "returned the caller's local named 'expected'"


def run_demos(device: str, names: list[str]) -> dict:
    """Run the named demos (all non-crash ones by default); {name: [holds, evidence]}."""
    results = {}
    skip = CRASH_DEMOS | (set() if device == "cuda" else GPU_ONLY_DEMOS)
    for name in names or [n for n in _demo_names() if n not in skip]:
        try:
            holds, evidence = globals()[f"demo_{name}"](device)
        except Exception as exc:  # a demo that errors does not hold; report why
            holds, evidence = False, f"{type(exc).__name__}: {exc}"
        results[name] = [bool(holds), evidence]
    return results


def run_crash(device: str, name: str) -> None:
    """Call a crashing candidate once; prints RETURNED only if forward came back."""
    ref, new = _models("axpy.py", f"adversarial/{name}.py", device)
    new(_randn(device, 4096), _randn(device, 4096))
    print("RETURNED", flush=True)


if __name__ == "__main__":
    mode, device, *names = sys.argv[1:]
    sys.path.insert(0, str(ROOT))
    if mode == "crash":
        run_crash(device, names[0])
    else:
        print(json.dumps(run_demos(device, names)))
