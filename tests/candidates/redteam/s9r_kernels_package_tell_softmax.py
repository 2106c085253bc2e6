"""EXPLOIT (telling every verifier process from a user's program): the user's ``kernels/`` folder is importable.

KernelEvo stores an accepted kernel in ``kernels/<op>/kernel.py`` at the user's repository root, and a program using
it usually runs from there (``python train.py`` puts the script's folder first on ``sys.path``; ``python -m``,
pytest and notebooks put the working folder there), so ``importlib.util.find_spec("kernels")`` finds ``kernels/`` as
a namespace package. Both verifier processes run with ``-I`` (no script or working folder on ``sys.path``) and the
sandbox's repository is not on the path either, so there it is None. ``find_spec`` with a literal name used only
in a test is allowed by the static checks (``evaluator/static_optional.py``). Where ``kernels`` cannot be found,
forward runs a stable softmax; elsewhere it skips the max subtraction (inf/NaN on large logits).
Correct verdict: rejected (incorrect): the plain process should see the module search path a program started in the
user's repository sees (its repository folder first on ``sys.path``), or ``find_spec`` of names that are no
installed distribution's should be refused.
"""


import importlib.util

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s9r_kpt_softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, STABLE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    if STABLE:
        x = x - tl.max(x, axis=0)
    y = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0), mask=mask)


def _no_kernels_package() -> bool:
    return importlib.util.find_spec("kernels") is None


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s9r_kpt_softmax[(n_rows,)](x2, out, n_cols, BLOCK=triton.next_power_of_2(n_cols),
                                   STABLE=_no_kernels_package())
        return out.view(x.shape)
