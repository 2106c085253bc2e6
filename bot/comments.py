"""The one bot comment per PR, found again by its stored id (or a hidden marker) and edited in place."""

from __future__ import annotations

from typing import Any

from bot.github_api import GitHubAPI, GitHubError
from bot.report import render

MARKER = "<!-- kernelevo:status -->"


def find_status_comment(comments: list[dict[str, Any]], bot_login: str) -> dict[str, Any] | None:
    """The bot's status comment among a PR's comments (by marker and author), if any."""
    for comment in comments:
        if MARKER in (comment.get("body") or "") and (comment.get("user") or {}).get("login") == bot_login:
            return comment
    return None


def render_status(notice: str | None, rows: list[dict[str, Any]]) -> str:
    """The status comment's body: the latest notice, then one row per op job (``context.job_rows``)."""
    return render("status_comment.md.j2", marker=MARKER, notice=notice, jobs=rows)


def upsert_status(gh: GitHubAPI, repo: str, number: int, body: str, bot_login: str,
                  known_id: int | None = None) -> int:
    """Edit the PR's status comment (``known_id`` when the bot stored it), or create it the first time;
    returns the comment id."""
    if known_id is not None:
        try:
            gh.edit_comment(repo, known_id, body)
            return known_id
        except GitHubError as exc:
            if exc.status != 404:
                raise  # deleted by someone: find or create another below
    existing = find_status_comment(gh.list_comments(repo, number), bot_login)
    if existing:
        if existing.get("body") != body:
            gh.edit_comment(repo, existing["id"], body)
        return int(existing["id"])
    return int(gh.create_comment(repo, number, body)["id"])
