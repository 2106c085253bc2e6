"""Generated modules are drop-in ``ModelNew``s; integer outputs are exact; unsupported ops are named at once.

The drop-in tests build ``ModelNew`` with constructor arguments other than the traced ones and compare it
with the reference ``Model`` built the same way, running the kernels in the Triton interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.analysis import unsupported_message, unsupported_ops
from kernelevo.search.offline.init_copy import constructor
from kernelevo.search.offline.trace import attribute_access, trace_task
from kernelevo.search.proposer import ProposalRequest

ROOT = Path(__file__).resolve().parents[2]
HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"

NORM = HEADER + '''
HIDDEN = 64


class Model(nn.Module):
    def __init__(self, dim: int = HIDDEN, eps: float = 1e-6, temperature: float = 1.0):
        super(Model, self).__init__()
        self.proj = nn.Linear(dim, dim, bias=False)
        self.weight = nn.Parameter(torch.randn(dim))
        self.register_buffer("shift", torch.rand(dim))
        self.eps = eps
        self.temperature = temperature

    def forward(self, x):
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return torch.softmax((normed * self.weight + self.shift) / self.temperature, dim=-1).to(x.dtype)


def get_inputs():
    return [torch.randn(7, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, 1e-6, 1.0]
'''


@pytest.fixture(scope="module")
def proposer():
    return OfflineProposer()


def _interpreted(script: str, tmp_path: Path) -> None:
    """Run ``script`` in a fresh interpreter with Triton's CPU interpreter on: whether ``@triton.jit`` interprets is
    settled when Triton first reads the variable, so setting it in this process depends on which test ran first."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok"), done.stdout[-2000:]


# The start of each check script: load a module written to the test's folder by name.
LOADER = textwrap.dedent("""
    import importlib.util
    import torch

    def load(name):
        spec = importlib.util.spec_from_file_location(name, f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
""")

_CONSTRUCTOR_CHECK = LOADER + textwrap.dedent("""
    cand, ref = load("cand_norm"), load("ref_norm")
    for args in ([32, 0.5, 2.0], [96, 1e-3, 0.25]):
        torch.manual_seed(3)
        new = cand.ModelNew(*args)
        torch.manual_seed(3)
        old = ref.Model(*args)
        assert new.proj.weight.shape == (args[0], args[0])
        for (name, a), (name_b, b) in zip(sorted(new.state_dict().items()), sorted(old.state_dict().items())):
            assert name == name_b and torch.equal(a, b), name  # same seed, same values
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(5, args[0]).to(dtype)
            got, want = new(x), old(x)
            assert got.dtype == want.dtype == dtype
            torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=1e-3)
    print("ok")
""")


def test_model_new_honours_other_constructor_arguments(proposer, tmp_path):
    [p] = proposer.propose(ProposalRequest("norm", NORM))
    assert p.error is None, p.error
    assert "torch.zeros" not in p.source and "float(self.eps)" in p.source
    (tmp_path / "cand_norm.py").write_text(p.source)
    (tmp_path / "ref_norm.py").write_text(NORM)
    _interpreted(_CONSTRUCTOR_CHECK, tmp_path)


ADAM = HEADER + '''
class Model(nn.Module):
    def __init__(self, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps

    def forward(self, p, g, m, v):
        m2 = self.beta1 * m + (1 - self.beta1) * g
        v2 = self.beta2 * v + (1 - self.beta2) * g * g
        return p - self.lr * m2 / (torch.sqrt(v2) + self.eps)


def get_inputs():
    return [torch.randn(300), torch.randn(300), torch.randn(300), torch.rand(300)]


def get_init_inputs():
    return [1e-3, 0.9, 0.999, 1e-8]
'''

# A forward deriving a number in a way the generator cannot recompute (the log): that attribute is frozen.
SOFTPLUS_SCALE = HEADER + '''
import math


class Model(nn.Module):
    def __init__(self, beta: float = 2.0, shift: float = 0.5):
        super().__init__()
        self.beta, self.shift = beta, shift

    def forward(self, x):
        return (x + self.shift) * math.log(self.beta)


def get_inputs():
    return [torch.randn(8, 40)]


def get_init_inputs():
    return [2.0, 0.5]
'''

_DERIVED_CHECK = LOADER + textwrap.dedent("""
    adam, adam_ref = load("cand_adam"), load("ref_adam")
    for args in ([1e-3, 0.9, 0.999, 1e-8], [3e-2, 0.5, 0.95, 1e-4]):  # the complements (1 - beta) follow too
        inputs = [torch.randn(300), torch.randn(300), torch.randn(300), torch.rand(300)]
        torch.testing.assert_close(adam.ModelNew(*args)(*inputs), adam_ref.Model(*args)(*inputs))
    scaled, scaled_ref = load("cand_scaled"), load("ref_scaled")
    x = torch.randn(8, 40)
    torch.testing.assert_close(scaled.ModelNew(2.0, 0.25)(x), scaled_ref.Model(2.0, 0.25)(x))  # shift follows
    try:
        scaled.ModelNew(3.0, 0.5)(x)
    except ValueError as exc:
        assert "generated for beta=2.0" in str(exc), exc
    else:
        raise AssertionError("a kernel that baked in log(beta) ran with another beta")
    print("ok")
""")


def test_model_new_computes_derived_hyperparameters_and_refuses_what_it_baked_in(proposer, tmp_path):
    """``1 - beta1`` is computed from the instance; a constant derived in a way the generator cannot recompute
    (``log(beta)``) makes the forward refuse other values of that attribute instead of answering wrongly."""
    [adam] = proposer.propose(ProposalRequest("adam", ADAM))
    [scaled] = proposer.propose(ProposalRequest("scaled", SOFTPLUS_SCALE))
    assert adam.error is None and scaled.error is None, (adam.error, scaled.error)
    assert "1.0 - float(self.beta1)" in adam.source and "raise ValueError" not in adam.source
    assert "float(self.shift)" in scaled.source and "if float(self.beta) != 2.0:" in scaled.source
    for name, text in (("cand_adam", adam.source), ("ref_adam", ADAM), ("cand_scaled", scaled.source),
                       ("ref_scaled", SOFTPLUS_SCALE)):
        (tmp_path / f"{name}.py").write_text(text)
    _interpreted(_DERIVED_CHECK, tmp_path)
    from evaluator import evaluate

    verdict = evaluate(tmp_path / "ref_scaled.py", tmp_path / "cand_scaled.py", device="cpu")
    assert verdict.accepted, verdict.detail  # the verifier takes the guard for what it is


def test_constructor_copy_refuses_names_the_generated_module_binds():
    assert constructor(HEADER + "BLOCK_SIZE = 8\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                                "        super().__init__()\n        self.n = BLOCK_SIZE\n") is None
    assert constructor(HEADER + "import triton\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                                "        super().__init__()\n        self.v = triton.__version__\n") is None
    plain = constructor(HEADER + "class Model(nn.Module):\n    def forward(self, x):\n        return x\n")
    assert plain is not None and not plain.has_init


def test_attribute_names_that_are_not_plain_stay_out_of_generated_code():
    assert attribute_access(["layers", "0", "eps"]) == "self.layers[0].eps"
    assert attribute_access(["x; import os"]) is None and attribute_access(["_private"]) is None
    assert attribute_access(["class"]) is None


def test_int8_quantisation_is_exact_on_the_cpu(tmp_path):
    """``atol`` 0 for the int8 output: the kernel rounds as PyTorch (the bench op's own check)."""
    from evaluator import evaluate

    path = ROOT / "bench" / "ops" / "int8_row_quant.py"
    assert "TOLERANCE = {\"atol\": 0.0" in path.read_text()
    [p] = OfflineProposer().propose(ProposalRequest("int8_row_quant", path.read_text()))
    assert "enable_fp_fusion=False" in p.source and "TORCH_CUDA=x.is_cuda" in p.source
    cand = tmp_path / "offline_int8.py"
    cand.write_text(p.source)
    verdict = evaluate(str(path), str(cand), device="cpu")
    assert verdict.accepted, f"{verdict.reason}: {verdict.detail}"


def test_division_by_a_python_number_rounds_as_torch_on_each_device(tmp_path):
    """CUDA: x * fp32(1 / d); CPU: x / d. Checked in the interpreter against both formulas."""
    from kernelevo.search.offline.emit import SCALAR_DIV

    (tmp_path / "scalar_div.py").write_text("import triton\nimport triton.language as tl\n" + SCALAR_DIV + '''

@triton.jit
def k(x_ptr, o_ptr, n, CUDA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(o_ptr + offs, div_by_scalar(x, 127.0, CUDA), mask=offs < n)
''')
    _interpreted(textwrap.dedent("""
        import torch
        import scalar_div as mod

        torch.manual_seed(0)
        x = torch.rand(4096) * 100
        for cuda, want in ((True, x * (torch.tensor(1.0) / torch.tensor(127.0))), (False, x / 127.0)):
            out = torch.empty_like(x)
            mod.k[(1,)](x, out, x.numel(), CUDA=cuda, BLOCK=4096)
            assert torch.equal(out, want), cuda
        assert not torch.equal(x * (torch.tensor(1.0) / torch.tensor(127.0)), x / 127.0)  # the two differ
        print("ok")
    """).replace("import scalar_div as mod", "import sys; sys.path.insert(0, '.'); import scalar_div as mod"),
        tmp_path)


@pytest.mark.gpu
def test_cuda_divides_by_a_python_number_through_its_reciprocal():
    """The assumption div_by_scalar encodes, checked against the installed PyTorch on the GPU."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    x = torch.rand(1 << 20, device="cuda") * 100
    assert torch.equal(x / 127.0, x * (torch.tensor(1.0) / torch.tensor(127.0)).item())


UNSUPPORTED = HEADER + '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, dilation=2)  # dilated: not lowered

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return F.avg_pool2d(y, 2, padding=1, ceil_mode=True)  # may drop a window by size: not lowered


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return []
'''


def test_unsupported_aten_ops_are_listed_with_their_lines_and_what_to_do(proposer):
    ops = unsupported_ops(trace_task(UNSUPPORTED))
    assert [u.aten for u in ops] == ["aten.convolution", "aten.avg_pool2d"]
    assert ops[0].line == 12 and "self.conv(x)" in ops[0].code
    assert ops[1].line == 13 and "avg_pool2d" in ops[1].code
    message = unsupported_message(ops, "conv_op")
    assert message.startswith("op conv_op: not supported") and "line 12" in message
    assert "by hand" in message and "LLM proposer" in message and "split the op" in message
    assert proposer.unsupported(UNSUPPORTED) == ops
    [p] = proposer.propose(ProposalRequest("conv_op", UNSUPPORTED))
    assert p.source == "" and "aten.convolution at line 12" in p.error and "aten.avg_pool2d" in p.error
    assert proposer.unsupported(NORM) == []


SIZE_SCALED = HEADER + '''
class Model(nn.Module):
    def forward(self, x):
        return x / x.shape[-1] + x.shape[0]  # sizes as the numbers a float op computes with


def get_inputs():
    return [torch.randn(6, 40)]


def get_init_inputs():
    return []
'''


def test_a_size_operand_of_a_float_op_is_the_runtime_number(tmp_path):
    from evaluator import evaluate

    task = tmp_path / "size_scaled.py"
    task.write_text(SIZE_SCALED)
    [p] = OfflineProposer().propose(ProposalRequest("size_scaled", SIZE_SCALED))
    assert p.error is None, p.error
    candidate = tmp_path / "cand.py"
    candidate.write_text(p.source)
    verdict = evaluate(task, candidate, device="cpu")
    assert verdict.accepted, verdict.detail
