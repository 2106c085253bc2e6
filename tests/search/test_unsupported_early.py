"""An op with ATen ops the offline proposer cannot lower is refused at once, before any session or baseline
(it used to pay tens of seconds of start-up and baselines, then stop "proposer_exhausted after 0 candidates"),
through the real sandboxed proposer and the real command line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_offline_dropin import UNSUPPORTED

from kernelevo.search.api import UnsupportedOps, run_search
from kernelevo.search.budget import Budget
from kernelevo.search.offline.sandboxed import SandboxedOfflineProposer


class _NoEvaluator:
    """Fails the test if the search gets as far as evaluating anything."""

    def __getattr__(self, name):
        raise AssertionError(f"the search reached the evaluator ({name}) for an op it cannot lower")


def _refused(tmp_path, op_id: str, source: str) -> str:
    """The message the search refuses ``source`` with, through the real sandboxed proposer; nothing started."""
    task = tmp_path / f"{op_id}.py"
    task.write_text(source)
    proposer = SandboxedOfflineProposer()
    try:
        with pytest.raises(UnsupportedOps) as raised:
            run_search(task, op_id=op_id, backend="triton", proposer=proposer, budget=Budget(candidates=2),
                       device="cpu", run_dir=tmp_path / "run", evaluator=_NoEvaluator())
    finally:
        proposer.close()
    assert not (tmp_path / "run").exists()  # nothing was started
    return str(raised.value)


def test_unsupported_ops_are_refused_before_the_session_with_where_and_what_to_do(tmp_path):
    message = _refused(tmp_path, "conv_pool", UNSUPPORTED)
    assert message.startswith("op conv_pool: not supported by the offline proposer")
    assert "aten.convolution at line 12 (y = torch.relu(self.conv(x)))" in message
    assert "aten.avg_pool2d at line 13" in message
    assert "by hand" in message and "LLM proposer" in message


def test_the_command_line_says_so_with_exit_status_2(tmp_path):
    task = tmp_path / "conv_pool.py"
    task.write_text(UNSUPPORTED)  # a dilated convolution and an average pool: neither is lowered
    done = subprocess.run([sys.executable, "-m", "kernelevo.cli", "optimize", str(task), "--device", "cpu"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "aten.convolution at line 12" in output, output


# An ALiBi bias: every ATen op here is known; one call uses a form the lowering refuses (an unsqueeze that moves a
# computed tensor's last dimension), and it must be said as early, with its line. The division by a size lowers.
REFUSED_FORM = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, scores):
        h, q, k = scores.shape[1], scores.shape[2], scores.shape[3]
        slopes = torch.pow(2.0, -8.0 * torch.arange(1, h + 1, device=scores.device) / h)
        rel = torch.arange(k, device=scores.device)[None, :] - torch.arange(q, device=scores.device)[:, None]
        return torch.softmax(scores + slopes[:, None, None] * rel[None].float(), dim=-1)


def get_inputs():
    return [torch.randn(1, 8, 17, 33)]


def get_init_inputs():
    return []
"""


def test_a_known_op_in_a_form_the_lowering_refuses_is_refused_before_the_session(tmp_path):
    message = _refused(tmp_path, "alibi_like", REFUSED_FORM)
    assert "aten.unsqueeze at line 10 (return torch.softmax(scores + slopes[:, None, None]" in message, message
    assert "changes the last dimension" in message and "by hand" in message


# It lowers, but every strategy's generator refuses it (a per-head slope broadcast over rows and columns: a
# slice used per row): said as early too, with each strategy's reason.
EVERY_STRATEGY_REFUSES = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x * torch.cumsum(x, -1)[..., 3:4]  # one column of a cumulative sum, broadcast along the row


def get_inputs():
    return [torch.randn(2, 4, 16)]


def get_init_inputs():
    return []
"""


def test_a_graph_every_strategy_refuses_is_refused_before_the_session(tmp_path):
    message = _refused(tmp_path, "cumsum_column", EVERY_STRATEGY_REFUSES)
    assert ("no strategy can write a kernel for it (rowwise-1pass: a cumulative sum read per row or at shifted "
            "columns;") in message, message
    assert "by hand" in message
