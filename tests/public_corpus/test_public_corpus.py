"""The verifier against honest public kernels: Liger-Kernel's and fla's Triton kernels, pasted verbatim.

Each candidate is built at test time from the installed library's source (``corpus_builder``; the repository
holds none of it) plus a small adapter, and evaluated with the real verifier. The target is zero false
rejects: on a CPU every entry the Triton interpreter can run is ``accepted``, and every other one is answered
with the setup error "needs --device cuda" (``NeedsGPU``, exit status 2) -- never ``crashed`` or ``incorrect``;
on a GPU every entry is ``accepted``. Entries whose library is not installed are skipped.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus_builder  # noqa: E402
from corpus_entries import ENTRIES, ROOT, CpuExpectation, Entry  # noqa: E402
from corpus_run import findings  # noqa: E402

pytestmark = pytest.mark.slow


def _params(device: str) -> list:
    marks = [pytest.mark.gpu] if device == "cuda" else []
    return [pytest.param(entry, id=f"{entry.id}-{device}", marks=marks + _known(entry)) for entry in ENTRIES]


def _known(entry: Entry) -> list:
    """A known false reject is expected to stay one until it is fixed (then XPASS fails the run)."""
    if not entry.known_false_reject:
        return []
    return [pytest.mark.xfail(strict=True, raises=(AssertionError, pytest.fail.Exception),
                              reason=f"known false reject: {entry.known_false_reject}")]


def _build(entry: Entry, tmp_path: Path) -> tuple[Path, corpus_builder.Candidate]:
    if importlib.util.find_spec(entry.library.package) is None:
        pytest.skip(f"{entry.library.distribution} is not installed (pip install {entry.library.distribution})")
    candidate, _version = entry.build()
    path = tmp_path / f"{entry.id}.py"
    path.write_text(candidate.source, encoding="utf-8")
    return path, candidate


def _explain(verdict, candidate: corpus_builder.Candidate) -> str:
    """The verdict, and for a static rejection the library line behind each finding."""
    lines = [f"{verdict.verdict} {verdict.reason}: {verdict.detail[:600]}"]
    for f in findings(candidate)[:20]:
        lines.append(f"  [{f.rule}] {f.origin}: {f.source_line[:100]}")
    return "\n".join(lines)


@pytest.mark.parametrize("entry", _params("cpu"))
def test_public_kernel_cpu(entry: Entry, tmp_path: Path) -> None:
    from evaluator import NeedsGPU, evaluate

    path, candidate = _build(entry, tmp_path)
    if entry.cpu == CpuExpectation.NEEDS_GPU:
        # The interpreter cannot run this kernel (entry.why_cpu): the verifier must say so, not judge it.
        with pytest.raises(NeedsGPU, match="--device cuda"):
            verdict = evaluate(entry.task_path, path, device="cpu")
            pytest.fail(f"expected 'needs --device cuda' ({entry.why_cpu}), got {_explain(verdict, candidate)}")
        return
    verdict = evaluate(entry.task_path, path, device="cpu")
    assert verdict.accepted, _explain(verdict, candidate)


@pytest.mark.parametrize("entry", _params("cuda"))
def test_public_kernel_cuda(entry: Entry, tmp_path: Path) -> None:
    from evaluator import EvalOptions, evaluate

    path, candidate = _build(entry, tmp_path)
    verdict = evaluate(entry.task_path, path, device="cuda",
                       options=EvalOptions(baselines=("eager", "compile_default")))
    assert verdict.accepted, _explain(verdict, candidate)


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + "_task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rotary_qk_variant_is_the_bench_rotary_per_tensor() -> None:
    """tests/public_corpus/tasks/rotary_qk.py computes bench/ops/rotary.py on q and on k (other layout)."""
    import torch

    qk = _load(HERE / "tasks" / "rotary_qk.py")
    rotary = _load(ROOT / "bench" / "ops" / "rotary.py")
    torch.manual_seed(0)
    for q, k, cos, sin in qk.get_small_cases():
        q_out, k_out = qk.Model()(q.double(), k.double(), cos.double(), sin.double())
        for x, out in ((q, q_out), (k, k_out)):
            expect = rotary.Model()(x.double().transpose(1, 2), cos[0].double(), sin[0].double()).transpose(1, 2)
            torch.testing.assert_close(out, expect)


def test_cross_entropy_rows_variant_averages_to_the_bench_task() -> None:
    """tests/public_corpus/tasks/cross_entropy_rows.py is bench/ops/cross_entropy.py before the mean."""
    import torch

    rows = _load(HERE / "tasks" / "cross_entropy_rows.py")
    mean = _load(ROOT / "bench" / "ops" / "cross_entropy.py")
    torch.manual_seed(0)
    for logits, target in rows.get_small_cases():
        torch.testing.assert_close(rows.Model()(logits, target).mean(), mean.Model()(logits, target))


def test_fla_swiglu_passes_the_static_checks() -> None:
    """fla's swiglu passes the static checks, its activation table ACT2FN being unread (evaluator/static_unread.py);
    the run time (the corpus test above) lets its module's dormant @torch.compile decorations import torch._inductor."""
    entry = next(e for e in ENTRIES if e.id == "fla_swiglu")
    if importlib.util.find_spec(entry.library.package) is None:
        pytest.skip(f"{entry.library.distribution} is not installed")
    candidate, _version = entry.build()
    assert findings(candidate) == []
