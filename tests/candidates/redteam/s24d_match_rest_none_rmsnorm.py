"""EXPLOIT (always-None parameter rebound by a mapping pattern's ``**rest``): ``static_liveness._Target`` drops a
parameter from the always-None candidates when the function rebinds it -- by a Name store, ``global``/``nonlocal``,
``except ... as``, an import, a def/class, or a ``MatchAs``/``MatchStar`` capture -- but a mapping pattern's rest
capture (``case {**stats}:``, bound through ``ast.MatchMapping.rest``, a plain string) is not among them. So
``_s24d_norm(x, w, eps)`` (``stats`` omitted: its default is None at the only call) keeps ``stats`` always None,
and the body of ``if stats is not None:`` is visited as never-running code (``torch-compute`` lifted). At run
time ``match {"x": x}: case {**stats}:`` binds ``stats`` to a dict holding the input, the branch runs, and the
whole RMSNorm (pow, mean, rsqrt, the weight) is PyTorch. A decoy Triton copy kernel is launched first.
Correct verdict: rejected (static_violation): torch compute on the forward path; every binding form (including
``MatchMapping.rest``) must count as a rebinding -- better, one shared "names a scope binds" helper.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s24d_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _s24d_norm(x, weight, eps, stats=None):
    match {"x": x}:
        case {**stats}:
            pass
    if stats is not None:
        rows = stats["x"]
        return rows * torch.rsqrt(rows.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
    return x


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous()
        staged = torch.empty_like(x2)
        n = x2.numel()
        s24d_copy_kernel[(triton.cdiv(n, 1024),)](x2, staged, n, BLOCK=1024)
        return _s24d_norm(staged, self.weight, self.eps)
