"""Check runs: the "ops changed" run with its Optimize button, and one run per optimize request.

A request's run covers one job per op and shows one line per op: its progress while the job runs,
its outcome once the job is reported; under the lines, the report of each op that got a follow-up PR
(:mod:`kernelevo.report`, rendered for a check-run summary, each shortened to its share of GitHub's limit when
they do not all fit). The summaries and the conclusion are pure
functions of the stored :class:`~bot.state.RunLink`, the job records and those reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.github_api import GitHubAPI
from bot.report import CheckReport, code
from bot.state import Conclusion, RunLink
from kernelevo.report.markdown import CHECK_SUMMARY_LIMIT
from workflows.models import JobRecord, JobState

DISCOVERY_NAME = "kernelevo: ops"
OPTIMIZE_ACTION = "optimize"
MAX_LISTED = 50


def discovery_output(added: list[str], changed: list[str]) -> dict[str, Any]:
    """Title/summary of the discovery check run listing the PR's new and changed ops."""
    ops = [(op, "added") for op in added] + [(op, "changed") for op in changed]
    lines = [f"- {code(op)} ({how})" for op, how in ops[:MAX_LISTED]]
    if len(ops) > MAX_LISTED:
        lines.append(f"- … and {len(ops) - MAX_LISTED} more")
    summary = ("\n".join(lines) + "\n\nPress **Optimize** (or comment `/kernelevo optimize`) to search "
               "faster kernels for them.")
    return {"title": f"{len(ops)} annotated op(s) added or changed", "summary": summary}


def discovery_actions() -> list[dict[str, Any]]:
    """The button on the discovery check run (identifier routed by ``bot.on_check_run``)."""
    return [{"label": "Optimize", "description": "Search faster kernels for these ops",
             "identifier": OPTIMIZE_ACTION}]


def run_name(count: int) -> str:
    return f"kernelevo: optimize ({count} op{'s' * (count != 1)})"


def start_run(gh: GitHubAPI, repo: str, head_sha: str, ops: list[str]) -> int:
    """Create an optimize request's check run (queued); returns its id."""
    run = gh.create_check_run(repo, name=run_name(len(ops)), head_sha=head_sha, status="queued",
                              output={"title": "Queued", "summary": "\n".join(f"- {code(op)}: queued" for op in ops)})
    return int(run["id"])


def progress_text(record: JobRecord | None) -> str:
    """Where one op's job is, in a few words."""
    if record is None:
        return "the job is gone"
    if record.state is JobState.QUEUED:
        return f"queued ({record.id})" if record.waiting_for is None else f"waiting for {record.waiting_for}"
    if record.state is JobState.RUNNING:
        p = record.progress
        best = (f", best {p.best_speedup_vs_eager:.2f}x over eager" if p.best_speedup_vs_eager is not None else "")
        return f"generation {p.generation}, {p.evaluated} evaluated, {p.accepted} accepted{best}"
    return f"{record.state.value}, being reported"


def run_summary(run: RunLink, records: dict[str, JobRecord | None],
                reports: Mapping[str, str] | None = None) -> str:
    """One line per op: the outcome once reported, else the job's progress (``records`` by job id); then the
    report of each published op (``reports``: the kept :class:`~bot.report.CheckReport` by op id), in the run's
    order. Reports that do not all fit in GitHub's limit share it: each is shortened to its share
    (:func:`shares`); only when a share would be too small for the essentials is a report named with its
    follow-up PR instead (that PR's body holds it)."""
    lines = []
    for line in run.ops:
        if line.outcome is not None:
            text = line.outcome
        elif line.job_id is None:
            text = "not queued yet"
        else:
            text = progress_text(records.get(line.job_id))
        lines.append(f"- {code(line.op_id)}: {text}")
    summary = "\n".join(lines)
    kept = reports or {}
    published = [line for line in run.ops if line.conclusion is Conclusion.SUCCESS and line.op_id in kept]
    blocks = [_Block.of(line.op_id, line.follow_up_pr, kept[line.op_id]) for line in published]
    room = CHECK_SUMMARY_LIMIT - _size(summary)
    shown = len(blocks)
    while True:  # the most reports (in the run's order) whose shares hold their essentials; pointers for the rest
        pointed = sum(_size(b.pointer) for b in blocks[shown:])
        given = shares(room - pointed, [_size(b.full) for b in blocks[:shown]])
        if shown == 0 or all(b.fits(share) for b, share in zip(blocks, given)):
            break
        shown -= 1
    for block, share in zip(blocks[:shown], given):
        summary += block.within(share)
    return summary + "".join(b.pointer for b in blocks[shown:])


MIN_SHARE = 4_000  # bytes: a report shortened to its result, geomeans and how to reproduce takes 1-3 KB


def shares(room: int, sizes: list[int]) -> list[int]:
    """``room`` bytes divided among reports of ``sizes``: each gets its size if an equal split allows it, the
    rest split equally what those leave (the large reports are shortened, the small ones kept whole)."""
    given = [0] * len(sizes)
    left, waiting = max(room, 0), len(sizes)
    for i in sorted(range(len(sizes)), key=lambda n: sizes[n]):
        given[i] = min(sizes[i], left // waiting)
        left -= given[i]
        waiting -= 1
    return given


@dataclass(frozen=True)
class _Block:
    """One published op's place under the lines: its full report, how to shorten it, the pointer instead."""

    full: str
    pointer: str
    kept: CheckReport | None  # None: Markdown an older bot kept, shown whole or pointed to

    @classmethod
    def of(cls, op_id: str, pr: int | None, kept: str) -> _Block:
        model = CheckReport.parse(kept)
        text = model.markdown() if model is not None else kept
        return cls(full="\n\n" + text.strip("\n"), pointer=_pointer(op_id, pr), kept=model)

    def fits(self, share: int) -> bool:
        return _size(self.full) <= share or (self.kept is not None and share >= MIN_SHARE)

    def within(self, share: int) -> str:
        if _size(self.full) <= share:
            return self.full
        if self.kept is None:
            return self.pointer
        return "\n\n" + self.kept.markdown(limit=share - 2).strip("\n")


def _pointer(op_id: str, pr: int | None) -> str:
    where = f"#{pr}" if pr is not None else "its follow-up PR"
    return f"\n\nThe report of {code(op_id)} does not fit in this summary with the others: see {where}."


def _size(text: str) -> int:
    """GitHub counts characters; UTF-8 bytes are never fewer."""
    return len(text.encode("utf-8"))


def fit(summary: str, limit: int = CHECK_SUMMARY_LIMIT) -> str:
    """``summary`` within GitHub's limit (a last resort: :func:`run_summary` already keeps to it), cut at a
    character boundary with a line saying so."""
    if _size(summary) <= limit:
        return summary
    note = "\n\n(cut at GitHub's size limit)\n"
    return summary.encode("utf-8")[: limit - _size(note)].decode("utf-8", errors="ignore") + note


def run_conclusion(run: RunLink) -> tuple[Conclusion, str]:
    """The conclusion and title of a run whose every op is reported."""
    found = [line.conclusion or Conclusion.NEUTRAL for line in run.ops]
    failed = found.count(Conclusion.FAILURE)
    published = found.count(Conclusion.SUCCESS)
    if failed:
        return Conclusion.FAILURE, ("Failed" if len(found) == 1 else f"Failed for {failed} of {len(found)} ops")
    if published:
        return Conclusion.SUCCESS, ("Published a faster kernel" if published == 1
                                    else f"Published {published} faster kernels")
    if found and all(c is Conclusion.CANCELLED for c in found):
        return Conclusion.CANCELLED, "Cancelled"
    return Conclusion.NEUTRAL, "Finished; nothing to publish"


def update_progress(gh: GitHubAPI, repo: str, run_id: int, summary: str) -> None:
    gh.update_check_run(repo, run_id, status="in_progress", output={"title": "Searching", "summary": fit(summary)})


def finish_run(gh: GitHubAPI, repo: str, run_id: int, *, conclusion: Conclusion, title: str, summary: str,
               completed_at: str) -> None:
    """Complete a check run with its result summary."""
    gh.update_check_run(repo, run_id, status="completed", conclusion=conclusion.value, completed_at=completed_at,
                        output={"title": title, "summary": fit(summary)})
