"""Timing helpers that do not need a GPU: statistics and per-trial input perturbation."""

import torch

from evaluator.timing import _perturb, summarize


def test_summary_is_median_with_quartiles_and_min():
    stats = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert stats["median_ms"] == 3.0 and stats["min_ms"] == 1.0 and stats["n"] == 5
    assert stats["p25_ms"] <= stats["median_ms"] <= stats["p75_ms"]


def test_perturbation_changes_one_element_per_float_input_and_restores_it():
    x, w, idx = torch.randn(64, 8), torch.randn(8), torch.arange(4)
    before = [x.clone(), w.clone(), idx.clone()]
    gen = torch.Generator().manual_seed(0)
    restore = _perturb([x, w, idx, 3.0], gen)
    assert (x != before[0]).sum() == 1 and (w != before[1]).sum() == 1
    assert torch.equal(idx, before[2])  # integer inputs (indices) are left alone
    restore()
    assert all(torch.equal(a, b) for a, b in zip((x, w, idx), before))


def test_successive_perturbations_differ():
    x = torch.zeros(1000)
    gen = torch.Generator().manual_seed(1)
    seen = set()
    for _ in range(5):
        restore = _perturb([x], gen)
        seen.add(tuple(x.nonzero().flatten().tolist()) + (float(x.sum()),))
        restore()
    assert len(seen) == 5 and float(x.abs().sum()) == 0.0


def test_launch_counter_records_triton_style_compiled_kernel_resources():
    from types import SimpleNamespace

    from evaluator.guards import LaunchCounter

    counter = LaunchCounter()

    def softmax_kernel():
        pass

    compiled = SimpleNamespace(n_regs=40, n_spills=2, metadata=SimpleNamespace(shared=2048, num_warps=8))
    counter.note_resources(softmax_kernel, compiled)
    counter.note_resources(softmax_kernel, None)  # later launches change nothing
    assert counter.resources == {"softmax_kernel": {"registers": 40, "spills": 2, "shared_bytes": 2048,
                                                    "num_warps": 8}}
