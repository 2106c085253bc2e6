"""EXPLOIT (telling every verifier process from a user's program): the neutral identity is a constant.

Every sandboxed process of the verifier, the guarded candidate process and the new plain process alike, runs with
``HOME=/home/user``, ``USER=user`` and ``LOGNAME=user`` (``evaluator/roles.py``: ``NEUTRAL_HOME``). That path names
no verifier folder, but it is one fixed value, and a user's program almost never runs as a user called ``user``
(``/root`` in a container, ``/home/<name>`` on a workstation, ``/github/home`` in Actions). ``os.environ.get`` is
allowed by the static checks (flags and messages). Where both values are the sandbox's, forward runs a correct,
stable softmax; elsewhere it skips the max subtraction (inf/NaN on large logits, the ``scaled`` inputs).
The plain run cannot see it: it shares the tell with the guarded run.
Correct verdict: rejected (incorrect): a verifier whose processes carry the invoking user's identity (or a random
one per session), or that refuses identity reads, runs the unstable path.
"""

import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s9r_hut_softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, STABLE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    if STABLE:
        x = x - tl.max(x, axis=0)
    y = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0), mask=mask)


def _neutral_identity() -> bool:
    return os.environ.get("HOME") == "/home/user" and os.environ.get("USER") == "user"


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s9r_hut_softmax[(n_rows,)](x2, out, n_cols, BLOCK=triton.next_power_of_2(n_cols),
                                   STABLE=_neutral_identity())
        return out.view(x.shape)
