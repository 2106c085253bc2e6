"""Honest patterns from real-world kernel libraries that the static checker must accept, and the candidate
files of the static suite (tests/candidates/*_static) judged by the checker alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_static_check import make

from evaluator.static_check import check_source

CANDIDATES = Path(__file__).resolve().parents[1] / "candidates"

_DESCRIPTOR_KERNEL = """
@triton.jit
def tma_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    src = tl.make_tensor_descriptor(src_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[n], strides=[1], block_shape=[BLOCK])
    dst.store([tl.program_id(0) * BLOCK], src.load([tl.program_id(0) * BLOCK]))
"""

_CUSTOM_OP = """
@torch.library.custom_op("kelib::copy", mutates_args=())
def copy_op(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(t)
    copy_kernel[(triton.cdiv(t.numel(), 1024),)](t, out, t.numel(), BLOCK=1024)
    return out


@copy_op.register_fake
def _(t):
    return torch.empty_like(t)


def _backward(ctx, grad):
    return grad.mul(2.0)  # the backward pass may use PyTorch


copy_op.register_autograd(_backward)
"""

_TRITON_OP = """
@torch.library.triton_op("kelib::copy2", mutates_args={})
def copy2(t: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(t)
    n = t.numel()
    torch.library.wrap_triton(copy_kernel)[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](t, out, n, BLOCK=1024)
    return out
"""

_AUTOTUNE = """
def _prune(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= 4 * named_args["n"]] or configs[:1]


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (1024, 4), (4096, 8))],
                 key=["n"], prune_configs_by={"early_config_prune": _prune}, reset_to_zero=["out_ptr"],
                 restore_value=["x_ptr"])
@triton.jit
def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""

_LIBDEVICE = """
try:
    from triton.language.extra import libdevice
except ImportError:
    from triton.language.extra.cuda import libdevice


@triton.jit
def act(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = libdevice.tanh(x) + tl.extra.cuda.libdevice.erf(x) + tl.math.exp(x) + triton.language.math.rsqrt(x)
    tl.store(x_ptr + offs, y, mask=offs < n)
"""

HONEST = [
    # 1. imports: contextlib, packaging.version, importlib probes with literal names, DTensor as a type
    dict(module="import contextlib\n\n\n@contextlib.contextmanager\ndef guard():\n    yield",
         body="with guard(), contextlib.nullcontext():\n    out = out.view(-1).view(x.shape)"),
    dict(module="from packaging import version\nNEW = version.parse(triton.__version__) >= version.Version('3.0')"),
    dict(module="import packaging.version\nNEW = packaging.version.parse(torch.__version__).release >= (2, 4)"),
    dict(module="import importlib.util\nHAS_EXTRA = importlib.util.find_spec('triton.language.extra') is not None"),
    dict(module="import importlib.util\nif importlib.util.find_spec('triton'):\n    HAS = True"),
    dict(module="import importlib.metadata\nV = importlib.metadata.version('triton')\n"
                "try:\n    W = importlib.metadata.version('torch')\nexcept importlib.metadata.PackageNotFoundError:\n"
                "    W = None"),
    dict(module="from torch.distributed.tensor import DTensor", body="assert not isinstance(x, DTensor)"),
    dict(module="import torch.distributed.tensor", body="assert not isinstance(x, torch.distributed.tensor.DTensor)"),
    dict(module="from torch.distributed.tensor import DTensor\n\n\n"
                "def local(t: DTensor | torch.Tensor) -> torch.Tensor:\n"
                "    return t", body="out = local(out)"),
    dict(module="try:\n    from torch.distributed.tensor import DTensor\nexcept ImportError:\n    DTensor = None",
         body="if DTensor is not None and isinstance(x, DTensor):\n    raise TypeError('local tensors only')"),
    dict(module="try:\n    from torch.distributed.tensor import DTensor\n\n    _TYPES = (DTensor,)\nexcept Exception:\n"
                "    _TYPES = ()", body="assert not isinstance(x, _TYPES)"),
    # 2. locals named like modules are locals; import fallbacks bind constants
    dict(module="def compare(a, b, operator):\n    return operator(a, b)", body="ok = compare(1, 2, max)"),
    dict(module="def helper(t, F=None):\n    return t", body="out = helper(out)"),
    dict(body="for F in range(2):\n    pass"),
    dict(module="try:\n    from triton.language.extra import libdevice\nexcept ImportError:\n    libdevice = None"),
    dict(module="try:\n    from triton.language.extra import libdevice\nexcept Exception:\n    libdevice = ()"),
    dict(module="try:\n    from triton.language.extra import libdevice\nexcept ImportError:\n    class libdevice:\n"
                "        pass"),
    # 3. device-capability probes of any backend are not compute
    dict(body="a = torch.xpu.is_available()\nb = torch.xpu.device_count() if a else 0\n"
              "c = torch.backends.mps.is_available()\nd = torch.version.hip\ne = torch.__version__\n"
              "f = torch.backends.cudnn.version()\ng = torch.accelerator.is_available()"),
    dict(body="p = torch.xpu.get_device_properties(0) if torch.xpu.is_available() else None\n"
              "q = torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)"),
    # 4. version and device probes in a try: the except only sets flags or constants
    dict(body="try:\n    cap = torch.cuda.get_device_capability()\nexcept RuntimeError:\n    cap = (0, 0)"),
    dict(body="try:\n    import triton.language.extra.libdevice as ld\n    HAS = True\nexcept ModuleNotFoundError:\n"
              "    HAS = False"),
    dict(init="try:\n    major, _ = torch.cuda.get_device_capability()\nexcept (AssertionError, RuntimeError):\n"
              "    major = 0\nself.major = major"),
    dict(module="def sm_count():\n    try:\n        props = torch.cuda.get_device_properties(0)\n"
                "        return props.multi_processor_count\n    except RuntimeError:\n        return 1",
         body="n = sm_count()"),
    # 5. getattr(torch, device.type) for device-module queries
    dict(body="m = getattr(torch, x.device.type, None)\nif m is not None and hasattr(m, 'device_count') and "
              "m.is_available():\n    n = m.device_count()"),
    dict(body="n = getattr(torch, x.device.type).device_count()"),
    dict(module="def infer_device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n\n\n"
                "BACKEND = getattr(torch, infer_device())", body="ok = BACKEND.is_available()"),
    dict(body="backend = getattr(torch, str(x.device.type), None)\n"
              "if backend is not None and hasattr(backend, 'device'):"
              "\n    with backend.device(0):\n        pass"),
    # 6. Triton tensor descriptors: device side inside the kernel, TensorDescriptor on the host
    dict(module=_DESCRIPTOR_KERNEL),
    dict(module="from triton.tools.tensor_descriptor import TensorDescriptor",
         body="desc = TensorDescriptor.from_tensor(x, block_shape=[16])"),
    dict(module="import triton.tools.tensor_descriptor as td", body="desc = td.TensorDescriptor(x, [16], [1], [16])"),
    # 7. torch.library registration of the candidate's own ops; calling them is calling the kernel
    dict(module=_CUSTOM_OP,
         body="out = copy_op(out)\nout = torch.ops.kelib.copy(out)\nout = torch.ops.kelib.copy.default(out)"),
    dict(module=_TRITON_OP, body="out = copy2(out)"),
    # 8. multi-config autotune and libdevice
    dict(module=_AUTOTUNE, body="tuned[lambda meta: (triton.cdiv(x.numel(), meta['BLOCK']),)](x, out, x.numel())"),
    dict(module=_LIBDEVICE),
    # plain code that must stay legal around the new rules
    dict(module="tl2 = triton.language\nif triton is None:\n    raise ImportError('triton is required')"),
    dict(body="n = 1\nfor d in x.shape:\n    n *= int(d)\nfor i, s in enumerate(x.size()):\n    n += int(s)\n"
              "strides = [int(s) for s in x.stride()]\nfor i in range(x.dim()):\n    n += int(x.shape[i])"),
    dict(init="self.scale = nn.Parameter(torch.ones(()))", body="s = self.scale.item()"),
    dict(init="self.norm = nn.Module()\nself.norm.weight = nn.Parameter(torch.ones(4))", body="w = self.norm.weight"),
    dict(module="def helper(t: 'torch.Tensor', n: int | None = None) -> tuple[torch.Tensor, ...]:\n    return (t,)",
         body="out = helper(out)[0]"),
    dict(body="copy_kernel[(max(1, x.numel() // 1024),)](x, out, x.numel(), BLOCK=1024)\n"
              "copy_kernel[lambda meta: (triton.cdiv(x.numel(), meta['BLOCK']),)](x, out, x.numel(), BLOCK=1024)"),
    dict(body="n = getattr(x, 'ndim', None)\nprops = getattr(torch.cuda, 'get_device_properties', None)"),
]


@pytest.mark.parametrize("parts", HONEST, ids=[f"honest-{i}" for i in range(len(HONEST))])
def test_honest_pattern_is_accepted(parts):
    report = check_source(make(**parts), "cand.py")
    assert report.syntax_error is None
    assert report.violations == [], report.violations


def test_custom_op_calls_are_launches_of_the_candidates_kernel():
    source = make(module=_CUSTOM_OP).replace(
        "        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n",
        "        out = torch.ops.kelib.copy(x)\n")
    report = check_source(source)
    assert report.ok, report.violations
    assert report.launched == ["copy_kernel"]
    assert report.custom_ops == ["kelib::copy"]


def test_wrap_triton_launch_is_a_launch():
    source = make(module=_TRITON_OP).replace(
        "        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n",
        "        out = copy2(x)\n")
    report = check_source(source)
    assert report.ok, report.violations
    assert report.launched == ["copy_kernel"]


def test_custom_op_body_is_on_the_forward_path():
    source = make(module=_CUSTOM_OP.replace("    return out\n", "    return out.exp()  # HERE\n", 1),
                  body="out = torch.ops.kelib.copy(out)")
    report = check_source(source)
    assert [v.rule for v in report.violations] == ["torch-compute"], report.violations


def _fragment() -> list[dict]:
    return yaml.safe_load((CANDIDATES / "manifest.d" / "static.yaml").read_text())["entries"]


@pytest.mark.parametrize("entry", [e for e in _fragment() if e.get("static_checks", True)],
                         ids=lambda e: Path(e["file"]).stem)
def test_static_suite_candidate_meets_its_static_expectation(entry):
    """Static half of the suite entries: static_violation candidates are refused, the rest pass the checker."""
    path = CANDIDATES / entry["file"]
    report = check_source(path.read_text(), path.name)
    if entry["reasons"] == ["static_violation"]:
        assert not report.ok, entry["file"]
    else:
        assert report.ok, (entry["file"], report.violations)
        assert report.launched, entry["file"]


def test_every_static_candidate_file_is_in_the_fragment():
    listed = {e["file"] for e in _fragment()}
    on_disk = {p.relative_to(CANDIDATES).as_posix() for folder in ("honest_static", "adversarial_static")
               for p in (CANDIDATES / folder).glob("*.py")}
    assert listed == on_disk


def test_the_session_warm_up_checks_an_honest_candidate_that_passes():
    """A session warms the checker up on this source while its reference starts: it must exercise the whole
    checker (a Triton kernel launched from ModelNew.forward), not stop at a refusal."""
    from evaluator.static_check import _WARM_UP_SOURCE, check_source, warm_up

    report = check_source(_WARM_UP_SOURCE, "<warm-up>")
    assert report.violations == [] and report.backend == "triton" and report.launched == ["_copy_kernel"]
    warm_up()  # never raises
