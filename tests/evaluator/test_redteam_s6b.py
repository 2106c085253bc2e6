"""The fixes of red-team session 6, round 2 (the candidates are in tests/candidates/redteam/s6b_*.py): every way of
defining a backward makes a candidate differentiable (so it meets a training step's inputs), inputs requiring grad
reach every candidate under no_grad and inference_mode (where the dispatcher hands a forward-only kernel them), and
the plan draws inference-tensor inputs and frozen parameters (states a program serving a model is in)."""

from __future__ import annotations

import ast
import random
import textwrap

import pytest

from evaluator.callplan import AUTOGRAD_MODES, InputSet, plan_checks
from evaluator.static_check import check_source, defines_backward


def _inputs(cases: int = 3, seeds: int = 5) -> list[InputSet]:
    return [InputSet(case, seed, f"in-{case}-{seed}") for seed in range(seeds) for case in range(cases)]


# ------------------------------------------------------------------------------ which candidates define a backward

_DIFFERENTIABLE = {
    "a backward method": """
        class F(torch.autograd.Function):
            @staticmethod
            def backward(ctx, dy):
                return dy
    """,
    "its alias vjp": """
        class F(Base):
            @staticmethod
            def vjp(ctx, dy):
                return dy
    """,
    "a backward bound in the class body": """
        def _grad(ctx, dy):
            return dy

        class F(Base):
            backward = staticmethod(_grad)
    """,
    "a backward assigned afterwards": """
        class F(Base):
            pass

        F.backward = staticmethod(lambda ctx, dy: dy)
    """,
    "register_autograd imported by name": """
        from torch.library import register_autograd

        register_autograd("kev::op", lambda ctx, dy: dy)
    """,
    "register_autograd aliased": """
        from torch.library import register_autograd as ra

        ra("kev::op", lambda ctx, dy: dy)
    """,
    "an op's register_autograd method": """
        op.register_autograd(lambda ctx, dy: dy)
    """,
    "an autograd dispatch key": """
        LIB.impl("op", kernel, "Autograd")
    """,
    "a namespace built for type()": """
        F = type("F", (Base,), {"forward": fwd, "backward": bwd})
    """,
    "a library Function as its base": """
        from torch.utils.checkpoint import CheckpointFunction

        class F(CheckpointFunction):
            @staticmethod
            def forward(ctx, x):
                return x
    """,
}


@pytest.mark.parametrize("how", sorted(_DIFFERENTIABLE))
def test_every_way_of_defining_a_backward_makes_the_candidate_differentiable(how):
    """``redteam/s6b_input_grad_vjp``: with its backward named ``vjp`` the candidate was never passed a training
    step's inputs, so it could be wrong on exactly those."""
    assert defines_backward(ast.parse(textwrap.dedent(_DIFFERENTIABLE[how])))


def test_a_forward_only_module_is_not_differentiable():
    source = """
        class ModelNew(nn.Module):
            def forward(self, x):
                grad = torch.is_grad_enabled()
                return kernel(x, backwards=grad)
    """
    assert not defines_backward(ast.parse(textwrap.dedent(source)))


def test_the_vjp_candidate_passes_the_static_checks_as_differentiable():
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "candidates" / "redteam" / "s6b_input_grad_vjp.py"
    report = check_source(path.read_text(encoding="utf-8"))
    assert report.ok and report.differentiable


# ----------------------------------------------------------------------------------------------- the call plan

@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("differentiable", [False, True])
def test_inputs_requiring_grad_reach_every_candidate_where_no_graph_is_recorded(seed, differentiable):
    """``redteam/s6b_requires_grad_no_grad_tell``: under no_grad and inference_mode the dispatcher hands any kernel
    inputs that require grad (a parameter, a training step's tensor in an evaluation loop); with gradients on only
    a candidate with a backward gets them (the dispatcher keeps a forward-only kernel off the training path)."""
    calls = plan_checks(_inputs(), random.Random(seed), vary_input_grad=differentiable)
    for mode in ("no_grad", "inference"):
        assert {c.input_grad for c in calls if c.autograd == mode} == {False, True}, mode
    assert {c.input_grad for c in calls if c.autograd == "grad"} == ({False, True} if differentiable else {False})


@pytest.mark.parametrize("seed", range(20))
def test_inference_tensor_inputs_and_frozen_parameters_are_planned(seed):
    """``redteam/s6b_inference_tensor_tell`` and ``s6b_frozen_weight_tell``: a program serving a model passes
    inference tensors and runs frozen parameters; both kinds of call are planned (the harness applies them)."""
    calls = plan_checks(_inputs(), random.Random(seed), vary_training=True, vary_input_grad=True)
    assert {c.inference_inputs for c in calls if c.autograd == "inference"} == {False, True}
    assert not any(c.inference_inputs for c in calls if c.autograd != "inference")
    assert not any(c.inference_inputs and c.input_grad for c in calls)  # an inference tensor cannot require grad
    assert {c.frozen for c in calls} == {False, True}
    assert {c.autograd for c in calls} == set(AUTOGRAD_MODES)
    for group in {c.group for c in calls if c.group}:
        members = [c for c in calls if c.group == group]
        states = {(c.autograd, c.training, c.input_grad, c.inference_inputs, c.frozen) for c in members}
        assert len(members) == 3 and len(states) == 1
    request = calls[0].request(0)
    assert isinstance(request["inference_inputs"], bool) and isinstance(request["frozen"], bool)


def test_the_harness_expression_makes_a_leaf_requiring_grad_where_no_graph_is_recorded():
    """What the candidate process passes for ``input_grad`` (evaluator/sandboxed/candidate.py) under no_grad and
    inference_mode is what an evaluation loop passes: a tensor that requires grad, no grad_fn, not an inference
    tensor (under no_grad and inference_mode alike)."""
    import torch

    x = torch.randn(4, 8)
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            arg = x.detach().requires_grad_(True).view_as(x)
            assert arg.requires_grad and arg.grad_fn is None and not arg.is_inference()


# ------------------------------------------------------------------------------- the candidate's environment

def test_the_sandbox_environment_has_what_a_shell_exports_and_nothing_only_the_verifier_sets(tmp_path):
    """``redteam/s6b_env_max_jobs_tell`` and ``s6b_env_shell_tell``: ``MAX_JOBS=4`` appears only in the verifier;
    ``SHLVL`` and ``_`` appear in every program a shell starts."""
    from evaluator.roles import sandbox_environment

    for device in ("cpu", "cuda"):
        env = sandbox_environment(device, tmp_path, parent_env={"PATH": "/usr/bin"})
        assert "MAX_JOBS" not in env
        assert env.get("SHLVL") == "1" and "python" in env.get("_", "").rsplit("/", 1)[-1]
    assert sandbox_environment("cpu", tmp_path, parent_env={"MAX_JOBS": "8"})["MAX_JOBS"] == "8"  # inherited
