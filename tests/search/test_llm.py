"""The LLM proposer, run with the real openai client against a loopback chat-completions server."""

from __future__ import annotations

import json

import pytest

from kernelevo.search.llm import LLMProposer, render_prompt, retry_delay
from kernelevo.search.pricing import Price
from kernelevo.search.proposer import Parent, ProposalRequest
from tests.fakes.openai_server import FakeOpenAI, Step

pytest.importorskip("openai")

SECRET = "sk-test-DO-NOT-LEAK-1234567890"
TASK = '''import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(97)]


def get_init_inputs():
    return []
'''
GOOD = '''Here is the kernel.

```python
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
```
'''
BROKEN = "```python\nclass ModelNew(nn.Module):\n    def forward(self, x)\n        return x\n```"
PROSE = "You could fuse the relu into the previous kernel; I am not able to write it now."
TRUNCATED = GOOD[: len(GOOD) // 2]


class Sleeps:
    def __init__(self):
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make(server: FakeOpenAI, sleep=None, **kw) -> LLMProposer:
    kw.setdefault("prices", {"fake-model": Price(input=2.0, output=8.0)})
    return LLMProposer(server.base_url, "fake-model", SECRET, sleep=sleep or Sleeps(), **kw)


def request(**kw) -> ProposalRequest:
    return ProposalRequest(op_name="relu", task_source=TASK, **kw)


def test_good_reply_gives_source_tokens_and_cost():
    with FakeOpenAI([Step(GOOD, prompt_tokens=1200, completion_tokens=300)]) as server:
        proposer = make(server)
        [p] = proposer.propose(request())
        proposer.close()
    assert p.error is None and "class ModelNew" in p.source and "Here is" not in p.source
    assert (p.tokens_in, p.tokens_out) == (1200, 300)
    assert p.cost_usd == pytest.approx((1200 * 2.0 + 300 * 8.0) / 1e6)
    assert proposer.usage.tokens_in == 1200 and proposer.usage.requests == 1
    assert p.model == "fake-model" and p.raw_reply.startswith("Here is")
    assert p.strategy == "pointwise-tile2d"  # the MAP-Elites cell, read from the kernel's structure


@pytest.mark.parametrize("reply,finish,expected", [
    (BROKEN, "stop", "does not parse"),
    (PROSE, "stop", "no code"),
    (TRUNCATED, "length", "cut off"),
])
def test_bad_replies_become_proposals_with_errors(reply, finish, expected):
    with FakeOpenAI([Step(reply, finish_reason=finish)]) as server:
        proposer = make(server)
        [p] = proposer.propose(request())
        proposer.close()
    assert p.source == "" and expected in p.error
    assert p.tokens_out == 50  # tokens are still counted for a useless reply


def test_rate_limit_is_retried_honouring_retry_after():
    sleeps = Sleeps()
    with FakeOpenAI([Step(status=429, headers={"Retry-After": "7"}), Step(GOOD)]) as server:
        proposer = make(server, sleep=sleeps)
        [p] = proposer.propose(request())
        proposer.close()
        assert len(server.requests) == 2
    assert p.error is None and sleeps.calls and sleeps.calls[0] >= 7


def test_server_errors_and_timeouts_are_retried_then_succeed():
    with FakeOpenAI([Step(status=500), Step(GOOD, delay_s=2.0), Step(GOOD)]) as server:
        proposer = make(server, timeout_s=0.5)
        [p] = proposer.propose(request())
        proposer.close()
        assert len(server.requests) == 3
    assert p.error is None and "class ModelNew" in p.source


def test_retries_are_bounded_and_the_error_says_why():
    sleeps = Sleeps()
    with FakeOpenAI([Step(status=503)]) as server:
        proposer = make(server, sleep=sleeps, max_retries=2)
        [p] = proposer.propose(request())
        proposer.close()
        assert len(server.requests) == 3
    assert "after 3 attempt(s)" in p.error and "503" in p.error and SECRET not in p.error
    assert len(sleeps.calls) == 2 and proposer.usage.failures == 1


def test_client_errors_are_not_retried():
    with FakeOpenAI([Step(status=400)]) as server:
        proposer = make(server)
        [p] = proposer.propose(request())
        proposer.close()
        assert len(server.requests) == 1
    assert "HTTP 400" in p.error


def test_prompt_carries_feedback_and_the_key_only_travels_in_the_auth_header():
    parent = Parent(source="class ModelNew: pass  # v1", fitness=0.7, strategy="rowwise-1pass",
                    feedback="case 2 seed 3: max_abs_err 0.31 > atol 0.01 at shape (97,)")
    with FakeOpenAI([Step(GOOD)]) as server:
        proposer = make(server)
        proposer.propose(request(operator="repair", parents=[parent], hardware={"device": "cuda",
                         "name": "NVIDIA H200", "sm_count": 132, "capability": "9.0"}))
        proposer.close()
        [rec] = server.requests
    text = json.dumps(rec.body["messages"])
    assert "max_abs_err 0.31" in text and "class ModelNew: pass  # v1" in text
    assert "NVIDIA H200" in text and "Fix exactly what the feedback describes" in text
    assert SECRET.encode() not in rec.raw
    assert {k.lower(): v for k, v in rec.headers.items()}["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(proposer)


def test_several_requests_are_in_flight_at_once():
    with FakeOpenAI([Step(GOOD, delay_s=0.4)]) as server:
        proposer = make(server, max_concurrency=4)
        proposals = proposer.propose(request(count=4))
        proposer.close()
        assert server.max_in_flight >= 2
    assert len(proposals) == 4 and all(p.error is None for p in proposals)
    assert proposer.usage.requests == 4 and proposer.usage.tokens_in == 400


def test_prompt_templates_render_each_operator_and_backend():
    for operator in ("fresh", "mutate", "crossover", "repair", "tune"):
        for backend in ("triton", "cuda"):
            system, user = render_prompt(request(operator=operator, backend=backend))
            assert "ModelNew" in system["content"] and "relu" in user["content"]
            assert ("cuda.compile" in system["content"]) == (backend == "cuda")


def test_retry_delay_grows_and_respects_retry_after():
    import random

    rng = random.Random(0)
    first, later = retry_delay(0, None, rng), retry_delay(4, None, rng)
    assert 0.5 <= first <= 1.0 and 8.0 <= later <= 16.0
    assert retry_delay(0, 30.0, rng) >= 30.0 and retry_delay(0, 1e6, rng) <= 60.0


def test_built_from_settings_through_the_proposer_factory(monkeypatch):
    from kernelevo.search.proposers import make_proposer
    from kernelevo.settings import reset_settings_cache

    with FakeOpenAI([Step(GOOD)]) as server:
        monkeypatch.setenv("KERNELEVO_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("KERNELEVO_LLM_MODEL", "fake-model")
        monkeypatch.setenv("KERNELEVO_LLM_API_KEY", SECRET)
        monkeypatch.setenv("KERNELEVO_LLM_MAX_CONCURRENCY", "2")
        reset_settings_cache()
        try:
            proposer = make_proposer("llm")
            assert isinstance(proposer, LLMProposer) and SECRET not in repr(proposer)
            [p] = proposer.propose(request())
            proposer.close()
        finally:
            reset_settings_cache()
    assert p.error is None and p.model == "fake-model"


def test_a_job_can_choose_its_model(monkeypatch):
    from kernelevo.search.proposers import make_proposer
    from kernelevo.settings import reset_settings_cache

    with FakeOpenAI([Step(GOOD)]) as server:
        monkeypatch.setenv("KERNELEVO_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("KERNELEVO_LLM_MODEL", "fake-model")
        reset_settings_cache()
        try:
            proposer = make_proposer("llm", model="other-model")
            [p] = proposer.propose(request())
            proposer.close()
        finally:
            reset_settings_cache()
    assert p.error is None and p.model == "other-model"
    assert server.requests[-1].body["model"] == "other-model"


def test_hardware_facts_read_and_described():
    from kernelevo.search.hardware import describe_hardware, read_hardware

    cpu = read_hardware("cpu")
    assert cpu["device"] == "cpu" and "interpreter" in describe_hardware(cpu)
    gpu = {"device": "cuda", "name": "NVIDIA H200", "sm_count": 132, "l2_mb": 60.0, "memory_gb": 139.8,
           "capability": "9.0", "copy_bandwidth_tbs": 4.27}
    text = describe_hardware(gpu)
    assert text.startswith("NVIDIA H200: 132 SMs") and "60 MB L2" in text and "4.27 TB/s" in text
    assert describe_hardware({}) == "unknown device"


def test_hardware_facts_carry_the_shared_memory_a_block_may_use():
    """The evaluator's environment reports it; the prompt and the offline proposer's feasibility checks read it."""
    from kernelevo.search.api import hardware_facts
    from kernelevo.search.hardware import describe_hardware
    from kernelevo.search.offline.launches import shared_memory_limit

    facts = hardware_facts("cuda", {"gpu": "NVIDIA H200", "sm_count": 132, "capability": "9.0",
                                    "shared_memory_per_block": 232_448})
    assert facts["max_shared_memory_per_block"] == 232_448
    assert "232448 bytes of shared memory per block" in describe_hardware(facts)
    assert shared_memory_limit(facts) == 232_448
    assert "max_shared_memory_per_block" not in hardware_facts("cuda", {"gpu": "NVIDIA H200", "sm_count": 132})
