"""The fixes of red-team session 7 (the candidates are in tests/candidates/redteam/s7_*.py): the generator ModelNew is
built with reads as an unseeded program's (``torch.initial_seed()`` was the parent's 31-bit draw, a value no program
that never seeds has) while drawing exactly what the reference's construction drew."""

from __future__ import annotations

import pytest
import torch

from evaluator.sandboxed.loading import seed_construction


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 - 1])
def test_construction_draws_the_references_stream_under_a_64_bit_initial_seed(seed):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # what the reference process does before building Model
        expected = torch.rand(16)
        seed_construction(seed)
        shown = torch.initial_seed()
        drawn = torch.rand(16)
    assert torch.equal(drawn, expected)
    assert shown >= 2**32, "a seed below 2**32 is what a program that seeds with a small number shows"
    assert shown & 0xFFFFFFFF == seed, "the low half is what the generator's state was made from (consistent)"


def test_the_high_half_of_the_initial_seed_is_fresh_in_each_process():
    with torch.random.fork_rng(devices=[]):
        shown = set()
        for _ in range(8):
            seed_construction(7)
            shown.add(torch.initial_seed())
    assert len(shown) > 1


def test_the_high_half_is_never_zero():
    with torch.random.fork_rng(devices=[]):
        seed_construction(7, high=0)
        assert torch.initial_seed() >= 2**32
        seed_construction(7, high=5)
        assert torch.initial_seed() == (5 << 32) | 7


@pytest.mark.gpu
def test_the_cuda_generators_keep_their_defaults():
    """An unseeded program's CUDA generators start at torch's fixed default seed; the harness no longer seeds them."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    before = torch.cuda.initial_seed()
    with torch.random.fork_rng(devices=[]):
        seed_construction(3)
    assert torch.cuda.initial_seed() == before


# ------------------------------------------------------------------------------ weights off their constructor's values


class _Norms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(64, dtype=torch.bfloat16))
        self.bias = torch.nn.Parameter(torch.zeros(64))
        self.frozen = torch.nn.Parameter(torch.ones(8), requires_grad=False)
        self.register_buffer("running_var", torch.ones(64))
        self.register_buffer("mask", torch.ones(4, 4, dtype=torch.bool).triu(1))
        self.steps = torch.nn.Parameter(torch.zeros(3, dtype=torch.int64), requires_grad=False)


def test_trainable_floating_parameters_leave_their_constructors_values_the_same_way_in_every_build():
    from evaluator.sandboxed.reference import perturb_parameters

    first, second, other = _Norms(), _Norms(), _Norms()
    perturb_parameters(first, 11)
    perturb_parameters(second, 11)
    perturb_parameters(other, 12)
    for name in ("weight", "bias"):
        value = getattr(first, name)
        assert torch.equal(value, getattr(second, name)), f"{name}: every build of the session's model must agree"
        assert not torch.equal(value, getattr(other, name)), f"{name}: a function of the seed"
        assert not torch.equal(value, getattr(_Norms(), name)), f"{name}: still its constructor's value"
        assert value.dtype == getattr(_Norms(), name).dtype
    assert float((first.weight.detach().float() - 1).abs().max()) < 1.0, "near the constructor's values"
    assert float(first.bias.detach().abs().mean()) > 0.01, "a zero bias moves by enough to show if ignored"
    untouched = _Norms()
    for name in ("frozen", "steps"):
        assert torch.equal(getattr(first, name), getattr(untouched, name)), f"{name}: frozen parameters keep values"
    for name in ("running_var", "mask"):
        assert torch.equal(getattr(first, name), getattr(untouched, name)), f"{name}: buffers keep their values"


def test_the_perturbation_draws_nothing_from_the_global_generator():
    """The candidates' ModelNew is built from the reference's stream (seed_construction): the perturbation must not
    move it."""
    from evaluator.sandboxed.reference import perturb_parameters

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        expected = torch.rand(4)
        torch.manual_seed(5)
        perturb_parameters(_Norms(), 5)
        assert torch.equal(torch.rand(4), expected)


# ----------------------------------------------------------------- weights handed over as the dispatcher does


class _Block(torch.nn.Module):
    def __init__(self, fill: float = 1.0, extra: bool = False):
        super().__init__()
        self.norm = torch.nn.LayerNorm(4)
        self.proj = torch.nn.Linear(4, 4, bias=False)
        self.register_buffer("table", torch.zeros(4))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        with torch.no_grad():
            for tensor in (self.norm.weight, self.norm.bias, self.proj.weight, self.table, self.scratch):
                tensor.fill_(fill)
        self.proj.weight.requires_grad_(False)
        if extra:
            self.spare = torch.nn.Parameter(torch.zeros(1))  # the reference module has no such parameter
        self.view_in_init = self.norm.weight.detach().view(-1)  # what redteam/s7_weight_alias_rmsnorm reads


def _handed(model: torch.nn.Module, reference: torch.nn.Module) -> torch.nn.Module:
    """The reference's tables through a file loaded as the candidate process loads it, then handed over."""
    import io

    from evaluator.sandboxed.loading import hand_over_state
    from evaluator.sandboxed.reference import module_tables

    buffer = io.BytesIO()
    torch.save({"tables": module_tables(reference)}, buffer)
    buffer.seek(0)
    tables = torch.load(buffer, weights_only=True)["tables"]
    with torch.no_grad():
        hand_over_state(model, tables)
    return model


def test_the_weights_reach_modelnew_as_new_tensors_in_its_tables_never_written_into_the_constructors():
    model = _Block()
    constructor_weight = model.norm.weight
    _handed(model, _Block(fill=2.0).double())
    assert torch.equal(model.norm.weight.detach(), torch.full((4,), 2.0, dtype=torch.float64)), "the user's dtype"
    assert model.norm.weight is not constructor_weight and isinstance(model.norm.weight, torch.nn.Parameter)
    assert model.norm.weight.requires_grad and not model.proj.weight.requires_grad, "as the reference's"
    assert torch.equal(model.view_in_init, torch.ones(4)), "a view taken in __init__ keeps the constructor's values"
    assert bool(model.table.eq(2.0).all()) and bool(model.scratch.eq(2.0).all()), "every buffer, persistent or not"


def test_a_table_whose_names_differ_from_the_references_keeps_the_constructors_values():
    model = _handed(_Block(extra=True), _Block(fill=2.0))
    assert bool(model.norm.weight.detach().eq(2.0).all()), "the submodule's tables agree: handed over"
    assert bool(model.table.eq(2.0).all()), "the top module's buffers agree: handed over"
    assert torch.equal(model.spare.detach(), torch.zeros(1)), "its parameters do not (spare): as the dispatcher"


def test_a_tensor_shared_by_two_names_stays_shared():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(3, 3, bias=False)
            self.b = torch.nn.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight

    reference = Tied()
    with torch.no_grad():
        reference.a.weight.fill_(7.0)
    model = _handed(Tied(), reference)
    assert model.a.weight is model.b.weight and bool(model.a.weight.detach().eq(7.0).all())


def test_a_batch_norms_running_statistics_leave_zeros_and_ones_and_the_variance_stays_positive():
    from evaluator.sandboxed.reference import perturb_parameters

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))
    perturb_parameters(model, 3)
    bn = model[1]
    assert not torch.equal(bn.running_mean, torch.zeros(8)) and not torch.equal(bn.running_var, torch.ones(8))
    assert bool((bn.running_var > 0).all())
    assert int(bn.num_batches_tracked) == 0, "an integer buffer keeps its value"
