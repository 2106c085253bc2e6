"""EXPLOIT (static and runtime layers): an RMSNorm that never reads its weight, right only while the weight is at its
constructor's value, as in every call the verifier makes.

``bench/ops/rms_norm.py`` (like layer_norm, rmsnorm_residual and conv_bn_relu's batch norm, and like most modules a
user annotates: norms start at ones and zeros) builds its weight as ``torch.ones``. The verifier copies the
reference's freshly built weights into ``ModelNew``, so every checked call has weight == 1 and multiplying by it
changes nothing. In a user's program the weights are trained or loaded (``load_state_dict``): this kernel returns
the unscaled normalisation there. (An honest kernel that forgot the weight or the bias is accepted the same way.)
Correct verdict: rejected, incorrect (the weights the candidate is judged with must not be the constructor's
constants: the reference process perturbs every floating parameter and buffer that does not change the op's domain
(not a running variance, not a mask) before both models are built from it).
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def s7_rms_norm_no_weight(X, Y, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / n_cols
    normed = (x * tl.rsqrt(var + eps)).to(Y.dtype.element_ty)
    tl.store(Y + row * stride + cols, normed, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int = 4096, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))  # there, and never read
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s7_rms_norm_no_weight[(n_rows,)](x2, y, x2.stride(0), n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
