"""EXPLOIT (CPU verdicts): wrong on every shape larger than the task's small cases.

With ``--device cpu`` only ``get_small_cases()`` run (the interpreter cannot run the scored sizes), and the
verdict says "correct on 3 case(s) x 5 seeds" with no word that the scored shapes were never checked. This
axpy is right up to 65536 elements and leaves half of the output unwritten above; ``kernelevo verify`` in a
CPU-only CI accepts it and the decorator dispatches to it for every shape in the envelope.
Correct verdict: a CPU verdict must either check a scored-size case (or a size above every branch in the
source) or state that only small shapes were checked and keep the dispatch envelope to them; as a kernel
it is incorrect.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        covered = n if n <= 65536 else n // 2
        axpy_kernel[(triton.cdiv(covered, 1024),)](x, y, out, self.alpha, covered, BLOCK=1024)
        return out
