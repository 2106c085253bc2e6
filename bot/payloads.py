"""The shape of the webhook payloads the bot acts on, checked before anything is queued.

A signed payload still comes from GitHub's servers, but a malformed one (a replay tool, a proxy, a fuzzer
with the secret) must be answered 400, never crash a handler halfway: these models name exactly the fields
the handlers read, with their JSON types (strict: no coercion). Other fields are ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class Installation(_Part):
    id: int


class Repository(_Part):
    full_name: str
    default_branch: str | None = None


class User(_Part):
    login: str
    type: str | None = None


class Envelope(_Part):
    """What every routed event has."""

    action: str | None = None
    installation: Installation | None = None
    repository: Repository | None = None
    sender: User | None = None


class Issue(_Part):
    number: int
    pull_request: dict[str, Any] | None = None
    user: User | None = None


class Comment(_Part):
    id: int
    body: str | None = None
    user: User


class IssueComment(Envelope):
    issue: Issue
    comment: Comment


class Ref(_Part):
    sha: str
    ref: str
    repo: dict[str, Any] | None = None


class Pull(_Part):
    number: int
    head: Ref
    base: Ref
    user: User
    state: str | None = None


class PullRequestEvent(Envelope):
    pull_request: Pull


class PullNumber(_Part):
    number: int


class CheckRun(_Part):
    id: int
    pull_requests: list[PullNumber] = []


class RequestedAction(_Part):
    identifier: str


class CheckRunEvent(Envelope):
    check_run: CheckRun
    requested_action: RequestedAction | None = None
    sender: User


class RepoName(_Part):
    full_name: str


class InstallationEvent(Envelope):
    installation: Installation
    repositories: list[RepoName] | None = None
    repositories_added: list[RepoName] | None = None
    repositories_removed: list[RepoName] | None = None


MODELS: dict[str, type[Envelope]] = {
    "issue_comment": IssueComment,
    "pull_request": PullRequestEvent,
    "check_run": CheckRunEvent,
    "installation": InstallationEvent,
    "installation_repositories": InstallationEvent,
}


def problem(event: str, payload: dict[str, Any]) -> str | None:
    """Why ``payload`` is not a well-formed ``event`` payload (None: it is); the first few errors only."""
    model = MODELS.get(event, Envelope)
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        errors = exc.errors()[:3]
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}" for e in errors)
    return None
