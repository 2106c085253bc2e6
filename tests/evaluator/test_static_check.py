"""The static checker: legitimate candidates pass, each rule fires on the line that breaks it, and no
input (garbage, deep nesting, mutated ASTs) makes it raise."""

from __future__ import annotations

import ast
import copy
import random
import textwrap

import pytest

from evaluator.static_check import StaticReport, Violation, check_source

# ----------------------------------------------------------------------------------------- legit code

TRITON_SOFTMAX = '''
"""Row softmax: optional-import guard, autotune over jit, views, casts, cdiv and next_power_of_2."""
import math

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only machines without Triton
    triton = None

import torch
import torch.nn as nn


@triton.autotune(configs=[triton.Config({"WARPS": 4}, num_warps=4)], key=["n_cols"])
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr, WARPS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.seen = set()
        self.scale = nn.Parameter(torch.ones(dim).abs())  # compute in __init__ is fine

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous().float()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        block = triton.next_power_of_2(n_cols)
        assert triton.cdiv(n_cols, block) == 1 and math.prod(x.shape) == x.numel()
        self.seen.add(n_cols)
        if x.dtype not in (torch.float16, torch.float32):
            raise TypeError(f"{type(self).__name__}: unsupported {x.dtype}")
        softmax_kernel[(n_rows,)](x2, out, n_cols, x2.stride(0), BLOCK=block)
        return out.view(x.shape).to(x.dtype)
'''

CUDA_AXPY = '''
import torch
import torch.nn as nn
from kernelevo import cuda

SOURCE = r"""
// cudaMalloc and cudaStreamCreate in comments are not calls
extern "C" __global__ void axpy(const float* x, const float* y, float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const char* note = "cudaDeviceSynchronize in a string literal";
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha
        self.kernel = cuda.compile(SOURCE, "axpy")

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.kernel[((n + 255) // 256,), (256,)](x, y, out, self.alpha, n)
        torch.cuda.synchronize()
        return out
'''

CUDA_MODULE_LEVEL = '''
import torch
import torch.nn as nn
import kernelevo.cuda

BLOCK = 256
SOURCE = f"""
extern "C" __global__ void scale(const float* x, float* out, float a, int n) {{
    int i = blockIdx.x * {BLOCK} + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}}
"""
SCALE = kernelevo.cuda.compile(SOURCE, name="scale")


def launch(x, a):
    out = torch.empty_like(x)
    SCALE[((x.numel() + BLOCK - 1) // BLOCK,), (BLOCK,)](x, out, a, x.numel())
    return out


class ModelNew(nn.Module):
    def forward(self, x, input=None):  # a parameter named like a builtin is not the builtin
        return launch(x.contiguous(), 2.0)
'''

LOAD_INLINE = '''
import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor scale(torch::Tensor x, double a);"
CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void scale_kernel(const float* x, float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i];
}
torch::Tensor scale(torch::Tensor x, double a) {
    auto out = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), (float)a, n);
    return out;
}
"""


@functools.lru_cache(maxsize=None)
def _ext():
    return load_inline(name="scale_ext", cpp_sources=[CPP], cuda_sources=[CUDA], functions=["scale"])


class ModelNew(nn.Module):
    def __init__(self, a: float):
        super().__init__()
        self.a = a

    def forward(self, x):
        return _ext().scale(x.contiguous(), self.a)
'''

AUTOGRAD_AND_HELPER = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x * tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps) * w,
             mask=cols < n_cols)


@triton.jit
def unused_helper(x):
    return x * 2


def _launch(x2, weight, eps):
    out = torch.empty_like(x2)
    rows, cols = x2.shape
    rms_kernel[(rows,)](x2, weight, out, cols, eps, BLOCK=triton.next_power_of_2(cols))
    return out


class RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        ctx.save_for_backward(x2, weight)
        return _launch(x2, weight, eps).view_as(x)

    @staticmethod
    def backward(ctx, grad):  # not on the forward path: torch here is not flagged
        x2, weight = ctx.saved_tensors
        return grad * weight, None, None


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return RMSNorm.apply(x, self.weight, self.eps)
'''

DECORATED_OP = '''
import torch
import triton.language as tl
from triton import jit, cdiv


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
             mask=offs < n)


def fused_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = x.new_empty(x.shape)
    kern = add_kernel
    kern[(cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''


def check(source: str, **kwargs) -> StaticReport:
    return check_source(textwrap.dedent(source), "cand.py", **kwargs)


def rules(report: StaticReport) -> set[str]:
    return {v.rule for v in report.violations}


@pytest.mark.parametrize(
    ("source", "entry", "backend", "kernels", "launched"),
    [
        (TRITON_SOFTMAX, "ModelNew", "triton", ["softmax_kernel"], ["softmax_kernel"]),
        (CUDA_AXPY, "ModelNew", "cuda", ["axpy"], ["axpy"]),
        (CUDA_MODULE_LEVEL, "ModelNew", "cuda", ["scale"], ["scale"]),
        (LOAD_INLINE, "ModelNew", "load_inline", ["scale_ext"], ["scale_ext"]),
        (AUTOGRAD_AND_HELPER, "ModelNew", "triton", ["rms_kernel", "unused_helper"], ["rms_kernel"]),
        (DECORATED_OP, "fused_add", "triton", ["add_kernel"], ["add_kernel"]),
    ],
    ids=["triton-softmax", "cuda-self", "cuda-module", "load-inline-factory", "autograd-helper", "op-function"],
)
def test_legit_candidates_pass(source, entry, backend, kernels, launched):
    report = check(source, entry=entry)
    assert report.violations == []
    assert report.syntax_error is None and report.ok
    assert (report.backend, report.kernels, report.launched) == (backend, kernels, launched)


def test_honest_suite_candidates_pass():
    """The repository's honest candidates (tests/candidates/honest) are all clean."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "candidates" / "honest"
    files = sorted(folder.glob("*.py"))
    for path in files:
        report = check_source(path.read_text(), path.name)
        assert report.ok, (path.name, report.violations)
        assert report.launched, path.name


# ------------------------------------------------------------------------------- one rule at a time

BASE = """
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

{module}

@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
{init}

    def forward(self, x):
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
{body}
        return out
"""


def make(body: str = "", init: str = "", module: str = "") -> str:
    """BASE with code spliced into the forward body, __init__ and module level."""
    return BASE.format(
        module=textwrap.dedent(module),
        init=textwrap.indent(textwrap.dedent(init), " " * 8) or "        pass",
        body=textwrap.indent(textwrap.dedent(body), " " * 8),
    )


def marked_line(source: str) -> int:
    """1-based number of the line carrying the ``# HERE`` marker."""
    return next(i for i, text in enumerate(source.splitlines(), 1) if "# HERE" in text)


def test_base_template_is_clean():
    assert check_source(make(), "cand.py").ok


CASES = [
    # banned-import: allowlist, with reasons
    ("banned-import", dict(module="import os.path  # HERE")),
    ("banned-import", dict(module="import os\nP = os.path.join('a', 'b')  # HERE")),
    ("banned-import", dict(module="import os\nos.environ['TRITON_INTERPRET'] = '0'  # HERE")),
    ("banned-import", dict(module="import os\nENV = os.environ  # HERE")),
    ("banned-import", dict(module="import sys\nM = sys.modules  # HERE")),
    ("banned-import", dict(module="import warnings\nwarnings.simplefilter('ignore')  # HERE")),
    ("banned-import", dict(module="import logging\nlogging.basicConfig(filename='/tmp/log')  # HERE")),
    ("banned-import", dict(module="import einops", body="out = einops.reduce(x, 'a b -> a', 'sum')  # HERE")),
    ("banned-import", dict(module="from threading import Thread  # HERE")),
    ("banned-import", dict(module="import numpy as np  # HERE")),
    ("banned-import", dict(module="import time  # HERE")),
    ("banned-import", dict(module="from . import helper  # HERE")),
    ("banned-import", dict(module="from torch import *  # HERE")),
    ("banned-import", dict(module="from torch import multiprocessing  # HERE")),
    ("banned-import", dict(module="from torch.utils.cpp_extension import load  # HERE")),
    ("banned-import", dict(module="import kernelevo.settings  # HERE")),
    ("banned-import", dict(body="import gc  # HERE")),
    ("banned-import", dict(body="torch.save(out, 'out.pt')  # HERE")),
    ("banned-import", dict(module="try:\n    import ctypes  # HERE\n    LIB = ctypes.CDLL(None)\nexcept ImportError:\n"
                                  "    LIB = None")),
    ("banned-import", dict(module="class Holder:\n    try:\n        import ctypes  # HERE\n    except ImportError:\n"
                                  "        pass")),
    # dangerous-builtin
    ("dangerous-builtin", dict(body="eval('1')  # HERE")),
    ("dangerous-builtin", dict(body="exec('pass')  # HERE")),
    ("dangerous-builtin", dict(body="open('/tmp/x')  # HERE")),
    ("dangerous-builtin", dict(body="setattr(self, 'a', 1)  # HERE")),
    ("dangerous-builtin", dict(body="cache_key = id(x)  # HERE")),
    ("dangerous-builtin", dict(body="getattr(x, 'sha' + 'pe')  # HERE")),
    ("dangerous-builtin", dict(body="getattr(x, '_base')  # HERE")),
    ("dangerous-builtin", dict(body="__import__('os')  # HERE")),
    ("dangerous-builtin", dict(body="raise SystemExit(0)  # HERE")),
    ("dangerous-builtin", dict(body="exit(0)  # HERE")),
    ("dangerous-builtin", dict(body="state = globals()  # HERE")),
    ("dangerous-builtin", dict(module="view = memoryview(b'')  # HERE")),
    # introspection
    ("introspection", dict(body="cls = x.__class__  # HERE")),
    ("introspection", dict(body="d = self.__dict__  # HERE")),
    ("introspection", dict(body="b = __builtins__  # HERE")),
    ("introspection", dict(module="HERE_FILE = __file__  # HERE")),
    ("introspection", dict(module="class Fake:\n    def __eq__(self, other):  # HERE\n        return True")),
    # private-api
    ("private-api", dict(body="torch._C._cuda_getDevice()  # HERE")),
    ("private-api", dict(body="out = torch.ops.aten.mm(x, x)  # HERE")),
    ("private-api", dict(module="from triton.runtime import interpreter  # HERE")),
    # Triton's tutorials import the driver for its device probes: each use is judged by its full name
    ("private-api", dict(module="from triton.runtime import driver\nL = driver.active.launcher_cls  # HERE")),
    ("private-api", dict(body="torch._dynamo.reset()  # HERE")),
    ("private-api", dict(body="pair = F._pair(1)  # HERE")),
    ("private-api", dict(module="import torch._inductor  # HERE")),
    # patching
    ("patching", dict(module="torch.matmul = lambda a, b: a  # HERE")),
    ("patching", dict(module="F.relu = None  # HERE")),
    ("patching", dict(module="torch.Tensor.add = None  # HERE")),
    ("patching", dict(init="torch.backends.cuda.matmul.allow_tf32 = True  # HERE")),
    ("patching", dict(module="del torch.cuda.synchronize  # HERE")),
    ("patching", dict(module="Event = torch.cuda.Event\nEvent.elapsed_time = None  # HERE")),
    ("patching", dict(body="triton.cdiv = max  # HERE")),
    ("patching", dict(module="torch.cuda.current_stream = None  # HERE")),
    # stream-or-state
    ("stream-or-state", dict(body="side = torch.cuda.Stream()  # HERE")),
    ("stream-or-state", dict(body="with torch.cuda.stream(torch.cuda.current_stream()):  # HERE\n    pass")),
    ("stream-or-state", dict(init="self.graph = torch.cuda.CUDAGraph()  # HERE")),
    ("stream-or-state", dict(module="torch.manual_seed(0)  # HERE")),
    ("stream-or-state", dict(init="torch.set_default_dtype(torch.float64)  # HERE")),
    ("stream-or-state", dict(module="torch.use_deterministic_algorithms(True)  # HERE")),
    ("stream-or-state", dict(init="torch.cuda.set_per_process_memory_fraction(0.5)  # HERE")),
    ("stream-or-state", dict(module="torch.set_float32_matmul_precision('medium')  # HERE")),
    ("stream-or-state", dict(module="ExtStream = torch.cuda.ExternalStream  # HERE")),
    # torch-compute (forward path)
    ("torch-compute", dict(body="out = torch.softmax(x, -1)  # HERE")),
    ("torch-compute", dict(body="out = F.relu(x)  # HERE")),
    ("torch-compute", dict(body="out = torch.nn.functional.gelu(x)  # HERE")),
    ("torch-compute", dict(body="out = x.sum()  # HERE")),
    ("torch-compute", dict(body="out.exp_()  # HERE")),
    ("torch-compute", dict(body="out = out.clamp(0, 1)  # HERE")),
    ("torch-compute", dict(body="out = x.max(dim=0).values  # HERE")),
    ("torch-compute", dict(body="out = x @ x  # HERE")),
    ("torch-compute", dict(body="out @= x  # HERE")),
    ("torch-compute", dict(body="out = getattr(torch, 'matmul')(x, x)  # HERE")),
    ("torch-compute", dict(body="out = getattr(x, 'exp')()  # HERE")),
    ("torch-compute", dict(body="out = operator.matmul(x, x)  # HERE")),
    ("torch-compute", dict(body="out = torch.cat([x, x])  # HERE")),
    ("torch-compute", dict(body="out = torch.Tensor.softmax(x, -1)  # HERE")),
    ("torch-compute", dict(body="out = self.fc(x)  # HERE", init="self.fc = nn.Linear(4, 4)")),
    ("torch-compute", dict(body="out = self.fc.forward(x)  # HERE", init="self.fc = nn.Linear(4, 4)")),
    ("torch-compute", dict(body="out = (lambda t: t.tanh())(x)  # HERE")),
    ("torch-compute", dict(module="ACT = F.relu  # HERE", body="out = ACT(out)")),
    ("torch-compute", dict(init="self.act = torch.sigmoid  # HERE")),
    ("torch-compute", dict(module="step = torch.compile(lambda t: t)  # HERE")),
    ("torch-compute", dict(module="from torch import softmax as sm\nSM_OUT = None\n\n\ndef helper(t):\n"
                                  "    return sm(t, -1)  # HERE", body="out = helper(out)")),
    ("torch-compute", dict(module="import operator as op\nSUM = op.methodcaller('sum')  # HERE")),
    ("dangerous-builtin", dict(body="name = 'exp'\nout = operator.methodcaller(name)(x)  # HERE")),
    # hooks of Triton kernels run at every launch: they are on the forward path
    ("torch-compute", dict(module="def prep(nargs):\n    nargs['out_ptr'].zero_()\n    nargs['x_ptr'].exp_()  # HERE\n"
                                  "\n\n@triton.autotune(configs=[triton.Config({}, pre_hook=prep)], key=[])\n"
                                  "@triton.jit\ndef hooked(x_ptr, out_ptr):\n    pass")),
    ("torch-compute", dict(module="@triton.heuristics({'B': lambda args: args['x'].sum()})  # HERE\n"
                                  "@triton.jit\ndef hinted(x, B: tl.constexpr):\n    pass")),
    # functions stored as values can run from forward through names the checker cannot follow
    ("torch-compute", dict(module="def cheat(t):\n    return t.exp()  # HERE", init="self.fn = cheat",
                           body="out = self.fn(out)")),
    ("torch-compute", dict(module="def cheat(t):\n    return t.exp()  # HERE", body="OPS = {'f': cheat}")),
    ("torch-compute", dict(init="self.layers = nn.ModuleList([nn.Linear(4, 4)])",
                           body="out = self.layers[0](out)  # HERE")),
    ("torch-compute", dict(init="self.layers = nn.Sequential(nn.ReLU())",
                           body="for layer in self.layers:\n    out = layer(out)  # HERE")),
    ("torch-compute", dict(body="with torch.cuda.amp.autocast():  # HERE\n    pass")),
    ("introspection", dict(body="side = type(torch.cuda.current_stream())()  # HERE")),
    # structure: the entry point is not replaced, rewired or shadowed
    ("missing-entry", dict(module="class Honest(nn.Module):\n    pass\n\n\ndef later():\n"
                                  "    global ModelNew\n    ModelNew = Honest  # HERE")),
    ("patching", dict(init="self.forward = self.cheat  # HERE")),
    ("patching", dict(init="self.register_forward_hook(lambda m, i, o: o)  # HERE")),
    ("patching", dict(module="class nn:  # HERE\n    Module = object")),
    ("patching", dict(module="F = None  # HERE")),
    ("patching", dict(module="def helper():\n    pass\n\n\nhelper.cache = {}  # HERE")),
    ("private-api", dict(init="self._forward_hooks[0] = lambda m, i, o: o  # HERE")),
    ("tensor-subclass", dict(module="class P(nn.Parameter):  # HERE\n    pass")),
    ("introspection", dict(body="snap = torch.cuda.memory_snapshot()  # HERE")),
    ("banned-import", dict(module="S = torch.UntypedStorage.from_file('/tmp/x', False, 4)  # HERE")),
    ("banned-import", dict(body="x.detach().cpu().tofile('/tmp/x')  # HERE")),
    ("torch-compute", dict(body="host = x.numpy()  # HERE")),
    # reference
    ("reference", dict(body="out = Model()(x)  # HERE")),
    # tensor-subclass
    ("tensor-subclass", dict(module="class Lazy(torch.Tensor):  # HERE\n    pass")),
    # try-fallback
    ("try-fallback", dict(body="try:  # HERE\n    pass\nexcept Exception:\n    out = x")),
    ("try-fallback", dict(module="def helper(t):\n    try:  # HERE\n        return t\n    finally:\n"
                                 "        pass", body="out = helper(out)")),
]


ACTIONS = ("remove", "use ", "instead", "import only", "never", "do this", "pick another", "store ", "define ",
           "import the")


@pytest.mark.parametrize(("rule", "parts"), CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_rule_fires_on_its_line(rule, parts):
    source = make(**parts)
    report = check_source(source, "cand.py")
    line = marked_line(source)
    hits = [v for v in report.violations if v.rule == rule]
    assert hits, (rule, report.violations)
    assert line in {v.line for v in hits}, (line, hits)
    assert not report.ok
    for v in hits:  # actionable: says what to do (the caller prefixes file and line)
        assert any(word in v.message for word in ACTIONS), v.message


@pytest.mark.parametrize(
    "parts",
    [
        dict(init="self.w = nn.Parameter(torch.randn(4, 4).abs() @ torch.eye(4))"),  # compute in __init__
        dict(body="torch.cuda.synchronize()\nassert torch.cuda.current_stream() is not None"),
        dict(body="n = getattr(x, 'shape')[0]\nself.calls = 1\nself.n = n"),
        dict(body="id_ = 3\nfor id in range(2):\n    id_ += id"),  # a local named like a builtin
        dict(body="try:\n    import triton.language as tl2\nexcept ImportError:\n    tl2 = None"),
        dict(module="while True:\n    break\nif __name__ == '__main__':\n    pass"),
        dict(body="out = out.view(-1).reshape(x.shape).contiguous().half().float().t().t()"),
        dict(body="out = out.transpose(0, 0).permute(*range(x.dim())).unsqueeze(0).squeeze(0)"),
        dict(body="buf = torch.zeros(4, dtype=torch.float32, device=x.device)\nfull = torch.full_like(x, 0.5)"),
        dict(body="info = torch.finfo(x.dtype)\nm = x.stride(0) * x.element_size() + x.data_ptr()"),
        dict(body="with torch.no_grad():\n    out = out.narrow(0, 0, out.shape[0])"),
        dict(module="class Helper:\n    def __init__(self):\n        self.x = 1\n    def __repr__(self):\n"
                    "        return 'Helper'"),
    ],
)
def test_legit_patterns_do_not_fire(parts):
    report = check_source(make(**parts), "cand.py")
    assert report.violations == []


def test_init_stays_off_the_forward_path_with_old_style_super():
    source = make(init="self.w = nn.Parameter(torch.randn(4, 4).abs())\nassert isinstance(self, ModelNew)")
    source = source.replace("super().__init__()", "super(ModelNew, self).__init__()")
    assert check_source(source).ok


def test_compute_inside_jit_kernels_is_the_kernel():
    source = make(module="@triton.jit\ndef k2(p, n):\n    x = tl.load(p)\n    tl.store(p, tl.sum(x.to(tl.float32), 0))")
    assert check_source(source).ok


def test_triton_jit_called_as_a_function():
    source = make(module="def raw(p, n):\n    x = tl.load(p)\n    tl.store(p, x.sum())\n\n\nwrapped = triton.jit(raw)",
                  body="wrapped[(1,)](out, 1)")
    report = check_source(source)
    assert report.ok, report.violations
    assert report.kernels == ["copy_kernel", "wrapped"] and report.launched == ["copy_kernel", "wrapped"]


def test_allow_torch_permits_named_ops():
    source = make(body="out = torch.matmul(x, x)\nout = x @ x\nout = x.matmul(x)\nout = torch.mm(x, x)")
    assert rules(check_source(source)) == {"torch-compute"}
    assert check_source(source, allow_torch=["torch.matmul", "aten.mm"]).ok
    assert rules(check_source(source, allow_torch=["matmul"])) == {"torch-compute"}  # mm still refused


def test_reference_base_class_and_extra_bases():
    source = make().replace("class ModelNew(nn.Module):", "class ModelNew(Model):  # HERE")
    report = check_source(source)
    assert "reference" in rules(report)
    assert marked_line(source) in {v.line for v in report.violations if v.rule == "reference"}
    assert "reference" in rules(check_source(make().replace("(nn.Module):", "(nn.Module, dict):")))
    assert check_source(make().replace("(nn.Module):", "(torch.nn.Module):")).ok


def _in_class(source: str, code: str) -> str:
    """Insert class-body code (4-space indented) just before ModelNew.forward."""
    return source.replace("    def forward(self, x):", textwrap.indent(textwrap.dedent(code), "    ") +
                          "\n    def forward(self, x):")


@pytest.mark.parametrize(
    ("rule", "source"),
    [
        ("missing-entry", make() + "\n\nModelNew = nn.Identity  # HERE\n"),
        ("missing-entry", make() + "\n\nclass ModelNew(nn.Module):  # HERE\n    pass\n"),
        ("patching", make() + "\n\nModelNew.forward = lambda self, x: x  # HERE\n"),
        ("patching", make().replace("class ModelNew", "@staticmethod  # HERE\nclass ModelNew")),
        ("patching", _in_class(make(), "def _call_impl(self, *args):  # HERE\n    return None\n")),
        ("missing-entry", make().replace("        return out\n", "        return out\n\n    forward = None  # HERE\n")),
    ],
)
def test_entry_point_cannot_be_replaced(rule, source):
    report = check_source(source)
    assert (rule, marked_line(source)) in {(v.rule, v.line) for v in report.violations}, report.violations


def test_methods_reached_through_getattr_on_self_are_on_the_forward_path():
    source = _in_class(make(body="out = getattr(self, 'helper')(out)"),
                       "def helper(self, t):\n    return t.exp()  # HERE\n")
    report = check_source(source)
    assert [(v.rule, v.line) for v in report.violations] == [("torch-compute", marked_line(source))]


def test_missing_entry():
    no_class = make().replace("class ModelNew", "class Other")
    report = check_source(no_class)
    assert [(v.rule, v.line) for v in report.violations if v.rule == "missing-entry"] == [("missing-entry", 1)]
    no_forward = make().replace("def forward(self, x):", "def fwd(self, x):")
    report = check_source(no_forward)
    line = next(i for i, t in enumerate(no_forward.splitlines(), 1) if t.startswith("class ModelNew"))
    assert ("missing-entry", line) in {(v.rule, v.line) for v in report.violations}
    assert "define `def forward" in next(v.message for v in report.violations if v.rule == "missing-entry")
    assert "missing-entry" in rules(check(DECORATED_OP, entry="other_fn"))
    assert "missing-entry" in rules(check(DECORATED_OP, entry="add_kernel"))  # a kernel is not an entry


def test_no_kernel():
    source = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n" \
             "        return torch.empty_like(x)\n"
    report = check_source(source)
    assert [(v.rule, v.line) for v in report.violations] == [("no-kernel", 4)]
    assert report.kernels == [] and report.backend == "unknown"


def test_kernel_not_launched():
    unreachable = make(module="def never_called(x, out):\n    copy_kernel[(1,)](x, out, 1, BLOCK=16)")
    unreachable = unreachable.replace("copy_kernel[(triton.cdiv(x.numel(), 1024),)](", "print(")
    report = check_source(unreachable)
    line = next(i for i, t in enumerate(unreachable.splitlines(), 1) if "def forward" in t)
    assert [(v.rule, v.line) for v in report.violations] == [("kernel-not-launched", line)]
    assert report.kernels == ["copy_kernel"] and report.launched == []
    assert "copy_kernel" in report.violations[0].message


def test_kernel_passed_to_a_generic_launcher_is_launched():
    source = make(module="def launch(kernel, x, out, block=16):\n    kernel[(1,)](x, out, x.numel(), BLOCK=block)")
    source = source.replace("copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)",
                            "launch(copy_kernel, x, out)")
    report = check_source(source)
    assert report.ok and report.launched == ["copy_kernel"], report.violations


def test_launch_only_in_autograd_backward_is_not_launched():
    source = AUTOGRAD_AND_HELPER.replace("return _launch(x2, weight, eps).view_as(x)", "return x2.view_as(x)")
    source = source.replace("return grad * weight, None, None", "return _launch(grad, weight, 0.0), None, None")
    assert "kernel-not-launched" in rules(check(source))


def test_kernels_behind_conditional_alias_and_container():
    source = make(
        module="@triton.jit\ndef other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n    pass",
        init="self.table = {}\nself.table['a'] = copy_kernel",
        body="k = copy_kernel if x.numel() > 4 else other_kernel\nk[(1,)](x, out, 1, BLOCK=16)\n"
             "self.table['a'][(1,)](x, out, 1, BLOCK=16)",
    )
    report = check_source(source)
    assert report.ok, report.violations
    assert report.launched == ["copy_kernel", "other_kernel"]


# ----------------------------------------------------------------------------------------- CUDA source

CUDA_TEMPLATE = '''
import torch
import torch.nn as nn
from kernelevo import cuda

SOURCE = r"""
extern "C" __global__ void k(float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
{extra}
    if (i < n) out[i] = 0.0f;
}}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = cuda.compile({source_expr}, "k")

    def forward(self, x):
        out = torch.empty_like(x)
        self.k[(1,), (256,)](out, x.numel())
        return out
'''


@pytest.mark.parametrize(
    "extra",
    [
        "    cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);  // HERE",
        "    float* p; cudaMalloc(&p, 4);  // HERE",
        "    cudaStreamAttrValue v; v.accessPolicyWindow.num_bytes = 1;  // HERE",
        "    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);  // HERE",
        "    cudaDeviceSynchronize();  // HERE",
        "    cudaGraphLaunch(0, 0);  // HERE",
    ],
)
def test_cuda_source_banned_identifiers(extra):
    source = CUDA_TEMPLATE.format(extra=extra, source_expr="SOURCE")
    report = check_source(source, "cand.py")
    line = marked_line(source.replace("// HERE", "# HERE"))
    assert rules(report) == {"cuda-source"}
    assert line in {v.line for v in report.violations}


def test_cuda_source_ok_and_comments_ignored():
    extra = "    // cudaMalloc(&p, 4); cudaStreamCreate"
    report = check_source(CUDA_TEMPLATE.format(extra=extra, source_expr="SOURCE"))
    assert report.ok and report.backend == "cuda" and report.launched == ["k"]


def test_cuda_source_built_at_run_time_is_refused():
    source = CUDA_TEMPLATE.format(extra="", source_expr="SOURCE.replace('0.0f', str(self))")
    report = check_source(source)
    line = next(i for i, t in enumerate(source.splitlines(), 1) if "cuda.compile(" in t)
    assert ("cuda-source", line) in {(v.rule, v.line) for v in report.violations}


def test_unused_global_source_constant_is_still_scanned():
    source = make(module='UNUSED = """__global__ void k() { cudaLaunchHostFunc(0, 0, 0); }"""  # HERE')
    report = check_source(source)
    assert [(v.rule, v.line) for v in report.violations] == [("cuda-source", marked_line(source))]


@pytest.mark.parametrize(
    ("launch", "ok"),
    [
        # No stream argument (or an explicit 0): the legacy default stream, as most real load_inline code
        # launches; the runtime GPU trace checks which stream each kernel ran on.
        ("k<<<g, b>>>(p);", True),
        ("k<<<g, b, 0>>>(p);", True),
        ("k<<<g, b, 0, 0>>>(p);", True),
        ("k<<<dim3(g, 1), b, 0, nullptr>>>(p);", True),
        ("k<<<g, b, 0, at::cuda::getCurrentCUDAStream()>>>(p);", True),
        ("k<<<dim3(g, 2), b, smem, stream>>>(p);", True),
        # Streams other than the current or default one stay refused.
        ("k<<<g, b, 0, cudaStreamPerThread>>>(p);", False),
        ("k<<<g, b, 0, cudaStreamLegacy>>>(p);", False),
        ("k<<<g, b, 0, c10::cuda::getStreamFromPool()>>>(p);", False),
        ("k<<<g, b, 0, side>>>(p); cudaStream_t side; cudaStreamCreate(&side);", False),
    ],
)
def test_load_inline_launch_streams(launch, ok):
    source = LOAD_INLINE.replace(
        "scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(", launch + "  // HERE\n    ("
    )
    report = check(source)
    assert report.ok is ok, report.violations
    if not ok:
        assert rules(report) == {"cuda-source"}
        assert "stream" in report.violations[0].message
        assert report.violations[0].line == marked_line(textwrap.dedent(source).replace("// HERE", "# HERE"))


@pytest.mark.parametrize("flags", ['["--default-stream", "per-thread"]', '["--default-stream=per-thread"]',
                                   '["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"]'])
def test_per_thread_default_streams_are_refused(flags):
    source = LOAD_INLINE.replace('functions=["scale"])', f'functions=["scale"], extra_cuda_cflags={flags})')
    assert "cuda-source" in rules(check(source))


@pytest.mark.parametrize(
    "snippet",
    [
        "auto bad = at::softmax(x, -1);",
        "auto bad = torch::nn::functional::gelu(x);",
        "auto bad = x.sum(0);",
        "auto bad = at::_softmax(x, 0, false);",
        "cublasSgemm(handle);",
        "std::thread worker([] {});",
        "using namespace at;",
    ],
)
def test_cpp_source_torch_compute_and_libraries(snippet):
    source = LOAD_INLINE.replace("    auto out = torch::empty_like(x);\n",
                                 f"    auto out = torch::empty_like(x);\n    {snippet}  // HERE\n")
    report = check(source)
    assert rules(report) == {"cuda-source"}, report.violations
    assert marked_line(textwrap.dedent(source).replace("// HERE", "# HERE")) in {v.line for v in report.violations}


def test_cpp_library_allowed_by_op_spec():
    source = LOAD_INLINE.replace("    auto out = torch::empty_like(x);\n",
                                 "    auto out = torch::empty_like(x);\n    cublasSgemm(handle);\n")
    assert check(source, allow_torch=["cublas"]).ok


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('#include <torch/extension.h>', '#include "my_header.h"'),
        ('functions=["scale"])', 'functions=["scale"], extra_ldflags=["-lcublas"])'),
        ('functions=["scale"])', 'functions=["scale"], extra_cuda_cflags=["-DS=cudaStreamCreate"])'),
        ('int i = blockIdx.x', '#define CAT(a, b) a##b\n    int i = blockIdx.x'),
    ],
)
def test_cpp_build_escapes(old, new):
    source = LOAD_INLINE.replace(old, new)
    assert source != LOAD_INLINE
    assert rules(check(source)) == {"cuda-source"}


def test_empty_build_flags_are_fine():
    source = LOAD_INLINE.replace('functions=["scale"])', 'functions=["scale"], extra_cflags=[""], extra_ldflags=[""])')
    assert source != LOAD_INLINE and check(source).ok


def test_cuda_compile_options_are_scanned():
    source = CUDA_TEMPLATE.format(extra="", source_expr='SOURCE, options=["-DS=cudaMallocManaged"]').replace(
        ', options=["-DS=cudaMallocManaged"], "k")', ', "k", options=["-DS=cudaMallocManaged"])')
    assert rules(check_source(source)) == {"cuda-source"}


# ------------------------------------------------------------------------------------ never crashing

def test_syntax_error_reports_line():
    report = check_source("import torch\n\ndef forward(x:\n    return x\n", "bad.py")
    assert report.syntax_error is not None and report.syntax_error.rule == "syntax-error"
    assert report.syntax_error.line == 3
    assert "fix the syntax" in report.syntax_error.message
    assert not report.ok and report.violations == []


@pytest.mark.parametrize(
    "source",
    ["", "\x00", "x = " + "(" * 500 + ")" * 500, "x = " + "-" * 5000 + "1", "\ufeff\n", "é = 1", "def f(:\n"],
)
def test_odd_inputs_give_a_report(source):
    report = check_source(source)
    assert isinstance(report, StaticReport) and not report.ok


def test_deep_nesting_is_rejected_not_crashed():
    source = make(body="out = " + " + ".join(["x"] * 600))
    report = check_source(source)
    assert not report.ok
    assert "too-complex" in rules(report) or report.syntax_error is not None


def _mutations(rng: random.Random, tree: ast.Module) -> ast.Module:
    """A copy of ``tree`` with random expressions and statements swapped for others from the same file."""
    tree = copy.deepcopy(tree)
    exprs = [n for n in ast.walk(tree) if isinstance(n, ast.expr)]
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.expr) and rng.random() < 0.08:
                setattr(node, name, copy.deepcopy(rng.choice(exprs)))
            elif isinstance(value, list) and value and isinstance(value[0], ast.stmt) and rng.random() < 0.08:
                value[rng.randrange(len(value))] = copy.deepcopy(rng.choice(stmts))
    return ast.fix_missing_locations(tree)


def test_fuzz_never_raises():
    rng = random.Random(1234)
    seeds = [TRITON_SOFTMAX, CUDA_AXPY, LOAD_INLINE, AUTOGRAD_AND_HELPER, DECORATED_OP, make(), CUDA_MODULE_LEVEL]
    inputs: list[str] = []
    for _ in range(150):  # random bytes, decoded leniently
        inputs.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).decode("latin-1"))
    for _ in range(200):  # text surgery on real candidates
        text = rng.choice(seeds)
        i, j = sorted(rng.randrange(len(text)) for _ in range(2))
        inputs.append(rng.choice([text[:i] + text[j:], text[:j] + text[i:], text[:i] + text[i:j] * 3 + text[j:]]))
    trees = [ast.parse(s) for s in seeds]
    for _ in range(250):  # AST mutations, kept when they unparse
        try:
            inputs.append(ast.unparse(_mutations(rng, rng.choice(trees))))
        except Exception:  # noqa: BLE001 - an unparseable mutant is simply skipped
            continue
    assert len(inputs) > 500
    for text in inputs:
        report = check_source(text, "fuzz.py")
        assert isinstance(report, StaticReport)
        assert all(isinstance(v, Violation) for v in report.violations)
        assert "internal-error" not in rules(report), (text, report.violations)


def test_torch_inside_a_jit_body_is_flagged():
    source = (
        "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef k(x_ptr, y_ptr, n, X: tl.constexpr):\n    torch.softmax(X, dim=-1)\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
        "        k[(1,)](x, y, x.numel(), X=x)\n        return y\n"
    )
    report = check_source(source)
    found = [(v.rule, v.line) for v in report.violations]
    assert ("torch-compute", 8) in found and {line for _, line in found} == {8}  # and cuda-source: not Triton
