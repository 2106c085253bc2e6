"""A stateful fake of the GitHub REST API on 127.0.0.1, for the real PyGithub client.

It serves what the bot uses (repos, contents, pulls, issue comments, reactions, collaborator
permission, git blobs/trees/commits/refs, check runs, installation access tokens) over a small git
object model, records every exchange (so a test can validate each request and response against
GitHub's OpenAPI description) and injects faults (rate limits, 5xx) on request. Response objects
start from GitHub's published webhook example payloads so that their shapes are GitHub's own.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import io
import itertools
import json
import re
import tarfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import jwt

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


class FakeGitHub:
    """State plus the HTTP server. Use as a context manager; ``base_url`` is the API root."""

    def __init__(self, app_id: int = 4242, public_key: str | None = None) -> None:
        self.app_id, self.public_key = app_id, public_key
        self.lock = threading.RLock()
        self.ids = itertools.count(1000)
        self.repos: dict[str, dict] = {}
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, str]] = {}
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
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> FakeGitHub:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

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

    def files_at(self, repo: str, ref: str) -> dict[str, str]:
        """Every file of a branch or commit, as text."""
        with self.lock:
            sha = self.refs[repo].get(ref, ref)
            tree = self.trees[self.commits[sha]["tree"]]
            return {path: self.blobs[blob].decode() for path, blob in tree.items()}

    def checkout(self, repo: str, sha: str, dest: Path) -> Path:
        """Write a commit's files under ``dest`` (the tests' workspace provider)."""
        for path, text in self.files_at(repo, sha).items():
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return dest

    def inject(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def calls(self, method: str, template_prefix: str = "") -> list[Exchange]:
        return [e for e in self.exchanges if e.method == method and e.template.startswith(template_prefix)]

    # -- object store -----------------------------------------------------------------------------
    def _put_blob(self, data: bytes) -> str:
        sha = _sha("blob", data)
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


# -- routes -----------------------------------------------------------------------------------------
ROUTES: list[tuple[str, str]] = [
    ("POST", "/app/installations/{installation_id}/access_tokens"),
    ("GET", "/repos/{owner}/{repo}"),
    ("GET", "/repos/{owner}/{repo}/contents/{path}"),
    ("GET", "/repos/{owner}/{repo}/tarball/{ref}"),
    ("GET", "/repos/{owner}/{repo}/pulls"),
    ("POST", "/repos/{owner}/{repo}/pulls"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("POST", "/repos/{owner}/{repo}/git/blobs"),
    ("POST", "/repos/{owner}/{repo}/git/trees"),
    ("POST", "/repos/{owner}/{repo}/git/commits"),
    ("GET", "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
    ("GET", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("POST", "/repos/{owner}/{repo}/git/refs"),
    ("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("DELETE", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("POST", "/repos/{owner}/{repo}/check-runs"),
    ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
]


def _compile(template: str) -> re.Pattern:
    pattern = re.escape(template)
    for name in re.findall(r"\{(\w+)\}", template):
        greedy = name in ("path", "ref")
        pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>{'.+' if greedy else '[^/]+'})")
    return re.compile(f"^{pattern}$")


_COMPILED = [(method, template, _compile(template)) for method, template in ROUTES]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _send(self, status: int, body: object, headers: dict | None = None,
              content_type: str = "application/json; charset=utf-8") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        url = urlsplit(self.path)
        path, query = unquote(url.path), {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        request = json.loads(raw) if raw else None
        if path.startswith("/_codeload/"):  # where GitHub's tarball redirect points (codeload.github.com)
            self._codeload(path)
            return
        for route_method, template, pattern in _COMPILED:  # noqa: B007 - template used after the loop
            match = pattern.match(path)
            if route_method == method and match:
                break
        else:
            self._send(404, {"message": "Not Found", "documentation_url": "fake"})
            return
        with fake.lock:
            for fault in fake.faults:
                if fault.times > 0 and fault.method == method and re.search(fault.path, path):
                    fault.times -= 1
                    self._send(fault.status, {"message": fault.message}, fault.headers)
                    return
        try:
            self._authorize(template, match.groupdict())
            with fake.lock:
                status, body, *extra = getattr(_Api, _handler_name(method, template))(
                    fake, match.groupdict(), query, request)
        except HTTPError as exc:
            status, body, extra = exc.status, {"message": exc.message, "documentation_url": "fake"}, []
        fake.exchanges.append(Exchange(method, template, path, request, status, body))
        self._send(status, body, *extra)

    def _codeload(self, path: str) -> None:
        owner, repo, sha = path.split("/")[2:5]
        try:
            files = self.fake.files_at(f"{owner}/{repo}", sha)
        except KeyError:
            self._send(404, {"message": "Not Found"})
            return
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, text in sorted(files.items()):
                data = text.encode()
                info = tarfile.TarInfo(f"{owner}-{repo}-{sha[:7]}/{name}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        self._send(200, buffer.getvalue(), content_type="application/x-gzip")

    def _authorize(self, template: str, params: dict) -> None:
        header = self.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        fake = self.fake
        if template.startswith("/app/"):
            if scheme.lower() != "bearer" or fake.public_key is None:
                raise HTTPError(401, "A JSON web token could not be decoded")
            try:
                claims = jwt.decode(credential, fake.public_key, algorithms=["RS256"])
            except jwt.PyJWTError as exc:
                raise HTTPError(401, f"bad JWT: {exc}") from exc
            if str(claims.get("iss")) != str(fake.app_id):
                raise HTTPError(401, "JWT issuer is not this App")
            return
        entry = fake.tokens.get(credential)
        if scheme.lower() not in ("token", "bearer") or entry is None or entry[1] < time.time():
            raise HTTPError(401, "Bad credentials")


def _handler_name(method: str, template: str) -> str:
    return method.lower() + re.sub(r"\W+", "_", re.sub(r"\{\w+\}", "x", template)).rstrip("_")


class _Api:
    """One static method per route: (fake, path params, query, json body) -> (status, json)."""

    @staticmethod
    def post_app_installations_x_access_tokens(fake, p, q, body):
        token = "ghs_" + hashlib.sha1(str(next(fake.ids)).encode()).hexdigest()
        expires = time.time() + fake.token_ttl_s
        fake.tokens[token] = (int(p["installation_id"]), expires)
        fake.token_requests.append(int(p["installation_id"]))
        return 201, {"token": token, "expires_at": _now_iso(expires),
                     "permissions": (body or {}).get("permissions", {}), "repository_selection": "all"}

    @staticmethod
    def get_repos_x_x(fake, p, q, body):
        full = f"{p['owner']}/{p['repo']}"
        if full not in fake.repos:
            raise HTTPError(404, "Not Found")
        return 200, {**fake._repo_obj(full), "has_discussions": False, "network_count": 0,
                     "subscribers_count": 0}

    @staticmethod
    def get_repos_x_x_contents_x(fake, p, q, body):
        full = f"{p['owner']}/{p['repo']}"
        ref = q.get("ref") or fake.repos[full]["default_branch"]
        sha = fake.refs[full].get(ref, ref)
        if sha not in fake.commits or p["path"] not in fake.trees[fake.commits[sha]["tree"]]:
            raise HTTPError(404, "Not Found")
        blob = fake.trees[fake.commits[sha]["tree"]][p["path"]]
        api = f"https://api.github.com/repos/{full}"
        links = {"self": f"{api}/contents/{p['path']}", "git": f"{api}/git/blobs/{blob}",
                 "html": f"https://github.com/{full}/blob/{ref}/{p['path']}"}
        return 200, {"type": "file", "encoding": "base64", "size": len(fake.blobs[blob]),
                     "name": p["path"].rsplit("/", 1)[-1], "path": p["path"],
                     "content": base64.b64encode(fake.blobs[blob]).decode(), "sha": blob,
                     "url": links["self"], "git_url": links["git"], "html_url": links["html"],
                     "download_url": None, "_links": links}

    @staticmethod
    def get_repos_x_x_tarball_x(fake, p, q, body):
        full = f"{p['owner']}/{p['repo']}"
        sha = fake.refs[full].get(p["ref"], p["ref"])
        if sha not in fake.commits:
            raise HTTPError(404, "Not Found")
        return 302, None, {"Location": f"{fake.base_url}/_codeload/{full}/{sha}"}

    @staticmethod
    def get_repos_x_x_pulls(fake, p, q, body):
        full = f"{p['owner']}/{p['repo']}"
        state, head, base = q.get("state", "open"), q.get("head"), q.get("base")
        pulls = [pr for pr in fake.pulls[full].values()
                 if (state == "all" or pr["state"] == state) and (not head or pr["head"]["label"] == head)
                 and (not base or pr["base"]["ref"] == base)]
        per_page, page = int(q.get("per_page", 30)), int(q.get("page", 1))
        return 200, pulls[(page - 1) * per_page: page * per_page]

    @staticmethod
    def post_repos_x_x_pulls(fake, p, q, body):
        full = f"{p['owner']}/{p['repo']}"
        head = body["head"].split(":")[-1]
        if body["base"] not in fake.refs[full]:
            raise HTTPError(422, f"base branch {body['base']} does not exist")
        return 201, fake._new_pull(full, full, head, body["base"], body["title"], body.get("body") or "",
                                   "kernelevo[bot]")

    @staticmethod
    def get_repos_x_x_pulls_x(fake, p, q, body):
        pull = fake.pulls[f"{p['owner']}/{p['repo']}"].get(int(p["pull_number"]))
        if pull is None:
            raise HTTPError(404, "Not Found")
        return 200, pull

    @staticmethod
    def patch_repos_x_x_pulls_x(fake, p, q, body):
        pull = fake.pulls[f"{p['owner']}/{p['repo']}"][int(p["pull_number"])]
        for key in ("title", "body", "state"):
            if key in body:
                pull[key] = body[key]
        pull["updated_at"] = _now_iso()
        return 200, pull

    @staticmethod
    def get_repos_x_x_issues_x_comments(fake, p, q, body):
        found = [fake._public(c) for c in fake.comments_on(f"{p['owner']}/{p['repo']}", int(p["issue_number"]))]
        per_page, page = int(q.get("per_page", 30)), int(q.get("page", 1))
        return 200, found[(page - 1) * per_page: page * per_page]

    @staticmethod
    def post_repos_x_x_issues_x_comments(fake, p, q, body):
        comment = fake._new_comment(f"{p['owner']}/{p['repo']}", int(p["issue_number"]), body["body"],
                                    fake.user("kernelevo[bot]", "Bot"))
        return 201, fake._public(comment)

    @staticmethod
    def patch_repos_x_x_issues_comments_x(fake, p, q, body):
        comment = fake.comments.get(int(p["comment_id"]))
        if comment is None:
            raise HTTPError(404, "Not Found")
        comment.update(body=body["body"], updated_at=_now_iso())
        return 200, fake._public(comment)

    @staticmethod
    def post_repos_x_x_issues_comments_x_reactions(fake, p, q, body):
        cid = int(p["comment_id"])
        if cid not in fake.comments:
            raise HTTPError(404, "Not Found")
        reaction = {"id": next(fake.ids), "node_id": "REA", "user": fake.user("kernelevo[bot]", "Bot"),
                    "content": body["content"], "created_at": _now_iso()}
        fake.reactions.setdefault(cid, []).append(reaction)
        return 201, reaction

    @staticmethod
    def get_repos_x_x_collaborators_x_permission(fake, p, q, body):
        full = f"{p['owner']}/{p['repo']}"
        role = fake.permissions.get((full, p["username"]))
        if role is None:
            raise HTTPError(404, f"{p['username']} is not a user")
        user = fake.user(p["username"])
        user.update(role_name=role, permissions={
            "admin": role == "admin", "maintain": role in ("admin", "maintain"),
            "push": role in ("admin", "maintain", "write"), "triage": role != "read" and role != "none",
            "pull": role != "none"})
        return 200, {"permission": LEGACY[role], "role_name": role, "user": user}

    @staticmethod
    def post_repos_x_x_git_blobs(fake, p, q, body):
        data = base64.b64decode(body["content"]) if body.get("encoding") == "base64" else body["content"].encode()
        sha = fake._put_blob(data)
        return 201, {"url": f"https://api.github.com/repos/{p['owner']}/{p['repo']}/git/blobs/{sha}", "sha": sha}

    @staticmethod
    def post_repos_x_x_git_trees(fake, p, q, body):
        base = body.get("base_tree")
        if base and base not in fake.trees:
            raise HTTPError(422, "base_tree is not a tree")
        entries = dict(fake.trees[base]) if base else {}
        for entry in body["tree"]:
            if entry.get("sha") not in fake.blobs:
                raise HTTPError(422, f"tree.sha {entry.get('sha')} is not a blob")
            entries[entry["path"]] = entry["sha"]
        sha = fake._put_tree(entries)
        url = f"https://api.github.com/repos/{p['owner']}/{p['repo']}/git"
        return 201, {"sha": sha, "url": f"{url}/trees/{sha}", "truncated": False,
                     "tree": [{"path": path, "mode": "100644", "type": "blob", "sha": blob,
                               "size": len(fake.blobs[blob]), "url": f"{url}/blobs/{blob}"}
                              for path, blob in sorted(entries.items())]}

    @staticmethod
    def post_repos_x_x_git_commits(fake, p, q, body):
        if body["tree"] not in fake.trees or any(x not in fake.commits for x in body.get("parents", [])):
            raise HTTPError(422, "tree or parent does not exist")
        sha = fake._put_commit(body["tree"], body.get("parents", []), body["message"])
        return 201, fake._commit_obj(f"{p['owner']}/{p['repo']}", sha)

    @staticmethod
    def get_repos_x_x_git_commits_x(fake, p, q, body):
        return 200, fake._commit_obj(f"{p['owner']}/{p['repo']}", p["commit_sha"])

    @staticmethod
    def get_repos_x_x_git_ref_x(fake, p, q, body):
        full, ref = f"{p['owner']}/{p['repo']}", p["ref"]
        branch = ref.removeprefix("heads/")
        if not ref.startswith("heads/") or branch not in fake.refs[full]:
            raise HTTPError(404, "Not Found")
        return 200, fake._ref_obj(full, branch)

    @staticmethod
    def post_repos_x_x_git_refs(fake, p, q, body):
        full, branch = f"{p['owner']}/{p['repo']}", body["ref"].removeprefix("refs/heads/")
        if branch in fake.refs[full]:
            raise HTTPError(422, "Reference already exists")
        if body["sha"] not in fake.commits:
            raise HTTPError(422, "Object does not exist")
        fake.refs[full][branch] = body["sha"]
        return 201, fake._ref_obj(full, branch)

    @staticmethod
    def patch_repos_x_x_git_refs_x(fake, p, q, body):
        full, branch = f"{p['owner']}/{p['repo']}", p["ref"].removeprefix("heads/")
        if branch not in fake.refs[full]:
            raise HTTPError(422, "Reference does not exist")
        old = fake.refs[full][branch]
        if not body.get("force") and old not in _ancestors(fake, body["sha"]):
            raise HTTPError(422, "Update is not a fast forward")
        fake.move_branch(full, branch, body["sha"])
        return 200, fake._ref_obj(full, branch)

    @staticmethod
    def delete_repos_x_x_git_refs_x(fake, p, q, body):
        full, branch = f"{p['owner']}/{p['repo']}", p["ref"].removeprefix("heads/")
        if branch not in fake.refs[full]:
            raise HTTPError(422, "Reference does not exist")
        del fake.refs[full][branch]
        return 204, None

    @staticmethod
    def post_repos_x_x_check_runs(fake, p, q, body):
        run = copy.deepcopy(fake._tpl_check)
        cid = next(fake.ids)
        run.update(id=cid, name=body["name"], head_sha=body["head_sha"], status=body.get("status", "queued"),
                   conclusion=body.get("conclusion"), external_id=body.get("external_id", ""),
                   details_url=body.get("details_url"), started_at=body.get("started_at") or _now_iso(),
                   completed_at=body.get("completed_at"), pull_requests=[],
                   url=f"https://api.github.com/repos/{p['owner']}/{p['repo']}/check-runs/{cid}",
                   html_url=f"https://github.com/{p['owner']}/{p['repo']}/runs/{cid}")
        _apply_output(run, body)
        run["_actions"] = body.get("actions", [])
        run["_repo"] = f"{p['owner']}/{p['repo']}"
        fake.check_runs[cid] = run
        return 201, fake._public(run)

    @staticmethod
    def patch_repos_x_x_check_runs_x(fake, p, q, body):
        run = fake.check_runs.get(int(p["check_run_id"]))
        if run is None:
            raise HTTPError(404, "Not Found")
        for key in ("status", "conclusion", "completed_at", "details_url", "name"):
            if key in body:
                run[key] = body[key]
        _apply_output(run, body)
        if "actions" in body:
            run["_actions"] = body["actions"]
        return 200, fake._public(run)


def _apply_output(run: dict, body: dict) -> None:
    out = body.get("output")
    if out:
        run["output"] = {**run["output"], "title": out.get("title"), "summary": out.get("summary"),
                         "text": out.get("text")}
        run["_output_history"] = [*run.get("_output_history", []), out]


def _ancestors(fake: FakeGitHub, sha: str) -> set[str]:
    seen, stack = set(), [sha]
    while stack:
        current = stack.pop()
        if current in seen or current not in fake.commits:
            continue
        seen.add(current)
        stack.extend(fake.commits[current]["parents"])
    return seen
