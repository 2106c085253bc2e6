"""Non-tensor arguments are pinned to the values verified, floats included, through the real dispatch path: a
stored kernel (``write_kernel`` with ``envelope_from_cases``), the user's decorated op imported from its file,
and calls at the verified value and at another one. Also where ``KERNELEVO_LOG`` is read from."""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from kernelevo import dispatch
from kernelevo.discovery import discover
from kernelevo.dispatch import KernelEvoWarning
from kernelevo.kernel_store import envelope_from_cases, read_kernel, write_kernel
from kernelevo.settings import reset_settings_cache

USER_MODULE = '''
import torch
import kernelevo


@kernelevo.optimize(inputs=lambda device: [(torch.randn(4, 8, device=device), 0.7),
                                           (torch.randn(2, 8, device=device), 0.7)])
def soften(x, temperature: float):
    return torch.softmax(x / temperature, dim=-1)
'''
# A stand-in for an accepted kernel that hard-codes the verified temperature (what a kernel may legitimately
# do); it adds 100 so that the test can see which path ran.
KERNEL = '''
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, x, temperature):
        return torch.softmax(x / 0.7, dim=-1) + 100
'''
_counter = itertools.count()


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("KERNELEVO_DISABLE", raising=False)
    monkeypatch.delenv("KERNELEVO_LOG", raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the stand-in plays a CPU-verified Triton kernel
    reset_settings_cache()
    dispatch.clear_caches()
    yield
    reset_settings_cache()
    dispatch.clear_caches()


def _user_op(tmp_path: Path):
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    (root / "models" / "soft.py").write_text(USER_MODULE)
    (op,) = discover(root).ops
    cases = [(torch.randn(4, 8), 0.7), (torch.randn(2, 8), 0.7)]  # the op's inputs, as the verifier checked them
    envelope = envelope_from_cases(cases, device_type="cpu", capabilities=None, backend="triton")
    directory = write_kernel(root, op, KERNEL, {"verdict": "accepted"}, envelope)
    name = f"kernelevo_envelope_user_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, root / "models" / "soft.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, directory


def test_float_values_are_recorded_like_the_others():
    env = envelope_from_cases([(0.5, 2, "mean"), (0.25, 2, "mean"), (0.5, 3, "sum")], device_type="cpu",
                              capabilities=None, backend="triton")
    assert env["args"] == [{"kind": "value", "type": "float", "values": [0.25, 0.5]},
                           {"kind": "value", "type": "int", "values": [2, 3]},
                           {"kind": "value", "type": "str", "values": ["mean", "sum"]}]


def test_a_kernel_verified_at_one_temperature_is_not_used_at_another(tmp_path):
    ops, directory = _user_op(tmp_path)
    assert read_kernel(directory).envelope["args"][1] == {"kind": "value", "type": "float", "values": [0.7]}
    x = torch.randn(4, 8)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert torch.allclose(ops.soften(x, 0.7), torch.softmax(x / 0.7, dim=-1) + 100)  # the kernel
        assert torch.allclose(ops.soften(x, temperature=0.7), torch.softmax(x / 0.7, dim=-1) + 100)
        for _ in range(2):
            assert torch.allclose(ops.soften(x, 0.5), torch.softmax(x / 0.5, dim=-1))  # the original
        assert torch.allclose(ops.soften(x, temperature=0.5), torch.softmax(x / 0.5, dim=-1))
    messages = [str(w.message) for w in record if issubclass(w.category, KernelEvoWarning)]
    assert messages == ["soften: argument 1 = 0.5, verified only [0.7]; running the original"]  # once
    explained = str(dispatch.explain(ops.soften, x, 0.5))
    assert "argument 1: float in [0.7]" in explained
    assert "this call: runs the original code: argument 1 = 0.5, verified only [0.7]" in explained


def test_the_dispatch_log_is_read_through_the_settings(monkeypatch):
    monkeypatch.setenv("KERNELEVO_LOG", "Dispatch")
    reset_settings_cache()
    assert dispatch.log_setting() == "Dispatch" and dispatch.log_topics(dispatch.log_setting()) == {"dispatch"}
    # another part's setting that does not validate: the settings accessor raises, the log still works
    monkeypatch.setenv("KERNELEVO_GITHUB_APP_ID", "not-a-number")
    reset_settings_cache()
    assert dispatch.log_setting() == "Dispatch"


def test_the_dispatch_log_reaches_stderr_in_a_users_program(tmp_path):
    """A fresh process (the log is configured once per process), as a user's program starts: the decision is
    printed even where an unrelated setting is invalid."""
    program = ("import logging\nfrom kernelevo import dispatch\ndispatch.configure_logging()\n"
               "dispatch.log.debug('a decision')\n")
    env = {"PATH": "/usr/bin:/bin", "KERNELEVO_LOG": "dispatch", "KERNELEVO_GITHUB_APP_ID": "not-a-number",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kernelevo.dispatch: a decision" in done.stderr
    quiet = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                           env={**env, "KERNELEVO_LOG": ""}, cwd=tmp_path)
    assert quiet.returncode == 0 and "a decision" not in quiet.stderr


def test_an_invalid_unrelated_setting_never_makes_a_users_op_raise(tmp_path, monkeypatch):
    """A bot's KERNELEVO_GITHUB_APP_ID=abc in the same shell used to raise SettingsError from every call of every
    decorated op (and re-read the environment and secret files each time); KERNELEVO_DISABLE still works."""
    from kernelevo.settings import SettingsError, get_settings

    ops, _ = _user_op(tmp_path)
    x = torch.randn(4, 8)
    monkeypatch.setenv("KERNELEVO_GITHUB_APP_ID", "not-a-number")
    reset_settings_cache()
    with pytest.raises(SettingsError) as first:
        get_settings()
    with pytest.raises(SettingsError) as second:
        get_settings()
    assert first.value is second.value  # read once, not again on every call
    assert torch.allclose(ops.soften(x, 0.7), torch.softmax(x / 0.7, dim=-1) + 100)  # the kernel, no raise
    monkeypatch.setenv("KERNELEVO_DISABLE", "true")
    reset_settings_cache()
    assert torch.allclose(ops.soften(x, 0.7), torch.softmax(x / 0.7, dim=-1))  # disabled: the original
    assert "KERNELEVO_DISABLE" in str(dispatch.explain(ops.soften))
