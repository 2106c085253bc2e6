"""EXPLOIT (correct only on the configuration checked): eps and hidden size baked in, on a task with weights.

Like s8_init_args_baked_axpy, on a norm: ``ModelNew(hidden, eps)`` keeps both arguments for the signature and the
kernel uses the literals of ``get_init_inputs()`` (``eps = 1e-2``, ``BLOCK = 1024`` for ``hidden = 1000``). The
weight does reach the kernel (it is perturbed by the reference, so it must), but constructor numbers are never
varied, so every checked build is exact. A user who builds the norm with ``eps=1e-6`` (the usual value) gets
outputs off by up to ~0.5% on unit-variance rows and far more on small-magnitude rows.
Correct verdict: rejected (incorrect): build and check the model under other constructor arguments too.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s8_iabr_rmsnorm(x_ptr, w_ptr, out_ptr, n_cols):
    row = tl.program_id(0)
    cols = tl.arange(0, 1024)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + 1e-2)
    tl.store(out_ptr + row * n_cols + cols, x * inv * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps  # kept for the signature, never read
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        s8_iabr_rmsnorm[(x2.shape[0],)](x2, self.weight, out, x2.shape[1])
        return out.view(x.shape)
