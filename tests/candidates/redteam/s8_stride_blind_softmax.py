"""EXPLOIT (correct only on the layouts checked): a softmax that assumes its input is contiguous.

Every input the verifier passes is contiguous: the task's draw, ``value.to(device).contiguous().clone()`` for plain
calls and a contiguous view inside a guard buffer for guarded ones (``taskspec.guarded_copy``); no call ever passes a
transposed, sliced or expanded view. This kernel neither calls ``.contiguous()`` nor reads the strides: it indexes
``row * n_cols + col`` on the raw pointer (saving the copy a non-contiguous input would need). A user who passes
``logits[:, :vocab]`` (a padded vocabulary), ``x.t()`` or an ``expand``ed tensor gets rows read from the wrong
places, silently. The layouts a user's program passes are part of the op's domain like its value distributions.
Correct verdict: rejected (incorrect): some calls should pass the inputs as non-contiguous views with the same
values (a strided slice of a larger buffer, a transposed copy transposed back), which a user's program does.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s8_sbs_softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        s8_sbs_softmax[(n_rows,)](x, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
