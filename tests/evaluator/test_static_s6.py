"""Static rules that learned honest patterns in session 6, each with the attack next to it that must stay refused:
queries of PyTorch's compile/trace/autocast state, ``if __name__ == "__main__":`` self-tests, and a kernel kept on
``self`` from a module-level factory (``self.kernel = compiled()``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_static_check import make, marked_line

from evaluator.static_check import check_source

HONEST_DIR = Path(__file__).resolve().parents[1] / "candidates" / "honest"

STATE_QUERIES = [
    dict(body="if torch.compiler.is_compiling() or torch.jit.is_scripting() or torch.jit.is_tracing():\n"
              "    pass"),
    dict(body="dt = torch.get_autocast_dtype('cuda') if torch.is_autocast_enabled() else x.dtype"),
    dict(module="def _probe():\n    return torch.compiler.is_dynamo_compiling()", body="flag = _probe()"),
    dict(body="gpu = torch.get_autocast_gpu_dtype()\ncpu = torch.is_autocast_cpu_enabled()"),
]

MAIN_BLOCKS = [
    dict(module="if __name__ == '__main__':\n    from torch.testing import assert_close\n"
                "    m = ModelNew()\n    t = torch.randn(8)\n    assert_close(m(t), t.exp())\n    print('ok')"),
    dict(module="if __name__ == '__main__':\n    import torch.testing\n    torch.testing.assert_close(torch.ones(1), "
                "torch.ones(1))"),
]

FACTORY = """
import torch
from torch import nn
from kernelevo import cuda
import functools

SRC = r'''
extern "C" __global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.f * x[i];
}
'''


@functools.lru_cache(maxsize=None)
def compiled():
    return cuda.compile(SRC, "scale")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = compiled()

    def forward(self, x):
        y = torch.empty_like(x)
        self.kernel[(x.numel() + 255) // 256, 256](x, y, x.numel())
        return y
"""


@pytest.mark.parametrize("parts", STATE_QUERIES + MAIN_BLOCKS, ids=lambda p: next(iter(p.values()))[:40])
def test_honest_probe_or_self_test_is_accepted(parts):
    report = check_source(make(**parts), "cand.py")
    assert report.ok, report.violations


def test_kernel_from_a_cached_factory_kept_on_self_is_launched():
    report = check_source(FACTORY, "cand.py")
    assert report.ok, report.violations
    assert report.launched == ["scale"]


def test_factory_result_kept_but_never_launched_is_still_not_a_launch():
    report = check_source(FACTORY.replace("        self.kernel[(x.numel() + 255) // 256, 256](x, y, x.numel())\n",
                                          "        y.copy_(x)\n"), "cand.py")
    assert "kernel-not-launched" in {v.rule for v in report.violations}, report.violations


REFUSED = [
    # the compilers, tracers and autocast themselves stay refused (only their state queries are inert)
    ("torch-compute", dict(body="f = torch.compile(lambda t: t.exp())  # HERE")),
    ("torch-compute", dict(body="f = torch.jit.script(copy_kernel)  # HERE")),
    ("torch-compute", dict(body="g = torch.jit.trace(copy_kernel, (x,))  # HERE")),
    ("torch-compute", dict(body="with torch.autocast('cpu'):  # HERE\n    pass")),
    ("torch-compute", dict(body="torch.compiler.reset()  # HERE")),
    ("torch-compute", dict(module="JIT = torch.jit  # HERE")),
    ("torch-compute", dict(body="torch.set_autocast_enabled(True)  # HERE")),
    # a main block only counts as dead at module level, in a file that cannot rebind __name__
    ("banned-import", dict(module="__name__ = '__main__'\nif __name__ == '__main__':\n"
                                  "    import torch.testing  # HERE")),
    ("banned-import", dict(module="def f():\n    global __name__\n    __name__ = '__main__'\n\n\n"
                                  "if __name__ == '__main__':\n    import pickle  # HERE")),
    ("banned-import", dict(module="import typing as __name__\nif __name__ == '__main__':\n"
                                  "    import pickle  # HERE")),
    ("banned-import", dict(module="for __name__ in ['__main__']:\n    pass\nif __name__ == '__main__':\n"
                                  "    import pickle  # HERE")),
    ("torch-compute", dict(body="if __name__ == '__main__':\n    out = x.exp()  # HERE")),
    ("banned-import", dict(module="if __name__ != '__main__':\n    import pickle  # HERE")),
    # rules other than banned-import / torch-compute / try-fallback still apply inside a main block
    ("dangerous-builtin", dict(module="if __name__ == '__main__':\n    eval('1')  # HERE")),
    ("patching", dict(module="if __name__ == '__main__':\n    torch.exp = abs  # HERE")),
]


@pytest.mark.parametrize("rule,parts", REFUSED, ids=[p[1][next(iter(p[1]))][:40] for p in REFUSED])
def test_attack_next_to_the_learned_pattern_is_refused(rule, parts):
    source = make(**parts)
    report = check_source(source, "cand.py")
    assert any(v.rule == rule and v.line == marked_line(source) for v in report.violations), report.violations


@pytest.mark.parametrize("path", sorted(HONEST_DIR.glob("s6_*.py")), ids=lambda p: p.stem)
def test_session6_honest_candidates_pass_the_static_checks(path):
    report = check_source(path.read_text(encoding="utf-8"), path.name)
    assert report.ok, report.violations


# --- the CPU's answer for the session's GPU-only honest candidates (manifest.d/honest_s6.yaml, cpu_answer) ---

def _gpu_only_entries() -> list:
    import yaml

    fragment = HONEST_DIR.parent / "manifest.d" / "honest_s6.yaml"
    params = []
    for entry in yaml.safe_load(fragment.read_text(encoding="utf-8"))["entries"]:
        answer = entry.get("cpu_answer")
        if answer is None:
            continue
        # An open runtime false reject depends on the secret input seed (bf16 rounding): not strict.
        marks = [] if answer == "needs_gpu" else [pytest.mark.xfail(strict=False, reason=f"CPU answers {answer}: "
                                                                    "an open runtime false reject (see the note)")]
        params.append(pytest.param(entry, marks=marks, id=Path(entry["file"]).stem))
    return params


@pytest.mark.parametrize("entry", _gpu_only_entries())
def test_gpu_only_honest_candidate_answers_needs_gpu_on_cpu(entry):
    """Never ``crashed`` or ``incorrect`` for what only the CPU interpreter cannot run: exit 2, "--device cuda"."""
    from evaluator import NeedsGPU, evaluate

    task = (HONEST_DIR.parents[1] / "tasks" / entry["task"]).resolve()
    try:
        verdict = evaluate(str(task), str(HONEST_DIR.parent / entry["file"]), device="cpu")
    except NeedsGPU as exc:
        assert "--device cuda" in str(exc), exc
        return
    assert verdict.verdict == "accepted", f"{verdict.verdict} {verdict.reason}: {verdict.detail}"


# --- CUDA source templates: a one-return helper whose parameters only print as integer tokens -----------------

_TEMPLATE_MODULE = '''
import torch
from torch import nn

from kernelevo import cuda


def source(threads):
    return f"""
#define THREADS {threads:d}
extern "C" __global__ void scale(const float* x, float* y, int n) {{
    int i = blockIdx.x * THREADS + threadIdx.x;
    if (i < n) y[i] = BODY;
}}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = cuda.compile(source(256), "scale")

    def forward(self, x):
        y = torch.empty_like(x)
        self.kernel[(x.numel() + 255) // 256, 256](x, y, x.numel())
        return y
'''


def _template(body: str = "2.f * x[i]", define: str = "#define THREADS {threads:d}", helper: str = "") -> str:
    text = _TEMPLATE_MODULE.replace("BODY", body).replace("#define THREADS {threads:d}", define)
    return text.replace("def source(threads):", helper or "def source(threads):")


def test_integer_template_source_is_checked_and_accepted():
    report = check_source(_template(), "cand.py")
    assert report.ok, report.violations
    assert report.launched == ["scale"]


@pytest.mark.parametrize("source", [
    _template(define="#define THREADS {threads}"),  # not known to print an integer
    _template(define="#define THREADS {threads!s:d}"),
    _template(define="#define THREADS {threads:s}"),
    _template().replace('return f"""\n', 'return f"""{threads:d}\n'),  # first: a neighbour outside could join it
    _template(body="at::conv{threads:d}d(x)"),  # digits inside an identifier: conv2d
    _template(body="x[i] * v{threads:d}"),
    _template(helper="def source(threads, code=''):"),  # defaults: a parameter may carry text
    _template(helper="@functools.lru_cache\ndef source(threads):"),
    _template(body="{threads}"),  # used outside a {..:d} token
    _template(define="#define THREADS {threads:d} {threads.__class__}"),
], ids=["no-spec", "conversion", "str-spec", "first", "identifier", "suffix", "default", "decorated", "plain-use",
        "attribute"])
def test_templates_that_could_carry_code_stay_refused(source):
    report = check_source(source, "cand.py")
    assert not report.ok, "template accepted"


def test_banned_code_inside_an_integer_template_is_found():
    report = check_source(_template(body="0; float* p; cudaMalloc(&p, THREADS)"), "cand.py")
    assert any(v.rule == "cuda-source" and "cudaMalloc" in v.message for v in report.violations), report.violations


# --- a launch bound with functools.partial(kernel[grid], ...) and then called -------------------------------------

_PARTIAL = """
import functools
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def k(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        launch = functools.partial(k[GRID], B=128)
        CALL
        return y
"""


def _partial(grid: str = "(triton.cdiv(x.numel(), 128),)", call: str = "launch(x, y, x.numel())") -> str:
    return _PARTIAL.replace("GRID", grid).replace("CALL", call)


def test_partial_of_a_launch_that_is_called_is_a_launch():
    report = check_source(_partial(), "cand.py")
    assert report.ok, report.violations
    assert report.launched == ["k"]


@pytest.mark.parametrize("source,rule", [
    (_partial(call="pass"), "kernel-not-launched"),  # bound but never called: nothing runs
    (_partial(call="launch = print\n        launch(x, y, x.numel())"), "kernel-not-launched"),  # rebound
    (_partial(grid="(0,)"), "empty-grid"),  # the grid inside the partial is judged at the call
    (_partial(grid="(x.numel() * 0,)"), "empty-grid"),
])
def test_partial_launch_walkarounds_are_refused(source, rule):
    report = check_source(source, "cand.py")
    assert rule in {v.rule for v in report.violations}, report.violations


def test_compiler_disable_wrapper_is_inert_and_what_it_wraps_is_still_checked():
    honest = make(module="@torch.compiler.disable\ndef launch(x, out):\n"
                         "    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n"
                         "    return out\n\n\nwrapped = torch.compiler.disable(launch)",
                  body="out = launch(x, out)")
    assert check_source(honest, "cand.py").ok
    attack = make(module="@torch.compiler.disable\ndef act(t):\n    return t.exp()  # HERE", body="out = act(out)")
    report = check_source(attack, "cand.py")
    assert any(v.rule == "torch-compute" and v.line == marked_line(attack) for v in report.violations), \
        report.violations
    for refused in ("torch.compiler.compile", "torch.compiler.allow_in_graph", "torch.compiler.reset"):
        source = make(body=f"f = {refused}  # HERE")
        assert not check_source(source, "cand.py").ok, refused
