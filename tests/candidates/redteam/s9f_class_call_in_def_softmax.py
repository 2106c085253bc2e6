"""EXPLOIT (static layer, forward path): ``Cls.anything(...)`` in a function is "no stored reference" since ed2c614.

evaluator/static_paths.py ``stored_roots`` now skips the class of any ``Cls.method(...)`` call that stands inside a
``def`` ("Cls.apply(...) in a function: runs when it runs, which callees follows"), for fla's
``LayerNormLinearFunction.apply``. The exemption is not limited to ``apply`` or to autograd Functions: here
``_register`` (run once at import, so on no forward path) calls ``Backend.make()``, a classmethod returning an
instance, and keeps it in ``KEEP``. The class was a stored root before ed2c614, so its methods were on the forward
path; now they are not, and forward's ``KEEP[0].rows(x)`` (a method call on a list element the checker cannot type)
runs ``torch.softmax`` unseen: the torch-compute rule holds only on the forward path. Statically clean; the run time's
op recorder still sees aten.softmax (cheat_suspected), so on CPU it is rejected, for the wrong layer's reason.
Correct verdict: rejected (static_violation): torch compute on the forward path.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

KEEP = []


class Backend:
    @classmethod
    def make(cls):
        return cls()

    def rows(self, x):
        return torch.softmax(x, dim=-1)


def _register():
    KEEP.append(Backend.make())


_register()


@triton.jit
def s9f_ccd_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = KEEP[0].rows(x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_ccd_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
