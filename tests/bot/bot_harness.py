"""Bot test harness: the fake GitHub on loopback, a real redis-server, ``kernelevo serve`` as a real process
(the Starlette app under uvicorn plus its child ``kernelevo bot-worker`` on Celery), and, where a search
must really run, a real ``kernelevo worker --device cpu``.

No GPU exists here, so tests that need a timed result (a follow-up PR) play the GPU worker through the job
store's own API (:func:`finish_like_a_gpu_worker`): claim the chunk, record the terminal state with a
scripted timed result, notify the bot queue, exactly as ``workflows.chunk`` does. Everything is waited for
by condition with generous timeouts; nothing asserts how long anything took.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "fakes"))  # the fake GitHub server
sys.path.insert(0, str(TESTS / "workflows"))  # the worker tier's process helpers

from github_server import FIXTURES, FakeGitHub  # noqa: E402
from workflow_harness import QUEUE_ENV, RedisServer, Worker, free_port, settings_for, wait_for  # noqa: E402

from bot import signature  # noqa: E402

__all__ = ["FakeGitHub", "RedisServer", "Worker", "wait_for", "settings_for"]

ROOT = TESTS.parent
SECRET = "test-webhook-secret"
REPO = "acme/models"
INSTALLATION = 77
SCALE_ADD = (TESTS / "search" / "data" / "scale_add.py").read_text()

OP_V1 = '''import kernelevo


@kernelevo.optimize(inputs=lambda device: [(1.0,)])
def scale_shift(x):
    return x * 2.0 + 1.0
'''
OP_V2 = OP_V1.replace("+ 1.0", "+ 3.0")
OP_GELU = '''import kernelevo


@kernelevo.optimize(inputs=lambda device: [(1.0,)])
def fast_gelu(x):
    return x * 0.5
'''


def timing(speedup: float, spread: float = 0.02) -> dict:
    """A verdict timing block where the candidate is ``speedup`` times faster than the best baseline."""
    def t(ms: float) -> dict:
        return {"median_ms": ms, "p25_ms": ms * (1 - spread), "p75_ms": ms * (1 + spread), "min_ms": ms * 0.97,
                "n": 100}
    cases = [{"case": i, "candidate": t(1.0), "eager": t(3.0 * speedup), "compile_default": t(speedup),
              "compile_max_autotune": t(speedup * 1.1), "speedup_vs_eager": 3.0 * speedup,
              "speedup_vs_compile": speedup, "speedup_vs_best": speedup, "floor_ms": 0.5,
              "roofline_fraction": 0.5} for i in range(2)]
    return {"cases": cases, "geomean_speedup_vs_eager": 3.0 * speedup, "geomean_speedup_vs_compile": speedup,
            "geomean_speedup_vs_best": speedup}


def gpu_summary(op_id: str, *, speedup: float = 1.5, spread: float = 0.02, version: int = 1) -> dict:
    """A search summary (``SearchResult.to_dict()``) as an H200 search would report it."""
    verdict = {"verdict": "accepted", "reason": "ok", "detail": "2 cases x 2 seeds match the op", "device": "cuda:0",
               "backend": "triton", "correctness": {"cases": [{"case": i, "inputs": [], "checks": [
                   {"seed": s, "distribution": "normal", "max_abs_err": 1e-6, "max_rel_err": 1e-5,
                    "rel_l2_err": 1e-6, "ok": True} for s in range(2)]} for i in range(2)]},
               "timing": timing(speedup, spread), "flags": [],
               "environment": {"gpu": "NVIDIA H200", "torch": "2.13.0", "triton": "3.9.0"}}
    source = f"# kernel version {version} for {op_id}\nclass ModelNew:\n    pass\n"
    return {"op_id": op_id, "stop_reason": "plateau", "best": {"id": "g1-1", "source": source, "verdict": verdict,
                                                               "fitness": speedup},
            "candidates_evaluated": 12, "candidates_accepted": 3, "tokens_in": 1000, "tokens_out": 500,
            "cost_usd": 0.12, "evaluator_busy_fraction": 0.8, "started": "t0", "ended": "t1"}


def finish_like_a_gpu_worker(jobs: Any, job_id: str, summary: dict | None, *, state: str = "succeeded",
                             error: str | None = None) -> Any:
    """Do what a GPU worker's chunk does (``workflows.chunk``): claim, report progress, record the end."""
    from workflows.dispatch import BOT_PROGRESS_TASK, BOT_PUBLISH_TASK
    from workflows.models import ClaimOutcome, JobProgress, JobState, WorkerIdentity
    from workflows.store import result_from_summary

    record = jobs.get(job_id)
    worker = WorkerIdentity(node="gpu0@test", pid=os.getpid(), device="cuda")
    claim = jobs.store.claim(job_id, record.epoch, worker)
    assert claim.outcome is ClaimOutcome.RUN, claim
    jobs.store.heartbeat(job_id, record.epoch, worker, JobProgress(generation=1, evaluated=12, accepted=3))
    jobs.dispatcher.notify_bot(BOT_PROGRESS_TASK, job_id, record.spec.origin.kind)
    result = result_from_summary(summary) if summary is not None else None
    done = jobs.store.finish(job_id, record.epoch, worker, JobState(state), result=result, error=error)
    jobs.dispatcher.notify_bot(BOT_PUBLISH_TASK, job_id, record.spec.origin.kind)
    return done


class Bot:
    """``kernelevo serve`` (web + bot worker) in its own process group, configured for the fake GitHub."""

    def __init__(self, fake: FakeGitHub, private_key: str, redis_url: str, directory: Path, *, device: str = "cuda",
                 extra_env: dict[str, str] | None = None) -> None:
        self.fake, self.directory, self.device = fake, Path(directory), device
        self.directory.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, **QUEUE_ENV, "KERNELEVO_REDIS_URL": redis_url,
                    "KERNELEVO_WEBHOOK_SECRET": SECRET, "KERNELEVO_GITHUB_APP_ID": str(fake.app_id),
                    "KERNELEVO_GITHUB_PRIVATE_KEY": private_key, "KERNELEVO_GITHUB_API_URL": fake.base_url,
                    "KERNELEVO_CACHE_DIR": str(self.directory / "cache"), "KERNELEVO_BOT_WORKERS": "4",
                    "KERNELEVO_BOT_PROGRESS_INTERVAL_S": "60", **(extra_env or {})}
        self.env.pop("KERNELEVO_GITHUB_PRIVATE_KEY_PATH", None)
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.starts = 0
        self.http: httpx.Client | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / f"serve-{self.starts}.log"

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.directory.glob("serve-*.log")))

    def start(self) -> Bot:
        self.starts += 1
        self.port = free_port()
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelevo.cli", "serve", "--port", str(self.port), "--device", self.device,
             "--delivery-lease-s", "2", "--tick-s", "2"],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=30)

        def ready() -> bool:
            assert self.proc.poll() is None, f"kernelevo serve exited:\n{self.log()[-4000:]}"
            try:
                healthy = self.http.get("/healthz").status_code == 200
            except httpx.HTTPError:
                return False
            return healthy and " ready." in self.log_path.read_text(errors="replace")

        wait_for(ready, "kernelevo serve and its bot worker to be ready", timeout=180, interval=0.2)
        return self

    def kill9(self) -> None:
        """``kill -9`` of the web process and of its bot worker (the whole process group)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        if self.http is not None:
            self.http.close()

    stop = kill9

    # -- sending webhooks -----------------------------------------------------------------------------
    def send(self, event: str, payload: dict, *, sign: bool = True, delivery: str | None = None,
             secret: str = SECRET) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                   "Content-Type": "application/json"}
        if sign:
            headers["X-Hub-Signature-256"] = signature.sign(secret, body)
        return self.http.post("/webhook", content=body, headers=headers)


class Scene:
    """A test's world: the fake GitHub, Redis, the bot, and readers of what they hold."""

    def __init__(self, fake: FakeGitHub, redis_server: RedisServer, bot: Bot) -> None:
        from bot.state import BotState
        from workflows.client import JobsClient

        self.fake, self.redis, self.bot = fake, redis_server, bot
        self.jobs = JobsClient.from_settings(settings_for(redis_server.url))
        self.state = BotState(self.jobs.store.client)

    def calls_since(self, before: int) -> list:
        """The REST calls the bot made since ``len(fake.exchanges)`` was ``before``, less two kinds no delivery is
        answerable for: token exchanges (cached across deliveries) and the reads the bot worker's sweep tick makes
        every few seconds in these tests, whenever it likes (the repository, for its default branch, and the
        repository config)."""
        return [e for e in self.fake.exchanges[before:] if not e.template.startswith("/app/")
                and not (e.method == "GET" and (e.template == "/repos/{owner}/{repo}"
                                                or e.path.endswith("/contents/.github/kernelevo.yml")))]

    # -- payloads from GitHub's published examples ----------------------------------------------------
    def _base(self, name: str) -> dict:
        payload = json.loads((FIXTURES / name).read_text())
        payload["repository"] = self.fake._repo_obj(REPO)
        payload["installation"] = {"id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
        return payload

    def comment(self, number: int, login: str, body: str, *, kind: str = "User", action: str = "created") -> dict:
        comment = self.fake.add_comment(REPO, number, login, body, kind)
        payload = self._base("issue_comment_created.with-installation.json" if action == "created"
                             else "issue_comment_edited.json")
        payload["action"] = action
        payload["issue"]["number"] = number
        payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{number}"}
        payload["comment"] = {k: v for k, v in comment.items() if not k.startswith("_")}
        payload["sender"] = comment["user"]
        pull = self.fake.pulls[REPO].get(number)
        if pull is not None:  # GitHub sends the PR's author as the user
            payload["issue"]["user"] = copy.deepcopy(pull["user"])
        return payload

    def head(self, number: int) -> str:
        """The PR's head commit now (what a reviewer names in ``/kernelevo approve SHA``)."""
        pull = self.fake.pulls[REPO][number]
        return self.fake.refs[pull["head"]["repo"]["full_name"]][pull["head"]["ref"]]

    def approve(self, number: int, login: str, sha: str | None = None) -> dict:
        """``login`` comments ``/kernelevo approve <sha>`` (the current head by default); returns the payload."""
        payload = self.comment(number, login, f"/kernelevo approve {sha or self.head(number)}")
        self.send("issue_comment", payload)
        return payload

    def pull_event(self, action: str, number: int) -> dict:
        payload = self._base(f"pull_request_{action}.json")
        payload["action"], payload["number"] = action, number
        payload["pull_request"] = copy.deepcopy(self.fake.pulls[REPO][number])
        return payload

    def check_action(self, run_id: int, login: str) -> dict:
        payload = self._base("check_run_requested_action.json")
        payload["check_run"]["id"] = run_id
        payload["check_run"]["pull_requests"] = []
        payload["requested_action"] = {"identifier": "optimize"}
        payload["sender"] = self.fake.user(login)
        return payload

    def send(self, event: str, payload: dict, **kwargs: Any) -> httpx.Response:
        return self.bot.send(event, payload, **kwargs)

    # -- reading the fake's and Redis's state -------------------------------------------------------
    def bot_comments(self, number: int) -> list[dict]:
        return [c for c in self.fake.comments_on(REPO, number) if c["user"]["login"] == "kernelevo[bot]"]

    def status_text(self, number: int) -> str:
        comments = self.bot_comments(number)
        assert len(comments) == 1, f"expected one bot comment, got {len(comments)}"
        return comments[0]["body"]

    def wait_status(self, number: int, text: str, timeout: float = 120) -> str:
        def found() -> str | None:
            comments = self.bot_comments(number)
            return comments[0]["body"] if comments and text in comments[0]["body"] else None

        try:
            return wait_for(found, f"the status comment to say {text!r}", timeout=timeout)
        except AssertionError:
            raise AssertionError(f"status comment never said {text!r}; it says:\n"
                                 f"{[c['body'] for c in self.bot_comments(number)]}\n--- bot log:\n"
                                 f"{self.bot.log()[-6000:]}") from None

    def reactions(self, comment_id: int) -> list[str]:
        return [r["content"] for r in self.fake.reactions.get(comment_id, [])]

    def kernel_pulls(self) -> list[dict]:
        return [p for p in self.fake.pulls[REPO].values() if p["head"]["ref"].startswith("kernelevo/")]

    def job_runs(self) -> list[dict]:
        return [r for r in self.fake.check_runs.values() if r["name"].startswith("kernelevo: optimize")]

    def pr_jobs(self, number: int) -> list[Any]:
        return [r for r in (self.jobs.get(j) for j in self.state.pull(REPO, number).job_ids) if r is not None]

    def wait_jobs(self, number: int, count: int, timeout: float = 120) -> list[Any]:
        def enough() -> list[Any] | None:
            records = self.pr_jobs(number)
            return records if len(records) >= count else None

        try:
            return wait_for(enough, f"{count} job(s) on PR #{number}", timeout=timeout)
        except AssertionError:
            raise AssertionError(f"no {count} job(s) on #{number}; bot log:\n{self.bot.log()[-6000:]}") from None

    def wait_run_completed(self, count: int = 1, timeout: float = 120) -> list[dict]:
        def completed() -> list[dict] | None:
            runs = [r for r in self.job_runs() if r["status"] == "completed"]
            return runs if len(runs) >= count else None

        try:
            return wait_for(completed, f"{count} optimize check run(s) to complete", timeout=timeout)
        except AssertionError:
            raise AssertionError(f"check runs: {[(r['id'], r['status']) for r in self.job_runs()]}; bot log:\n"
                                 f"{self.bot.log()[-6000:]}") from None

    def wait_reported(self, job_id: str, timeout: float = 120) -> Any:
        try:
            return wait_for(lambda: (r := self.jobs.get(job_id)) is not None and r.published and r,
                            f"{job_id} to be reported", timeout=timeout)
        except AssertionError:
            raise AssertionError(f"{job_id} never reported; bot log:\n{self.bot.log()[-6000:]}") from None
