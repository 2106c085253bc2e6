"""Patterns of public kernel libraries (Liger-Kernel, fla) the static checker must accept, and the walk-arounds of
the same rules it must still refuse: optional imports, code that never runs in the verifier (dead functions,
DTensor branches, parameters that are always None), version and device probes, amp decorators, bookkeeping
reductions, read-only process facts, and rebindings that cannot mislead the checker."""

from __future__ import annotations

import ast

import pytest
from test_static_check import make, marked_line

from evaluator.static_bookkeeping import Bookkeeping
from evaluator.static_check import check_source
from evaluator.static_liveness import Branches, Known, live_functions, none_parameters
from evaluator.static_model import build_model
from evaluator.static_optional import installed

MISSING = "kernelevo_no_such_package"  # never installed: an import of it always fails

_COMPARE_VERSION = """
import importlib
from packaging.version import Version


def compare_version(package, op, target):
    try:
        pkg = importlib.import_module(package)
    except ImportError:
        return False
    pkg_version = Version(pkg.__version__)
    return op(pkg_version, Version(target))


NEW_TRITON = compare_version("triton", operator.ge, "3.0.0")
XPU = compare_version("pytorch-triton-xpu", operator.ge, "3.6.0")
"""

_ARCH = """
_BY_CC = {(9, 0): "hopper", (10, 0): "blackwell"}


def infer_device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def _nvidia_arch(device_id):
    major, minor = torch.cuda.get_device_capability(device_id)
    return _BY_CC.get((major, minor), f"sm_{major}{minor}")


def _xpu_arch(device_id):
    name = torch.xpu.get_device_properties(device_id).name.lower()
    if any(tag in name for tag in ("max", "pvc")):
        return "pvc"
    return "xpu"


def infer_device_arch(device_id=0):
    device = infer_device()
    try:
        if device == "cuda":
            return _xpu_arch(device_id) if torch.version.hip else _nvidia_arch(device_id)
    except Exception:
        return device
    return device
"""

_AUTOGRAD = """
from torch.distributed.tensor import DTensor


def get_amp_custom_fwd_bwd():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if hasattr(torch, "amp"):
        return (functools.partial(torch.amp.custom_fwd, device_type=device),
                functools.partial(torch.amp.custom_bwd, device_type=device))
    if hasattr(torch, "npu") and getattr(torch.npu, "amp", None) is not None:
        return torch.npu.amp.custom_fwd, torch.npu.amp.custom_bwd
    return torch.cuda.amp.custom_fwd, torch.cuda.amp.custom_bwd


amp_fwd, amp_bwd = get_amp_custom_fwd_bwd()


def ensure_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        return fn(ctx, *[a.contiguous() if isinstance(a, torch.Tensor) else a for a in args])

    return wrapper


def copy_forward(x):
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


class CopyFunction(torch.autograd.Function):
    @staticmethod
    @amp_fwd
    @ensure_contiguous
    def forward(ctx, x):
        if isinstance(x, DTensor):
            local = copy_forward(x.to_local())
            return DTensor.from_local(local, x.device_mesh, x.placements)
        return copy_forward(x)

    @staticmethod
    @ensure_contiguous
    def backward(ctx, grad):
        mesh = getattr(ctx, "mesh", None)
        if mesh is not None:
            return torch.distributed.tensor.distribute_tensor(grad, device_mesh=mesh)
        return grad
"""

_CROSS_ENTROPY = """
def ce_forward(x, target, weight, ignore_index):
    n_rows = x.shape[0]
    loss_1d = torch.zeros(n_rows, dtype=x.dtype, device=x.device)
    z_1d = torch.zeros(n_rows, dtype=x.dtype, device=x.device) if n_rows > 0 else None
    target_mask = target != ignore_index
    n_non_ignore = target_mask.sum().item()
    assert (target * target_mask).max() < x.shape[-1], f"target {target.max()} out of bounds"
    assert (target * target_mask).min() >= 0, f"target {target.min()} out of bounds"
    weight_sum = 0.0
    if weight is not None:
        weight_sum = torch.gather(weight, 0, target.masked_select(target_mask)).sum().item()
        if weight.stride(-1) != 1:
            weight = weight.contiguous()
    copy_kernel[(n_rows,)](x, loss_1d, n_rows, BLOCK=1024)
    copy_kernel[(n_rows,)](x, z_1d, n_rows, BLOCK=1024)
    return torch.sum(loss_1d) / max(n_non_ignore, 1) + weight_sum, torch.sum(z_1d)
"""

HONEST = [
    # optional imports: a module that is not installed (so its names may be used in the try), a presence probe
    dict(module=f"def npu():\n    try:\n        from {MISSING}.utils import is_npu\n\n        return is_npu()\n"
                "    except Exception:\n        return False", body="ok = npu()"),
    dict(module=f"try:\n    import {MISSING}  # noqa: F401\n\n    HAS = True\nexcept ImportError:\n    HAS = False"),
    dict(module="try:\n    import yaml  # noqa: F401\n\n    HAS_YAML = True\nexcept ImportError:\n"
                "    HAS_YAML = False"),
    # an installed third-party package the run time never lets a candidate import (Liger's transformers probe):
    # the import fails wherever the candidate runs, whether or not the machine has the package
    dict(module="def npu():\n    try:\n        from yaml.constructor import is_npu\n\n        return is_npu()\n"
                "    except Exception:\n        return False", body="ok = npu()"),
    dict(module="try:\n    import yaml\nexcept ImportError:\n    yaml = None\nHOOK = yaml"),
    # an import in a function nothing calls
    dict(module=f"def version_dispatch(before, after):\n    from {MISSING} import __version__\n\n"
                "    return before if __version__ < '4' else after"),
    # importlib.import_module as a version probe with literal callers (one not installed)
    dict(module=_COMPARE_VERSION),
    # torch.distributed backend probes, amp decorators, npu and Triton driver probes
    dict(module="def comm_backend():\n    if torch.distributed.is_nccl_available():\n        return 'nccl'\n"
                "    if torch.distributed.distributed_c10d.is_xccl_available():\n        return 'xccl'\n"
                "    return 'gloo' if torch.distributed.is_gloo_available() else None", body="b = comm_backend()"),
    dict(module="import functools\n\n\n" + _AUTOGRAD, body="out = CopyFunction.apply(out)"),
    dict(body="name = torch.npu.get_device_properties(0).name if hasattr(torch, 'npu') else ''"),
    dict(module="import functools\n\n\n@functools.cache\ndef core_count(default=20):\n    try:\n"
                "        utils = triton.runtime.driver.active.utils\n        props = utils.get_device_properties(0)\n"
                "        return int(props.get('num_vectorcore', default))\n    except Exception:\n"
                "        return default", body="n = core_count()\nb = triton.runtime.driver.active.get_current_target()"
                ".backend"),
    # probe helpers in a try on the forward path
    dict(module=_ARCH, body="arch = infer_device_arch()"),
    # bookkeeping: a mask count, asserts, sums of kernel-written buffers; a weight branch no caller takes
    dict(module=_CROSS_ENTROPY, body="out = ce_forward(x, x.long(), None, -100)[0] + out"),
    # read-only process facts, messages, and reads of names
    dict(module="import logging\nimport os\nimport platform\nimport sys\nimport warnings\n\n"
                "logger = logging.getLogger(__name__)\nFAST = os.environ.get('FAST', '0') == '1' or 'X' in os.environ\n"
                "DBG = os.getenv('DBG')\nOLD = sys.version_info < (3, 10) or sys.platform == 'win32'\n"
                "ARM = platform.machine().lower() in ('aarch64', 'arm64')\n\n\n"
                "def warn_cpu():\n    warnings.warn('slow', stacklevel=2)\n    logger.info('cpu')",
         body="if FAST:\n    warn_cpu()"),
    dict(module="class Norm(nn.Module):\n    def __repr__(self):\n        return f'{self.__class__.__name__}()'\n\n\n"
                "def name_of(fn):\n    return fn.__module__ + '.' + fn.__qualname__", body="s = name_of(name_of)"),
    # rebindings the paste of several modules produces, which cannot mislead the checker
    dict(module="from typing import Callable, TypeVar\n\nF = TypeVar('F', bound=Callable)\n\n\n"
                "def dispatch(fn: F) -> F:\n    return fn\n\n\nimport torch.nn.functional as F  # noqa: E402"),
    dict(module=f"def require_version(v):\n    def check():\n        from {MISSING} import require_version\n\n"
                "        require_version(v)\n\n    return check"),
    dict(module="import os\n\nif os.environ.get('FAST', '0') == '1':\n    @triton.jit\n    def tanh(x):\n"
                "        return tl.extra.cuda.libdevice.fast_tanhf(x)\nelse:\n    @triton.jit\n    def tanh(x):\n"
                "        return tl.extra.cuda.libdevice.tanh(x)\n\n\n"
                "from triton.language.extra.libdevice import tanh  # noqa: E402,F811"),
    dict(module="import einops", body="out = einops.rearrange(out, '(a b) -> a b', a=1).reshape(x.shape)"),
    # a module of the file's own named like a tensor method (self.softmax, self.norm): its forward runs, judged
    dict(module="class Soft(nn.Module):\n    def forward(self, t):\n        o = torch.empty_like(t)\n"
                "        copy_kernel[(1,)](t, o, t.numel(), BLOCK=1024)\n        return o\n",
         init="self.softmax = Soft()\nself.norm = Soft()", body="out = self.norm(self.softmax(x))"),
    # a dtype's limits (the mask fill value, a quantisation range), through a local too; abstract classes of its own
    dict(module="QMAX = float(torch.iinfo(torch.int8).max)", body="info = torch.finfo(x.dtype)\n"
                "fill = torch.finfo(x.dtype).min + info.max * 0 + QMAX * 0"),
    dict(module="from abc import ABC, abstractmethod\n\n\nclass Norm(ABC):\n    @abstractmethod\n"
                "    def apply(self, t):\n        ..."),
    # a final mean over the per-row losses a launcher returns, over a mask written in place (flash-attention's)
    dict(module="def row_losses(t):\n    o = torch.empty_like(t)\n    copy_kernel[(1,)](t, o, t.numel(), BLOCK=1024)\n"
                "    return o", body="losses = row_losses(x)\nout = losses.sum() / (x != -100).sum()"),
    # a reference implementation beside the kernel that nothing names (vLLM's forward_native): it never runs
    dict(module="class Act(nn.Module):\n    def forward_native(self, t):\n        return torch.tanh(t)\n\n"
                "    def forward(self, t):\n        o = torch.empty_like(t)\n"
                "        copy_kernel[(1,)](t, o, t.numel(), BLOCK=1024)\n        return o\n",
         init="self.act = Act()", body="out = self.act(x)"),
    # tables of kernels launched by key or index
    dict(module="KERNELS = {'copy': copy_kernel}", init="self.kernels = [copy_kernel]",
         body="KERNELS['copy'][(1,)](x, out, x.numel(), BLOCK=1024)\n"
              "self.kernels[0][(1,)](x, out, x.numel(), BLOCK=1024)"),
    # profile labels: a context manager, a decorator, imported by name
    dict(body="with torch.autograd.profiler.record_function('copy'):\n    out = out * 1"),
    dict(module="from torch.profiler import record_function\n\n\n@record_function('norm')\ndef norm(t):\n"
                "    return t", body="out = norm(out)"),
]


@pytest.mark.parametrize("parts", HONEST, ids=[f"honest-{i}" for i in range(len(HONEST))])
def test_library_pattern_is_accepted(parts):
    assert not installed(MISSING)
    report = check_source(make(**parts), "cand.py")
    assert report.syntax_error is None
    assert report.violations == [], report.violations


REFUSED = [
    # optional imports that could hand the module over at run time (a loaded module imports without an audit event)
    ("banned-import", dict(module="try:\n    import gc  # HERE\n    OBJS = gc.get_objects()\nexcept ImportError:\n"
                                  "    OBJS = []")),
    ("banned-import", dict(module="try:\n    from gc import get_objects  # HERE\nexcept ImportError:\n"
                                  "    get_objects = None", body="objs = get_objects()")),
    ("banned-import", dict(module="try:\n    import pickle  # HERE\nexcept ImportError:\n    pickle = None\n"
                                  "HOOK = pickle")),
    ("banned-import", dict(module="def npu():\n    try:\n        from pickle import loads  # HERE\n\n"
                                  "        return loads(b'')\n    except Exception:\n        return False",
                           body="ok = npu()")),
    ("banned-import", dict(module="try:\n    import gc  # HERE\nexcept ImportError:\n    gc = None\nfinally:\n"
                                  "    pass")),
    ("banned-import", dict(module="try:\n    import gc  # HERE\nexcept ImportError:\n    gc = fallback()")),
    ("private-api", dict(module="try:\n    from torch import _dynamo  # HERE\nexcept ImportError:\n"
                                "    _dynamo = None")),
    ("banned-import", dict(module="try:\n    from gc import get_objects  # HERE\nexcept ImportError:\n    pass\n\n\n"
                                  "def op(t: 'get_objects') -> torch.Tensor:\n    return t")),
    # imports in functions that do run: referenced from a table, registered by a decorator, called directly
    ("banned-import", dict(module="def evil():\n    import gc  # HERE\n    return gc.get_objects()\n\n\n"
                                  "TABLE = {'f': evil}\nSTORED = len(TABLE)")),
    ("banned-import", dict(module="HOOKS = []\n\n\ndef register(fn):\n    HOOKS.append(fn)\n    return fn\n\n\n"
                                  "@register\ndef evil():\n    import gc  # HERE\n    return gc.get_objects()",
                           body="HOOKS[0]()")),
    ("banned-import", dict(module="class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                                  "        return x\n\n    @staticmethod\n    def backward(ctx, g):\n"
                                  "        import gc  # HERE\n        return g", body="Fn.backward(None, out)")),
    ("banned-import", dict(module="class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
                                  "        return x\n\n    @staticmethod\n    def backward(ctx, g):\n"
                                  "        import gc  # HERE\n        return g\n\n\ndef run(cls, x):\n"
                                  "    return cls.backward(None, x)", body="out = run(Fn, out)")),
    ("banned-import", dict(module="def deco(fn):\n    fn()\n    return fn\n\n\n@deco\ndef evil():\n"
                                  "    import gc  # HERE\n    return gc")),
    # importlib.import_module beyond a version probe
    ("banned-import", dict(module="import importlib\n\n\ndef load(name):\n"
                                  "    return importlib.import_module(name).__version__  # HERE",
                           body="v = load('gc')")),
    ("banned-import", dict(module="import importlib\n\n\ndef load(name):\n"
                                  "    pkg = importlib.import_module(name)  # HERE\n    return pkg.get_objects()",
                           body="v = load('triton')")),
    ("banned-import", dict(module="import functools\nimport importlib\n\n\ndef load(name):\n"
                                  "    pkg = importlib.import_module(name)  # HERE\n    return pkg.__version__\n\n\n"
                                  "LOADER = functools.partial(load, 'gc')")),
    ("banned-import", dict(module="import importlib\n\n\ndef load(name):\n"
                                  "    pkg = importlib.import_module(name)  # HERE\n    return pkg.__version__",
                           body="v = load(str(x.dtype))")),
    # code that does run although it looks like a DTensor or None branch
    ("banned-import", dict(module="from torch.distributed.tensor import DTensor",
                           body="if not isinstance(x, DTensor):\n    import gc  # HERE")),
    ("banned-import", dict(module="from torch.distributed.tensor import DTensor",
                           body="if isinstance(x, DTensor) or x.numel() > 0:\n"
                                "    y = torch.distributed.tensor.distribute_tensor(x, None)  # HERE")),
    ("torch-compute", dict(module="import functools\n\n\ndef helper(t, w=None):\n    if w is not None:\n"
                                  "        return torch.softmax(w, -1)  # HERE\n    return t\n\n\n"
                                  "SOFT = functools.partial(helper, w=None)", body="out = helper(out, None)")),
    ("torch-compute", dict(module="def helper(t, w=None):\n    if w is not None:\n"
                                  "        return torch.softmax(w, -1)  # HERE\n    return t",
                           body="out = helper(out)\nout = helper(out, x)")),
    ("torch-compute", dict(module="def helper(t, w=None):\n    w = t\n    if w is not None:\n"
                                  "        return torch.softmax(w, -1)  # HERE\n    return t",
                           body="out = helper(out)")),
    # a decorator that hands the function other arguments than its wrapper got, or keeps it elsewhere
    ("torch-compute", dict(module="import functools\n\n\ndef fill(fn):\n    @functools.wraps(fn)\n"
                                  "    def wrapper(*args, **kwargs):\n        kwargs['w'] = args[0]\n"
                                  "        return fn(*args, **kwargs)\n    return wrapper\n\n\n@fill\n"
                                  "def helper(t, w=None):\n    if w is not None:\n"
                                  "        return torch.softmax(w, -1)  # HERE\n    return t",
                           body="out = helper(out)")),
    ("torch-compute", dict(module="import functools\n\n\ndef first(fn):\n    @functools.wraps(fn)\n"
                                  "    def wrapper(*args, **kwargs):\n        return fn(args[0], args[0])\n"
                                  "    return wrapper\n\n\n@first\ndef helper(t, w=None):\n    if w is not None:\n"
                                  "        return torch.softmax(w, -1)  # HERE\n    return t",
                           body="out = helper(out)")),
    ("torch-compute", dict(module="import functools\nKEPT = []\n\n\ndef keep(fn):\n    KEPT.append(fn)\n"
                                  "    return fn\n\n\n@keep\ndef helper(t, w=None):\n    if w is not None:\n"
                                  "        return torch.softmax(w, -1)  # HERE\n    return t",
                           body="out = helper(out)\nout = KEPT[0](out, x)")),
    # bookkeeping is reductions and comparisons of masks and kernel buffers, nothing more
    ("torch-compute", dict(body="out = torch.softmax(out, -1)  # HERE")),
    ("torch-compute", dict(body="m = out.sum(-1)  # HERE")),
    ("torch-compute", dict(body="m = x.sum()  # HERE")),
    ("torch-compute", dict(body="m = torch.amax(x)  # HERE")),
    ("torch-compute", dict(body="res = torch.empty(())\nm = out.sum(out=res)  # HERE")),
    ("torch-compute", dict(body="buf = torch.empty_like(x)\nm = buf.sum()  # HERE")),
    ("torch-compute", dict(body="mask = x > 0\nmask = x\nn = mask.sum()  # HERE")),
    ("torch-compute", dict(body="res = torch.empty(())\nassert res.copy_(x.amax()) is not None  # HERE")),
    ("torch-compute", dict(body="assert x.exp().sum() > 0  # HERE")),
    # ... run at most once per forward call: not chunk by chunk in a loop, a repeated helper or a recursion
    ("torch-compute", dict(body="for r in range(x.shape[0]):\n    row = torch.empty(x.shape[1])\n"
                                "    copy_kernel[(1,)](x[r], row, x.shape[1], BLOCK=1024)\n"
                                "    out[r] = row.sum()  # HERE")),
    ("torch-compute", dict(module="def row_total(x, r):\n    row = torch.empty(x.shape[1])\n"
                                  "    copy_kernel[(1,)](x[r], row, x.shape[1], BLOCK=1024)\n"
                                  "    return row.sum()  # HERE",
                           body="for r in range(x.shape[0]):\n    out[r] = row_total(x, r)")),
    ("torch-compute", dict(module="def total(x, r):\n    row = torch.empty(x.shape[1])\n"
                                  "    copy_kernel[(1,)](x[r], row, x.shape[1], BLOCK=1024)\n"
                                  "    return row.sum() + (total(x, r + 1) if r + 1 < x.shape[0] else 0)  # HERE",
                           body="s = total(x, 0)")),
    ("torch-compute", dict(module="def row_total(x, r):\n    row = torch.empty(x.shape[1])\n"
                                  "    copy_kernel[(1,)](x[r], row, x.shape[1], BLOCK=1024)\n"
                                  "    return row.sum()  # HERE", body="s = list(map(row_total, [x], [0]))")),
    ("torch-compute", dict(body="".join(f"b{i} = torch.empty(4)\ncopy_kernel[(1,)](x, b{i}, 4, BLOCK=4)\n"
                                        f"s{i} = b{i}.sum()\n" for i in range(8))
                                + "b8 = torch.empty(4)\ncopy_kernel[(1,)](x, b8, 4, BLOCK=4)\ns8 = b8.sum()  # HERE")),
    # probes stay probes: the driver's other members, the owner handed on, amp beyond its decorators
    ("private-api", dict(body="utils = triton.runtime.driver.active.utils\nutils.load_binary('k', b'', 0, 0)  # HERE")),
    ("private-api", dict(module="def use(u):\n    return u",
                         body="u = use(triton.runtime.driver.active.utils)  # HERE")),
    ("torch-compute", dict(body="with torch.amp.autocast('cuda'):  # HERE\n    pass")),
    ("banned-import", dict(body="g = torch.distributed.new_group()  # HERE")),
    ("banned-import", dict(body="with torch.profiler.profile() as prof:  # HERE\n    pass")),
    # ... but one that something names runs: called through self, aliased in the class, named in a string
    ("torch-compute", dict(module="class Act(nn.Module):\n    def forward_native(self, t):\n"
                                  "        return torch.tanh(t)  # HERE\n\n    def forward(self, t):\n"
                                  "        return self.forward_native(t)\n", init="self.act = Act()",
                           body="out = self.act(x)")),
    ("torch-compute", dict(module="import operator\n\n\nclass Act(nn.Module):\n    def forward_native(self, t):\n"
                                  "        return torch.tanh(t)  # HERE\n", init="self.act = Act()",
                           body="out = operator.methodcaller('forward_native', x)(self.act)")),
    # a fallback def for an import that fails here: where it succeeds (a user's program, the plain run), the library's
    # function runs instead of the one judged (red team s31: fla's PyTorch reference behind an honest fallback)
    ("banned-import", dict(module=f"try:\n    from {MISSING}.utils import calculate_settings  # HERE\n"
                                  "except ImportError:\n\n    def calculate_settings(n):\n"
                                  "        return triton.next_power_of_2(n), 4\n",
                           body="block, warps = calculate_settings(x.shape[-1])")),
    # an import that may succeed (torch's own) keeps its binding: the handler's def rebinds it
    ("patching", dict(module="try:\n    from torch.nn.functional import gelu\nexcept ImportError:\n\n"
                             "    def gelu(t):  # HERE\n        return t\n")),
    ("torch-compute", dict(body="info = torch.finfo(x.dtype)\ninfo = x\nm = info.max  # HERE")),
    ("banned-import", dict(module="from abc import ABCMeta\nK = ABCMeta('K', (object,), {})  # HERE")),
    ("torch-compute", dict(module="class Soft(nn.Module):\n    def forward(self, t):\n"
                                  "        return t.softmax(-1)  # HERE\n",
                           init="self.softmax = Soft()", body="out = self.softmax(x)")),
    ("torch-compute", dict(module="class Soft(nn.Module):\n    def forward(self, t):\n        return t\n",
                           init="self.softmax = Soft()\nself.softmax = torch.nn.Softmax(-1)",
                           body="out = self.softmax(x)  # HERE")),
    ("banned-import", dict(module="from torch.autograd.profiler import _is_profiler_enabled  # HERE")),
    # rebindings that would make the checker misread a name
    ("patching", dict(module="from torch import empty\n\nif True:\n    def empty(*a):  # HERE\n"
                             "        return torch.softmax(a[0], -1)")),
    ("patching", dict(module="import math as m\nm = type(torch.ones(1))  # HERE")),
    ("patching", dict(module="from typing import TypeVar\nF = TypeVar(input())  # HERE")),
    ("patching", dict(module="from torch import empty\n\n\n@triton.jit\ndef empty(x):  # HERE\n    return x")),
    # a jit function run on the host, and name reads that are not names
    ("torch-compute", dict(body="copy_kernel(x, out, x.numel(), BLOCK=1024)  # HERE")),
    ("introspection", dict(body="cls = x.__class__  # HERE")),
    ("introspection", dict(module="def f():\n    pass\n\n\nf.__module__ = 'torch'  # HERE")),
]


@pytest.mark.parametrize(("rule", "parts"), REFUSED, ids=[f"{r}-{i}" for i, (r, _) in enumerate(REFUSED)])
def test_walkaround_of_a_library_rule_is_refused(rule, parts):
    source = make(**parts)
    report = check_source(source, "cand.py")
    line = marked_line(source)
    hits = [v for v in report.violations if v.rule == rule]
    assert hits, (rule, report.violations)
    assert line in {v.line for v in hits}, (line, hits)


def _model(source: str) -> tuple[ast.Module, object]:
    tree = ast.parse(source)
    return tree, build_model(tree)


def test_live_functions_follow_references_not_calls():
    tree, model = _model(
        "import functools\n\n\ndef used():\n    return helper\n\n\ndef helper():\n    pass\n\n\n"
        "def dead():\n    return unreachable()\n\n\ndef unreachable():\n    pass\n\n\n"
        "@functools.cache\ndef cached():\n    pass\n\n\ndef deco(fn):\n    return fn\n\n\n@deco\ndef decorated():\n"
        "    pass\n\n\nKEPT = []\n\n\ndef keep(fn):\n    KEPT.append(fn)\n    return fn\n\n\n@keep\n"
        "def kept():\n    pass\n\n\nclass ModelNew:\n    def forward(self):\n        return used()\n")
    live = live_functions(tree, model, "ModelNew")
    # a decorator that keeps the function (KEPT) may have it called from anywhere; one that only returns it does not
    assert {"used", "helper", "kept", "keep", "deco", "ModelNew.forward"} <= live
    assert not live & {"dead", "unreachable", "cached", "decorated"}


def test_none_parameters_reach_a_fixed_point_through_apply():
    tree, model = _model(
        "import torch\n\n\ndef inner(x, w=None, b=None):\n    return x\n\n\n"
        "class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, w, b):\n"
        "        return inner(x, w, b)\n\n\nclass ModelNew:\n    def forward(self, x):\n"
        "        return Fn.apply(x, None, x)\n")
    none = none_parameters(tree, model, "ModelNew")
    assert none == {"inner": frozenset({"w"}), "Fn.forward": frozenset({"w"})}


@pytest.mark.parametrize(
    ("test", "never", "always"),
    [("isinstance(a, DTensor)", True, False), ("isinstance(a, DTensor) or isinstance(b, DTensor)", True, False),
     ("isinstance(a, DTensor) and a.ndim", True, False), ("isinstance(a, DTensor) or a.ndim", False, False),
     ("not isinstance(a, DTensor)", False, True), ("w is not None", True, False), ("w is None", False, True),
     ("w", True, False), ("w is not None and x", True, False), ("v is not None", False, False)],
)
def test_branches_that_never_run(test, never, always):
    branches = Branches(lambda n: "torch.distributed.tensor.DTensor" if ast.unparse(n) == "DTensor" else None,
                        Known(none=frozenset({"w"})))
    node = ast.parse(test, mode="eval").body
    assert (branches.never_true(node), branches.always_true(node)) == (never, always)


def test_bookkeeping_knows_masks_and_kernel_buffers():
    fn = ast.parse("def f(x, t):\n    m = t != 0\n    b = torch.zeros(3)\n    c = torch.zeros(3)\n"
                   "    k[(1,)](x, b)\n    b.sum()\n    c.sum()\n    m.sum()\n    x.sum()\n    b.sum(0)\n").body[0]
    parents = {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    resolve = lambda n: ast.unparse(n) if ast.unparse(n).startswith("torch.") else None  # noqa: E731
    book = Bookkeeping(fn, resolve, {"x", "b"}, parents, runs_once=True)
    assert book.masks == {"m"} and book.buffers == {"b"}
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "sum"]  # fmt: skip
    verdicts = {ast.unparse(c): book.allows(c, "sum", c.func.value, method=True) for c in calls}
    assert verdicts == {"b.sum()": True, "c.sum()": False, "m.sum()": True, "x.sum()": False, "b.sum(0)": False}
    repeated = Bookkeeping(fn, resolve, {"x", "b"}, parents, runs_once=False)
    assert not any(repeated.allows(c, "sum", c.func.value, method=True) for c in calls)


_TEMPLATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class Base(nn.Module):
    def forward(self, x):
        return self.forward_impl(x)

    def forward_impl(self, x):
        raise NotImplementedError


class ModelNew(Base):
    def forward_impl(self, x):
{impl}
'''


@pytest.mark.parametrize("impl,rule", [
    ("        out = torch.empty_like(x)\n        copy_kernel[(1,)](x, out, x.numel(), BLOCK=1024)\n"
     "        return out", None),
    ("        return torch.tanh(x)  # HERE", "torch-compute"),
])
def test_a_template_method_runs_the_subclass_override(impl, rule):
    """The base's forward calls ``self.forward_impl``, which the class ModelNew derives from defines: the override is on
    the forward path (launches found there, torch compute refused there)."""
    source = _TEMPLATE.format(impl=impl)
    report = check_source(source, "cand.py")
    if rule is None:
        assert report.violations == [], report.violations
    else:
        assert marked_line(source) in {v.line for v in report.violations if v.rule == rule}, report.violations


_REGISTRY = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl

OPS = {{}}


{decorator}


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@{use}
class Copy(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        copy_kernel[(1,)](x, out, x.numel(), BLOCK=1024)
        return out


class ModelNew(Copy):
    pass
'''

_FACTORY = "def register(name):\n    def deco(cls):\n{body}\n    return deco"
_PLAIN = "def register(cls):\n{body}"


@pytest.mark.parametrize("decorator,use,honest", [
    (_FACTORY.format(body="        OPS[name] = cls\n        return cls"), 'register("copy")', True),
    (_PLAIN.format(body="    OPS[cls.__name__] = cls\n    return cls"), "register", True),
    # walk-arounds: another class returned, the class changed, kept where it can be changed, a subclass made
    (_FACTORY.format(body="        return nn.Identity"), 'register("copy")', False),
    (_FACTORY.format(body="        cls.forward = lambda self, x: x.tanh()\n        return cls"), 'register("copy")',
     False),
    (_PLAIN.format(body="    setattr(cls, 'forward', None)\n    return cls"), "register", False),
    (_PLAIN.format(body="    class Sub(cls):\n        pass\n    return Sub"), "register", False),
    (_PLAIN.format(body="    keep = [cls]\n    return cls"), "register", False),
    (_FACTORY.format(body="        OPS[name] = cls\n        return cls"), "register(torch.tanh)", False),
])
def test_a_registry_decorator_on_the_entry_chain_is_accepted_only_when_it_keeps_the_class(decorator, use, honest):
    source = _REGISTRY.format(decorator=decorator, use=use)
    report = check_source(source, "cand.py")
    patching = [v for v in report.violations if v.rule == "patching" and "decorated" in v.message]
    assert (not patching) is honest, report.violations
