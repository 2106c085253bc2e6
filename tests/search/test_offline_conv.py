"""Convolutions as implicit GEMMs: conv + eval-mode batch norm + ReLU fused into one Triton kernel, accepted by
the real verifier on CPU; the batch-norm buffers read at call time; forms that are not lowered named at once."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from test_offline_dropin import LOADER, _interpreted
from test_offline_indexing import _accepted

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.analysis import unsupported_message, unsupported_ops
from kernelevo.search.offline.conv import conv_problem
from kernelevo.search.offline.launches import record_launches
from kernelevo.search.offline.module import generate
from kernelevo.search.offline.trace import trace_task
from kernelevo.search.proposer import ProposalRequest

ROOT = Path(__file__).resolve().parents[2]
HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"

CONV_BN_RELU = HEADER + '''class Model(nn.Module):
    def __init__(self, c_in: int = 6, c_out: int = 10, eps: float = 1e-5):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=eps)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1.0, 1.0)
            self.bn.running_var.uniform_(0.25, 4.0)
            self.bn.weight.uniform_(0.5, 2.0)
            self.bn.bias.uniform_(-1.0, 1.0)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 6, 9, 7)]


def get_small_cases():
    return [get_inputs(), [torch.randn(1, 6, 4, 11)]]


def get_init_inputs():
    return [6, 10, 1e-5]
'''

# stride 2, padding 2, a 5x3 filter, a bias and no batch norm; fp16
STRIDED = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(5, 12, (5, 3), stride=2, padding=2, dtype=torch.float16)

    def forward(self, x):
        return F.silu(self.conv(x)) * 0.5


def get_inputs():
    return [torch.randn(3, 5, 11, 8, dtype=torch.float16)]


def get_init_inputs():
    return []
'''

DILATED = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, dilation=2)
        self.grouped = nn.Conv2d(8, 8, 3, groups=4)

    def forward(self, x):
        return self.grouped(self.conv(x))


def get_inputs():
    return [torch.randn(2, 4, 12, 12)]


def get_init_inputs():
    return []
'''


STRATEGY = "conv-implicit-gemm"


@pytest.fixture(scope="module")
def proposer():
    return OfflineProposer()


def _kernel(source: str) -> str:
    return source.split("@triton.jit", 1)[1].split("class ModelNew")[0]


def test_conv_bn_relu_is_one_implicit_gemm_kernel_the_verifier_accepts(proposer, tmp_path):
    assert unsupported_ops(trace_task(CONV_BN_RELU)) == []
    assert proposer.strategies(CONV_BN_RELU) == ["conv-implicit-gemm"]
    default, tuned = _accepted(proposer, tmp_path, "conv_bn_relu", CONV_BN_RELU, seeds=(0, 1), strategy=STRATEGY)
    assert tuned != default  # the second fresh candidate is a tuned variant of the tiles
    kernel = _kernel(default)
    assert kernel.count("@triton.jit") == 0 and "tl.dot(a, b, acc)" in kernel
    assert "(h_in >= 0) & (h_in < H) & (w_in >= 0) & (w_in < W)" in kernel  # padding masked, not materialised
    # batch norm folded into the epilogue from the module's buffers, read per column (channel) at call time
    for buffer in ("bn_running_mean", "bn_running_var", "bn_weight", "bn_bias"):
        assert re.search(rf"tl\.load\({buffer}_per_channel_\d+_moved_row .*mask=col_mask", kernel), buffer
    assert "tl.math.rsqrt" in kernel and "float(self.bn.eps)" in default
    assert "1e-05" not in kernel and "unfold" not in default and "F.conv" not in default.split("class ModelNew")[1]


def test_strided_padded_convolution_with_bias_and_a_pointwise_epilogue(proposer, tmp_path):
    [src] = _accepted(proposer, tmp_path, "strided", STRIDED, strategy=STRATEGY)
    kernel = _kernel(src)
    assert "h_start = i1 * 2 - 2" in kernel and "w_start = i2 * 2 - 2" in kernel
    assert "DOT_F32" not in kernel  # fp16 tiles go to tl.dot as they are (only bf16 is widened, on the CPU only)


def test_tiles_are_launch_parameters_the_tuner_moves():
    traced = trace_task(CONV_BN_RELU)
    params = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 4, "NUM_WARPS": 2, "NUM_STAGES": 2}
    source = generate(traced, "conv-implicit-gemm", "cbr", params)
    x = traced.small_inputs[0]
    [[launch], [small]] = record_launches(source, traced.init_inputs, [[x], [x[:1]]])
    assert launch.params["BLOCK_M"] == 32 and launch.params["num_stages"] == 2
    assert launch.grid == (-(-2 * 9 * 7 // 32) * 1,) and small.grid == (-(-9 * 7 // 32),)


_BUFFERS_AT_CALL_TIME = LOADER + textwrap.dedent("""
    cand, ref = load("cand_conv"), load("ref_conv")
    for args in ([6, 10, 1e-5], [3, 7, 0.5]):
        torch.manual_seed(1)
        new = cand.ModelNew(*args).eval()
        torch.manual_seed(1)
        old = ref.Model(*args).eval()
        x = torch.randn(2, args[0], 6, 5)
        torch.testing.assert_close(new(x), old(x), rtol=1e-4, atol=1e-4)
        with torch.no_grad():  # new statistics after construction: the kernel must read them, not a baked copy
            for m in (new, old):
                m.bn.running_var.fill_(0.1)
                m.bn.running_mean.fill_(0.3)
                m.bn.bias.fill_(-0.2)
        torch.testing.assert_close(new(x), old(x), rtol=1e-4, atol=1e-4)
    print("ok")
""")


def test_batch_norm_buffers_and_eps_are_read_at_call_time(proposer, tmp_path):
    [p] = proposer.propose(ProposalRequest("conv", CONV_BN_RELU))
    (tmp_path / "cand_conv.py").write_text(p.source)
    (tmp_path / "ref_conv.py").write_text(CONV_BN_RELU)
    _interpreted(_BUFFERS_AT_CALL_TIME, tmp_path)


def test_convolutions_that_are_not_lowered_are_named_with_the_reason(proposer):
    ops = unsupported_ops(trace_task(DILATED))
    assert [u.aten for u in ops] == ["aten.convolution"] and ops[0].count == 2
    assert "dilation (2, 2)" in ops[0].why and ops[0].line == 13
    message = unsupported_message(ops, "dilated")
    assert "aten.convolution at line 13 (return self.grouped(self.conv(x))) x2: dilation (2, 2)" in message
    [p] = proposer.propose(ProposalRequest("dilated", DILATED))
    assert p.source == "" and "only dilation 1 is lowered" in p.error
    assert "groups=4" in conv_problem(4, [1, 1], [0, 0], [1, 1], False, [0, 0], 4)
    assert "1-D convolution" in conv_problem(3, [1], [0], [1], False, [0], 1)
    assert "transposed" in conv_problem(4, [1, 1], [0, 0], [1, 1], True, [0, 0], 1)
    assert conv_problem(4, [2, 1], [3, 0], [1, 1], False, [0, 0], 1) is None


def test_batch_norm_on_batch_statistics_is_named():
    stats = "self.bn.running_mean, self.bn.running_var"
    for args, why in (("None, None", "without running statistics"), (stats, "training mode")):
        src = CONV_BN_RELU.replace("return torch.relu(self.bn(self.conv(x)))",
                                   f"return F.batch_norm(self.conv(x), {args}, training=True)")
        ops = unsupported_ops(trace_task(src))
        assert [u.aten for u in ops] == ["aten._native_batch_norm_legit"] and why in ops[0].why, ops


@pytest.mark.gpu
@pytest.mark.parametrize("op,strategy", [("conv_bn_relu", "conv-implicit-gemm"),
                                         ("softmax_temperature", "rowwise-split"),
                                         ("causal_softmax", "rowwise-looped")])
def test_new_strategies_are_accepted_on_the_gpu(op, strategy, tmp_path):
    """The implicit GEMM (native bf16 tl.dot), the split reduction and the guarded causal loads on the GPU, at the
    bench op's scored sizes."""
    import torch

    from evaluator import evaluate

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    path = ROOT / "bench" / "ops" / f"{op}.py"
    cand = tmp_path / f"offline_{op}.py"
    cand.write_text(generate(trace_task(path.read_text()), strategy, op))
    verdict = evaluate(str(path), str(cand), device="cuda")
    assert verdict.accepted, f"{op} / {strategy}: {verdict.reason}: {verdict.detail}"
