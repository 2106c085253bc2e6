"""Code extraction from real-looking model replies."""

from kernelevo.search.extract import extract_candidate, fenced_blocks

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''
MODEL = '''import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''
FULL = KERNEL + "\n\n" + MODEL


def test_python_fence_with_prose_around():
    reply = f"Here is a faster version.\n\n```python\n{FULL}```\n\nThis fuses the add."
    got = extract_candidate(reply, "stop")
    assert got.error is None and got.source.strip() == FULL.strip()


def test_py_and_bare_fences():
    for tag in ("py", "", "Python"):
        got = extract_candidate(f"```{tag}\n{FULL}```", "stop")
        assert got.source is not None and "class ModelNew" in got.source, tag


def test_several_blocks_picks_the_one_defining_modelnew():
    reply = f"Old:\n```python\nprint('hello')\n```\nNew:\n```python\n{FULL}```\n```bash\npython run.py\n```"
    got = extract_candidate(reply)
    assert "class ModelNew" in got.source and "print('hello')" not in got.source


def test_separate_kernel_block_is_merged():
    reply = f"The kernel:\n```python\n{KERNEL}```\nAnd the module:\n```python\n{MODEL}```"
    got = extract_candidate(reply)
    assert got.error is None and "merged 2 blocks" in got.note
    assert got.source.index("def add_kernel") < got.source.index("class ModelNew")


def test_truncated_reply_is_rejected_with_a_clear_error():
    cut = FULL[: len(FULL) - 60]
    got = extract_candidate(f"Sure.\n```python\n{cut}", "length")
    assert got.source is None and "cut off" in got.error and "max_tokens" in got.error


def test_truncated_reply_with_complete_code_is_accepted():
    got = extract_candidate(f"```python\n{FULL}```\nThe idea is to fuse the", "length")
    assert got.error is None and "class ModelNew" in got.source


def test_unclosed_fence_but_complete_code_is_accepted():
    got = extract_candidate(f"```python\n{FULL}", "stop")
    assert got.error is None and got.source.strip() == FULL.strip()


def test_prose_only_and_empty_replies():
    assert "no code" in extract_candidate("I think you should use shared memory.", "stop").error
    assert "empty" in extract_candidate("   ", "stop").error


def test_unfenced_code_after_prose():
    got = extract_candidate("Here you go:\n" + FULL + "\nHope this helps!", "stop")
    assert got.error is None and "class ModelNew" in got.source and "Hope" not in got.source


def test_syntax_error_names_the_line():
    broken = MODEL.replace("def forward(self, x):", "def forward(self, x)")
    got = extract_candidate(f"```python\n{KERNEL}\n{broken}```", "stop")
    assert got.source is None and "does not parse: line" in got.error


def test_fenced_blocks_reports_unclosed_last_block():
    blocks = fenced_blocks("```python\na = 1\n```\ntext\n```py\nb = 2")
    assert [(b.lang, b.text, b.closed) for b in blocks] == [("python", "a = 1", True), ("py", "b = 2", False)]


def test_strategy_cells_from_kernel_structure():
    from kernelevo.search.extract import classify_strategy

    assert classify_strategy(FULL) == "pointwise-tile2d"
    loop = "    for i in range(4):\n        pass\n"
    looped = FULL.replace("    offs = tl.program_id(0)", loop + "    offs = tl.program_id(0)")
    assert classify_strategy(looped) == "pointwise-looped"
    rowsum = FULL.replace("tl.load(x_ptr + offs, mask=offs < n) + 1", "tl.sum(tl.load(x_ptr + offs), axis=0)")
    assert classify_strategy(rowsum) == "rowwise-1pass"
    assert classify_strategy(FULL.replace("tl.load(x_ptr + offs, mask=offs < n) + 1", "tl.dot(a, b)")) == "matmul-tiled"
    assert classify_strategy("def broken(:") == "unknown"
    assert classify_strategy('SRC = "__global__ void k() { __syncthreads(); }"', "cuda") == "cuda-reduction"
