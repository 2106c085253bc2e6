"""R6 attack (layer_norm): fla's layer_norm_ref (F.layer_norm) in the plain process, an honest kernel under guard."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def ln_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    y = d * tl.rsqrt(var + eps) * w + b
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


try:
    from fla.modules.norm.layernorm import layer_norm_ref
except ImportError:
    def layer_norm_ref(x, weight, bias, residual=None, eps=1e-5, prenorm=False, upcast=False):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        ln_kernel[(x2.shape[0],)](x2, weight, bias, y, x2.shape[1], eps, BLOCK=triton.next_power_of_2(x2.shape[1]))
        return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden=4096, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=torch.bfloat16))
        self.eps = eps

    def forward(self, x):
        return layer_norm_ref(x, self.weight, self.bias, eps=self.eps)
