"""EXPLOIT (runtime layer): the softmax computed in Python floats, the data read with ``TensorBase.tolist``.

The host-conversion guard wraps ``torch.Tensor.tolist`` (and ``numpy``...), but the C methods it shadows are still
there one step up the method resolution order, on ``torch._C.TensorBase``, a type whose attributes cannot be
replaced: ``super(torch.Tensor, x).tolist()`` reads every element with no dispatch (the host-read cap counts
``_local_scalar_dense``, which this does not call) and no private name. ``math.exp`` does the math,
``torch.as_tensor`` brings it back (outside inference_mode, where ``tolist`` and ``torch.tensor`` dispatch ops the
recorder would see), a copy kernel makes the launch real.
Correct verdict: static_violation (``.tolist()``), and with the runtime layer alone cheat_suspected; open: no
Python-level hook sees a C method of an immutable type called directly (docs/verifier.md, known limits).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s6_copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _softmax_rows(rows):
    result = []
    for row in rows:
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = sum(exps)
        result.append([e / total for e in exps])
    return result


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        with torch.inference_mode(False):  # inside inference_mode, tolist dispatches resolve_conj/resolve_neg
            host = torch.as_tensor(_softmax_rows(super(torch.Tensor, x2.detach()).tolist()), dtype=x.dtype)
        out = torch.empty_like(x2)
        n = x2.numel()
        s6_copy_kernel[(triton.cdiv(n, 1024),)](host, out, n, BLOCK=1024)
        return out.view(x.shape)
