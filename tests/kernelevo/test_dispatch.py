"""Runtime dispatch: the accepted kernel runs inside its envelope with a matching source hash; the
original runs (warning once) when stale or outside; KERNELEVO_DISABLE=1 turns everything off."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import warnings
from pathlib import Path

import pytest
import torch

from kernelevo import dispatch
from kernelevo.discovery import discover
from kernelevo.dispatch import KernelEvoWarning
from kernelevo.kernel_store import envelope_from_cases, write_kernel
from kernelevo.settings import reset_settings_cache

USER_MODULE = '''
import torch
import kernelevo


@kernelevo.optimize(inputs=lambda device: [
    (torch.randn(4, 8, device=device), torch.randn(8, device=device)),
    (torch.randn(2, 8, device=device), torch.randn(8, device=device)),
])
def scale(x, w, eps=1e-6):
    return x * w + eps


@kernelevo.optimize(inputs=lambda device: [(torch.randn(4, 8, device=device),)], init=(8,))
class Scale(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.w
'''

# Test doubles for accepted kernels: they add 100 so that a test can see which path ran.
FUNCTION_KERNEL = '''
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x, w, eps=1e-6):
        return x * w + eps + 100
'''
MODULE_KERNEL = '''
import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return x * self.w + 100
'''

_counter = itertools.count()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("KERNELEVO_DISABLE", raising=False)
    # The stand-in kernels play CPU-verified Triton kernels, which run only where Triton runs interpreted
    # (kernelevo.dispatch_where); tests/cli/test_dispatch_real_kernel.py runs a real one without it.
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    reset_settings_cache()
    dispatch.clear_caches()
    yield
    reset_settings_cache()
    dispatch.clear_caches()


def _import(path: Path):
    name = f"kernelevo_dispatch_user_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _repo(tmp_path, *, function_kernel=FUNCTION_KERNEL, stale=False, device_type="cpu", kernels=True,
          module_kernel=MODULE_KERNEL):
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    (root / "models" / "ops.py").write_text(USER_MODULE)
    ops = {op.qualname: op for op in discover(root).ops}
    if kernels:
        cases = [(torch.randn(4, 8), torch.randn(8)), (torch.randn(2, 8), torch.randn(8))]
        envelope = envelope_from_cases(cases, device_type=device_type, capabilities=None, backend="triton")
        op = ops["scale"]
        if stale:
            op = type(op)(**{**op.to_dict(), "source_hash": "sha256:" + "0" * 64})
        write_kernel(root, op, function_kernel, {"verdict": "accepted"}, envelope)
        module_env = envelope_from_cases([(torch.randn(4, 8),)], device_type=device_type, capabilities=None,
                                         backend="triton")
        write_kernel(root, ops["Scale"], module_kernel, {"verdict": "accepted"}, module_env)
    return _import(root / "models" / "ops.py")


def _kernel_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, KernelEvoWarning)]


def test_inside_the_envelope_the_kernel_runs(tmp_path):
    ops = _repo(tmp_path)
    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6 + 100)
        assert torch.allclose(ops.scale(x, w=w), x * w + 1e-6 + 100)  # keywords are bound first
        assert torch.allclose(ops.scale(x, w, 1e-6), x * w + 1e-6 + 100)  # the verified default
    assert _kernel_warnings(record) == []


@pytest.mark.parametrize(
    "make_args, words",
    [
        (lambda: (torch.randn(4, 8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)), "dtype"),
        (lambda: (torch.randn(100, 8), torch.randn(8)), "dim 0 is 100"),
        (lambda: (torch.randn(3, 8), torch.randn(8)), "[3, 8] & [8] were not verified together"),  # 2 and 4 were
        (lambda: (torch.randn(3, 8, 1), torch.randn(8)), "rank 3"),
        (lambda: (torch.randn(4, 8), torch.randn(8), 0.5), "not covered"),
        (lambda: (torch.randn(4, 8, requires_grad=True), torch.randn(8)), "autograd"),
    ],
)
def test_outside_the_envelope_the_original_runs_and_warns_once(tmp_path, make_args, words):
    ops = _repo(tmp_path)
    args = make_args()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            out = ops.scale(*args)
            expected = args[0] * args[1] + (args[2] if len(args) > 2 else 1e-6)
            assert torch.allclose(out, expected)
    messages = _kernel_warnings(record)
    assert len(messages) == 1 and words in messages[0] and "running the original" in messages[0]
    assert torch.allclose(ops.scale(torch.ones(2, 8), torch.ones(8)), torch.full((2, 8), 101 + 1e-6))


def test_a_stale_kernel_is_not_used(tmp_path):
    ops = _repo(tmp_path, stale=True)
    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)
    messages = _kernel_warnings(record)
    assert len(messages) == 1 and "source changed" in messages[0] and "models/ops.py::scale" in messages[0]


def test_editing_the_op_after_acceptance_makes_it_stale(tmp_path):
    _repo(tmp_path)
    source = tmp_path / "repo" / "models" / "ops.py"
    source.write_text(source.read_text().replace("return x * w + eps", "return x * w - eps"))
    ops = _import(source)
    x, w = torch.randn(4, 8), torch.randn(8)
    with pytest.warns(KernelEvoWarning, match="source changed"):
        assert torch.allclose(ops.scale(x, w), x * w - 1e-6)


def test_disabled_dispatch_runs_the_original_silently(tmp_path, monkeypatch):
    ops = _repo(tmp_path)
    monkeypatch.setenv("KERNELEVO_DISABLE", "1")
    reset_settings_cache()
    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)
        with torch.no_grad():
            assert torch.equal(ops.Scale(8)(x), x)
    assert _kernel_warnings(record) == []
    monkeypatch.delenv("KERNELEVO_DISABLE")
    reset_settings_cache()
    assert torch.allclose(ops.scale(x, w), x * w + 1e-6 + 100)  # read per call, not frozen


def test_without_kernels_the_original_runs_silently(tmp_path):
    ops = _repo(tmp_path, kernels=False)
    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)
    assert _kernel_warnings(record) == []


def test_a_kernel_that_fails_to_load_falls_back(tmp_path):
    ops = _repo(tmp_path, function_kernel="raise ImportError('no triton here')\n")
    x, w = torch.randn(4, 8), torch.randn(8)
    with pytest.warns(KernelEvoWarning, match="could not be loaded .*no triton here"):
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)


def test_a_kernel_that_fails_to_construct_falls_back(tmp_path):
    broken = FUNCTION_KERNEL.replace("class ModelNew(nn.Module):",
                                     "class ModelNew(nn.Module):\n    def __init__(self):\n"
                                     "        raise RuntimeError('bad init')\n")
    ops = _repo(tmp_path, function_kernel=broken)
    x, w = torch.randn(4, 8), torch.randn(8)
    with pytest.warns(KernelEvoWarning, match="could not be constructed .*bad init"):
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)
    assert torch.allclose(ops.scale(x, w), x * w + 1e-6)  # and stays on the original


def test_device_type_is_part_of_the_envelope(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("TRITON_INTERPRET")  # a compiled CUDA kernel: not for an interpreted process either
    ops = _repo(tmp_path, device_type="cuda")
    x, w = torch.randn(4, 8), torch.randn(8)
    if torch.cuda.is_available():  # a GPU here: the kernel is loaded, and CPU tensors are outside its envelope
        with pytest.warns(KernelEvoWarning, match="on cpu, verified on cuda"):
            assert torch.allclose(ops.scale(x, w), x * w + 1e-6)
        return
    with warnings.catch_warnings(record=True) as record, caplog.at_level("DEBUG", logger="kernelevo.dispatch"):
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)  # no CUDA device: never loaded, the original runs
    assert _kernel_warnings(record) == []
    assert "this process has no usable CUDA device" in caplog.text


def test_a_cpu_verified_triton_kernel_runs_only_where_triton_is_interpreted(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("TRITON_INTERPRET")
    ops = _repo(tmp_path)
    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings(record=True) as record, caplog.at_level("DEBUG", logger="kernelevo.dispatch"):
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)  # the original, not the stand-in's +100
    assert _kernel_warnings(record) == []
    assert "TRITON_INTERPRET=1 is not set" in caplog.text and "running the original code" in caplog.text


def test_module_ops_dispatch_with_shared_parameters(tmp_path):
    ops = _repo(tmp_path)
    model = ops.Scale(8)
    x = torch.randn(4, 8)
    with torch.no_grad():
        assert torch.allclose(model(x), x + 100)
        model.w.fill_(3.0)  # the kernel sees the module's live parameters
        assert torch.allclose(model(x), 3 * x + 100)
    with pytest.warns(KernelEvoWarning, match="autograd"):
        out = model(x)  # parameters require grad: the forward-only kernel must not run
    assert torch.allclose(out, 3 * x) and out.requires_grad


def test_the_kernel_module_follows_the_users_modules_training_flag(tmp_path):
    """A kernel that reads ``self.training`` (dropout, batch statistics) gets the user's module's flag: the verifier
    judged it in the reference's mode (eval), and a user's module in eval mode must not get training-mode math."""
    ops = _repo(tmp_path, module_kernel=MODULE_KERNEL.replace("return x * self.w + 100",
                                                              "return x * self.w + (200 if self.training else 100)"))
    model, x = ops.Scale(8), torch.randn(4, 8)
    with torch.no_grad():
        assert torch.allclose(model.eval()(x), x + 100)
        assert torch.allclose(model.train()(x), x + 200)
        assert torch.allclose(model.eval()(x), x + 100)


# A kernel that remembers the modes it was built in: +100 as the stand-ins when built as the verifier builds it
# (gradients on, no inference mode, no autocast), +1000 more otherwise.
MODE_READING_KERNEL = """
import torch
from torch import nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        modes = (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.is_autocast_enabled("cpu"))
        self.offset = 100.0 if modes == (True, False, False) else 1100.0
        torch.rand(1)  # a draw: it must not come from the user's random stream

    def forward(self, x, w, eps=1e-6):
        return x * w + eps + self.offset
"""


def test_the_kernel_is_constructed_as_the_verifier_constructs_it_whatever_mode_the_first_call_runs_in(tmp_path):
    ops = _repo(tmp_path, function_kernel=MODE_READING_KERNEL)
    x, w = torch.randn(4, 8), torch.randn(8)
    torch.manual_seed(0)
    expected_next = torch.rand(1)
    torch.manual_seed(0)
    with torch.inference_mode():  # serving: the first call builds the kernel
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6 + 100)
    assert torch.equal(torch.rand(1), expected_next)  # the user's random stream is untouched


def test_each_kind_of_reason_warns_once_and_wrong_types_never_crash(tmp_path):
    ops = _repo(tmp_path)
    w = torch.randn(8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ops.scale(torch.randn(100, 8), w)
        ops.scale(torch.randn(101, 8), w)  # same kind (dim too large): no second warning
        ops.scale(torch.randn(4, 8, dtype=torch.float64), w.double())
        assert ops.scale(2.0, 3.0) == 2.0 * 3.0 + 1e-6  # floats where tensors were verified: original
    messages = _kernel_warnings(record)
    assert len(messages) == 3, messages
    assert "dim 0 is 100" in messages[0] and "dtype" in messages[1] and "type" in messages[2]


TRITON_KERNEL = '''
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale(x_ptr, w_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs % cols, mask=mask)
    tl.store(y_ptr + offs, x * w + 1e-6 + 100.0, mask=mask)  # +100: the test sees which path ran


class ModelNew(nn.Module):
    def forward(self, x, w, eps=1e-6):
        x = x.contiguous()
        y = torch.empty_like(x)
        _scale[(triton.cdiv(x.numel(), 256),)](x, w, y, x.numel(), x.shape[-1], BLOCK=256)
        return y
'''


@pytest.mark.gpu
@pytest.mark.parametrize("capability_ok", [True, False])
def test_cuda_dispatch_checks_the_device_capability(tmp_path, capability_ok, monkeypatch, caplog):
    monkeypatch.delenv("TRITON_INTERPRET")  # compiled Triton, as on the machine that verified it
    caplog.set_level("DEBUG", logger="kernelevo.dispatch")
    capability = list(torch.cuda.get_device_capability(0))
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    (root / "models" / "ops.py").write_text(USER_MODULE)
    op = next(o for o in discover(root).ops if o.qualname == "scale")
    cases = [(torch.randn(rows, 8, device="cuda"), torch.randn(8, device="cuda")) for rows in (2, 4)]
    envelope = envelope_from_cases(cases, device_type="cuda",
                                   capabilities=[capability if capability_ok else [1, 0]], backend="triton")
    write_kernel(root, op, TRITON_KERNEL, {"verdict": "accepted"}, envelope)
    ops = _import(root / "models" / "ops.py")
    x, w = torch.randn(4, 8, device="cuda"), torch.randn(8, device="cuda")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = ops.scale(x, w)
        torch.cuda.synchronize()
    messages = _kernel_warnings(record)
    expected = x * w + 1e-6 + (100 if capability_ok else 0)
    assert torch.allclose(out, expected, atol=1e-4), messages
    assert messages == []
    if not capability_ok:  # no device of this process has a verified capability: never loaded, said at debug level
        assert "verified on capabilities [(1, 0)]" in caplog.text
        return
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x.cpu(), w.cpu()), x.cpu() * w.cpu() + 1e-6)  # cpu: outside
    assert any("on cpu, verified on cuda" in m for m in _kernel_warnings(record))


SCALED_USER_MODULE = '''
import torch
import kernelevo


@kernelevo.optimize(inputs=lambda device: [(torch.randn(4, 8, device=device),)], init=(8, 0.5))
class Scaled(torch.nn.Module):
    def __init__(self, n, alpha=0.5, bias=False):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return x * self.alpha
'''
SCALED_KERNEL = '''
from torch import nn


class ModelNew(nn.Module):
    def __init__(self, n, alpha=0.5, bias=False):
        super().__init__()

    def forward(self, x):
        return x * 0.5 + 100  # alpha as verified, baked in (red team s8: constructor arguments were never varied)
'''


def _scaled_repo(tmp_path):
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    (root / "models" / "scaled.py").write_text(SCALED_USER_MODULE)
    op = next(op for op in discover(root).ops if op.qualname == "Scaled")
    envelope = envelope_from_cases([(torch.randn(4, 8),)], device_type="cpu", capabilities=None, backend="triton",
                                   init=[8, 0.5])
    write_kernel(root, op, SCALED_KERNEL, {"verdict": "accepted"}, envelope)
    return _import(root / "models" / "scaled.py")


def test_a_module_built_with_other_constructor_arguments_keeps_its_own_forward(tmp_path):
    """The envelope pins the constructor arguments the kernel was verified with, as it pins forward's scalars: a
    kernel that baked alpha=0.5 in is never used for a module built with alpha=0.25."""
    ops = _scaled_repo(tmp_path)
    x = torch.randn(4, 8)
    with torch.no_grad(), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for same in (ops.Scaled(8), ops.Scaled(8, 0.5), ops.Scaled(n=8, alpha=0.5, bias=False)):
            assert torch.allclose(same(x), x * 0.5 + 100)  # the verified construction: the kernel
        assert _kernel_warnings(record) == []
        other = ops.Scaled(8, alpha=0.25)
        for _ in range(2):
            assert torch.allclose(other(x), x * 0.25)  # the original, every call
        assert torch.allclose(ops.Scaled(8, 0.5, True)(x), x * 0.5)  # a default changed: also outside
    warned = _kernel_warnings(record)
    assert any("constructor argument alpha = 0.25, verified only 0.5" in w for w in warned), warned
    assert any("constructor argument bias = True" in w for w in warned), warned


def test_a_non_contiguous_input_runs_the_original_when_only_contiguous_ones_were_verified(tmp_path):
    """Every checked input was contiguous: a kernel that ignores strides (red team s8) is used only for those."""
    ops = _repo(tmp_path)
    wide, w = torch.randn(4, 16), torch.randn(8)
    x = wide[:, ::2]  # 4x8 (a verified shape), not contiguous
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.scale(x, w), x * w + 1e-6)  # the original
        assert torch.allclose(ops.scale(x.contiguous(), w), x * w + 1e-6 + 100)  # the kernel
    assert any("not contiguous" in m for m in _kernel_warnings(record)), _kernel_warnings(record)


def test_envelopes_written_before_layouts_and_constructors_were_recorded_admit_any():
    from kernelevo.envelope import EnvelopeCheck

    check = EnvelopeCheck({"device_type": "cpu", "args": [
        {"kind": "tensor", "dtypes": ["float32"], "rank": 2, "dims": [{"min": 1, "max": 8}, {"min": 8, "max": 8}]}]})
    assert check.check((torch.randn(3, 16)[:, ::2],)) is None
