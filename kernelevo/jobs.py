"""The job seam between the GitHub App and whatever runs searches.

The bot only ever talks to a :class:`JobQueue`: submit a :class:`JobRequest`, read a
:class:`JobStatus`, cancel, list a PR's jobs. :class:`LocalRunner` implements it in-process with
background threads (this is what ``kernelevo serve`` uses until the Celery + Redis queue lands behind
the same protocol). Requests and statuses are plain data so that they serialise to JSON unchanged.

The runner knows nothing about GitHub: the bot passes a :class:`JobHooks` whose ``before_start``
re-checks that the PR head is still the approved SHA and whose ``on_progress``/``on_finished``
mirror state to check runs and publish the follow-up PR.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

STATES = ("queued", "running", "succeeded", "failed", "cancelled")
TERMINAL = frozenset({"succeeded", "failed", "cancelled"})


@dataclass
class JobRequest:
    """One search job: which ops of which repo at which pinned commit, and with what limits."""

    repo: str
    pr_number: int | None
    head_sha: str
    base_ref: str
    ops: list[str]
    backend: str
    budget_tokens: int | None
    model: str | None
    requested_by: str
    installation_id: int
    kind: str = "pr"  # "pr" | "sweep"

    def idempotency_key(self) -> str:
        """Key over (repo, PR, op set, head SHA): the same request twice maps to one job."""
        raw = json.dumps([self.repo, self.pr_number, sorted(set(self.ops)), self.head_sha])
        return hashlib.sha256(raw.encode()).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the Celery queue stores exactly this)."""
        return dataclasses.asdict(self)


@dataclass
class JobStatus:
    """What a job is doing now; ``result`` holds one search result dict per op when done."""

    job_id: str
    state: str  # queued|running|succeeded|failed|cancelled
    progress: dict = field(default_factory=dict)
    result: dict | None = None
    error: str | None = None
    updated_at: float = 0.0
    request: JobRequest | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return dataclasses.asdict(self)


class JobQueue(Protocol):
    """Submit, query and cancel search jobs (LocalRunner now, Celery later)."""

    def submit(self, request: JobRequest) -> str: ...

    def status(self, job_id: str) -> JobStatus | None: ...

    def cancel(self, job_id: str) -> bool: ...

    def find(self, repo: str, pr_number: int) -> list[JobStatus]: ...


class JobHooks:
    """Callbacks the runner makes around a job; the bot subclasses this. Defaults do nothing."""

    def before_start(self, job_id: str, request: JobRequest) -> str | None:
        """Return a reason to refuse the job (e.g. the PR head moved), or None to go ahead."""
        return None

    def on_progress(self, job_id: str, request: JobRequest, op_id: str, progress: dict) -> None:
        """Called with each progress report of the search for ``op_id``."""

    def on_finished(self, job_id: str, request: JobRequest, status: JobStatus) -> None:
        """Called once when the job reaches a terminal state."""


WorkspaceProvider = Callable[[str, str], AbstractContextManager[Path]]
SearchFn = Callable[..., Any]


def _default_search(*args: Any, **kwargs: Any) -> Any:
    from kernelevo.search.api import run_search  # lazy: the search pulls in torch

    return run_search(*args, **kwargs)


def default_task_path(workspace: Path, op_id: str, run_dir: Path) -> Path:
    """Path of a KernelBench-format task file for ``op_id`` inside a checkout.

    The op is found by static discovery of its file (no repository code is imported here); a task
    file is used as is, a decorated op is turned into a task module in ``run_dir`` (the search's
    ``Target.task_path`` rule).
    """
    from kernelevo.discovery import discover_source
    from kernelevo.search.targets import Target

    rel = op_id.partition("::")[0]
    source = (workspace / rel).resolve()
    if not source.is_relative_to(workspace.resolve()) or not source.is_file():
        raise FileNotFoundError(f"op {op_id!r}: {rel} is not a file in the checkout")
    ops, _ = discover_source(source.read_text(encoding="utf-8"), rel)
    found = [op for op in ops if op.op_id == op_id]
    if not found:
        raise LookupError(f"op {op_id!r} is not in {rel} at this commit (renamed or removed?)")
    return Target(found[0], workspace).task_path(run_dir)


def _jsonable(result: Any) -> dict:
    if result is None:
        return {}
    if isinstance(result, dict):
        return result
    if hasattr(result, "to_dict"):
        return result.to_dict()
    if dataclasses.is_dataclass(result):
        return json.loads(json.dumps(dataclasses.asdict(result), default=str))
    raise TypeError(f"search returned {type(result).__name__}, expected a dataclass or dict")


def _as_dict(progress: Any) -> dict:
    if isinstance(progress, dict):
        return progress
    if dataclasses.is_dataclass(progress):
        return dataclasses.asdict(progress)
    return {"value": progress}


class LocalRunner:
    """A :class:`JobQueue` running each job in a background thread of this process.

    ``search`` has ``run_search``'s signature (default: a lazy import of it); ``workspace_provider``
    is a context manager factory giving a local checkout of (repo, sha); ``make_proposer`` and
    ``make_budget`` build the search's proposer and budget from the request (defaults: lazy imports
    of the search package's proposer factory and its Budget). ``device`` defaults to cuda when torch
    sees a GPU, else cpu. Run directories go under ``runs_root`` (default: ``<cache_dir>/runs``). Jobs
    wait in state "queued" until one of ``max_parallel`` slots is free (default 1: one search at a time
    on the device), so the hooks' SHA re-check runs right before the search starts.
    """

    def __init__(
        self,
        workspace_provider: WorkspaceProvider,
        *,
        search: SearchFn | None = None,
        hooks: JobHooks | None = None,
        make_proposer: Callable[[JobRequest], Any] | None = None,
        make_budget: Callable[[JobRequest], Any] | None = None,
        task_path: Callable[[Path, str, Path], Path] = default_task_path,
        device: str | None = None,
        runs_root: Path | None = None,
        max_parallel: int = 1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._workspace_provider = workspace_provider
        self._search = search or _default_search
        self.hooks = hooks or JobHooks()
        self._make_proposer = make_proposer or _default_proposer
        self._make_budget = make_budget or _default_budget
        self._task_path = task_path
        self._device = device
        self._runs_root = runs_root
        self._clock = clock
        self._lock = threading.Lock()
        self._jobs: dict[str, JobStatus] = {}
        self._by_key: dict[str, str] = {}
        self._cancel: dict[str, threading.Event] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._slots = threading.BoundedSemaphore(max_parallel)

    # -- JobQueue ---------------------------------------------------------------------------------
    def submit(self, request: JobRequest) -> str:
        """Queue a job; an identical live or finished request returns the existing job id."""
        key = request.idempotency_key()
        with self._lock:
            existing = self._by_key.get(key)
            if existing and self._jobs[existing].state not in ("failed", "cancelled"):
                return existing
            job_id = f"job-{uuid.uuid4().hex[:12]}"
            self._jobs[job_id] = JobStatus(job_id, "queued", {}, None, None, self._clock(), request)
            self._by_key[key] = job_id
            self._cancel[job_id] = threading.Event()
            thread = threading.Thread(target=self._run, args=(job_id, request), daemon=True,
                                      name=f"kernelevo-{job_id}")
            self._threads[job_id] = thread
        thread.start()
        return job_id

    def status(self, job_id: str) -> JobStatus | None:
        """Copy of the job's current status, or None if unknown."""
        with self._lock:
            status = self._jobs.get(job_id)
            return dataclasses.replace(status, progress=dict(status.progress)) if status else None

    def cancel(self, job_id: str) -> bool:
        """Ask a job to stop (cooperative, between candidates); False if unknown or already done."""
        with self._lock:
            status = self._jobs.get(job_id)
            if status is None or status.state in TERMINAL:
                return False
            self._cancel[job_id].set()
            return True

    def find(self, repo: str, pr_number: int) -> list[JobStatus]:
        """Every job of a PR, oldest first."""
        with self._lock:
            ids = [j for j, s in self._jobs.items()
                   if s.request and s.request.repo == repo and s.request.pr_number == pr_number]
        return [s for s in (self.status(j) for j in ids) if s]

    def wait(self, job_id: str, timeout: float | None = None) -> JobStatus | None:
        """Block until the job's thread ends (tests, the CLI); returns the final status."""
        thread = self._threads.get(job_id)
        if thread:
            thread.join(timeout)
        return self.status(job_id)

    # -- the job ----------------------------------------------------------------------------------
    def _set(self, job_id: str, **changes: Any) -> JobStatus:
        with self._lock:
            status = dataclasses.replace(self._jobs[job_id], **changes, updated_at=self._clock())
            self._jobs[job_id] = status
            return status

    def _run(self, job_id: str, request: JobRequest) -> None:
        with self._slots:  # jobs share the device: at most max_parallel searches at once
            self._run_now(job_id, request)

    def _run_now(self, job_id: str, request: JobRequest) -> None:
        cancel = self._cancel[job_id]
        try:
            refusal = self.hooks.before_start(job_id, request)
            if refusal:
                final = self._set(job_id, state="cancelled", error=refusal)
            elif cancel.is_set():
                final = self._set(job_id, state="cancelled", error="cancelled before it started")
            else:
                self._set(job_id, state="running")
                results = self._search_all(job_id, request, cancel)
                state = "cancelled" if cancel.is_set() else "succeeded"
                final = self._set(job_id, state=state, result={"ops": results},
                                  error="cancelled by request" if cancel.is_set() else None)
        except Exception as exc:  # a job failure is data for the user, never a dead thread
            log.exception("job %s failed", job_id)
            final = self._set(job_id, state="failed", error=f"{type(exc).__name__}: {exc}")
        try:
            self.hooks.on_finished(job_id, request, final)
        except Exception:
            log.exception("on_finished hook failed for job %s", job_id)

    def _search_all(self, job_id: str, request: JobRequest, cancel: threading.Event) -> dict:
        results: dict[str, dict] = {}
        with self._workspace_provider(request.repo, request.head_sha) as workspace:
            for op_id in request.ops:
                if cancel.is_set():
                    break
                run_dir = _run_dir_for(self._runs_root or _default_runs_root(), job_id, op_id)
                results[op_id] = self._search_one(job_id, request, Path(workspace), op_id, run_dir, cancel)
        return results

    def _search_one(self, job_id: str, request: JobRequest, workspace: Path, op_id: str,
                    run_dir: Path, cancel: threading.Event) -> dict:
        def on_progress(progress: Any) -> None:
            data = _as_dict(progress)
            self._set(job_id, progress={**(self.status(job_id).progress), op_id: data})
            try:
                self.hooks.on_progress(job_id, request, op_id, data)
            except Exception:
                log.exception("on_progress hook failed for job %s", job_id)

        result = self._search(
            self._task_path(workspace, op_id, run_dir),
            op_id=op_id,
            backend=request.backend,
            proposer=self._make_proposer(request),
            budget=self._make_budget(request),
            device=self._device or _default_device(),
            run_dir=run_dir,
            on_progress=on_progress,
            should_cancel=cancel.is_set,
        )
        return _jsonable(result)


def _run_dir_for(root: Path, job_id: str, op_id: str) -> Path:
    """A run directory per (job, op) under ``root`` (kept: the report and plots are read from it)."""
    path = root / job_id / hashlib.sha1(op_id.encode()).hexdigest()[:10]
    path.mkdir(parents=True, exist_ok=True)
    return path


def _default_runs_root() -> Path:
    from kernelevo.settings import get_settings

    return get_settings().cache_dir / "runs"


def _default_proposer(request: JobRequest) -> Any:
    """The configured proposer (LLM when an endpoint is set, else offline); lazy, it is heavy."""
    from kernelevo.search.proposers import make_proposer

    return make_proposer(model=request.model)


def _default_budget(request: JobRequest) -> Any:
    from kernelevo.search.budget import Budget

    return Budget(tokens=request.budget_tokens)


def _default_device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"
