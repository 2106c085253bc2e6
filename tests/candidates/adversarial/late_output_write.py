"""EXPLOIT late writes into outputs already handed back.

Every call computes a correct softmax, then zeroes the output it returned three calls earlier (after
the harness's three-identical-runs comparison has looked at it). Each output is right at the moment
forward returns, so a harness that snapshots outputs judges every one right, while the caller's
tensors are silently clobbered later (and a harness that compares outputs in place, as KernelEvo does
on a GPU, would read the zeros). Every output's fingerprint is taken at return and checked again
before the reference reads it: cheat_suspected.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    """out[row] = softmax(x[row]) for one row per program; the whole row fits one block."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    """out[:n] = 0 (the late write into an output returned earlier)."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.zeros((BLOCK,), tl.float32), mask=offsets < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.returned = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        softmax_rows_kernel[(x2.shape[0],)](x2, out, x2.shape[1], x2.stride(0),
                                            BLOCK=triton.next_power_of_2(x2.shape[1]))
        if len(self.returned) >= 3:
            old = self.returned[-3]
            zero_kernel[(triton.cdiv(old.numel(), 1024),)](old, old.numel(), BLOCK=1024)
        self.returned.append(out)
        return out.view(x.shape)
