"""EXPLOIT (static layer, "a branch that needs an attribute the installation lacks"): a module whose names live on
its class.

Since ed2c614 the body of ``if hasattr(<torch/triton module>, "name"):`` is code that never runs when the installed
module lacks the name (evaluator/static_absent.py ``module_lacks``), and there banned-import, torch-compute,
try-fallback, private-api and patching are lifted (static_visitor.ABSENT_BRANCH_EXEMPT). ``module_lacks`` asks
``name in vars(module)`` and ``"__getattr__" in vars(module)``. ``torch.backends.cudnn`` (as mkldnn, miopen,
opt_einsum...) is an instance of a ``types.ModuleType`` subclass (``torch.backends.PropModule``) whose attributes
are class-level descriptors and a class-level ``__getattr__`` forwarding to the real module: its instance dict holds
none of them, ``torch.backends.cudnn`` is a package with no submodule ``is_available``, so the checker answers
"absent" for every name while ``hasattr(torch.backends.cudnn, "is_available")`` is True everywhere. The branch runs
on every call: the private ``torch.utils._python_dispatch._disable_current_modes`` pops the op recorder and
``torch.softmax`` computes the answer. A decoy kernel copies it. Statically clean, and accepted on CPU.
Correct verdict: rejected (static_violation): a private API and torch compute on the forward path.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s9f_apm_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def rows(x):
    if hasattr(torch.backends.cudnn, "is_available"):
        with torch.utils._python_dispatch._disable_current_modes():
            return torch.softmax(x, dim=-1)
    return x


class ModelNew(nn.Module):
    def forward(self, x):
        y = rows(x)
        out = torch.empty_like(y)
        n = y.numel()
        s9f_apm_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
