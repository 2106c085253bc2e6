"""EXPLOIT (correct only on the configuration checked): a constructor argument baked into the kernel.

The verifier builds ``ModelNew(*get_init_inputs())`` with the task's one constructor argument list in every build
(``evaluator/sandboxed/reference.py`` sends ``list(self.task.init_inputs())``; only trainable parameters are
perturbed, plain numbers never are). This axpy accepts ``alpha`` and ignores it: the kernel multiplies by the
constant 1.75 that ``get_init_inputs`` returns. Every checked call is exact; a user who builds the op with any other
alpha (the whole point of a constructor argument) silently gets ``1.75 * x + y``. The same hole takes eps out of a
norm or the scale out of ``row_sum_tiny``.
Correct verdict: rejected (incorrect): the verifier must also build the model with other constructor arguments
(perturbed numbers of the same type and sign, as it perturbs parameters) and check those builds too, or refuse a
constructor argument that never reaches the computation.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s8_iab_axpy(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 1.75 * x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha  # kept for the signature, never read

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x1, y1 = x.contiguous(), y.contiguous()
        out = torch.empty_like(x1)
        n = x1.numel()
        s8_iab_axpy[(triton.cdiv(n, 1024),)](x1, y1, out, n, BLOCK=1024)
        return out
