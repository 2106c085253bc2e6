"""deploy/github-app-manifest.json asks for exactly what the code needs: least-privilege permissions, routed events.

The REST operations are derived from the code, by parsing every module of ``bot/`` with ``ast``: each call of
the form ``x.call("VERB", f"/repos/...")``, ``x._maybe("VERB", ...)``, ``x._pages(f"/repos/...")`` (GET),
``x._post(f"/app/...")`` / ``requests.get(f"{base}/repos/...")`` (the verb is the method's name) or
``download(f"{base}/repos/...")`` (a GET). Parsing sees every call site, including the ones no end-to-end
flow reaches (a rollback's DELETE, a 404 branch), which recording the fake GitHub's traffic would miss; to
stay complete, every GitHub path literal in ``bot/`` must belong to one of those forms, and a recognised call
whose path is not a literal may only appear in the few helpers that forward their caller's path. Each call's
path is matched to an operation of GitHub's OpenAPI description (tests/fixtures/github/openapi-subset.json).

GitHub's OpenAPI description has no permission data (``x-github`` says only whether GitHub Apps may call an
operation), so :data:`NEEDS` keeps, per ``operationId``, the permission sets GitHub documents for it; an
operation without an entry fails the test. The events come from the routers (probed with every event and
action of GitHub's webhook catalogue) and from the ``@router.register`` decorators, which must agree.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "github-app-manifest.json"
SUBSET = ROOT / "tests" / "fixtures" / "github" / "openapi-subset.json"
BOT = ROOT / "bot"

VERBS = ("GET", "POST", "PATCH", "PUT", "DELETE")
Permissions = dict[str, str]

# Per operationId: the permission sets GitHub documents for an installation token ("Fine-grained access tokens
# for ..." on each operation's page of the REST reference, and "Permissions required for GitHub Apps"); any one
# set suffices. None: called with the App's JWT, not an installation token, so no installation permission.
# Comments and reactions are on issue numbers that are always pull requests' here (the bot acts only on PR
# comments and its own PR status comment), which is why "pull_requests" is an alternative to "issues".
NEEDS: dict[str, list[Permissions] | None] = {
    "apps/create-installation-access-token": None,
    "repos/get": [{"metadata": "read"}],
    "repos/get-collaborator-permission-level": [{"metadata": "read"}],
    "repos/get-content": [{"contents": "read"}],
    "repos/download-tarball-archive": [{"contents": "read"}],
    "git/get-ref": [{"contents": "read"}],
    "git/get-commit": [{"contents": "read"}],
    "git/get-tree": [{"contents": "read"}],
    "git/create-blob": [{"contents": "write"}],
    "git/create-tree": [{"contents": "write"}],
    "git/create-commit": [{"contents": "write"}],
    "git/create-ref": [{"contents": "write"}],
    "git/update-ref": [{"contents": "write"}],
    "git/delete-ref": [{"contents": "write"}],
    "pulls/get": [{"pull_requests": "read"}],
    "pulls/list": [{"pull_requests": "read"}],
    "pulls/create": [{"pull_requests": "write"}],
    "pulls/update": [{"pull_requests": "write"}],
    "issues/list-comments": [{"issues": "read"}, {"pull_requests": "read"}],
    "issues/create-comment": [{"issues": "write"}, {"pull_requests": "write"}],
    "issues/update-comment": [{"issues": "write"}, {"pull_requests": "write"}],
    "reactions/create-for-issue-comment": [{"issues": "write"}, {"pull_requests": "write"}],
    "checks/create": [{"checks": "write"}],
    "checks/update": [{"checks": "write"}],
}
# What a GitHub App needs to be subscribed to an event ("Webhook events and payloads": "to subscribe to this
# event, a GitHub App must have at least read-level access for the ... repository permission").
EVENT_NEEDS: dict[str, list[Permissions]] = {
    "issue_comment": [{"issues": "read"}],
    "pull_request": [{"pull_requests": "read"}],
    "check_run": [{"checks": "read"}],
}
# Sent to every GitHub App whatever it subscribes to; they cannot be listed in default_events.
ALWAYS_DELIVERED = {"installation", "installation_repositories"}
# Every GitHub App has metadata read access; GitHub adds it to any App with repository permissions.
ALWAYS_GRANTED: Permissions = {"metadata": "read"}
# Helpers that pass on their caller's path (their callers are checked instead).
FORWARDERS = {("github_api.py", "_maybe"), ("github_api.py", "_pages"), ("github_api.py", "post"),
              ("workspace.py", "download")}
LEVELS = {"read": 1, "write": 2}
MANIFEST_KEYS = {"name", "url", "hook_attributes", "redirect_url", "callback_urls", "setup_url", "description",
                 "public", "default_events", "default_permissions", "request_oauth_on_install", "setup_on_update"}


@dataclass(frozen=True)
class RestCall:
    verb: str
    sample: str  # the path with placeholder values, e.g. /repos/o/r/pulls/1
    where: str  # file:line

    def __str__(self) -> str:
        return f"{self.verb} {self.sample} ({self.where})"


def _subset() -> dict:
    return json.loads(SUBSET.read_text())


def _path_text(node: ast.expr) -> str | None:
    """A path literal with a placeholder per formatted value ("o/r" for a repository), or None if ``node`` is
    not a string literal. A leading base URL (``f"{api_url}/repos/..."``) is dropped."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = list(node.values)
    if parts and isinstance(parts[0], ast.FormattedValue) and len(parts) > 1 and \
            isinstance(parts[1], ast.Constant) and str(parts[1].value).startswith("/"):
        parts = parts[1:]
    out = []
    for part in parts:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
        elif isinstance(part, ast.FormattedValue):
            out.append("o/r" if isinstance(part.value, ast.Name) and part.value.id == "repo" else "x1")
    return "".join(out)


def _is_github_path(text: str | None) -> bool:
    return text is not None and re.match(r"^/(repos|app|installation|orgs|user|users)(/|$)", text) is not None


def _recognised(call: ast.Call) -> tuple[str, ast.expr] | None:
    """(verb, path expression) if ``call`` is one of the REST call forms of the module docstring."""
    args = call.args
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if len(args) >= 2 and isinstance(args[0], ast.Constant) and args[0].value in VERBS:
        return str(args[0].value), args[1]
    if not args:
        return None
    if name == "_pages" or name == "download":
        return "GET", args[0]
    if name.lstrip("_").upper() in VERBS and (_is_github_path(_path_text(args[0])) or
                                              (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                               and func.value.id == "requests")):
        return name.lstrip("_").upper(), args[0]
    return None


def rest_calls(directory: Path = BOT) -> list[RestCall]:
    """Every REST call the code makes; fails on a GitHub path literal it cannot attribute to a call."""
    calls, problems = [], []
    for source in sorted(directory.glob("*.py")):
        tree = ast.parse(source.read_text(), filename=str(source))
        consumed: set[int] = set()
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        pieces = {id(v) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for v in j.values}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or (found := _recognised(node)) is None:
                continue
            verb, path_node = found
            where = f"{directory.name}/{source.name}:{node.lineno}"
            text = _path_text(path_node)
            consumed.add(id(path_node))
            if _is_github_path(text):
                calls.append(RestCall(verb, str(text), where))
            elif text is None and (source.name, _innermost(functions, node)) not in FORWARDERS:
                problems.append(f"{where}: {verb} with a path that is not a literal; make it one, or add the"
                                " helper to FORWARDERS if it only passes on its caller's path")
        for node in ast.walk(tree):
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in consumed and \
                    _is_github_path(_path_text(node)) and id(node) not in pieces:
                problems.append(f"{directory.name}/{source.name}:{node.lineno}: GitHub path {_path_text(node)!r}"
                                " outside a known REST call form: teach rest_calls() the form so that its permission"
                                " is checked")
    assert not problems, "\n".join(problems)
    return calls


def _innermost(functions: list[ast.FunctionDef | ast.AsyncFunctionDef], node: ast.AST) -> str:
    """The name of the innermost function whose body contains ``node``."""
    best, best_span = "", None
    for f in functions:
        end = f.end_lineno or f.lineno
        line = getattr(node, "lineno", 0)
        if f.lineno <= line <= end and (best_span is None or end - f.lineno < best_span):
            best, best_span = f.name, end - f.lineno
    return best


def _template_regex(template: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{(ref|path)\\\}", r"(.+)", re.escape(template))  # refs and paths contain slashes
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", r"([^/]+)", pattern) + "$")


def operation_of(call: RestCall, operations: list[dict]) -> dict:
    matches = [op for op in operations if op["method"] == call.verb and _template_regex(op["path"]).match(call.sample)]
    assert len(matches) == 1, (f"{call}: matches {[m['path'] for m in matches]} in openapi-subset.json; add the"
                               " operation to OPERATIONS in tests/fixtures/github/extract_openapi.py and regenerate")
    return matches[0]


def _join(grants: list[Permissions]) -> Permissions:
    out: Permissions = {}
    for grant in grants:
        for name, level in grant.items():
            if LEVELS[level] > LEVELS.get(out.get(name, ""), 0):
                out[name] = level
    return out


def _covers(grant: Permissions, need: Permissions) -> bool:
    return all(LEVELS.get(grant.get(name, ""), 0) >= LEVELS[level] for name, level in need.items())


def least_privilege(requirements: list[list[Permissions]]) -> list[Permissions]:
    """Every minimal permission set meeting each requirement (a list of alternatives), smallest first."""
    candidates = [_join(list(choice)) for choice in itertools.product(*requirements)]
    unique = [dict(c) for c in {tuple(sorted(c.items())) for c in candidates}]
    return sorted((c for c in unique if not any(d != c and _covers(c, d) for d in unique)), key=len)


def routed_events() -> frozenset[str]:
    """Event names the App's routers select handlers for, probed with GitHub's whole webhook catalogue."""
    return frozenset(event for event, _ in routed())


def routed() -> set[tuple[str, str | None]]:
    from bot.app import default_router
    from bot.routing import Event

    router = default_router()
    found: set[tuple[str, str | None]] = set()
    for event, actions in _subset()["webhooks"].items():
        for action in actions or [None]:
            payload = {"action": action} if action else {}
            if router.handlers_for(Event(event, "probe", payload)):
                found.add((event, action))
    return found


def registered_events() -> set[str]:
    """Event names in the ``@router.register(...)`` decorators of ``bot/`` (a second, syntactic derivation)."""
    names = set()
    for source in BOT.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def requirements_of(calls: list[RestCall]) -> Iterator[tuple[RestCall, dict, list[Permissions] | None]]:
    operations = _subset()["operations"]
    for call in calls:
        op = operation_of(call, operations)
        assert op["operation_id"] in NEEDS, (f"{call} is {op['operation_id']}, which has no entry in NEEDS: add"
                                             " the permission GitHub documents for it")
        yield call, op, NEEDS[op["operation_id"]]


def test_rest_calls_are_found_in_the_code():
    calls = rest_calls()
    found = {(c.verb, c.sample) for c in calls}
    # a few anchors: if the parser silently stopped seeing a form, these would vanish
    assert ("POST", "/app/installations/x1/access_tokens") in found  # bot/auth.py, self._post(...)
    assert ("GET", "/repos/o/r/tarball/x1") in found  # bot/workspace.py, download(f"{base}/repos/...")
    assert ("DELETE", "/repos/o/r/git/refs/heads/x1") in found  # the rollback no happy flow reaches
    assert ("GET", "/repos/o/r/issues/x1/comments") in found  # through _pages
    assert len(found) >= 20


def test_a_rest_call_in_an_unknown_form_fails_the_derivation(tmp_path):
    (tmp_path / "new_feature.py").write_text(
        'HOOKS = "/repos/{repo}/hooks"\n'
        "def f(gh, repo, session, path):\n"
        '    gh.call("PUT", f"/repos/{repo}/topics")\n'
        '    gh.call("GET", path)\n'
        '    session.request(f"/repos/{repo}/hooks")\n')
    with pytest.raises(AssertionError) as failure:
        rest_calls(tmp_path)
    message = str(failure.value)
    assert "new_feature.py:1: GitHub path" in message  # a literal outside any call form
    assert "new_feature.py:4: GET with a path that is not a literal" in message
    assert "new_feature.py:5: GitHub path" in message  # an unknown call form
    (tmp_path / "new_feature.py").write_text('def f(gh, repo):\n    gh.call("PUT", f"/repos/{repo}/topics")\n')
    assert [str(c) for c in rest_calls(tmp_path)] == [f"PUT /repos/o/r/topics ({tmp_path.name}/new_feature.py:2)"]


def test_every_operation_is_callable_by_apps_and_has_a_permission_entry():
    for call, op, _ in requirements_of(rest_calls()):
        assert op["enabled_for_github_apps"], f"{call}: {op['operation_id']} cannot be called by a GitHub App"
    used = {op["operation_id"] for _, op, _ in requirements_of(rest_calls())}
    assert set(NEEDS) == used, f"NEEDS has entries for operations the code no longer calls: {set(NEEDS) - used}"


def test_manifest_permissions_are_exactly_the_least_privilege_the_code_and_events_need():
    needs = [need for _, _, need in requirements_of(rest_calls()) if need is not None]
    needs += [EVENT_NEEDS[event] for event in sorted(routed_events() - ALWAYS_DELIVERED)]
    needs.append([ALWAYS_GRANTED])
    minimal = least_privilege(needs)
    assert len(minimal) == 1, f"several least-privilege sets fit; pick one deliberately: {minimal}"
    granted = manifest()["default_permissions"]
    missing = {k: v for k, v in minimal[0].items() if LEVELS.get(granted.get(k, ""), 0) < LEVELS[v]}
    extra = {k: v for k, v in granted.items() if k not in minimal[0]}
    broader = {k: v for k, v in granted.items() if k in minimal[0] and LEVELS[v] > LEVELS[minimal[0][k]]}
    assert (missing, extra, broader) == ({}, {}, {}), f"missing {missing}, extra {extra}, broader {broader}"


def test_installation_tokens_ask_for_no_more_than_the_manifest_grants():
    """GitHub refuses a token asking for more than the installation was granted: the bot would stop working."""
    from bot import auth

    granted = manifest()["default_permissions"]
    for asked in (auth.WRITE, auth.READ):
        assert all(LEVELS[level] <= LEVELS.get(granted.get(name, ""), 0) for name, level in asked.items()), asked
    assert auth.PERMISSIONS == granted


def test_default_events_are_the_routed_events():
    events = routed_events()
    assert events == registered_events(), "the routers' decorators name events GitHub does not send"
    assert events >= ALWAYS_DELIVERED, "installation removals must reach on_installation"
    assert manifest()["default_events"] == sorted(events - ALWAYS_DELIVERED)
    assert set(EVENT_NEEDS) == events - ALWAYS_DELIVERED, "every subscribed event needs an EVENT_NEEDS entry"


def test_manifest_shape():
    data = manifest()
    assert {"name", "url", "hook_attributes", "redirect_url", "public", "default_permissions",
            "default_events"} <= set(data) <= MANIFEST_KEYS
    assert data["public"] is False  # installable only on the account that creates it
    hook = data["hook_attributes"]
    assert hook["active"] is True and re.match(r"^https://[^/]+/webhook$", hook["url"])
    assert all(level in LEVELS for level in data["default_permissions"].values())
    assert "workflows" not in data["default_permissions"]  # the bot must never write .github/workflows


def test_least_privilege_prefers_the_alternative_already_needed():
    needs = [[{"issues": "write"}, {"pull_requests": "write"}], [{"pull_requests": "write"}], [{"issues": "read"}]]
    assert least_privilege(needs) == [{"issues": "read", "pull_requests": "write"}]
    assert len(least_privilege([[{"issues": "write"}, {"pull_requests": "write"}]])) == 2  # ambiguous: both
