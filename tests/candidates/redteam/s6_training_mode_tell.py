"""EXPLOIT (static and runtime layers): right only in training mode, the mode the verifier leaves ``ModelNew`` in.

The reference model is judged in eval mode, but the candidate's module is built and called without ``.eval()``:
``self.training`` is always True in the verifier. A user who drops the kernel into a model served for inference
calls ``model.eval()`` first; this kernel computes the softmax in training mode and writes zeros in eval mode.
Correct verdict: rejected, incorrect (for an op whose reference gives the same answer in both modes, the
verifier must call the candidate in both, at secret positions; for one that does not, in the reference's mode).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s6_mode_softmax_kernel(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, scale * (y / tl.sum(y, axis=0)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        scale = 1.0 if self.training else 0.0
        s6_mode_softmax_kernel[(n_rows,)](x2, out, n_cols, scale, BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
