"""The fake GitHub's REST routes: one static method per (method, path template) in ``ROUTES``.

Each takes (state, path params, query, JSON body) and returns (status, JSON body[, headers]); errors
are raised as :class:`github_state.HTTPError`.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import re
import time

from github_state import LEGACY, GitHubState, HTTPError, _now_iso

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
    ("GET", "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
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
    def get_repos_x_x_git_trees_x(fake, p, q, body):
        if p["tree_sha"] not in fake.trees:
            raise HTTPError(404, "Not Found")
        files = fake.trees[p["tree_sha"]]
        url = f"https://api.github.com/repos/{p['owner']}/{p['repo']}/git"
        folders = sorted({"/".join(path.split("/")[:i]) for path in files for i in range(1, path.count("/") + 1)})
        entries = [{"path": d, "mode": "040000", "type": "tree", "sha": hashlib.sha1(d.encode()).hexdigest(),
                    "url": f"{url}/trees/{d}"} for d in folders]
        if q.get("recursive") in (None, "", "0", "false"):  # the top level only
            entries = [e for e in entries if "/" not in e["path"]]
            files = {path: blob for path, blob in files.items() if "/" not in path}
        entries += [{"path": path, "mode": "100644", "type": "blob", "sha": blob, "size": len(fake.blobs[blob]),
                     "url": f"{url}/blobs/{blob}"} for path, blob in files.items()]
        return 200, {"sha": p["tree_sha"], "url": f"{url}/trees/{p['tree_sha']}", "truncated": False,
                     "tree": sorted(entries, key=lambda e: e["path"])}

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


def _ancestors(fake: GitHubState, sha: str) -> set[str]:
    seen, stack = set(), [sha]
    while stack:
        current = stack.pop()
        if current in seen or current not in fake.commits:
            continue
        seen.add(current)
        stack.extend(fake.commits[current]["parents"])
    return seen

