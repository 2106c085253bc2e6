"""The one bot comment per PR, found again by a hidden marker and edited in place."""

from __future__ import annotations

from bot.github_api import GitHubAPI
from bot.report import code, escape_md, render
from kernelevo.jobs import JobStatus

MARKER = "<!-- kernelevo:status -->"


def find_status_comment(comments: list[dict], bot_login: str) -> dict | None:
    """The bot's status comment among a PR's comments (by marker and author), if any."""
    for comment in comments:
        if MARKER in (comment.get("body") or "") and (comment.get("user") or {}).get("login") == bot_login:
            return comment
    return None


def job_rows(jobs: list[JobStatus], links: dict[str, dict[str, str]]) -> list[dict]:
    """Table rows for the status comment: job, ops, state, and the outcome per op."""
    rows = []
    for job in jobs:
        ops = (job.request.ops if job.request else []) or []
        outcome = "; ".join(f"{code(op)}: {text}" for op, text in links.get(job.job_id, {}).items())
        if not outcome and job.error:
            outcome = escape_md(job.error)
        rows.append({"job_id": job.job_id, "ops": ", ".join(code(op) for op in ops), "state": job.state,
                     "result": outcome or "…"})
    return rows


def render_status(notice: str | None, jobs: list[JobStatus], links: dict[str, dict[str, str]]) -> str:
    """The status comment's body."""
    return render("status_comment.md.j2", marker=MARKER, notice=notice, jobs=job_rows(jobs, links))


def upsert_status(gh: GitHubAPI, repo: str, number: int, body: str, bot_login: str) -> int:
    """Edit the PR's status comment, or create it the first time; returns the comment id."""
    existing = find_status_comment(gh.list_comments(repo, number), bot_login)
    if existing:
        if existing.get("body") != body:
            gh.edit_comment(repo, existing["id"], body)
        return existing["id"]
    return gh.create_comment(repo, number, body)["id"]
