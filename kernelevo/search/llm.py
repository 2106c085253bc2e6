"""``LLMProposer``: candidates written by any OpenAI-compatible chat endpoint.

The real ``openai`` client talks to ``base_url`` (OpenAI, vLLM, SGLang, Ollama, OpenRouter ...).
Prompts are Jinja2 templates in ``prompts/``; code comes out through :mod:`kernelevo.search.extract`.
Requests run in bounded daemon threads (several in flight, ``propose`` may itself be called from
several threads; an interrupted run aborts them: :mod:`kernelevo.search.request_threads`); 429/5xx/timeouts
are retried with exponential backoff and jitter, honouring ``Retry-After``. Tokens come from the API's
``usage`` field; money from the price table. The API key is held as a ``SecretStr`` until the client is
built and never appears in logs, errors or prompts.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelevo.search.extract import classify_strategy, extract_candidate
from kernelevo.search.hardware import describe_hardware
from kernelevo.search.proposer import Proposal, ProposalRequest
from kernelevo.search.request_threads import RequestThreads

if TYPE_CHECKING:  # openai is imported when a proposer is built, not with this module
    from openai.types.chat import ChatCompletionMessageParam

PROMPTS = Path(__file__).with_name("prompts")


@dataclass
class Usage:
    """Running totals over every request this proposer made (thread-safe updates)."""

    requests: int = 0
    failures: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


def render_prompt(request: ProposalRequest) -> list[ChatCompletionMessageParam]:
    """The chat messages for ``request`` (system contract + task, hardware, parents, operator)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(PROMPTS)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    from evaluator.import_policy import ALLOWED_SUMMARY  # the checker's own list, so the prompt cannot drift

    backend_name = "CUDA C++ (NVRTC)" if request.backend == "cuda" else "Triton"
    context = {
        "backend": request.backend,
        "backend_name": backend_name,
        # The rules follow the device: the CPU interpreter cannot run libdevice or several autotune configs.
        "device": "cuda" if request.backend == "cuda" else request.hardware.get("device", "cpu"),
        "allowed_imports": ALLOWED_SUMMARY,
        "op_name": request.op_name,
        "task_source": request.task_source.strip(),
        "hardware": describe_hardware(request.hardware),
        "parents": request.parents,
        "operator": request.operator,
    }
    return [
        {"role": "system", "content": env.get_template("system.j2").render(**context)},
        {"role": "user", "content": env.get_template("propose.j2").render(**context)},
    ]


def retry_delay(attempt: int, retry_after: float | None, rng: random.Random, base: float = 1.0,
                cap: float = 60.0) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): exponential with full jitter, at least Retry-After."""
    backoff = min(cap, base * (2.0 ** attempt))
    delay = backoff / 2 + rng.uniform(0, backoff / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, cap))
    return delay


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                return None
    return None


class LLMProposer:
    """Asks a chat model for candidates; safe to call from several threads."""

    name = "llm"

    def __init__(self, base_url: str, model: str, api_key: Any = None, *, max_concurrency: int = 4,
                 timeout_s: float = 180.0, max_retries: int = 5, max_tokens: int = 8192,
                 temperature: float = 0.8, prices: dict[str, Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep, seed: int = 0):
        import openai

        from kernelevo.search.pricing import load_price_table

        secret = api_key.get_secret_value() if hasattr(api_key, "get_secret_value") else api_key
        self._secret = secret or ""
        # The client retries nothing itself: this class owns retries so that it can count them.
        self._client = openai.OpenAI(base_url=base_url, api_key=secret or "not-needed", timeout=timeout_s,
                                     max_retries=0)
        self.model = model
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.prices = prices if prices is not None else load_price_table()
        self.usage = Usage()
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._pool = RequestThreads(max_concurrency, name="kernelevo-llm")

    @classmethod
    def from_settings(cls, model: str | None = None) -> LLMProposer:
        """Build from ``KERNELEVO_LLM_*`` settings (read now, not at import); ``model`` overrides the
        configured model name (a per-job ``--model`` from the bot)."""
        from kernelevo.settings import get_settings

        s = get_settings()
        model = model or s.llm_model
        if not s.llm_base_url or not model:
            raise ValueError("the llm proposer needs KERNELEVO_LLM_BASE_URL and KERNELEVO_LLM_MODEL")
        return cls(s.llm_base_url, model, s.llm_api_key, max_concurrency=s.llm_max_concurrency,
                   timeout_s=s.llm_timeout_s, max_retries=s.llm_max_retries, max_tokens=s.llm_max_tokens,
                   temperature=s.llm_temperature)

    def close(self) -> None:
        """Wait for the requests in flight, then close the HTTP client."""
        self._pool.wait()
        self._client.close()

    def abort(self) -> None:
        """An interrupted run: every request not yet answered fails now (its thread is left to the network)."""
        self._pool.abort()

    def __repr__(self) -> str:  # never show the key
        return f"LLMProposer(model={self.model!r}, base_url={str(self._client.base_url)!r})"

    # -- the interface -----------------------------------------------------------------------
    def propose(self, request: ProposalRequest) -> list[Proposal]:
        """Send ``request.count`` chat requests concurrently; one Proposal per reply (or error)."""
        messages = render_prompt(request)
        futures = [self._pool.submit(self._one, request, messages, i) for i in range(max(1, request.count))]
        return [f.result() for f in futures]

    # -- one request -------------------------------------------------------------------------
    def _clean(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text

    def _one(self, request: ProposalRequest, messages: list[ChatCompletionMessageParam], index: int) -> Proposal:
        import openai

        base = Proposal(source="", operator=request.operator, backend=request.backend, model=self.model)
        last_error = ""
        for attempt in range(self.max_retries + 1):
            try:
                completion = self._client.chat.completions.create(
                    model=self.model, messages=messages, max_tokens=self.max_tokens,
                    temperature=self.temperature, seed=request.seed * 1000 + index)
                return self._to_proposal(base, completion)
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError) as exc:
                status = getattr(exc, "status_code", None)
                last_error = f"{type(exc).__name__}{f' (HTTP {status})' if status else ''}: {exc}"
                if attempt == self.max_retries:
                    break
                with self._lock:
                    delay = retry_delay(attempt, _retry_after(exc), self._rng)
                self._sleep(delay)
            except openai.APIStatusError as exc:  # 4xx other than 429: retrying will not help
                last_error = f"HTTP {exc.status_code} from the endpoint: {exc.message}"
                break
        with self._lock:
            self.usage.requests += 1
            self.usage.failures += 1
        base.error = self._clean(f"llm request failed after {attempt + 1} attempt(s): {last_error}")
        return base

    def _to_proposal(self, base: Proposal, completion: Any) -> Proposal:
        from kernelevo.search.pricing import cost_usd

        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        finish = choice.finish_reason if choice is not None else None
        usage = completion.usage
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = cost_usd(self.model, tokens_in, tokens_out, self.prices) or 0.0
        with self._lock:
            self.usage.requests += 1
            self.usage.tokens_in += tokens_in
            self.usage.tokens_out += tokens_out
            self.usage.cost_usd += cost
        base.tokens_in, base.tokens_out, base.cost_usd, base.raw_reply = tokens_in, tokens_out, cost, text
        extraction = extract_candidate(text, finish)
        if extraction.source is None:
            base.error = extraction.error
        else:
            base.source = extraction.source
            base.strategy = classify_strategy(extraction.source, base.backend)
        return base
