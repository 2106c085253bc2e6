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


def test_unsupported_ops_are_refused_before_the_session_with_where_and_what_to_do(tmp_path):
    task = tmp_path / "conv_cumsum.py"
    task.write_text(UNSUPPORTED)  # a convolution and a cumsum: neither is lowered
    proposer = SandboxedOfflineProposer()
    try:
        with pytest.raises(UnsupportedOps) as raised:
            run_search(task, op_id="conv_cumsum", backend="triton", proposer=proposer, budget=Budget(candidates=2),
                       device="cpu", run_dir=tmp_path / "run", evaluator=_NoEvaluator())
    finally:
        proposer.close()
    message = str(raised.value)
    assert message.startswith("op conv_cumsum: not supported by the offline proposer")
    assert "aten.convolution at line 12 (y = torch.relu(self.conv(x)))" in message
    assert "aten.cumsum at line 13" in message
    assert "by hand" in message and "LLM proposer" in message
    assert not (tmp_path / "run").exists()  # nothing was started


def test_the_command_line_says_so_with_exit_status_2(tmp_path):
    task = tmp_path / "conv_cumsum.py"
    task.write_text(UNSUPPORTED)  # a convolution and a cumsum: neither is lowered
    done = subprocess.run([sys.executable, "-m", "kernelevo.cli", "optimize", str(task), "--device", "cpu"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "aten.convolution at line 12" in output, output
