"""EXPLOIT (static and runtime layers): one parameter more than the user's module has, so that KernelEvo's dispatcher
never hands the user's weights over, while the verifier did.

The verifier copied the reference's weights into ``ModelNew`` by state-dict name, whatever else ``ModelNew`` held.
KernelEvo's dispatcher shares a module's parameter table only where its names are exactly the user's module's
(``kernelevo.dispatch._share_state``): with a spare parameter beside ``weight`` it shares nothing, and the kernel
normalises with its constructor's ones in every dispatched call of a trained or loaded model (an honest kernel that
registers an extra parameter falls into the same gap).
Correct verdict: rejected, incorrect (the verifier hands the weights over as the dispatcher does: a table whose names
differ from the reference's keeps the constructor's values).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s7_spare_rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x * inv_rms * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.spare = nn.Parameter(torch.zeros(1))  # the user's module has no such parameter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s7_spare_rmsnorm_kernel[(n_rows,)](x2, self.weight, out, n_cols, self.eps,
                                           BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
