"""Follow-up PRs through the Git Data API, all-or-nothing, updated in place.

The branch ``kernelevo/<op-slug>/<base-slug>`` identifies (op, base): a newer result force-updates
the same branch and edits the same PR instead of opening another. Objects (blobs, tree, commit) are
created first and the ref is moved last; if anything after the ref move fails, the ref is put back
(deleted if new, restored if it existed), so a failure never leaves a half-published result.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from bot.github_api import GitHubAPI

BRANCH_PREFIX = "kernelevo/"
WEB_ROOT = "https://github.com"
_REPO = re.compile(r"^[A-Za-z0-9-]{1,39}/[A-Za-z0-9_.-]{1,100}$")
_BRANCH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


def slug(text: str, limit: int = 60) -> str:
    """A branch-name-safe slug (lowercase letters, digits, dashes)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-") or "x"


def branch_name(op_name: str, base_branch: str) -> str:
    """The follow-up branch for an op against a base branch. Each part is a slug of the exact name, and a part whose
    slug does not spell the name back (cut at 60 characters, or characters replaced) gets a short hash of the exact
    name: ``feature/x`` and ``feature-x`` never share a follow-up branch, nor do two kernel folders that differ only
    past their 60th character (an op of one pull request would push onto another op's open follow-up)."""
    return f"{BRANCH_PREFIX}{_exact_slug(op_name, kernel_folder=True)}/{_exact_slug(base_branch)}"


def _exact_slug(name: str, *, kernel_folder: bool = False) -> str:
    """``slug(name)``, with a hash of ``name`` where the slug loses it. A kernel folder's name is ``[a-z0-9_]``,
    which its slug spells back with dashes for underscores (no hash: the branches of existing pull requests keep
    their names)."""
    cut = slug(name)
    spelled = name.replace("_", "-") if kernel_folder and re.fullmatch(r"[a-z0-9_]+", name) else name
    if cut == spelled:
        return cut
    # a pull request's author picks the op's name, so its hash is long enough that no name can be searched out
    # to match another op's (64 bits); a base branch is the maintainers' (32 bits, as its branches always had)
    digits = 16 if kernel_folder else 8
    return cut[:51].strip("-") + "-" + hashlib.sha256(name.encode()).hexdigest()[:digits]


def blob_url(repo: str, branch: str, path: str, *, raw: bool = False) -> str:
    """The github.com address of ``path`` on ``branch`` (``raw``: the file itself, for an image in a PR body,
    where relative links do not resolve). Every part is validated, so the URL cannot leave the repository or
    break out of a Markdown link: ``repo`` is ``owner/name``, the branch and path are plain segments."""
    for value, pattern, what in ((repo, _REPO, "repository"), (branch, _BRANCH, "branch"), (path, _PATH, "path")):
        if not pattern.match(value) or ".." in value.split("/"):
            raise ValueError(f"{value!r} is not a {what} the bot links to")
    url = f"{WEB_ROOT}/{repo}/blob/{quote(branch)}/{quote(path)}"
    return url + "?raw=true" if raw else url


def count_open_kernel_prs(pulls: list[dict[str, Any]], repo: str) -> int:
    """Open PRs the bot made in ``repo`` (head branch under ``kernelevo/`` in the same repo)."""
    return sum(1 for p in pulls if p.get("state") == "open" and p["head"]["ref"].startswith(BRANCH_PREFIX)
               and (p["head"].get("repo") or {}).get("full_name") == repo)


@dataclass(frozen=True)
class Published:
    """Outcome of one publish: ``action`` is "created", "updated" or "limited" (PR limit reached)."""

    action: str
    branch: str
    number: int | None = None
    url: str | None = None


def follow_up_marker(body: str) -> str | None:
    """The op a follow-up pull request's body names (its ``<!-- kernelevo:follow-up op=... -->`` line), if any."""
    found = _MARKER.search(body)
    return found.group(1) if found else None


_MARKER = re.compile(r"<!-- kernelevo:follow-up op=(.*?) -->")


def publish(gh: GitHubAPI, repo: str, *, base_branch: str, branch: str, files: dict[str, bytes],
            title: str, body: str, message: str, max_open_prs: int, parent: str | None = None) -> Published:
    """Commit ``files`` on top of ``base_branch`` into ``branch`` and open or update its PR. ``parent`` pins the
    commit of ``base_branch`` the files were decided against (its kernel folders); None: the branch's tip."""
    owner = repo.split("/")[0]
    existing_pr = gh.list_pulls(repo, state="open", head=f"{owner}:{branch}")
    if existing_pr and follow_up_marker(existing_pr[0].get("body") or "") not in (None, follow_up_marker(body)):
        raise LookupError(f"{repo}: the open pull request #{existing_pr[0]['number']} on {branch} follows up "
                          "another op; not touching it (two ops map to one follow-up branch)")
    if not existing_pr:
        if count_open_kernel_prs(gh.list_pulls(repo, state="open"), repo) >= max_open_prs:
            return Published("limited", branch)
    parent = parent or gh.branch_sha(repo, base_branch)
    if parent is None:
        raise LookupError(f"{repo}: base branch {base_branch!r} does not exist (deleted or renamed?)")
    base_tree = gh.get_commit(repo, parent)["tree"]["sha"]
    blobs = {path: gh.create_blob(repo, data) for path, data in sorted(files.items())}
    tree = gh.create_tree(repo, base_tree, blobs)
    commit = gh.create_commit(repo, message, tree, [parent])
    previous = gh.branch_sha(repo, branch)
    gh.set_branch(repo, branch, commit, exists=previous is not None)
    try:
        if existing_pr:
            pull = gh.edit_pull(repo, existing_pr[0]["number"], title=title, body=body)
            action = "updated"
        else:
            pull = gh.create_pull(repo, title=title, head=branch, base=base_branch, body=body)
            action = "created"
    except Exception:
        _restore(gh, repo, branch, previous)
        raise
    return Published(action, branch, pull["number"], pull.get("html_url"))


def _restore(gh: GitHubAPI, repo: str, branch: str, previous: str | None) -> None:
    if previous is None:
        gh.delete_branch(repo, branch)
    else:
        gh.set_branch(repo, branch, previous, exists=True)
