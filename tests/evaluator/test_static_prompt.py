"""The LLM's prompt states the checker's rules for the device the search runs on: on a GPU, libdevice,
multi-config autotune and tensor descriptors are allowed; in the CPU interpreter they are not."""

from __future__ import annotations

import pytest

from evaluator.import_policy import ALLOWED_SUMMARY
from kernelevo.search.llm import render_prompt
from kernelevo.search.proposer import ProposalRequest

TASK = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
GPU = {"device": "cuda", "name": "NVIDIA H200", "sm_count": 132, "capability": "9.0"}
CPU = {"device": "cpu", "name": "x86_64", "cores": 2}


def _system(hardware: dict, backend: str = "triton", operator: str = "fresh") -> tuple[str, str]:
    system, user = render_prompt(ProposalRequest("relu", TASK, operator=operator, backend=backend, hardware=hardware))
    return system["content"], user["content"]


def test_gpu_prompt_allows_what_the_interpreter_cannot_run():
    gpu, _ = _system(GPU)
    cpu, _ = _system(CPU)
    assert "libdevice" in gpu and "are all allowed" in gpu and "several `triton.Config`s" in gpu
    assert "tensor descriptors" in gpu and "NVIDIA H200" in gpu
    assert "no `tl.extra`/libdevice" not in gpu and "at most one `@triton.autotune` config" not in gpu
    assert "no `tl.extra`/libdevice" in cpu and "at most one `@triton.autotune` config" in cpu
    assert "no tensor descriptors" in cpu and "are all allowed" not in cpu


def test_unknown_hardware_gets_the_interpreter_rules():
    unknown, _ = _system({})
    assert "at most one `@triton.autotune` config" in unknown and "are all allowed" not in unknown


@pytest.mark.parametrize("hardware", [GPU, CPU])
def test_prompt_lists_the_checkers_allowed_imports(hardware):
    system, _ = _system(hardware)
    assert f"Allowed imports: {ALLOWED_SUMMARY}." in system
    assert "contextlib" in system and "packaging.version" in system


def test_cuda_backend_prompt_has_no_triton_interpreter_rules():
    system, _ = _system(CPU, backend="cuda")
    assert "cuda.compile" in system and "CPU interpreter" not in system and "no `tl.extra`" not in system


def test_tune_prompt_follows_the_device():
    _, gpu = _system(GPU, operator="tune")
    _, cpu = _system(CPU, operator="tune")
    assert "several `triton.Config`s" in gpu and "at most one `triton.Config`" not in gpu
    assert "at most one `triton.Config`" in cpu
