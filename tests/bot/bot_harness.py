"""Bot test harness: the fake GitHub, the real webhook app on loopback, a deterministic search double.

Everything real that can run here runs: the Starlette app under uvicorn on 127.0.0.1, PyGithub
talking HTTP to the fake GitHub server, the LocalRunner's threads, the work queue. Only the search
itself is a double (a real search needs a GPU to produce speedups), and one test uses the real one.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))  # the fake GitHub server

from github_server import FIXTURES, FakeGitHub  # noqa: E402

from bot import signature  # noqa: E402
from bot.app import create_app  # noqa: E402
from bot.auth import InstallationTokens  # noqa: E402
from bot.context import BotContext  # noqa: E402
from bot.deliveries import MemoryDeliveryStore  # noqa: E402
from bot.github_api import GitHubAPI, token_exchange  # noqa: E402
from bot.jobflow import BotJobHooks  # noqa: E402
from bot.workqueue import WorkQueue  # noqa: E402
from bot.workspace import tarball_workspace  # noqa: E402
from kernelevo.jobs import TERMINAL, LocalRunner  # noqa: E402

SECRET = "test-webhook-secret"
REPO = "acme/models"
INSTALLATION = 77

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


class SearchDouble:
    """``run_search``'s signature; returns a scripted result and reports progress like the real one."""

    def __init__(self) -> None:
        self.speedup = 1.5
        self.accepted = True
        self.spread = 0.02
        self.progress_steps = 2
        self.calls: list[dict] = []
        self.release = threading.Event()
        self.release.set()  # clear() to hold searches until set()
        self.on_step = None  # called before each progress report (tests advance clocks here)
        self.version = 0

    def __call__(self, task_path, *, op_id, backend, proposer, budget, device, run_dir, on_progress=None,
                 should_cancel=None):
        self.calls.append({"task_path": Path(task_path), "op_id": op_id, "backend": backend,
                           "task_exists": Path(task_path).is_file()})
        self.version += 1
        for step in range(self.progress_steps):
            if self.on_step:
                self.on_step(step)
            on_progress({"generation": step, "evaluated": step + 1, "accepted": 1, "best_fitness": self.speedup,
                         "best_speedup_vs_eager": 3.0 * self.speedup})
        while not self.release.wait(0.02):
            if should_cancel and should_cancel():
                return {"op_id": op_id, "run_dir": str(run_dir), "stop_reason": "cancelled", "best": None}
        verdict = {"verdict": "accepted" if self.accepted else "rejected", "reason": "ok",
                   "detail": "2 cases x 2 seeds match the op", "device": "cuda:0", "backend": "triton",
                   "correctness": {"cases": [{"case": i, "inputs": [], "checks": [
                       {"seed": s, "distribution": "normal", "max_abs_err": 1e-6, "max_rel_err": 1e-5,
                        "rel_l2_err": 1e-6, "ok": True} for s in range(2)]} for i in range(2)]},
                   "timing": timing(self.speedup, self.spread), "flags": [],
                   "environment": {"gpu": "NVIDIA H200", "torch": "2.13.0", "triton": "3.9.0"}}
        source = f"# kernel version {self.version} for {op_id}\nclass ModelNew:\n    pass\n"
        return {"op_id": op_id, "run_dir": str(run_dir), "stop_reason": "plateau",
                "best": {"id": "g1-1", "source": source, "verdict": verdict, "fitness": self.speedup},
                "candidates_evaluated": 12, "candidates_accepted": 3, "tokens_in": 1000, "tokens_out": 500,
                "cost_usd": 0.12, "evaluator_busy_fraction": 0.8, "baselines": {}, "started": "t0", "ended": "t1",
                "time_to_first_accepted_s": 3.0}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """The bot wired to the fake GitHub, served over real HTTP on loopback."""

    def __init__(self, fake: FakeGitHub, private_key: str, tmp: Path, *, max_wait_s: float = 10.0,
                 real_search: dict | None = None) -> None:
        self.fake, self.tmp = fake, tmp
        self.search = SearchDouble()
        self.clock = Clock()
        self.tokens = InstallationTokens(fake.app_id, private_key, token_exchange(fake.base_url))
        self.work = WorkQueue(4)
        self.workspace = tarball_workspace(fake.base_url, lambda repo: self.tokens.get(INSTALLATION))
        hooks = BotJobHooks()
        if real_search:  # the real run_search, with the given proposer/budget factories and device
            self.runner = LocalRunner(self.workspace, hooks=hooks, runs_root=tmp / "runs", **real_search)
        else:
            self.runner = LocalRunner(self.workspace, search=self.search, hooks=hooks,
                                      make_proposer=lambda r: None, make_budget=lambda r: None,
                                      runs_root=tmp / "runs")
        self.ctx = BotContext(
            github=lambda inst: GitHubAPI(fake.base_url, inst, self.tokens, max_wait_s=max_wait_s,
                                          backoff_s=0.01),
            jobs=self.runner, work=self.work, workspace=self.workspace, clock=self.clock,
            progress_interval_s=60.0, forget_installation=self.tokens.forget)
        hooks.ctx = self.ctx
        self.deliveries = MemoryDeliveryStore()
        self.app = create_app(secret=SECRET, deliveries=self.deliveries, work=self.work, ctx=self.ctx)
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.http = httpx.Client(base_url=self.url, timeout=10)

    def close(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(5)
        self.work.stop()

    # -- sending webhooks -----------------------------------------------------------------------------
    def send(self, event: str, payload: dict, *, sign: bool = True, delivery: str | None = None,
             secret: str = SECRET) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                   "Content-Type": "application/json"}
        if sign:
            headers["X-Hub-Signature-256"] = signature.sign(secret, body)
        return self.http.post("/webhook", content=body, headers=headers)

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until the work queue is idle and every job has finished (and its follow-up work)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = self.work.pending() or any(
                s.state not in TERMINAL for s in (self.runner.status(j) for j in list(self.runner._jobs)))
            if not busy:
                time.sleep(0.05)
                if not self.work.pending():
                    return
            time.sleep(0.02)
        raise AssertionError("bot did not settle")

    # -- payloads from GitHub's published examples ----------------------------------------------------------
    def _base(self, name: str) -> dict:
        payload = json.loads((FIXTURES / name).read_text())
        payload["repository"] = self.fake._repo_obj(REPO)
        payload["installation"] = {"id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="}
        return payload

    def comment(self, number: int, login: str, body: str, *, kind: str = "User",
                action: str = "created") -> dict:
        comment = self.fake.add_comment(REPO, number, login, body, kind)
        payload = self._base("issue_comment_created.with-installation.json" if action == "created"
                             else "issue_comment_edited.json")
        payload["action"] = action
        payload["issue"]["number"] = number
        payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{number}"}
        payload["comment"] = {k: v for k, v in comment.items() if not k.startswith("_")}
        payload["sender"] = comment["user"]
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

    # -- reading the fake's state ---------------------------------------------------------------------------
    def bot_comments(self, number: int) -> list[dict]:
        return [c for c in self.fake.comments_on(REPO, number) if c["user"]["login"] == "kernelevo[bot]"]

    def status_text(self, number: int) -> str:
        comments = self.bot_comments(number)
        assert len(comments) == 1, f"expected one bot comment, got {len(comments)}"
        return comments[0]["body"]

    def reactions(self, comment_id: int) -> list[str]:
        return [r["content"] for r in self.fake.reactions.get(comment_id, [])]

    def kernel_pulls(self) -> list[dict]:
        return [p for p in self.fake.pulls[REPO].values() if p["head"]["ref"].startswith("kernelevo/")]
