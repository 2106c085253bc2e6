"""The bot's live status page (``GET /``, ``GET /operator``): job records -> a view model -> HTML or JSON.

The page is served without authentication, and the bot cannot tell which repositories are public (job
records do not say, and asking GitHub on every page load would spend the App's rate limit), so it
defaults to telling strangers nothing they could not guess: a job is listed by name (repository, op,
branch, PR) only when the operator declared its repository public (``KERNELEVO_STATUS_PUBLIC_REPOS``);
every other job is only counted by state. The operator view (``/operator``, HTTP Basic or Bearer with
``KERNELEVO_STATUS_TOKEN``) lists everything, with errors and worker names. docs/status-page.md has the
policy and its reasons.

Everything here is pure except :func:`read_jobs` (one Redis round trip per list) and :class:`Snapshots`
(which bounds how often anonymous visitors make the bot read Redis); the routes are in ``bot.app``.
"""

from __future__ import annotations

import base64
import enum
import hmac
import logging
import math
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import jinja2
import redis
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from kernelevo.settings import STATUS_TOKEN_MIN_CHARS
from workflows.models import JobRecord, JobState, OriginKind, utcnow
from workflows.redis_values import text

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from workflows.client import JobsClient

log = logging.getLogger(__name__)

STATUS_PATH = "/"
STATUS_JSON_PATH = "/status.json"
OPERATOR_PATH = "/operator"
OPERATOR_JSON_PATH = "/operator/status.json"

TOKEN_ENV = "KERNELEVO_STATUS_TOKEN"
PUBLIC_REPOS_ENV = "KERNELEVO_STATUS_PUBLIC_REPOS"
MIN_TOKEN_CHARS = STATUS_TOKEN_MIN_CHARS  # shorter tokens are refused: they could be guessed
REFRESH_S = 5  # how often an open page asks for a fresh copy (paused while the tab is hidden)
SNAPSHOT_S = 2.0  # at most one read of the job store per this many seconds, however many visitors poll
MAX_QUEUED = 50  # queued jobs listed (the next to run first); the rest are counted
MAX_FINISHED = 20  # finished jobs listed (the latest first)
FRAGMENT = "jobs"  # ?part=jobs: only the part of the page that changes (what the page's script fetches)
CHALLENGE = 'Basic realm="KernelEvo operator", charset="UTF-8"'  # browsers then ask for the token
# GitHub's owner/name: an owner is letters, digits and hyphens; a name is never "." or ".." (links are built from it)
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/(?!\.\.?$)[A-Za-z0-9_.-]{1,100}$")


class Audience(str, enum.Enum):
    """Who asked: anyone (public repositories by name, the rest counted) or the operator (everything)."""

    ANONYMOUS = "anonymous"
    OPERATOR = "operator"


class StatusAccess(BaseModel):
    """The page's visibility policy: the operator's token and the repositories declared public."""

    model_config = ConfigDict(frozen=True)

    operator_token: SecretStr | None = None
    public_repos: frozenset[str] = frozenset()  # lower-case owner/name (GitHub's names ignore case)
    web_url: str = "https://github.com"  # where PR and check-run links point (GitHub Enterprise: its host)
    problems: tuple[str, ...] = ()  # why a setting was ignored (logged at start-up, shown on the operator page)

    @classmethod
    def from_values(cls, *, token: str | None, public_repos: str, api_url: str) -> StatusAccess:
        """The policy from the settings' values (``status_token``, ``status_public_repos``, ``github_api_url`` of
        :class:`kernelevo.settings.Settings`, which ``bot.service.build`` passes): ``public_repos`` is comma- or
        space-separated owner/name.
        Invalid values are left out with a problem saying so, never half-applied (an unusable token leaves
        the operator view off)."""
        problems: list[str] = []
        token = (token or "").strip()
        if token and len(token) < MIN_TOKEN_CHARS:
            problems.append(f"{TOKEN_ENV} is shorter than {MIN_TOKEN_CHARS} characters, so the operator view is"
                            " off: use e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`")
            token = ""
        repos: set[str] = set()
        for name in re.split(r"[\s,]+", public_repos.strip()):
            if not name:
                continue
            if REPO_RE.match(name):
                repos.add(name.lower())
            else:
                problems.append(f"{PUBLIC_REPOS_ENV}: {name[:120]!r} is not owner/name; left out")
        return cls(operator_token=SecretStr(token) if token else None, public_repos=frozenset(repos),
                   web_url=web_url_for(api_url), problems=tuple(problems))

    def is_public(self, repo: str) -> bool:
        return repo.lower() in self.public_repos

    def operator(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header (``Bearer TOKEN``, or ``Basic`` with TOKEN as the password and
        any user name) carries the operator's token; compared in constant time."""
        if self.operator_token is None or not authorization:
            return False
        scheme, _, value = authorization.strip().partition(" ")
        offered = value.strip()
        if scheme.lower() == "basic":
            try:
                offered = base64.b64decode(offered, validate=True).decode("utf-8").partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(offered.encode(), self.operator_token.get_secret_value().encode())


def web_url_for(api_url: str) -> str:
    """GitHub's web address for its REST API address: api.github.com -> github.com, a GitHub Enterprise
    ``https://HOST/api/v3`` -> ``https://HOST``; anything else (a test's fake) is used as it is."""
    parts = urlsplit(api_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "https://github.com"
    host = "github.com" if parts.netloc == "api.github.com" else parts.netloc
    path = parts.path.rstrip("/")
    path = path.removesuffix("/api/v3") if path.endswith("/api/v3") else path
    return f"{parts.scheme}://{host}{path}"


# -- the view model -------------------------------------------------------------------------------------------


class Links(BaseModel):
    """GitHub addresses of a job (each None when unknown, or for local CLI jobs, which have no repository)."""

    pull_request: str | None = None
    check_run: str | None = None
    follow_up: str | None = None
    follow_up_number: int | None = None


class JobView(BaseModel):
    """One listed job, as both the HTML page and the JSON feed show it."""

    id: str
    state: JobState
    repo: str
    op: str
    origin: OriginKind
    pr_number: int | None = None
    branch: str | None = None  # the branch a follow-up PR targets
    requested_by: str | None = None
    device: str
    backend: str
    evaluated: int
    budget: int | None  # the candidate budget (None: no cap)
    accepted: int
    generation: int
    best_speedup: float | None  # over the named baseline, once timed on a GPU
    baseline: str | None  # "torch.compile" or "eager"
    elapsed_s: float  # queued: waiting so far; running: since its first chunk; finished: start to end
    stop_reason: str | None = None
    waiting_for_lock: bool = False
    cancel_requested: bool = False
    links: Links = Links()
    # the operator's only: may quote paths, hostnames or an endpoint's answer
    error: str | None = None
    worker: str | None = None


class HiddenCounts(BaseModel):
    """Jobs of repositories not declared public, counted by state (anonymous visitors only)."""

    queued: int = 0
    running: int = 0
    finished: int = 0

    @property
    def total(self) -> int:
        return self.queued + self.running + self.finished


class StatusView(BaseModel):
    """The whole page."""

    audience: Audience
    generated_at: datetime
    running: list[JobView]
    queued: list[JobView]
    queued_total: int  # listed or not (only MAX_QUEUED are listed)
    finished: list[JobView]
    hidden: HiddenCounts
    refresh_s: int = REFRESH_S
    problems: list[str] = []  # the operator's only: settings that were ignored, an unreadable record
    store_error: str | None = None  # the job store could not be read


def _links(record: JobRecord, web_url: str) -> Links:
    repo = record.spec.repo
    if record.spec.origin.kind is OriginKind.CLI or not REPO_RE.match(repo):
        return Links()
    base = f"{web_url}/{quote(repo, safe='/')}"
    number, links = record.spec.origin.pr_number, record.links
    return Links(pull_request=f"{base}/pull/{number}" if number is not None else None,
                 check_run=f"{base}/runs/{links.check_run_id}" if links.check_run_id is not None else None,
                 follow_up=f"{base}/pull/{links.follow_up_pr}" if links.follow_up_pr is not None else None,
                 follow_up_number=links.follow_up_pr)


def _elapsed(record: JobRecord, now: datetime) -> float:
    if record.state is JobState.QUEUED:
        start, end = record.created_at, now
    else:
        start = record.started_at or record.created_at
        end = (record.finished_at or now) if record.state.terminal else now
    return max(0.0, (end - start).total_seconds())


def job_view(record: JobRecord, *, audience: Audience, now: datetime, web_url: str) -> JobView:
    """What a listed job shows (pure)."""
    progress, spec = record.progress, record.spec
    speedup, baseline = None, None
    if progress.timed and progress.best_speedup_vs_compile is not None:
        speedup, baseline = progress.best_speedup_vs_compile, "torch.compile"
    elif progress.timed and progress.best_speedup_vs_eager is not None:
        speedup, baseline = progress.best_speedup_vs_eager, "eager"
    if speedup is not None and not math.isfinite(speedup):
        speedup, baseline = None, None
    operator = audience is Audience.OPERATOR
    return JobView(
        id=record.id, state=record.state, repo=spec.repo, op=spec.op_id, origin=spec.origin.kind,
        pr_number=spec.origin.pr_number, branch=spec.origin.base_ref, requested_by=spec.origin.requested_by or None,
        device=spec.device, backend=spec.backend, evaluated=progress.evaluated, budget=spec.budgets.candidates,
        accepted=progress.accepted, generation=progress.generation, best_speedup=speedup, baseline=baseline,
        elapsed_s=_elapsed(record, now), stop_reason=record.result.stop_reason if record.result else None,
        waiting_for_lock=record.waiting_for is not None, cancel_requested=record.cancel_requested,
        links=_links(record, web_url), error=record.error if operator else None,
        worker=record.owner if operator else None)


def build_view(active: Iterable[JobRecord], finished: Iterable[JobRecord], *, access: StatusAccess,
               audience: Audience, now: datetime, problems: Iterable[str] = (),
               store_error: str | None = None) -> StatusView:
    """The page for ``audience`` from the live and the latest finished records (pure).

    Anonymous visitors get only jobs of repositories in ``access.public_repos``; the rest are counted."""
    operator = audience is Audience.OPERATOR
    hidden = HiddenCounts()
    running: list[JobRecord] = []
    queued: list[JobRecord] = []
    done: list[JobRecord] = []
    for record in [*active, *finished]:
        shown = operator or access.is_public(record.spec.repo)
        if record.state.terminal:
            if shown:
                done.append(record)
            else:
                hidden.finished += 1
        elif record.state is JobState.RUNNING:
            if shown:
                running.append(record)
            else:
                hidden.running += 1
        elif shown:
            queued.append(record)
        else:
            hidden.queued += 1
    running.sort(key=lambda r: r.started_at or r.created_at)
    queued.sort(key=lambda r: r.created_at)
    done.sort(key=lambda r: r.finished_at or r.updated_at, reverse=True)

    def views(records: list[JobRecord]) -> list[JobView]:
        return [job_view(r, audience=audience, now=now, web_url=access.web_url) for r in records]

    return StatusView(audience=audience, generated_at=now, running=views(running), queued=views(queued[:MAX_QUEUED]),
                      queued_total=len(queued), finished=views(done[:MAX_FINISHED]), hidden=hidden,
                      problems=[*access.problems, *problems] if operator else [],
                      store_error=store_error)


# -- reading the job store ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Records:
    """What one read of the job store found."""

    active: list[JobRecord]
    finished: list[JobRecord]
    problems: list[str]


def read_jobs(jobs: JobsClient, finished_limit: int = MAX_FINISHED) -> Records:
    """The live jobs (the store's active index, in one ``MGET``) and the latest finished ones.

    A record this version cannot read (written by another version of the worker tier) is left out and
    named in ``problems`` for the operator, rather than failing the whole page."""
    store = jobs.store
    ids = sorted(text(i) for i in store.client.smembers(store.keys.active))
    raws = store.client.mget([store.keys.job(i) for i in ids]) if ids else []
    active: list[JobRecord] = []
    problems: list[str] = []
    for job_id, raw in zip(ids, raws):
        if raw is None:
            continue  # finished and expired between the two reads
        try:
            record = JobRecord.model_validate_json(raw)
        except ValidationError as exc:
            problems.append(f"{job_id}: unreadable record ({exc.error_count()} validation errors); "
                            "is every worker on this version?")
            continue
        if not record.state.terminal:
            active.append(record)
    terminal = [s for s in JobState if s.terminal]
    return Records(active=active, finished=jobs.list(terminal, limit=finished_limit), problems=problems)


class Snapshots:
    """The latest :class:`Records`, re-read at most every ``max_age_s``: the page is public, so a crowd of
    polling visitors must not turn into a crowd of Redis reads. Thread-safe (routes read in a threadpool)."""

    def __init__(self, read: Callable[[], Records], *, max_age_s: float = SNAPSHOT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read, self._max_age_s, self._clock = read, max_age_s, clock
        self._lock = threading.Lock()
        self._at: float | None = None
        self._records: Records | None = None

    def get(self) -> Records:
        with self._lock:
            now = self._clock()
            if self._records is None or self._at is None or now - self._at >= self._max_age_s:
                self._records, self._at = self._read(), now
            return self._records


# -- rendering ------------------------------------------------------------------------------------------------


def duration(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``2h 04m``, ``3d 02h``: short enough for a phone's line."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    # autoescape for every template (not only *.html): each repo, branch, op and error string is escaped
    env = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["duration"] = duration
    return env


def new_nonce() -> str:
    """A fresh CSP nonce for one response (the only script and style the page may run)."""
    return secrets.token_urlsafe(18)


def render_html(view: StatusView, nonce: str, *, fragment: bool = False) -> str:
    """The whole page, or (``fragment``) only its ``<main>`` and timestamp, which the page's script swaps in:
    a whole page would bring a ``<style>`` with another response's nonce, which the CSP reports even in a
    parsed copy that is never shown."""
    return _env().get_template("status.html.j2").render(view=view, nonce=nonce, fragment=fragment, State=JobState,
                                                        Audience=Audience)


def security_headers(nonce: str | None, *, audience: Audience) -> dict[str, str]:
    """Headers of every status response: scripts and styles only with this response's nonce (none at all for
    JSON), no framing, no sniffing, no referrer, and nothing kept in any cache (the data is live, and the
    operator's is private)."""
    allowed = f"'nonce-{nonce}'" if nonce else "'none'"
    csp = (f"default-src 'none'; script-src {allowed}; style-src {allowed}; connect-src 'self'; img-src data:; "
           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return {"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY", "Cross-Origin-Resource-Policy": "same-origin",
            "Cache-Control": "no-store, private" if audience is Audience.OPERATOR else "no-store",
            "Vary": "Authorization"}


# -- the routes -----------------------------------------------------------------------------------------------


def register(app: Starlette, jobs: JobsClient, access: StatusAccess, *,
             clock: Callable[[], datetime] = utcnow, snapshot_s: float = SNAPSHOT_S) -> None:
    """Add ``GET /`` and ``/status.json`` (anyone) and ``GET /operator`` and ``/operator/status.json`` (the
    operator's token) to ``app``. The job store is read only when a page is asked for (and at most every
    ``snapshot_s``), so building the app touches nothing."""
    for problem in access.problems:
        log.warning("status page: %s", problem)
    snapshots = Snapshots(lambda: read_jobs(jobs), max_age_s=snapshot_s)

    async def answer(request: Request, audience: Audience, as_json: bool) -> Response:
        plain = security_headers(None, audience=audience)
        if audience is Audience.OPERATOR and access.operator_token is None:
            return PlainTextResponse(f"The operator view is off: set {TOKEN_ENV} (at least {MIN_TOKEN_CHARS}"
                                     " random characters) where the bot runs.", status_code=404, headers=plain)
        if audience is Audience.OPERATOR and not access.operator(request.headers.get("authorization")):
            return PlainTextResponse(f"The operator view needs the operator's token ({TOKEN_ENV}): as the password"
                                     " of HTTP Basic (any user name) or as `Authorization: Bearer TOKEN`.",
                                     status_code=401, headers={**plain, "WWW-Authenticate": CHALLENGE})
        status_code, store_error = 200, None
        try:
            records = await run_in_threadpool(snapshots.get)
        except redis.RedisError as exc:
            log.warning("status page: cannot read the job store: %s: %s", type(exc).__name__, exc)
            records, status_code = Records(active=[], finished=[], problems=[]), 503
            store_error = ("The job store (Redis) cannot be read right now, so no jobs are shown; this page keeps"
                           " trying.")
        view = build_view(records.active, records.finished, access=access, audience=audience, now=clock(),
                          problems=records.problems, store_error=store_error)
        if as_json:
            return JSONResponse(view.model_dump(mode="json"), status_code=status_code, headers=plain)
        nonce = new_nonce()
        fragment = request.query_params.get("part") == FRAGMENT
        return HTMLResponse(render_html(view, nonce, fragment=fragment), status_code=status_code,
                            headers=security_headers(nonce, audience=audience))

    def route(audience: Audience, as_json: bool) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await answer(request, audience, as_json)

        return endpoint

    app.add_route(STATUS_PATH, route(Audience.ANONYMOUS, False), methods=["GET"])
    app.add_route(STATUS_JSON_PATH, route(Audience.ANONYMOUS, True), methods=["GET"])
    app.add_route(OPERATOR_PATH, route(Audience.OPERATOR, False), methods=["GET"])
    app.add_route(OPERATOR_JSON_PATH, route(Audience.OPERATOR, True), methods=["GET"])
