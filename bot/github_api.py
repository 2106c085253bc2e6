"""The bot's GitHub client: PyGithub's requester plus retries, rate-limit handling and helpers.

Every REST call the bot makes goes through :meth:`GitHubAPI.call`, which retries 5xx with backoff,
sleeps only for short rate-limit waits and raises :class:`~bot.ratelimit.Deferred` for long ones
(the work queue re-runs the item later). PyGithub's own retry and throttling are turned off so that
these rules are the only ones.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import github
import requests
from github import Auth, GithubException

from bot import ratelimit
from bot.auth import WRITE, InstallationTokens

MAX_PAGES = 10  # of 100 items each
REPO_PATH = re.compile(r"^/repos/([A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100})(/|$)")


class GitHubError(Exception):
    """A REST call that failed for good: which call, what GitHub said."""

    def __init__(self, verb: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{verb} {path} failed: HTTP {status}: {message}")
        self.status = status


def _client(base_url: str, token: str | None, timeout: int = 15) -> github.Github:
    auth = Auth.Token(token) if token else None
    return github.Github(base_url=base_url, auth=auth, retry=None, timeout=timeout,
                         seconds_between_requests=None, seconds_between_writes=None,
                         user_agent="kernelevo-bot")


def token_exchange(base_url: str) -> Callable[[str, str, dict[str, Any]], dict[str, Any]]:
    """The ``post`` function :class:`InstallationTokens` needs, using PyGithub's requester."""
    requester = _client(base_url, None).requester

    def post(path: str, app_jwt: str, body: dict[str, Any]) -> dict[str, Any]:
        _, data = requester.requestJsonAndCheck(
            "POST", path, headers={"Authorization": f"Bearer {app_jwt}"}, input=body)
        if not isinstance(data, dict):
            raise GitHubError("POST", path, 0, f"expected a JSON object, got {type(data).__name__}")
        return data

    return post


class GitHubAPI:
    """REST calls for one installation; handlers receive one of these as ``gh``."""

    def __init__(self, base_url: str, installation_id: int, tokens: InstallationTokens, *,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 max_wait_s: float = 10.0, max_attempts: int = 4, backoff_s: float = 0.5) -> None:
        self.base_url, self.installation_id, self._tokens = base_url.rstrip("/"), installation_id, tokens
        self._clock, self._sleep = clock, sleep
        self._max_wait_s, self._max_attempts, self._backoff_s = max_wait_s, max_attempts, backoff_s
        self._client: tuple[str, github.Github] | None = None

    def _requester(self, repo: str) -> Any:
        token = self._tokens.get(self.installation_id, repo, WRITE)
        if self._client is None or self._client[0] != token:
            self._client = (token, _client(self.base_url, token))
        return self._client[1].requester

    def call(self, verb: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        """One REST call with the retry rules above; returns the decoded JSON body. Every call is on one
        repository (``/repos/{owner}/{repo}/...``) and uses a token for that repository only."""
        match = REPO_PATH.match(path)
        if match is None:
            raise ValueError(f"{verb} {path}: the bot only calls repository endpoints (/repos/owner/name/...)")
        repo = match.group(1)
        refreshed = False
        attempt = 0
        while True:
            try:
                _, data = self._requester(repo).requestJsonAndCheck(verb, path, parameters=params, input=body)
                return data
            except GithubException as exc:
                status, headers = exc.status, dict(exc.headers or {})
                message = exc.data.get("message", "") if isinstance(exc.data, dict) else str(exc.data)
            except requests.RequestException as exc:
                status, headers, message = 0, {}, f"{type(exc).__name__}: {exc}"
            if status == 401 and not refreshed:
                self._tokens.forget(self.installation_id)
                refreshed = True
                continue
            action = ratelimit.decide(status, headers, message, attempt, self._clock(), max_wait_s=self._max_wait_s,
                                      max_attempts=self._max_attempts, backoff_s=self._backoff_s)
            if action.kind == "retry":
                self._sleep(action.wait_s)
                attempt += 1
                continue
            if action.kind == "defer":
                raise ratelimit.Deferred(action.wait_s, f"{verb} {path}: {action.reason}")
            raise GitHubError(verb, path, status, message or action.reason)

    def _object(self, verb: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """:meth:`call` for endpoints that answer one JSON object (a list or a scalar there is GitHub's error)."""
        data = self.call(verb, path, **kwargs)
        if not isinstance(data, dict):
            raise GitHubError(verb, path, 0, f"expected a JSON object, got {type(data).__name__}")
        return data

    def _maybe(self, verb: str, path: str, **kwargs: Any) -> Any:
        try:
            return self.call(verb, path, **kwargs)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise

    # -- repos, contents, permissions -------------------------------------------------------------
    def get_repo(self, repo: str) -> dict[str, Any]:
        """The repository (default branch, owner...)."""
        return self._object("GET", f"/repos/{repo}")

    def read_file(self, repo: str, path: str, ref: str) -> str | None:
        """A file's text at ``ref``, or None if it does not exist."""
        data = self._maybe("GET", f"/repos/{repo}/contents/{quote(path)}", params={"ref": ref})
        if not data or isinstance(data, list) or data.get("type") != "file":
            return None
        return base64.b64decode(data.get("content") or "").decode("utf-8", errors="replace")

    def permission(self, repo: str, username: str) -> str:
        """The user's role on the repo (admin/maintain/write/triage/read) or "none"."""
        data = self._maybe("GET", f"/repos/{repo}/collaborators/{quote(username, safe='')}/permission")
        if not data:
            return "none"
        return str(data.get("role_name") or data.get("permission") or "none")

    # -- pulls and comments -----------------------------------------------------------------------
    def get_pull(self, repo: str, number: int) -> dict[str, Any]:
        """One pull request."""
        return self._object("GET", f"/repos/{repo}/pulls/{number}")

    def list_pulls(self, repo: str, *, state: str = "open", head: str | None = None) -> list[dict[str, Any]]:
        """Pull requests (all pages), optionally only those from ``owner:branch``."""
        params = {"state": state, "per_page": 100}
        if head:
            params["head"] = head
        return self._pages(f"/repos/{repo}/pulls", params)

    def create_pull(self, repo: str, *, title: str, head: str, base: str, body: str) -> dict[str, Any]:
        """Open a pull request."""
        return self._object("POST", f"/repos/{repo}/pulls",
                         body={"title": title, "head": head, "base": base, "body": body,
                               "maintainer_can_modify": True})

    def edit_pull(self, repo: str, number: int, **fields: Any) -> dict[str, Any]:
        """Change a pull request's title/body/state."""
        return self._object("PATCH", f"/repos/{repo}/pulls/{number}", body=fields)

    def list_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """All comments of an issue or PR."""
        return self._pages(f"/repos/{repo}/issues/{number}/comments", {"per_page": 100})

    def create_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        """Post a comment on an issue or PR."""
        return self._object("POST", f"/repos/{repo}/issues/{number}/comments", body={"body": body})

    def edit_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        """Replace a comment's body."""
        return self._object("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", body={"body": body})

    def react(self, repo: str, comment_id: int, content: str) -> dict[str, Any]:
        """Add a reaction (``+1``, ``eyes``, ``confused``...) to a comment."""
        return self._object("POST", f"/repos/{repo}/issues/comments/{comment_id}/reactions",
                         body={"content": content})

    # -- check runs -------------------------------------------------------------------------------
    def create_check_run(self, repo: str, **fields: Any) -> dict[str, Any]:
        """Create a check run (``name``, ``head_sha``, ``status``, ``output``, ``actions``...)."""
        return self._object("POST", f"/repos/{repo}/check-runs", body=fields)

    def update_check_run(self, repo: str, check_run_id: int, **fields: Any) -> dict[str, Any]:
        """Update a check run."""
        return self._object("PATCH", f"/repos/{repo}/check-runs/{check_run_id}", body=fields)

    # -- git data ---------------------------------------------------------------------------------
    def branch_sha(self, repo: str, branch: str) -> str | None:
        """The commit a branch points at, or None if the branch does not exist."""
        data = self._maybe("GET", f"/repos/{repo}/git/ref/heads/{quote(branch)}")
        return str(data["object"]["sha"]) if data else None

    def get_commit(self, repo: str, sha: str) -> dict[str, Any]:
        """A git commit object (its ``tree.sha`` is the base for a new tree)."""
        return self._object("GET", f"/repos/{repo}/git/commits/{sha}")

    def commit_files(self, repo: str, sha: str) -> list[dict[str, Any]]:
        """Every entry of a commit's tree, recursively (path, mode, type, git object id). Raises LookupError when
        GitHub truncates the listing (over 100,000 entries or 7 MB)."""
        tree = self.get_commit(repo, sha)["tree"]["sha"]
        data = self._object("GET", f"/repos/{repo}/git/trees/{tree}", params={"recursive": "1"})
        if data.get("truncated"):
            raise LookupError(f"{repo}@{sha[:12]}: GitHub lists the commit's files only in part (too many)")
        return list(data.get("tree") or [])

    def create_blob(self, repo: str, content: bytes) -> str:
        """Store file content; returns the blob SHA."""
        data = self._object("POST", f"/repos/{repo}/git/blobs",
                         body={"content": base64.b64encode(content).decode(), "encoding": "base64"})
        return str(data["sha"])

    def create_tree(self, repo: str, base_tree: str, files: dict[str, str]) -> str:
        """A tree = ``base_tree`` plus ``{path: blob_sha}``; returns the tree SHA."""
        entries = [{"path": p, "mode": "100644", "type": "blob", "sha": s} for p, s in sorted(files.items())]
        data = self._object("POST", f"/repos/{repo}/git/trees", body={"base_tree": base_tree, "tree": entries})
        return str(data["sha"])

    def create_commit(self, repo: str, message: str, tree: str, parents: list[str]) -> str:
        """A commit object; returns its SHA."""
        data = self._object("POST", f"/repos/{repo}/git/commits",
                            body={"message": message, "tree": tree, "parents": parents})
        return str(data["sha"])

    def set_branch(self, repo: str, branch: str, sha: str, *, exists: bool) -> None:
        """Point ``branch`` at ``sha``: create the ref, or force-update it."""
        if exists:
            self.call("PATCH", f"/repos/{repo}/git/refs/heads/{quote(branch)}", body={"sha": sha, "force": True})
        else:
            self.call("POST", f"/repos/{repo}/git/refs", body={"ref": f"refs/heads/{branch}", "sha": sha})

    def delete_branch(self, repo: str, branch: str) -> None:
        """Delete a branch (used to undo a half-finished publish)."""
        self.call("DELETE", f"/repos/{repo}/git/refs/heads/{quote(branch)}")

    def _pages(self, path: str, params: dict[str, Any], max_pages: int = MAX_PAGES) -> list[dict[str, Any]]:
        """Up to ``max_pages`` pages: a PR with thousands of comments costs a bounded number of calls."""
        out: list[dict[str, Any]] = []
        for page in range(1, max_pages + 1):
            batch = self.call("GET", path, params={**params, "page": page}) or []
            out.extend(batch)
            if len(batch) < params.get("per_page", 30):
                break
        return out
