"""Check runs: the "ops changed" run with its Optimize button, and one run per job with progress.

Progress updates are throttled (at most one per ``min_interval_s``, clock injected) because GitHub
counts every PATCH against the installation's rate limits; the final update always goes out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from bot.github_api import GitHubAPI
from bot.report import code

DISCOVERY_NAME = "kernelevo: ops"
OPTIMIZE_ACTION = "optimize"
MAX_LISTED = 50


def discovery_output(added: list[str], changed: list[str]) -> dict:
    """Title/summary of the discovery check run listing the PR's new and changed ops."""
    ops = [(op, "added") for op in added] + [(op, "changed") for op in changed]
    lines = [f"- {code(op)} ({how})" for op, how in ops[:MAX_LISTED]]
    if len(ops) > MAX_LISTED:
        lines.append(f"- … and {len(ops) - MAX_LISTED} more")
    summary = ("\n".join(lines) + "\n\nPress **Optimize** (or comment `/kernelevo optimize`) to search "
               "faster kernels for them.")
    return {"title": f"{len(ops)} annotated op(s) added or changed", "summary": summary}


def discovery_actions() -> list[dict]:
    """The button on the discovery check run (identifier routed by ``bot.on_check_run``)."""
    return [{"label": "Optimize", "description": "Search faster kernels for these ops",
             "identifier": OPTIMIZE_ACTION}]


def progress_summary(progress: dict) -> str:
    """One line per op from the search's progress reports."""
    lines = []
    for op, p in sorted(progress.items()):
        best = p.get("best_speedup_vs_eager")
        lines.append(f"- {code(op)}: generation {p.get('generation', 0)}, {p.get('evaluated', 0)} evaluated, "
                     f"{p.get('accepted', 0)} accepted"
                     + (f", best {best:.2f}x over eager" if isinstance(best, (int, float)) else ""))
    return "\n".join(lines) or "starting"


class Throttle:
    """``ready(key)`` is True at most once per ``min_interval_s`` per key."""

    def __init__(self, min_interval_s: float, clock: Callable[[], float]) -> None:
        self._interval, self._clock = min_interval_s, clock
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def ready(self, key: str) -> bool:
        """Record and allow an update for ``key`` if the last one is old enough."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._interval:
                return False
            self._last[key] = now
            return True


def start_job_run(gh: GitHubAPI, repo: str, head_sha: str, job_id: str, ops: list[str]) -> int:
    """Create the job's check run (queued); returns its id."""
    run = gh.create_check_run(repo, name=f"kernelevo: optimize ({len(ops)} op{'s' * (len(ops) != 1)})",
                              head_sha=head_sha, status="queued", external_id=job_id,
                              output={"title": "Queued", "summary": "\n".join(f"- {code(op)}" for op in ops)})
    return run["id"]


def finish_job_run(gh: GitHubAPI, repo: str, run_id: int, *, conclusion: str, title: str,
                   summary: str, completed_at: str) -> None:
    """Complete the job's check run with its result summary."""
    gh.update_check_run(repo, run_id, status="completed", conclusion=conclusion, completed_at=completed_at,
                        output={"title": title, "summary": summary[:60000]})
