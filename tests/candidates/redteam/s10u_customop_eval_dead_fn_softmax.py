"""EXPLOIT (static layer, older than the unread rule): custom_op evaluates a computed string annotation at import.

The table-free twin of s10u_customop_annotation_eval_softmax. ``torch.library.custom_op`` infers the op's schema by
``eval``-uating every string annotation in the prototype's globals (torch/_library/infer_schema.py), and
evaluator/static_annotations.py judges only the annotation expression, which may be a plain name: ``x: SPEC``, with
``SPEC`` a module-level string built by concatenation. Whatever the string says runs at import, in the guards
module's globals in the guarded process (the OwnOpBodies wrapper is what custom_op is handed) and in the candidate's
in the plain one: here it finds the module holding ``ro``+``ws`` in ``sys.modules`` and appends that function to
``KEEP``, then evaluates to ``torch.Tensor``. ``rows`` is named by no code at all, so it is dead (as it was before
26b9503) and exempt from torch-compute and private-api: it pops the op recorder and runs torch.softmax; forward
calls ``KEEP[0](x)`` and a decoy kernel copies the answer. Statically clean before and after 26b9503; accepted on CPU.
Correct verdict: rejected (static_violation): a string evaluated as code; torch compute and a private API on the
forward path.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def rows(x):
    with torch.utils._python_dispatch._disable_current_modes():
        return torch.softmax(x, dim=-1)


KEEP = []
SPEC = (
    "[m.__dict__['KE' + 'EP'].append(m.__dict__['ro' + 'ws'])"
    " for m in list(__import__('sys').modules.values())"
    " if 'ro' + 'ws' in getattr(m, '__dict__', {}) and 'KE' + 'EP' in m.__dict__] and __import__('torch').Tensor"
)


@torch.library.custom_op("s10u::ident_d", mutates_args=())
def ident(x: SPEC) -> torch.Tensor:
    return x.clone()


@triton.jit
def s10u_cd_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = KEEP[0](x)
        out = torch.empty_like(y)
        n = y.numel()
        s10u_cd_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
