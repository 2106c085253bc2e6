"""PROBE (relaxation 4, static layer): ``import A, B`` judged "always fails" because B does, though A runs first.

``static_optional.always_fails`` accepts an ``ast.Import`` when ANY of its names is ``refused_everywhere``
(here ``numpy``: installed, third-party, outside the run-time roots). Python imports the names left to right:
``torch.fx`` (refused by the checker: it rewrites PyTorch programs) is imported and bound as ``FX`` before
``numpy`` is refused, and the handler (``pass``) leaves the binding. The banned-import rule is lifted for the
whole statement, so its import side effects happen and the module is bound although the checker refuses it.
Uses of ``FX`` elsewhere are still chain-checked, so this is a rule bug rather than a full exploit. Same on GPU.
Correct verdict: static_violation (banned import of torch.fx).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    import torch.fx as FX, numpy  # noqa: E401,F401,I001
except ImportError:
    pass


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        return out
