"""Sliding windows (``window.py``): average and max pooling as a lane value that loops over its taps, accepted by
the real verifier on CPU in every row strategy, at a training shape's layout and a small shape; PyTorch's
semantics at the borders (``count_include_pad``, ``divisor_override``, ``ceil_mode`` where no window is dropped,
NaN in a max); the forms that are not lowered refused with what to do. Also: dims of equal size in the traced case
stay distinct symbols (the trace does not merge them by value)."""

from __future__ import annotations

import textwrap

import pytest
from test_offline_dropin import LOADER, _interpreted
from test_offline_indexing import _accepted

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.analysis import unsupported_ops
from kernelevo.search.offline.launches import record_launches
from kernelevo.search.offline.module import generate
from kernelevo.search.offline.trace import size_equalities, trace_task
from kernelevo.search.offline.window import pool_args, pool_problem
from kernelevo.search.proposer import ProposalRequest

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
ROW_STRATEGIES = {"pointwise-tile2d", "rowwise-1pass", "rowwise-looped"}

# a UNet/ResNet-D downsampling: 3x3 windows, stride 2, padding 1 not counted, fp16, scaled after the pooling
AVG_POOL = HEADER + '''class Model(nn.Module):
    def __init__(self, scale: float = 0.5):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False) * self.scale


def get_init_inputs():
    return [0.5]


def get_inputs():  # a training shape
    return [torch.randn(32, 64, 112, 112, dtype=torch.float16)]


def get_small_cases():  # the training shape's layout at CPU size, and a small odd one
    return [[torch.randn(2, 3, 10, 10, dtype=torch.float16)], [torch.randn(1, 3, 7, 9, dtype=torch.float16)]]
'''

# the ResNet stem's max pooling (3x3, stride 2, padding 1), with a residual-free ReLU after it
MAX_POOL = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return torch.relu(self.pool(x))


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(32, 64, 112, 112)]


def get_small_cases():
    return [[torch.randn(2, 2, 10, 10)], [torch.randn(1, 3, 5, 9)]]
'''


@pytest.fixture(scope="module")
def proposer():
    return OfflineProposer()


def _kernel(source: str) -> str:
    return source.split("@triton.jit", 1)[1].split("class ModelNew")[0]


@pytest.mark.parametrize(("name", "source"), [("avg_pool", AVG_POOL), ("max_pool", MAX_POOL)])
def test_pooling_is_accepted_in_every_row_strategy(proposer, tmp_path, name, source):
    assert unsupported_ops(trace_task(source)) == []
    cells = proposer.strategies(source)
    assert set(cells) == ROW_STRATEGIES
    sources = _accepted(proposer, tmp_path, name, source, seeds=tuple(range(len(cells))))
    kernel = _kernel(sources[0])
    assert "tl.static_range(3)" in kernel and "unfold" not in sources[0]  # the window is a loop over its taps
    assert "i2 * 2 - 1" in kernel  # the output row's window starts in the padding
    assert kernel.count("tl.store(") == 1  # the op after the pooling is fused: one pass over the output


def test_pooling_launches_fit_the_training_shape():
    traced = trace_task(AVG_POOL)
    for strategy in ROW_STRATEGIES:
        source = generate(traced, strategy, "avg_pool")
        [[launch]] = record_launches(source, traced.init_inputs, traced.meta_cases)[:1]
        assert launch.grid[0] >= 256 and all(g <= 65535 for g in launch.grid[1:]), (strategy, launch.grid)


def test_max_pooling_keeps_its_nan_and_ignores_padding(proposer):
    source = generate(trace_task(MAX_POOL), "rowwise-1pass", "max_pool")
    assert "propagate_nan=tl.PropagateNan.ALL" in source  # a NaN in a window wins, as in PyTorch
    assert 'other=float("-inf")' in source  # a padded tap never wins


_BORDERS = LOADER + textwrap.dedent("""
    import torch.nn.functional as F
    from kernelevo.search.offline.module import generate
    from kernelevo.search.offline.trace import trace_task

    HEAD = "import torch\\nimport torch.nn.functional as F\\nfrom torch import nn\\n\\n\\n"
    BODY = ("class Model(nn.Module):\\n    def forward(self, x):\\n        return {}\\n\\n\\n"
            "def get_init_inputs():\\n    return []\\n\\n\\n"
            "def get_inputs():\\n    return [torch.randn(2, 3, 9, 8)]\\n")
    forms = {
        "avg_counted": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
        "avg_inside": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
        "avg_override": lambda x: F.avg_pool2d(x, (2, 3), stride=(1, 2), padding=(1, 1), divisor_override=5),
        "avg_ceil": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        "avg_ceil_inside": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                  count_include_pad=False),
        "max_dilated": lambda x: F.max_pool2d(x, (2, 3), stride=1, padding=1, dilation=2),
        "max_ceil": lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        "avg_1d": lambda x: F.avg_pool1d(x.flatten(2), 4, stride=2),
        "avg_chw": lambda x: F.avg_pool2d(x[0], 2),
    }
    exprs = {
        "avg_counted": "F.avg_pool2d(x, 3, stride=2, padding=1)",
        "avg_inside": "F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)",
        "avg_override": "F.avg_pool2d(x, (2, 3), stride=(1, 2), padding=(1, 1), divisor_override=5)",
        "avg_ceil": "F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)",
        "avg_ceil_inside": "F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)",
        "max_dilated": "F.max_pool2d(x, (2, 3), stride=1, padding=1, dilation=2)",
        "max_ceil": "F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)",
        "avg_1d": "F.avg_pool1d(x.flatten(2), 4, stride=2)",
        "avg_chw": "F.avg_pool2d(x[0], 2)",
    }
    for name, fn in forms.items():
        with open(f"{name}.py", "w") as f:
            f.write(generate(trace_task(HEAD + BODY.format(exprs[name])), "pointwise-tile2d", name))
        model = load(name).ModelNew()
        for h in range(5, 12):  # odd and even sizes: windows cut by the border differently
            for w in (5, 8):
                x = torch.randn(2, 3, h, w)
                x[0, 0, 0, 1] = float("nan")
                got, want = model(x), fn(x)
                assert got.shape == want.shape, (name, h, w, got.shape, want.shape)
                torch.testing.assert_close(got, want, equal_nan=True, msg=f"{name} {h}x{w}")
    print("ok")
""")


def test_pooling_borders_are_pytorchs_at_every_size(tmp_path):
    _interpreted(_BORDERS, tmp_path)


@pytest.mark.parametrize(("expr", "why"), [
    ("F.avg_pool2d(x, 2, padding=1, ceil_mode=True)", "ceil_mode=True with kernel [2, 2], stride [2, 2]"),
    ("F.max_pool2d(x, 2, return_indices=True)[1]", "the indices of max_pool2d (return_indices=True)"),
    ("F.max_pool2d(torch.relu(x), 2)", "max_pool2d(relu(x)) is relu(max_pool2d(x))"),
    ("F.avg_pool3d(x, 2)", "it pools 2-D windows"),
])
def test_pooling_out_of_reach_is_refused_with_what_to_do(proposer, expr, why):
    source = HEADER + f'''class Model(nn.Module):
    def forward(self, x):
        return {expr}


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]
'''
    assert proposer.strategies(source) == []
    [p] = proposer.propose(ProposalRequest("pool", source))
    assert p.source == "" and why in p.error, p.error


def test_pool_arguments_take_pytorchs_defaults():
    assert pool_args("avg_pool2d", [None, [2, 2], []]) == {
        "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False,
        "count_include_pad": True, "divisor_override": None}
    assert pool_args("max_pool2d_with_indices", [None, [3, 3], [2, 2], [1, 1]])["dilation"] == [1, 1]
    assert pool_problem("avg_pool2d", 4, pool_args("avg_pool2d", [None, [3, 3], [2, 2], [1, 1], True])) is None
    assert "rank-5" in (pool_problem("avg_pool2d", 5, pool_args("avg_pool2d", [None, [2, 2]])) or "")


# -- dims of equal size in the traced case are separate symbols --------------------------------------
EQUAL_DIMS = HEADER + '''class Model(nn.Module):
    def forward(self, x, bias):
        return torch.softmax(x, dim=-1) * 2.0 + bias


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(6, 10, 40), torch.randn(40)]


def get_small_cases():  # traced at the first case, where the two leading dims (and the last) are all 4
    return [[torch.randn(4, 4, 4), torch.randn(4)], [torch.randn(2, 6, 4), torch.randn(4)],
            [torch.randn(3, 5, 12), torch.randn(12)]]
'''


def test_dims_of_equal_size_in_the_traced_case_stay_distinct(proposer, tmp_path):
    traced = trace_task(EQUAL_DIMS)
    x = next(n for n in traced.graph.graph.nodes if n.op == "placeholder").meta["val"]
    assert len({str(d) for d in x.shape}) == 3  # one symbol per dim, though all three are 4 in the trace
    source = generate(traced, "rowwise-1pass", "equal_dims")
    assert "n_rows = (x_size0) * (x_size1)" in source
    _accepted(proposer, tmp_path, "equal_dims", EQUAL_DIMS)


TIED_PRODUCTS = HEADER + '''class Model(nn.Module):
    def forward(self, logits, target):
        v = logits.shape[-1]
        return F.cross_entropy(logits.reshape(-1, v), target.reshape(-1), reduction="none")


def get_init_inputs():
    return []


def get_inputs():
    return [torch.randn(3, 7, 301), torch.randint(0, 301, (3, 7))]
'''


def test_sizes_the_op_ties_across_inputs_render_alike(proposer):
    """[B * T, V] logits against [B * T] targets: with a symbol per dim the trace keeps ``B * T == B' * T'`` as a
    guard between two products; the lowering renders both as the logits' (the earlier input's)."""
    traced = trace_task(TIED_PRODUCTS)
    [(later, earlier)] = size_equalities(traced.graph)
    assert not later.free_symbols & earlier.free_symbols
    source = generate(traced, proposer.strategies(TIED_PRODUCTS)[0], "tied")
    assert "(logits_size0*logits_size1,)" in source.replace(" ", "") and "target_size" not in source.split(
        "n_rows =")[1]
