"""EXPLOIT (static layer, "named in no string"): custom_op evaluates a computed string annotation that reads the table.

evaluator/static_unread.py takes ``HOOK = {"r": rows}`` for unread: no running code names ``HOOK`` and no string of
the file holds the word (the rule's guard against look-ups by name; "a computed name is refused wherever a name is
looked up"). But ``torch.library.custom_op`` infers the op's schema by ``eval``-uating every string annotation
(torch/_library/infer_schema.py, ``eval(annotation_type, prototype_function.__globals__)``), and an annotation may be a
plain name (static_annotations checks only the annotation expression: ``x: SPEC``), here a module-level string built
by concatenation, so neither the word ``HOOK`` nor any code shape is visible. The string runs at import: it finds the
module that holds ``HO``+``OK`` in ``sys.modules`` (eval's globals are the harness's guards module in the guarded
process, whose OwnOpBodies wrapper hands custom_op a functools.wraps wrapper; the candidate's own in the plain one) and
appends ``HOOK["r"]`` to ``KEEP``, then evaluates to ``torch.Tensor`` so the schema is valid. ``rows`` is named only
in the unread table, so it is dead and exempt from torch-compute and private-api: it pops the op recorder and runs
torch.softmax; forward calls ``KEEP[0](x)`` and a decoy kernel copies the answer. Statically clean, accepted on CPU.
(The eval is a hole of its own: any code, built at run time, runs at import; the unread table is what makes the
torch work invisible.)
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


HOOK = {"r": rows}
KEEP = []
SPEC = (
    "[m.__dict__['KE' + 'EP'].append(m.__dict__['HO' + 'OK']['r'])"
    " for m in list(__import__('sys').modules.values())"
    " if 'HO' + 'OK' in getattr(m, '__dict__', {}) and 'KE' + 'EP' in m.__dict__] and __import__('torch').Tensor"
)


@torch.library.custom_op("s10u::ident", mutates_args=())
def ident(x: SPEC) -> torch.Tensor:
    return x.clone()


@triton.jit
def s10u_ce_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = KEEP[0](x)
        out = torch.empty_like(y)
        n = y.numel()
        s10u_ce_copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
