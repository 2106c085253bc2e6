"""A kernel written against an API the installed Triton no longer has is a compile error, never `crashed`."""

from __future__ import annotations

from pathlib import Path

from evaluator import EvalOptions, evaluate

TASKS = Path(__file__).resolve().parent.parent / "tasks"

BLOCK_POINTER_AXPY = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    x_block = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,))
    y_block = tl.make_block_ptr(y_ptr, shape=(n,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,))
    o_block = tl.make_block_ptr(out_ptr, shape=(n,), strides=(1,), offsets=(start,), block_shape=(BLOCK,), order=(0,))
    x = tl.load(x_block, boundary_check=(0,))
    y = tl.load(y_block, boundary_check=(0,))
    tl.store(o_block, alpha * x + y, boundary_check=(0,))


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _axpy[(triton.cdiv(n, 1024),)](x, y, out, self.alpha, n, BLOCK=1024)
        return out
'''


def test_block_pointers_are_accepted_where_triton_has_them_and_a_compile_error_naming_why_where_it_removed_them(
        tmp_path):
    candidate = tmp_path / "block_pointer_axpy.py"
    candidate.write_text(BLOCK_POINTER_AXPY)
    verdict = evaluate(TASKS / "axpy.py", candidate, "cpu", EvalOptions(seeds=1))
    if verdict.reason == "compile_error":  # Triton 3.9's interpreter: "removed in favor of the tensor descriptor API"
        assert "the installed Triton cannot build this kernel" in verdict.detail, verdict.detail
        assert "Block pointers" in verdict.detail
    else:
        assert verdict.accepted, (verdict.reason, verdict.detail)
