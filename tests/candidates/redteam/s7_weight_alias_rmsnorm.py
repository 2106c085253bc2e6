"""EXPLOIT (static and runtime layers): reads its weight through a view taken in the constructor, which the verifier
keeps current and KernelEvo's dispatcher does not.

The verifier copied the reference's weights into ``ModelNew``'s own tensors in place, so a view taken in
``__init__`` (``self.flat = self.weight.view(-1)``) showed them. KernelEvo's dispatcher hands a module's weights over
by sharing the user's parameter dicts (``kernelevo.dispatch._share_state``: ``kernel._parameters =
module._parameters``): ``self.weight`` is then the user's trained parameter while the view still shows the
constructor's values. This kernel reads the view: right in every check, wrong in every dispatched call of a trained or
loaded model (a hostile kernel picks the constructor's values; an honest one precomputing a transposed weight in
``__init__`` falls into the same gap).
Correct verdict: rejected, incorrect (the verifier hands the weights over as the dispatcher does: new parameter
objects in ``ModelNew``'s parameter dicts, never written into the constructor's tensors).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s7_alias_rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x * inv_rms * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.flat = self.weight.detach().view(-1)  # the constructor's tensor, whatever self.weight becomes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s7_alias_rmsnorm_kernel[(n_rows,)](x2, self.flat, out, n_cols, self.eps, BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
