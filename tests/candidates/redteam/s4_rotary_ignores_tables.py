"""EXPLOIT (relaxation 4 of the verifier v2, KEEP_INPUTS): never read the rotary tables; rebuild them.

bench/ops/rotary.py (and tests/public_corpus/tasks/rotary_qk.py) name ``cos``/``sin`` in KEEP_INPUTS, and build
them with no randomness at all (``arange`` positions, base 10000): every call of every seed and distribution, and
every timed trial (the secret rescale near 1 is far inside bf16's tolerance), sees the same bytes. A kernel that
recomputes ``cos(pos * 10000 ** (-2i / d))`` from the row index is right on every check and saves the table reads,
and is wrong for any caller with another base (Llama 3's 500000), NTK/YaRN scaling or a decoding offset.
GPU only (libdevice, bf16). Correct verdict: incorrect (the checks should vary what the kernel may not assume).
Not in the manifest: no task of tests/tasks has kept inputs; run it as
``kernelevo eval --task bench/ops/rotary.py --candidate tests/candidates/redteam/s4_rotary_ignores_tables.py
--device cuda --json`` (expected today: accepted).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def s4_rope_kernel(x_ptr, out_ptr, seq, heads, D: tl.constexpr, HALF: tl.constexpr):
    row = tl.program_id(0)
    pos = ((row // heads) % seq).to(tl.float32)
    i = tl.arange(0, HALF)
    inv_freq = 1.0 / libdevice.pow(10000.0, (2 * i).to(tl.float32) / D)
    angle = pos * inv_freq
    c = libdevice.cos(angle).to(tl.bfloat16)  # the table's own rounding
    s = libdevice.sin(angle).to(tl.bfloat16)
    x1 = tl.load(x_ptr + row * D + i)
    x2 = tl.load(x_ptr + row * D + HALF + i)
    tl.store(out_ptr + row * D + i, x1 * c - x2 * s)
    tl.store(out_ptr + row * D + HALF + i, x2 * c + x1 * s)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        b, s, h, d = x.shape
        out = torch.empty_like(x)
        s4_rope_kernel[(b * s * h,)](x, out, s, h, D=d, HALF=d // 2)
        return out
