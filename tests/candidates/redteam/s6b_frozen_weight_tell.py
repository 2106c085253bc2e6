"""EXPLOIT (static and runtime layers): right only while the module's weight requires grad, as every parameter
of the verifier's ModelNew does.

``self.weight.requires_grad`` is an allowed read. A deployed model is usually frozen (``model.requires_grad_(False)``,
a frozen backbone, a quantised or served model), and KernelEvo's dispatcher runs a module's kernel with gradients on
only when its parameters do not require grad; the verifier builds ModelNew with the default parameters (requiring
grad) and never changes them. The kernel writes zeros once the weight is frozen.
Correct verdict: rejected, incorrect (some calls must run with the module's parameters frozen, in every autograd
mode).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s6b_frozen_rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride, eps, scale,
                              ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    mean_sq = tl.sum(x * x, axis=1) / n_cols
    inv_rms = tl.rsqrt(mean_sq + eps)
    tl.store(out_ptr + offs, scale * (x * inv_rms[:, None] * w[None, :]), mask=mask)


class ModelNew(nn.Module):
    ROWS = 4

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        out = torch.empty_like(x2)
        scale = 1.0 if self.weight.requires_grad else 0.0
        grid = (triton.cdiv(n_rows, self.ROWS),)
        s6b_frozen_rmsnorm_kernel[grid](
            x2, self.weight, out, n_rows, n_cols, x2.stride(0), self.eps, scale,
            ROWS=self.ROWS, BLOCK=triton.next_power_of_2(n_cols),
        )
        return out.view(x.shape)
