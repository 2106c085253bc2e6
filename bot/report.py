"""The bot's reports: whether a result is worth a follow-up PR, and the PR's files, body and check-run summary.

Deciding and rendering live in :mod:`kernelevo.report` (one typed report model for the CLI, the PR body, the
check-run summary and ``report.md``); this module adapts a job's search result to it and adds what only the
bot knows: where the follow-up branch is (so the PR body can show the plots committed there) and the request.
The Markdown escapes every module of the bot uses are :mod:`kernelevo.report.escape`'s, re-exported here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict, ValidationError

from bot.publish import blob_url
from kernelevo.report import escape
from kernelevo.report.assess import MIN_GAIN, Assessment
from kernelevo.report.assess import assess as assess_verdict
from kernelevo.report.build import RunRecords, build
from kernelevo.report.markdown import Links, PullRequest, Target, render_markdown
from kernelevo.report.model import Report

escape_md = escape.escape_md
code = escape.code
marker_value = escape.marker_value
fenced = escape.fenced

log = logging.getLogger(__name__)

__all__ = ["Assessment", "CheckReport", "FollowUp", "assess", "code", "escape_md", "fenced", "follow_up",
           "marker_value", "render"]


def assess(result: dict[str, Any] | None, min_gain: float = MIN_GAIN) -> Assessment:
    """Decide whether a search result (``SearchResult.to_dict()``'s shape) beats the baselines beyond noise."""
    result = result or {}
    best = result.get("best") or {}
    stop = str(result.get("stop_reason", "unknown"))
    try:
        verdict = _verdict(best.get("verdict")) if best else None
    except ValidationError as exc:
        return Assessment(publish=False, reason=f"the winner's verdict could not be read ({exc.error_count()} "
                                                "problems): the job's record is damaged; run the job again")
    if best and verdict is None:
        return Assessment(publish=False, reason="the best candidate has no verdict")
    return assess_verdict(verdict, stop, min_gain)


def _verdict(data: Any) -> Any:
    from evaluator.verdict import Verdict

    return Verdict.coerce(data) if data is not None else None


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("bot", "templates"), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["md"] = escape_md
    env.filters["code"] = code
    return env


def render(template: str, **context: Any) -> str:
    """Render ``bot/templates/<template>`` (the status comment) with ``context``; reports are
    :mod:`kernelevo.report`'s (see :func:`follow_up`)."""
    return _env().get_template(template).render(**context)


# -- the follow-up PR -----------------------------------------------------------------------------------------------

class CheckReport(BaseModel):
    """An op's report as the request's check run keeps it until every op is reported (``check_report``): the
    report's model and its resolved links rather than Markdown, so that a run showing several ops' reports can
    render each to its share of GitHub's limit (:func:`bot.checks.run_summary`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    report: Report
    plots: dict[str, str] = {}  # plot name -> image URL on the follow-up branch
    kernel: str | None = None
    full_report: str | None = None

    def markdown(self, limit: int | None = None) -> str:
        """The report for a check-run summary, within ``limit`` bytes (None: GitHub's limit there)."""
        links = Links(plot=self.plots.get, kernel=self.kernel, full_report=self.full_report)
        return render_markdown(self.report, Target.CHECK_SUMMARY, links, limit=limit)

    @classmethod
    def parse(cls, kept: str) -> CheckReport | None:
        """A kept report; None for Markdown kept by an older bot (shown as it is, or pointed to)."""
        try:
            return cls.model_validate_json(kept)
        except ValidationError:
            return None


@dataclass(frozen=True)
class FollowUp:
    """What a follow-up PR adds to the kernel's files: ``report.md`` and the plots under ``<kernel_dir>/``, the
    PR body (which shows the plots by their address on ``branch``), and the same report for the request's check
    run: ``check_summary`` (Markdown within GitHub's limit there) and ``check_report`` (a :class:`CheckReport`
    as JSON, what the bot keeps for the run, which adds it under its per-op lines to fit their shares)."""

    report: Report
    files: dict[str, bytes]
    body: str
    check_summary: str
    check_report: str


def report_of(op_id: str, result: dict[str, Any], request: dict[str, Any], kernel_dir: str,
              archive: list[dict[str, Any]] | None = None) -> Report:
    """The report of a job's search result; ``request``: the job's ``head_sha``, ``backend``, ``budget_tokens``,
    ``device``; ``archive``: the run's ``archive.jsonl`` records where the job's run directory was restored (the
    timeline, rejections and lineage come from it). Raises :class:`~kernelevo.report.build.RecordsError` when the
    result is not readable."""
    meta = {"op_id": op_id, "backend": request.get("backend"), "device": request.get("device"),
            "commit": request.get("head_sha"),
            "budget": {"tokens": request["budget_tokens"]} if request.get("budget_tokens") else None}
    summary = {**result, "op_id": op_id, "best": _named_winner(result.get("best"), archive)}
    records = RunRecords(summary=summary, meta={k: v for k, v in meta.items() if v is not None}, archive=archive)
    return build(records, kernel_dir=kernel_dir, kernel_path=f"{kernel_dir}/kernel.py")


def _named_winner(best: Any, archive: list[dict[str, Any]] | None) -> Any:
    """The winner named by its candidate id, which is where the report finds its generation, strategy and
    lineage in the archive. A job's result keeps the id (``JobResult.best_id``); a result stored before it did
    has only the winner's source: then the id is the archive's accepted candidate with that source (duplicates
    are recorded as such, so there is one). Without either the winner stays unnamed."""
    if not isinstance(best, dict) or best.get("id") or not archive:
        return best
    found = next((str(r["id"]) for r in archive if r.get("kind", "evaluated") == "evaluated" and r.get("accepted")
                  and r.get("id") is not None and r.get("source") == best.get("source")), None)
    return {**best, "id": found} if found is not None else best


def _link(repo: str, branch: str | None, path: str, raw: bool) -> str | None:
    if branch is None:
        return None
    try:
        return blob_url(repo, branch, path, raw=raw)
    except ValueError:  # a name the bot does not link to: the PR shows no link rather than a wrong one
        return None


def follow_up(repo: str, op_id: str, result: dict[str, Any], request: dict[str, Any], kernel_dir: str, *,
              branch: str | None, origin: str, note: str = "", plots: bool = True,
              archive: list[dict[str, Any]] | None = None) -> FollowUp:
    """The report's files and the PR body for a follow-up PR on ``branch`` (None: no links into the branch).

    PNG plots are committed next to ``report.md`` (``plots/<name>.png``); ``report.md`` links them relatively,
    the PR body and the check summary by their blob address (relative links do not resolve there). Without
    matplotlib, or when a plot cannot be drawn, the report is the same without plots."""
    from kernelevo.report import plots as plotting

    report = report_of(op_id, result, request, kernel_dir, archive)
    images: dict[str, bytes] = {}
    if plots and branch is not None and plotting.available():
        try:
            images = plotting.render_plots(report, "png")
        except Exception:  # a figure matplotlib cannot draw costs the PR its plots, never the PR itself
            log.exception("the plots of %s could not be drawn; the follow-up has none", op_id)
    paths = {name: f"{kernel_dir}/plots/{name}.png" for name in images}
    local = Links(plot=lambda name: f"plots/{name}.png" if name in images else None)
    files = {f"{kernel_dir}/report.md": render_markdown(report, Target.FILE, local).encode()}
    files.update({paths[name]: data for name, data in images.items()})
    links = Links(plot=lambda name: _link(repo, branch, paths[name], raw=True) if name in paths else None,
                  kernel=_link(repo, branch, f"{kernel_dir}/kernel.py", raw=False),
                  full_report=_link(repo, branch, f"{kernel_dir}/report.md", raw=False))
    body = render_markdown(report, Target.PR_BODY, links,
                           pull=PullRequest(origin=origin, commit=str(request.get("head_sha", "")), note=note))
    kept = CheckReport(report=report, kernel=links.kernel, full_report=links.full_report,
                       plots={name: url for name in paths if (url := links.plot(name)) is not None})
    return FollowUp(report=report, files=files, body=body, check_summary=kept.markdown(),
                    check_report=kept.model_dump_json())
