"""What ``optimize --write-kernel`` tells the user once a kernel is stored (``Installed.lines``, pure)."""

from __future__ import annotations

from pathlib import Path

from kernelevo.install_kernel import Action, Decision, Installed

DIRECTORY = Path("/repo/kernels/rms_norm")


def test_a_cpu_kernel_says_where_it_runs_then_how_to_get_one_for_gpus():
    (first, commit) = Installed(DIRECTORY, Decision(Action.WRITE, "nothing stored"), "cpu").lines()
    assert first == (f"Wrote {DIRECTORY}: the op runs this kernel on the CPU in processes that run Triton interpreted "
                     "(TRITON_INTERPRET=1), where it was verified, and its original code everywhere else; a search "
                     "with --device cuda on a GPU finds one for GPUs.")
    assert commit == "Commit rms_norm/ with your code; check it in CI with: kernelevo verify"


def test_a_gpu_kernel_and_a_replacement():
    replaced = Installed(DIRECTORY, Decision(Action.REPLACE, "the stored kernel is older and not better"), "cuda")
    assert replaced.lines()[0] == (f"Replaced (the stored kernel is older and not better) {DIRECTORY}: the op runs "
                                   "this kernel where it was verified (cuda), and its original code everywhere else.")


def test_a_kept_kernel_says_how_to_replace_it():
    kept = Installed(DIRECTORY, Decision(Action.KEEP, "a better kernel (2.00x vs eager on cuda; this run's: 1.10x)"),
                     "cuda")
    assert not kept.written
    assert kept.lines("runs/r1") == [f"Not written: {DIRECTORY} already holds a better kernel (2.00x vs eager on cuda;"
                                     " this run's: 1.10x). Keep it, or replace it with: kernelevo optimize --resume "
                                     "runs/r1 --write-kernel --force"]
