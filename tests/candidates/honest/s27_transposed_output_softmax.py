"""HONEST (a non-contiguous output): the softmax is written column-major into a (cols, rows) buffer and returned as its
transpose, a strided view (``out.t()``), as a kernel tuned for a transposed consumer may return it.

Every value is right and every call's output is fresh memory; only its layout is not the contiguous one. The plain
process reads such an output through a contiguous copy (evaluator/sandboxed/plain.py ``_host_bytes``) both when it is
returned and after the last call. Correct verdict: accepted.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s27_softmax_colmajor(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + cols * n_rows + row, y / tl.sum(y, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        out_t = torch.empty((n_cols, n_rows), dtype=x.dtype, device=x.device)
        s27_softmax_colmajor[(n_rows,)](x2, out_t, n_rows, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out_t.t()
