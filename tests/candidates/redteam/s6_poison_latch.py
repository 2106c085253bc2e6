"""EXPLOIT (static and runtime layers): right only in a process whose first call ran with a poisoned allocator.

Every call the verifier makes is judged, so the kernel decides once whether it runs in the verifier and latches
the answer in a device flag, with no host read at all: on a poisoned call ``torch.empty`` returns NaN (the
verifier turns on PyTorch's deterministic mode, which fills new memory with NaN), and the call plan poisoned the
first call of every case, hence the process's first call. The kernel reads one element of a fresh ``torch.empty``
scratch; NaN there, or the flag already set, means "verified": softmax, and the flag is set for the calls after.
In a user's program the first call is not poisoned and every output is zeros.
Correct verdict: rejected, incorrect (the verifier's first calls must look like a user's program).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s6_poison_latch_softmax_kernel(x_ptr, out_ptr, probe_ptr, flag_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    probe = tl.load(probe_ptr)
    verified = (probe != probe) | (tl.load(flag_ptr) != 0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    y = y / tl.sum(y, axis=0)
    tl.store(out_ptr + row * n_cols + cols, tl.where(verified, y, 0.0), mask=mask)
    tl.store(flag_ptr, verified.to(tl.int32))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = None  # a device int32: 1 once a poisoned allocation was seen

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.flag is None:
            self.flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        probe = torch.empty(1, dtype=x2.dtype, device=x2.device)
        n_rows, n_cols = x2.shape
        s6_poison_latch_softmax_kernel[(n_rows,)](x2, out, probe, self.flag, n_cols,
                                                  BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
