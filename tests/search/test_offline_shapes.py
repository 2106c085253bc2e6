"""Shapes the row IR reaches through rewrites: reductions over several trailing dims (merged into one), views
that change the last dimension of a result on its way out (returned as a view of what the kernel wrote), and
clamps with one bound (the decompositions of hardswish and relu6), argmax/argmin, cumulative sums, batched
matmuls and group norms (rows of one group, per-channel operands read at a coarser column). Each generated
kernel is judged by the real verifier on the CPU (Triton interpreter); what stays out of reach is refused before
anything runs."""

from __future__ import annotations

import textwrap

import pytest
from test_offline_dropin import LOADER, _interpreted

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.proposer import ProposalRequest

HEADER = "import torch\nfrom torch import nn\n\n\n"

INSTANCE_NORM = HEADER + '''class Model(nn.Module):
    def __init__(self, channels: int = 6, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels))
        self.bias = nn.Parameter(torch.randn(channels))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(dim=(2, 3), keepdim=True)
        var = x.var(dim=(2, 3), keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight[:, None, None] + self.bias[:, None, None]


def get_init_inputs():
    return [6]


def get_inputs():
    return [torch.randn(3, 6, 5, 7)]
'''

PER_SAMPLE = HEADER + '''class Model(nn.Module):
    def forward(self, x, y):
        return ((x - y) ** 2).sum(dim=(1, 2, 3))


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(4, 3, 9, 11), torch.randn(4, 3, 9, 11)]
'''

QK_NORM = HEADER + '''class Model(nn.Module):
    def __init__(self, heads: int = 4, head_dim: int = 16):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.weight = nn.Parameter(torch.randn(head_dim))

    def forward(self, x):
        b, t, _ = x.shape
        h = x.view(b, t, self.heads, self.head_dim).float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return (self.weight * h).to(x.dtype).view(b, t, -1)


def get_init_inputs():
    return [4, 16]


def get_inputs():
    return [torch.randn(2, 5, 64, dtype=torch.bfloat16)]
'''

HARDSWISH = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.clamp(torch.nn.functional.hardswish(x), -0.25, 2.0) + torch.nn.functional.relu6(x)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(3, 5, 17) * 4]
'''


ARGMAX = HEADER + '''class Model(nn.Module):
    def forward(self, logits, labels):
        pred = logits.argmax(dim=-1)
        return pred, (pred == labels).float(), logits.argmin(-1, keepdim=True)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(9, 700), torch.randint(0, 700, (9,))]
'''


SCORES = HEADER + '''class Model(nn.Module):
    def __init__(self, head_dim: int = 32):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k):
        return torch.matmul(q, k.transpose(-1, -2)) * self.scale


def get_init_inputs():
    return [32]


def get_inputs():
    return [torch.randn(2, 3, 37, 32), torch.randn(2, 3, 45, 32)]
'''

BMM_BIAS = HEADER + '''class Model(nn.Module):
    def forward(self, a, b, bias):
        return torch.relu(torch.bmm(a, b) + bias)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(5, 19, 24), torch.randn(5, 24, 33), torch.randn(33)]
'''


CUMSUM = HEADER + '''class Model(nn.Module):
    def forward(self, x, mask):
        counts = mask.cumsum(-1)
        return torch.cumsum(x, dim=-1) / (counts + 1), counts, torch.cumsum(x * 2, -1).amax(-1)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(7, 300), torch.rand(7, 300) > 0.5]
'''


LINEAR_3D = HEADER + '''class Model(nn.Module):
    def __init__(self, dim: int = 48, hidden: int = 40):
        super().__init__()
        self.proj = nn.Linear(dim, hidden, dtype=torch.bfloat16)

    def forward(self, x, residual):
        return torch.nn.functional.silu(self.proj(x)) + residual


def get_init_inputs():
    return [48, 40]


def get_inputs():
    return [torch.randn(3, 11, 48, dtype=torch.bfloat16), torch.randn(3, 11, 40, dtype=torch.bfloat16)]
'''

MAX_DIM = HEADER + '''class Model(nn.Module):
    def forward(self, logits):
        probs = torch.softmax(logits.float(), dim=-1)
        top, index = probs.max(dim=-1)
        low, _ = torch.min(logits, -1, keepdim=True)
        return top, index, low


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(13, 64)]
'''


GROUP_NORM_SILU = HEADER + '''class Model(nn.Module):
    def __init__(self, groups: int = 4, channels: int = 12):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-6)
        with torch.no_grad():  # weights other than ones and zeros, so that a misplaced channel shows
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-1.0, 1.0)

    def forward(self, x):
        return torch.nn.functional.silu(self.norm(x))


def get_init_inputs():
    return [4, 12]


def get_inputs():
    return [torch.randn(2, 12, 5, 7, dtype=torch.float16)]
'''

GROUP_NORM_PLAIN = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(3, 6, affine=False)

    def forward(self, x):
        return self.norm(x)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(3, 6, 33)]
'''


LEARNED_SCALAR = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = nn.Parameter(torch.tensor(1.5))  # a 0-d parameter: one element for every row

    def forward(self, x, scale):
        return x * torch.sigmoid(self.beta * x) * scale


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(6, 33), torch.rand(1) + 0.5]
'''

INTERLEAVED_ROTARY = HEADER + '''class Model(nn.Module):
    def forward(self, x, cos, sin):
        x1, x2 = x[..., 0::2], x[..., 1::2]  # strided views of the input, passed on as they are
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 5, 3, 16), torch.randn(5, 1, 8), torch.randn(5, 1, 8)]
'''

LAYER_NORM_2D = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm((5, 7))

    def forward(self, x):  # statistics broadcast back through trailing ones and through an index with None
        return self.norm(x) + x.mean((-2, -1))[:, :, None, None]


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 3, 5, 7)]
'''


SHIFT_COLUMN = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return x * (x * 2)[..., 1:2]  # one column of a computed tensor, the same along its row


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(4, 8, 16)]
'''


ROUTER_TOP1 = HEADER + '''class Model(nn.Module):
    def __init__(self, dim: int = 32, experts: int = 8):
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        probs = torch.softmax(self.gate(x).float(), dim=-1)  # the matmul's whole rows are in one tile
        return probs.max(dim=-1)


def get_init_inputs():
    return [32, 8]


def get_inputs():
    return [torch.randn(37, 32, dtype=torch.bfloat16)]
'''


SMOOTHED_CE = HEADER + '''class Model(nn.Module):
    def __init__(self, smoothing: float = 0.1):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits, target):
        v = logits.shape[-1]
        return torch.nn.functional.cross_entropy(logits.reshape(-1, v), target.reshape(-1),
                                                 label_smoothing=self.smoothing)


def get_init_inputs():
    return [0.2]


def _case(b, t, v):
    target = torch.randint(0, v, (b, t))
    target[:, -1] = -100
    return [torch.randn(b, t, v) * 3, target]


def get_inputs():
    return _case(3, 7, 301)


def get_small_cases():
    return [get_inputs(), _case(1, 2, 301)]
'''


@pytest.mark.parametrize(("op_id", "source", "returned"), [
    ("instance_norm", INSTANCE_NORM, ".view("),
    ("per_sample", PER_SAMPLE, ""),
    ("qk_norm", QK_NORM, ".view("),
    ("hardswish", HARDSWISH, ""),
    ("argmax", ARGMAX, ""),
    ("scores", SCORES, ""),
    ("bmm_bias", BMM_BIAS, ""),
    ("cumsum", CUMSUM, ""),
    ("linear_3d", LINEAR_3D, ""),  # bf16 tiles: the interpreter's dot gets them widened to fp32
    ("max_dim", MAX_DIM, ""),
    ("group_norm_silu", GROUP_NORM_SILU, ".view("),
    ("group_norm_plain", GROUP_NORM_PLAIN, ".view("),
    ("learned_scalar", LEARNED_SCALAR, ""),
    ("interleaved_rotary", INTERLEAVED_ROTARY, ""),
    ("layer_norm_2d", LAYER_NORM_2D, ""),
    ("shift_column", SHIFT_COLUMN, ""),
    ("router_top1", ROUTER_TOP1, ""),
    ("smoothed_ce", SMOOTHED_CE, ""),  # copy_ in its decomposition, smoothing / classes computed by the forward
])
def test_rewritten_shapes_are_accepted_by_the_verifier(tmp_path, op_id, source, returned):
    from offline_judging import GUARDED

    from evaluator import evaluate

    task = tmp_path / f"{op_id}.py"
    task.write_text(source)
    [p] = OfflineProposer().propose(ProposalRequest(op_id, source))
    assert p.error is None, p.error
    assert returned in p.source.split("def forward", 1)[1].rsplit("return", 1)[1]
    candidate = tmp_path / "cand.py"
    candidate.write_text(p.source)
    verdict = evaluate(task, candidate, device="cpu", options=GUARDED)
    assert verdict.accepted, verdict.detail


def test_merged_reductions_flatten_their_inputs_in_the_forward():
    [p] = OfflineProposer().propose(ProposalRequest("per_sample", PER_SAMPLE))
    forward = p.source.split("def forward", 1)[1]
    assert "x_merged = x.reshape(" in forward and "y_merged = y.reshape(" in forward


BIAS_OVER_LAST = HEADER + '''class Model(nn.Module):
    def forward(self, x, bias):
        return x - x.mean(dim=(2, 3), keepdim=True) + bias


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 3, 4, 5), torch.randn(5)]
'''

VIEW_READ_TWICE = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        h = (x * 2).view(x.shape[0], -1)
        return h, h + 1


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 3, 4)]
'''


ARGMAX_INT = HEADER + '''class Model(nn.Module):
    def forward(self, counts):
        return counts.argmax(dim=-1)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randint(0, 2**30, (4, 33))]
'''




GROUP_NORM_RESIDUAL = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 4)

    def forward(self, x):
        return self.norm(x) + x


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 4, 3, 3)]
'''


CHANNEL_MEAN = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return x.mean(dim=(0, 2, 3))


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(4, 3, 5, 6)]
'''

ADAPTIVE_POOL = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool2d(x, 3)


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]
'''


@pytest.mark.parametrize(("source", "why"), [
    (CHANNEL_MEAN, "permute them last in the op (x.permute(1, 0, 2, 3).mean(dim=(1, 2, 3))"),
    (ADAPTIVE_POOL, "aten._adaptive_avg_pool2d at line 7 (return torch.nn.functional.adaptive_avg_pool2d(x, 3)): "
               "a sliding-window op"),
    (GROUP_NORM_RESIDUAL, "used together with other tensors"),
    (BIAS_OVER_LAST, "broadcast against the 2 reduced dimensions"),
    (ARGMAX_INT, "argmax of torch.int64 values"),
    (VIEW_READ_TWICE, "changes the last dimension of a computed tensor"),
])
def test_shapes_out_of_reach_are_refused_with_the_reason(source, why):
    proposer = OfflineProposer()
    assert proposer.strategies(source) == []
    assert any(why in u.describe() for u in proposer.unsupported(source))  # said before any session starts
    [p] = proposer.propose(ProposalRequest("op", source))
    assert p.error is not None and why in p.error


# The start of each check script: write a module to the test's folder and load it by name.
LOAD = LOADER + textwrap.dedent("""
    from kernelevo.search.offline import OfflineProposer
    from kernelevo.search.proposer import ProposalRequest

    def build(name, text):
        with open(f"{name}.py", "w") as f:
            f.write(text)
        return load(name)
""")


def test_cumsum_carries_the_row_total_across_column_blocks(tmp_path):
    """Rows ten times wider than the looped strategy's column block: the counts (int64) equal PyTorch's exactly
    in both strategies, the float sums agree to float32 rounding."""
    (tmp_path / "cumsum_task.py").write_text(CUMSUM)
    _interpreted(LOAD + textwrap.dedent("""
        source = open("cumsum_task.py").read()
        x, mask = torch.randn(5, 5000), torch.rand(5, 5000) > 0.5
        want = build("ref", source).Model()(x, mask)
        proposer = OfflineProposer()
        assert proposer.strategies(source) == ["rowwise-1pass", "rowwise-looped"]
        for i in range(2):
            [p] = proposer.propose(ProposalRequest("cumsum", source, seed=i, count=1))
            got = build(f"cand{i}", p.source).ModelNew()(x, mask)
            assert got[1].dtype == torch.int64 and torch.equal(got[1], want[1]), p.strategy
            for g, w in (got[0], want[0]), (got[2], want[2]):
                assert g.dtype == w.dtype and torch.allclose(g, w, rtol=1e-4, atol=1e-3), (p.strategy, g, w)
        print("ok")
    """), tmp_path)


def test_argmax_picks_the_first_maximum_and_counts_nan_as_the_largest(tmp_path):
    """Ties, NaNs, a row of -inf and rows wider than the looped strategy's column block, in both strategies:
    the indices equal PyTorch's exactly (int64)."""
    (tmp_path / "argmax_task.py").write_text(ARGMAX)
    _interpreted(LOAD + textwrap.dedent("""
        source = open("argmax_task.py").read()
        x = torch.randn(6, 3000)
        x[0, 10] = x[0, 2500] = float("nan")
        x[1, 7] = x[1, 2900] = 100.0
        x[2] = float("-inf")
        x[3, 1500] = float("inf")
        x[3, 1501] = float("nan")
        x[4, 0] = x[4, 1] = -100.0
        labels = torch.randint(0, 3000, (6,))
        want = build("ref", source).Model()(x, labels)
        proposer = OfflineProposer()
        strategies = proposer.strategies(source)
        assert strategies == ["rowwise-1pass", "rowwise-looped"], strategies
        for i, strategy in enumerate(strategies):
            [p] = proposer.propose(ProposalRequest("argmax", source, seed=i, count=1))
            assert p.strategy == strategy
            got = build(f"cand{i}", p.source).ModelNew()(x, labels)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and torch.equal(g, w), (strategy, g, w)
        print("ok")
    """), tmp_path)


def test_a_row_epilogue_wider_than_a_column_tile_is_not_proposed():
    """A softmax over 300 columns of a matmul needs them in one tile, wider than the tile's 128: the launch check
    drops the candidate before it is proposed, and says why (a tuned BLOCK_N of 512 would make it fit)."""
    wide = ROUTER_TOP1.replace("experts: int = 8", "experts: int = 300").replace("return [32, 8]", "return [32, 300]")
    [p] = OfflineProposer().propose(ProposalRequest("router_wide", wide))
    assert p.source == "" and "rows of 512 columns are wider than BLOCK_N=128" in p.error, p.error


def test_host_arithmetic_keeps_model_attributes_as_runtime_values():
    """The label-smoothed loss's ``smoothing / classes`` is Python arithmetic in the graph: the forward computes it
    from ``self.smoothing`` and the logits' width, so another smoothing needs no new kernel."""
    [p] = OfflineProposer().propose(ProposalRequest("smoothed_ce", SMOOTHED_CE))
    assert p.error is None, p.error
    forward = p.source.split("def forward", 1)[1]
    assert "float(self.smoothing)" in forward and "/ (float(logits_size2))" in forward, forward


COPY_INTO_INPUT = HEADER + '''class Model(nn.Module):
    def forward(self, x, y):
        x.copy_(y * 2)
        return x + 1


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(4, 5), torch.randn(4, 5)]
'''


def test_a_copy_into_an_input_is_refused_with_its_line():
    [why] = OfflineProposer().unsupported(COPY_INTO_INPUT)
    assert why.aten == "aten.copy_" and why.code == "x.copy_(y * 2)" and "writes into an input" in why.why, why
