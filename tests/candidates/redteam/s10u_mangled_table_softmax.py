"""EXPLOIT (static layer, "a module-level table no running code reads keeps nothing alive"): a class-private name.

evaluator/static_unread.py (26b9503) takes ``_ModelNew__ROWS = {"r": rows}`` for unread: bound once, no dunder,
its value a dict display of a plain name, named in no string, and no running code holds an ``ast.Name`` with the id
``_ModelNew__ROWS``. But inside a class body Python mangles every identifier of the form ``__x`` (not ending in
``__``), global names included: forward's ``__ROWS`` is compiled as a load of the global ``_ModelNew__ROWS``. The
checker compares spellings (static_liveness._Liveness.refs: ``n.id in self.deferred``), so the table counts as unread,
``rows`` (named only there) is a function nothing running refers to, and its body is exempt from torch-compute and
private-api (static_visitor.DEAD_BODY_EXEMPT). At run time forward calls it: the private
``torch.utils._python_dispatch._disable_current_modes`` pops the op recorder and ``torch.softmax`` computes the answer;
a decoy kernel copies it. Statically clean, and accepted on CPU.
Correct verdict: rejected (static_violation): torch compute and a private API on the forward path.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def rows(x):
    with torch.utils._python_dispatch._disable_current_modes():
        return torch.softmax(x, dim=-1)


_ModelNew__ROWS = {"r": rows}


@triton.jit
def s10u_mt_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = __ROWS["r"](x)  # noqa: F821  mangled: the global _ModelNew__ROWS
        out = torch.empty_like(y)
        n = y.numel()
        s10u_mt_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
