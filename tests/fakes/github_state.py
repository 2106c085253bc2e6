"""The state behind the fake GitHub: a small git object store, repos, PRs, comments, check runs.

Test-side helpers (add_repo, push, fork, open_pull, set_permission, add_comment, inject) change it
directly; the HTTP routes in :mod:`github_routes` read and change it for the bot. Response objects
start from GitHub's published webhook example payloads so that their shapes are GitHub's own.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "webhooks"


def _load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def _now_iso(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t if t is not None else time.time()))


def _sha(kind: str, payload: bytes) -> str:
    return hashlib.sha1(kind.encode() + b"\0" + payload).hexdigest()


LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read",
          "none": "none"}


@dataclass
class Fault:
    """Answer ``status`` to the next ``times`` requests matching method and path regex."""

    method: str
    path: str
    status: int
    headers: dict = field(default_factory=dict)
    message: str = "injected fault"
    times: int = 1


@dataclass
class Exchange:
    """One recorded request/response pair."""

    method: str
    template: str
    path: str
    request: object
    status: int
    response: object


class HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class GitHubState:
    """Everything the fake GitHub knows; :class:`github_server.FakeGitHub` serves it over HTTP."""

    def __init__(self, app_id: int = 4242, public_key: str | None = None) -> None:
        self.app_id, self.public_key = app_id, public_key
        self.lock = threading.RLock()
        self.ids = itertools.count(1000)
        self.repos: dict[str, dict] = {}
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, str]] = {}
        # what GitHub's archive of a commit holds other than the commit's files: a commit's .gitattributes
        # (export-subst, export-ignore) makes git archive rewrite or leave out files; None leaves the path out
        self.archive_rewrites: dict[str, dict[str, bytes | None]] = {}
        self.commits: dict[str, dict] = {}
        self.refs: dict[str, dict[str, str]] = {}  # repo -> {branch: sha}
        self.pulls: dict[str, dict[int, dict]] = {}
        self.comments: dict[int, dict] = {}  # id -> comment (with "_repo", "_issue")
        self.reactions: dict[int, list[dict]] = {}
        self.check_runs: dict[int, dict] = {}
        self.permissions: dict[tuple[str, str], str] = {}
        self.tokens: dict[str, tuple[int, float]] = {}
        self.token_requests: list[int] = []
        self.faults: list[Fault] = []
        self.exchanges: list[Exchange] = []
        self.token_ttl_s = 3600.0
        self._tpl_pr = _load("pull_request_opened.json")
        self._tpl_comment = _load("issue_comment_created.with-installation.json")["comment"]
        self._tpl_check = _load("check_run_created.json")["check_run"]

    # -- test-side helpers ---------------------------------------------------------------------------
    def user(self, login: str, kind: str = "User") -> dict:
        user = copy.deepcopy(self._tpl_pr["sender"])
        uid = int(hashlib.sha1(login.encode()).hexdigest()[:6], 16)
        user.update(login=login, id=uid, type=kind, url=f"https://api.github.com/users/{login}",
                    html_url=f"https://github.com/{login}")
        return user

    def add_repo(self, full_name: str, files: dict[str, str], default_branch: str = "main") -> str:
        """Create a repository whose default branch holds ``files``; returns the commit SHA."""
        with self.lock:
            repo = copy.deepcopy(self._tpl_pr["repository"])
            owner, name = full_name.split("/")
            repo.update(id=next(self.ids), name=name, full_name=full_name, default_branch=default_branch,
                        owner=self.user(owner), url=f"https://api.github.com/repos/{full_name}",
                        html_url=f"https://github.com/{full_name}", fork=False)
            self.repos[full_name] = repo
            self.refs[full_name], self.pulls[full_name] = {}, {}
            return self.push(full_name, default_branch, files, message="initial")

    def commit_files(self, parent: str | None, files: dict[str, str | None], message: str) -> str:
        """Commit ``files`` on top of ``parent`` (None deletes a path); returns the new SHA."""
        with self.lock:
            base = dict(self.trees[self.commits[parent]["tree"]]) if parent else {}
            for path, text in files.items():
                if text is None:
                    base.pop(path, None)
                else:
                    base[path] = self._put_blob(text.encode())
            tree = self._put_tree(base)
            return self._put_commit(tree, [parent] if parent else [], message)

    def push(self, repo: str, branch: str, files: dict[str, str | None], message: str = "push") -> str:
        """Commit onto ``branch`` (created from the default branch if new); returns the SHA."""
        with self.lock:
            refs = self.refs[repo]
            parent = refs.get(branch) or refs.get(self.repos[repo]["default_branch"])
            sha = self.commit_files(parent, files, message)
            self.move_branch(repo, branch, sha)
            return sha

    def move_branch(self, repo: str, branch: str, sha: str) -> None:
        """Point a branch at ``sha``, moving the head of any PR from it (as a push does)."""
        with self.lock:
            self.refs[repo][branch] = sha
            for pull in self.pulls.get(self._base_of(repo), {}).values():
                if pull["head"]["repo"]["full_name"] == repo and pull["head"]["ref"] == branch:
                    pull["head"]["sha"] = sha

    def _base_of(self, repo: str) -> str:
        return self.repos[repo].get("_fork_of", repo)

    def fork(self, base: str, fork_name: str) -> None:
        """Make ``fork_name`` a fork of ``base`` sharing its objects and branches."""
        with self.lock:
            repo = copy.deepcopy(self.repos[base])
            owner, name = fork_name.split("/")
            repo.update(id=next(self.ids), name=name, full_name=fork_name, fork=True, owner=self.user(owner),
                        _fork_of=base, url=f"https://api.github.com/repos/{fork_name}")
            self.repos[fork_name] = repo
            self.refs[fork_name] = dict(self.refs[base])

    def open_pull(self, repo: str, head_branch: str, base_branch: str, author: str,
                  head_repo: str | None = None, title: str = "Add an op") -> dict:
        """Open a PR from ``head_repo:head_branch`` (default: same repo) into ``base_branch``."""
        with self.lock:
            return self._new_pull(repo, head_repo or repo, head_branch, base_branch, title, "", author)

    def set_permission(self, repo: str, login: str, permission: str) -> None:
        self.permissions[(repo, login)] = permission

    def add_comment(self, repo: str, number: int, login: str, body: str, kind: str = "User") -> dict:
        with self.lock:
            return self._new_comment(repo, number, body, self.user(login, kind))

    def comments_on(self, repo: str, number: int) -> list[dict]:
        return [c for c in self.comments.values() if c["_repo"] == repo and c["_issue"] == number]

    def blobs_at(self, repo: str, ref: str) -> dict[str, bytes]:
        """Every file of a branch or commit, as the bytes committed (PNG plots included)."""
        with self.lock:
            sha = self.refs[repo].get(ref, ref)
            tree = self.trees[self.commits[sha]["tree"]]
            return {path: self.blobs[blob] for path, blob in tree.items()}

    def files_at(self, repo: str, ref: str) -> dict[str, str]:
        """Every file of a branch or commit, as text (a binary file's bytes that are not UTF-8 show as U+FFFD:
        read those with :meth:`blobs_at`)."""
        return {path: data.decode("utf-8", errors="replace") for path, data in self.blobs_at(repo, ref).items()}

    def archive_at(self, repo: str, ref: str) -> dict[str, bytes]:
        """The files GitHub's archive (tarball) of a branch or commit holds: the commit's, as
        :attr:`archive_rewrites` has git archive change them."""
        files = self.blobs_at(repo, ref)
        with self.lock:
            rewrites = self.archive_rewrites.get(self.refs[repo].get(ref, ref), {})
        for path, data in rewrites.items():
            if data is None:
                files.pop(path, None)
            else:
                files[path] = data
        return files

    def checkout(self, repo: str, sha: str, dest: Path) -> Path:
        """Write a commit's files under ``dest`` as GitHub's archive of it holds them (the tests' workspace
        provider, standing in for downloading and unpacking the tarball)."""
        for path, data in self.archive_at(repo, sha).items():
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return dest

    def inject(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def calls(self, method: str, template_prefix: str = "") -> list[Exchange]:
        return [e for e in self.exchanges if e.method == method and e.template.startswith(template_prefix)]

    # -- object store -----------------------------------------------------------------------------
    def _put_blob(self, data: bytes) -> str:
        sha = _sha(f"blob {len(data)}", data)  # git's object id of a file
        self.blobs[sha] = data
        return sha

    def _put_tree(self, entries: dict[str, str]) -> str:
        sha = _sha("tree", json.dumps(sorted(entries.items())).encode())
        self.trees[sha] = dict(entries)
        return sha

    def _put_commit(self, tree: str, parents: list[str], message: str) -> str:
        sha = _sha("commit", json.dumps([tree, parents, message, next(self.ids)]).encode())
        self.commits[sha] = {"tree": tree, "parents": parents, "message": message, "date": _now_iso()}
        return sha

    # -- object renderers ---------------------------------------------------------------------------
    def _repo_obj(self, full_name: str) -> dict:
        repo = {k: v for k, v in self.repos[full_name].items() if not k.startswith("_")}
        return repo

    def _new_pull(self, repo: str, head_repo: str, head_ref: str, base_ref: str, title: str, body: str,
                  author: str) -> dict:
        if head_ref not in self.refs[head_repo]:
            raise HTTPError(422, f"head branch {head_ref} does not exist")
        for other in self.pulls[repo].values():
            if (other["state"] == "open" and other["head"]["ref"] == head_ref
                    and other["head"]["repo"]["full_name"] == head_repo and other["base"]["ref"] == base_ref):
                raise HTTPError(422, f"A pull request already exists for {head_repo}:{head_ref}.")
        number = max(self.pulls[repo], default=0) + 1
        pull = copy.deepcopy(self._tpl_pr["pull_request"])
        owner = head_repo.split("/")[0]
        pull.update(
            id=next(self.ids), number=number, title=title, body=body, state="open", merged=False,
            user=self.user(author), url=f"https://api.github.com/repos/{repo}/pulls/{number}",
            html_url=f"https://github.com/{repo}/pull/{number}",
            issue_url=f"https://api.github.com/repos/{repo}/issues/{number}",
            comments_url=f"https://api.github.com/repos/{repo}/issues/{number}/comments",
            created_at=_now_iso(), updated_at=_now_iso(), merged_at=None, closed_at=None,
        )
        pull["head"] = {**pull["head"], "ref": head_ref, "label": f"{owner}:{head_ref}",
                        "sha": self.refs[head_repo][head_ref], "repo": self._repo_obj(head_repo),
                        "user": self.user(owner)}
        pull["base"] = {**pull["base"], "ref": base_ref, "label": f"{repo.split('/')[0]}:{base_ref}",
                        "sha": self.refs[repo][base_ref], "repo": self._repo_obj(repo)}
        self.pulls[repo][number] = pull
        return pull

    def _new_comment(self, repo: str, number: int, body: str, user: dict) -> dict:
        cid = next(self.ids)
        comment = copy.deepcopy(self._tpl_comment)
        comment.update(id=cid, body=body, user=user, created_at=_now_iso(), updated_at=_now_iso(),
                       url=f"https://api.github.com/repos/{repo}/issues/comments/{cid}",
                       html_url=f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
                       issue_url=f"https://api.github.com/repos/{repo}/issues/{number}",
                       _repo=repo, _issue=number)
        self.comments[cid] = comment
        return comment

    @staticmethod
    def _public(obj: dict) -> dict:
        return {k: v for k, v in obj.items() if not k.startswith("_")}

    def _commit_obj(self, repo: str, sha: str) -> dict:
        commit = self.commits.get(sha)
        if commit is None:
            raise HTTPError(404, "Not Found")
        person = {"name": "kernelevo", "email": "bot@example.com", "date": commit["date"]}
        api = f"https://api.github.com/repos/{repo}/git"
        return {"sha": sha, "node_id": f"C_{sha[:10]}", "url": f"{api}/commits/{sha}",
                "html_url": f"https://github.com/{repo}/commit/{sha}", "author": person, "committer": person,
                "message": commit["message"], "tree": {"sha": commit["tree"], "url": f"{api}/trees/{commit['tree']}"},
                "parents": [{"sha": p, "url": f"{api}/commits/{p}", "html_url": f"https://github.com/{repo}/commit/{p}"}
                            for p in commit["parents"]],
                "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None,
                                 "verified_at": None}}

    def _ref_obj(self, repo: str, branch: str) -> dict:
        sha = self.refs[repo][branch]
        api = f"https://api.github.com/repos/{repo}/git"
        return {"ref": f"refs/heads/{branch}", "node_id": f"REF_{branch}", "url": f"{api}/refs/heads/{branch}",
                "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"}}


