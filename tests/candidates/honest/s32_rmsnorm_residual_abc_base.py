"""Fused residual-add + RMSNorm in the style of SGLang's layernorm layer: an abstract `NormBase(nn.Module, ABC)`
with `@abstractmethod` hooks, the concrete `RMSNorm` dispatching on whether a residual is given, a
`HAS_RESIDUAL` constexpr flag in one kernel for both paths, a module logger, `warnings.warn` for layouts it
must copy, `math.prod` for the row count and a `contextlib.nullcontext()` around the launch."""
import contextlib
import logging
import math
import warnings
from abc import ABC, abstractmethod

import torch
import triton
import triton.language as tl
from torch import nn

logger = logging.getLogger(__name__)


@triton.jit
def _add_rmsnorm_kernel(
    x_ptr, res_ptr, w_ptr, h_ptr, y_ptr,
    n_cols, eps,
    HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    base = row * n_cols
    dt = y_ptr.dtype.element_ty
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0)
    if HAS_RESIDUAL:
        r = tl.load(res_ptr + base + cols, mask=mask, other=0.0)
        h = (x.to(tl.float32) + r.to(tl.float32)).to(dt)
        tl.store(h_ptr + base + cols, h, mask=mask)
    else:
        h = x
    hf = h.to(tl.float32)
    ms = tl.sum(hf * hf, axis=0) / n_cols
    rstd = tl.math.rsqrt(ms + eps)
    normed = (hf * rstd).to(dt).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + cols, (w * normed).to(dt), mask=mask)


class NormBase(nn.Module, ABC):
    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.variance_epsilon = eps

    @abstractmethod
    def forward_triton(self, x: torch.Tensor, residual: torch.Tensor | None):
        ...

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None):
        return self.forward_triton(x, residual)


class RMSNorm(NormBase):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__(hidden_size, eps)
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=torch.bfloat16))

    def forward_triton(self, x: torch.Tensor,
                       residual: torch.Tensor | None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if not x.is_contiguous():
            warnings.warn("RMSNorm: non-contiguous input is copied", stacklevel=2)
            x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = math.prod(x.shape[:-1])
        y = torch.empty_like(x)
        has_residual = residual is not None
        if has_residual:
            residual = residual.contiguous()
            h = torch.empty_like(x)
        else:
            residual, h = x, x
        BLOCK = triton.next_power_of_2(n_cols)
        logger.debug("rmsnorm rows=%d cols=%d residual=%s", n_rows, n_cols, has_residual)
        with contextlib.nullcontext():
            _add_rmsnorm_kernel[(n_rows,)](x, residual, self.weight, h, y, n_cols, self.variance_epsilon,
                                           HAS_RESIDUAL=has_residual, BLOCK=BLOCK, num_warps=8)
        if has_residual:
            return h, y
        return y


class ModelNew(RMSNorm):
    def __init__(self, hidden: int = 4096, eps: float = 1e-5):
        super().__init__(hidden, eps)
