"""SiluAndMul as vLLM's layer code writes activation ops: a ``CustomOp`` base with a class registry,
``forward_native`` (the PyTorch definition, used by the self-test below) and a platform-specific
``forward_cuda`` / ``forward_cpu`` backed by a Triton kernel; ``dispatch_forward`` picks the method once.

Rounding follows eager bf16: silu is computed in fp32 and rounded to the input dtype before the product.
"""

from __future__ import annotations

import enum
import logging
from typing import Callable, Dict, Optional, Type

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import nn

logger = logging.getLogger(__name__)


class PlatformEnum(enum.Enum):
    CUDA = enum.auto()
    ROCM = enum.auto()
    CPU = enum.auto()


def _detect_platform() -> PlatformEnum:
    if torch.cuda.is_available():
        return PlatformEnum.ROCM if torch.version.hip is not None else PlatformEnum.CUDA
    return PlatformEnum.CPU


CURRENT_PLATFORM: PlatformEnum = _detect_platform()


class CustomOp(nn.Module):
    """Base class for custom ops: dispatches ``forward`` to the platform's implementation."""

    op_registry: Dict[str, Type["CustomOp"]] = {}

    def __init__(self) -> None:
        super().__init__()
        self._forward_method = self.dispatch_forward()

    def forward(self, *args, **kwargs):
        return self._forward_method(*args, **kwargs)

    def forward_native(self, *args, **kwargs):
        """PyTorch-native implementation of the forward method (reference / torch.compile path)."""
        raise NotImplementedError

    def forward_cuda(self, *args, **kwargs):
        raise NotImplementedError

    def forward_hip(self, *args, **kwargs):
        # ROCm kernels are the CUDA ones, built through Triton.
        return self.forward_cuda(*args, **kwargs)

    def forward_cpu(self, *args, **kwargs):
        # Triton runs on CPU in interpreter mode; use the same kernel.
        return self.forward_cuda(*args, **kwargs)

    def dispatch_forward(self) -> Callable:
        if CURRENT_PLATFORM is PlatformEnum.ROCM:
            return self.forward_hip
        if CURRENT_PLATFORM is PlatformEnum.CPU:
            return self.forward_cpu
        return self.forward_cuda

    @classmethod
    def register(cls, name: str):
        def decorator(op_cls):
            assert name not in cls.op_registry, f"Duplicate op name: {name}"
            op_cls._forward_method = name
            cls.op_registry[name] = op_cls
            return op_cls

        return decorator


@triton.jit
def _silu_and_mul_kernel(
    out_ptr,
    in_ptr,
    d,
    stride_in,
    stride_out,
    BLOCK_SIZE: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    pid_d = tl.program_id(1)
    offs = pid_d * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < d
    gate = tl.load(in_ptr + token * stride_in + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(in_ptr + token * stride_in + d + offs, mask=mask, other=0.0).to(tl.float32)
    act = (gate / (1.0 + tl.exp(-gate))).to(out_ptr.dtype.element_ty).to(tl.float32)
    tl.store(out_ptr + token * stride_out + offs, (act * up).to(out_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(out: torch.Tensor, x: torch.Tensor, block_size: Optional[int] = None) -> None:
    """Writes ``silu(x[..., :d]) * x[..., d:]`` into ``out`` (vLLM's ``ops.silu_and_mul`` signature)."""
    d = x.shape[-1] // 2
    num_tokens = x.numel() // x.shape[-1] if x.numel() else 0
    if num_tokens == 0:
        return
    x2 = x.reshape(num_tokens, x.shape[-1])
    o2 = out.view(num_tokens, d)
    if block_size is None:
        block_size = min(1024, triton.next_power_of_2(d))
    grid = (num_tokens, triton.cdiv(d, block_size))
    _silu_and_mul_kernel[grid](o2, x2, d, x2.stride(0), o2.stride(0), BLOCK_SIZE=block_size)


@CustomOp.register("silu_and_mul")
class SiluAndMul(CustomOp):
    """An activation function for SwiGLU.

    The function computes x -> silu(x[:d]) * x[d:] where d = x.shape[-1] // 2.

    Shapes:
        x: (num_tokens, 2 * d) or (batch_size, seq_len, 2 * d)
        return: (num_tokens, d) or (batch_size, seq_len, d)
    """

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        """PyTorch-native implementation equivalent to forward()."""
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]

    def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % 2:
            raise ValueError(f"SiluAndMul expects an even last dimension, got {x.shape[-1]}")
        if x.stride(-1) != 1:
            x = x.contiguous()
        d = x.shape[-1] // 2
        output_shape = x.shape[:-1] + (d,)
        out = torch.empty(output_shape, dtype=x.dtype, device=x.device)
        silu_and_mul(out, x)
        return out


class ModelNew(SiluAndMul):
    pass


if __name__ == "__main__":
    torch.manual_seed(0)
    layer = ModelNew()
    for shape in [(37, 246), (66, 128), (3, 5, 64)]:
        x = torch.randn(*shape, dtype=torch.bfloat16)
        ref = layer.forward_native(x)
        got = layer(x)
        torch.testing.assert_close(got, ref, atol=1e-2, rtol=1e-2)
        logger.warning("ok %s", shape)
