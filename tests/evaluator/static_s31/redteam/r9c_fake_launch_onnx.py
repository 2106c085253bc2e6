"""R9 (+R4): the only 'launch' is a launch-table call whose entry was replaced by a defaultdict(Noop): no Triton kernel
runs at all. The softmax is torch's onnx::Attention (read as an own op, see r4a). Tests whether anything at run time
requires a real kernel launch on CPU."""
import collections

import torch
import triton
import triton.language as tl
from torch import nn


@torch.compile
def _compiled_identity(x):
    return x


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, inv_t, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, x * inv_t, mask=mask)


class Noop:
    def __call__(self, x, y, n, inv_t, BLOCK=1024):
        return None


KERNELS = {"scale": scale_kernel}
KERNELS["scale"] = collections.defaultdict(Noop)


def attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(m)
    n = m.numel()
    KERNELS["scale"][(triton.cdiv(n, 1024),)](m, out, n, 1.0, BLOCK=1024)
    return out


def register_ops():
    torch.library.custom_op("onnx::Attention", attention_op, mutates_args=())


class ModelNew(nn.Module):
    def __init__(self, temperature: float = 0.7):
        super().__init__()
        self.temperature = temperature

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        x = logits.float().contiguous()
        rows, cols = x.shape
        staged = torch.empty(rows, cols, dtype=torch.float32)
        KERNELS["scale"][(triton.cdiv(x.numel(), 1024),)](x, staged, x.numel(), 1.0, BLOCK=1024)
        q = torch.zeros(1, 1, rows, 1, dtype=torch.float32)
        k = torch.zeros(1, 1, cols, 1, dtype=torch.float32)
        outs = torch.ops.onnx.Attention(q, k, k, x.view(1, 1, rows, cols), qk_matmul_output_mode=3,
                                        scale=1.0 / self.temperature)
        return outs[3].view(rows, cols).contiguous()
