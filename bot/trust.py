"""Who may make the bot spend GPU time: permission levels, bots, forks and SHA-bound approvals.

Decisions are pure functions over facts fetched elsewhere (the collaborator-permission API, the
PR's head and base repos); approvals live in an :class:`ApprovalStore` keyed by (repo, PR) (in Redis:
:class:`bot.state.BotState`) and hold the head SHA they were given for, so a new push silently voids them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

LEVELS = ("none", "read", "triage", "write", "maintain", "admin")


def rank(permission: str | None) -> int:
    """Order of a permission name (GitHub's ``role_name`` or legacy ``permission``); unknown is 0."""
    return LEVELS.index(permission) if permission in LEVELS else 0


def meets(permission: str | None, minimum: str) -> bool:
    """True if ``permission`` is at least ``minimum``."""
    return rank(permission) >= rank(minimum)


def is_bot(user: dict[str, Any], bot_login: str) -> bool:
    """Bots (any App, including this one) never trigger anything."""
    login = (user or {}).get("login", "")
    return (user or {}).get("type") == "Bot" or login == bot_login or login.endswith("[bot]")


def is_fork(pull: dict[str, Any]) -> bool:
    """A PR whose head lives in another repository (or a deleted one)."""
    head_repo = (pull.get("head") or {}).get("repo")
    base_repo = (pull.get("base") or {}).get("repo") or {}
    return head_repo is None or head_repo.get("full_name") != base_repo.get("full_name")


@dataclass(frozen=True)
class Decision:
    """Whether a job may run now, and if not, what the user should do."""

    allowed: bool
    reason: str = ""
    pending_approval: bool = False  # True: a maintainer's approve would let it run


def needs_approval(*, fork: bool, author_permission: str, minimum: str) -> bool:
    """Fork PRs and PRs by authors below ``minimum`` run only on an approved head SHA."""
    return fork or not meets(author_permission, minimum)


def may_run(*, fork: bool, author_permission: str, commenter_permission: str, commenter_is_author: bool,
            minimum: str, approved_sha: str | None, head_sha: str) -> Decision:
    """Decide whether a job requested by a comment may start on ``head_sha``.

    Commenters with ``minimum`` permission may request jobs; so may the PR's own author. Fork PRs,
    PRs whose author is below the minimum, and requests by such authors additionally need a
    maintainer's approval bound to exactly this head SHA (a new push voids it).
    """
    trusted = meets(commenter_permission, minimum)
    if not trusted and not commenter_is_author:
        return Decision(False, f"needs `{minimum}` permission on the repository "
                               f"(the commenter has `{commenter_permission}`)")
    if not trusted or needs_approval(fork=fork, author_permission=author_permission, minimum=minimum):
        if approved_sha != head_sha:
            why = "comes from a fork" if fork else f"was opened by an author below `{minimum}` permission"
            stale = " (the last approval was for an older commit)" if approved_sha else ""
            return Decision(False, f"this PR {why}; a maintainer who is not its author must review commit "
                                   f"{head_sha[:12]} and comment `/kernelevo approve {head_sha}`{stale}",
                            pending_approval=True)
    return Decision(True)


APPROVER_MINIMUM = "write"  # approving spends GPU time on someone else's code: never below write


def approver_minimum(minimum: str) -> str:
    """The permission an approver needs: the config's ``min_permission``, and never less than ``write``."""
    return minimum if rank(minimum) > rank(APPROVER_MINIMUM) else APPROVER_MINIMUM


def may_approve(*, approver: str, approver_permission: str, author: str, minimum: str, head_sha: str,
                named_sha: str) -> Decision:
    """Whether ``approver`` may approve the PR's head for jobs with ``/kernelevo approve NAMED_SHA``.

    The approval binds to the commit the approver names (what they reviewed), and only when that commit is
    still the PR's head: a push between writing the comment and the bot reading it voids it. Nobody approves
    their own PR, whatever their permission."""
    needed = approver_minimum(minimum)
    if not meets(approver_permission, needed):
        return Decision(False, f"`approve` needs `{needed}` permission (the commenter has `{approver_permission}`)")
    if approver == author:
        return Decision(False, "nobody approves their own PR; another maintainer must review and approve it")
    if named_sha != head_sha:
        return Decision(False, f"commit {named_sha[:12]} is not this PR's head (now {head_sha[:12]}); review "
                               f"{head_sha[:12]}, then comment `/kernelevo approve {head_sha}`")
    return Decision(True)


class ApprovalStore(Protocol):
    """Approvals bound to a head SHA, per (repo, PR)."""

    def approve(self, repo: str, pr_number: int, sha: str, by: str) -> None: ...

    def approved_sha(self, repo: str, pr_number: int) -> str | None: ...

