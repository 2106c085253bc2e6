"""The report as GitHub-flavoured Markdown: a PR body, a check-run summary, or ``report.md`` in a repository.

GitHub refuses a PR body over 65,536 characters and a check-run summary over 65,535; a report with many cases
could exceed either. :func:`render_markdown` renders in full first, then drops the least important parts one
by one (collapse per-case tables, the environment's details, the list of checks, the lineage, per-case
correctness, timing rows past the first ones) until it fits, then puts back each earlier part the fit did not need
(cutting 1,500 timing rows should not cost the reader the list of checks), and says what it cut and where the full
report is.
A check run that shows several ops' reports gives each a share of its limit (``limit``); each is shortened the
same way to its share, so every op keeps its result, geomeans and how to reproduce it.
Sizes are counted in UTF-8 bytes, which is never less than GitHub's character count.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from kernelevo.report.model import Baseline, Report
from kernelevo.report.plots import PLOT_TITLES
from kernelevo.report.render_env import markdown_env, render_template

PR_BODY_LIMIT = 65_536
CHECK_SUMMARY_LIMIT = 65_535
MAX_ROWS_WHEN_CUT = 20


class Target(enum.Enum):
    """Where the Markdown goes, and GitHub's limit there (None: no limit)."""

    PR_BODY = PR_BODY_LIMIT
    CHECK_SUMMARY = CHECK_SUMMARY_LIMIT
    FILE = None


class Cut(str, enum.Enum):
    """A part that can be dropped to fit, least important first; the value says what was cut."""

    COLLAPSE = "per-case tables collapsed"
    ENVIRONMENT = "environment details beyond GPU, driver, CUDA, torch and triton"
    CHECKS = "the list of anti-cheat checks (their count is kept)"
    LINEAGE = "the winner's lineage table"
    CASE_CORRECTNESS = "per-case correctness"
    FAILURE_EXAMPLES = "rejection examples"
    ROWS = "per-case rows after the first {rows}"
    PLOTS = "plots"
    ALL_DETAIL = "everything but the result, the geomeans and how to reproduce"


@dataclass(frozen=True)
class Links:
    """Where a reader finds what the Markdown points to. ``plot``: a plot's name -> its image URL (None: no
    image for it); ``full_report``: the complete report (named when the Markdown had to be shortened)."""

    plot: Callable[[str], str | None] = field(default=lambda name: None)
    kernel: str | None = None
    full_report: str | None = None


@dataclass(frozen=True)
class PullRequest:
    """What a follow-up PR body adds to the report: the hidden marker, where the request came from."""

    origin: str  # "#12" or "a scheduled sweep"
    commit: str
    note: str = ""  # trusted Markdown from the bot (e.g. the fork notice), already escaped


def _tidy(text: str) -> str:
    """At most one blank line in a row (the template's optional parts leave more)."""
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def render_markdown(report: Report, target: Target = Target.FILE, links: Links | None = None, *,
                    limit: int | None = None, pull: PullRequest | None = None) -> str:
    """``report`` as Markdown for ``target``, shortened as far as needed to fit its limit, or ``limit`` bytes
    when that is less: the share of one op's report in a check run that shows several."""
    links = links or Links()
    own = target.value
    budget = own if limit is None else limit if own is None else min(limit, own)
    cuts: list[Cut] = []

    share = budget if own is not None and budget != own else None

    def draft(dropped: list[Cut], rows: int = MAX_ROWS_WHEN_CUT) -> str:
        return _tidy(render_template(markdown_env(), "report.md.j2", r=report, cut={c.name for c in dropped},
                                     cut_list=[c.value.format(rows=rows) for c in dropped], limit=own or budget,
                                     share=share, links=links, pull=pull, titles=PLOT_TITLES,
                                     baselines=list(Baseline), max_rows=rows))

    text = draft(cuts)
    for cut in Cut:
        if budget is None or _size(text) <= budget:
            break
        cuts.append(cut)
        text = draft(cuts)
    if budget is not None and len(cuts) > 1 and _size(text) <= budget:
        # put back each earlier cut the fit did not need, the most important first: only what had to go stays cut
        for cut in reversed(cuts[:-1]):
            kept = [c for c in cuts if c is not cut]
            restored = draft(kept)
            if _size(restored) <= budget:
                cuts, text = kept, restored
    if budget is not None and Cut.ROWS in cuts and _size(text) <= budget:
        text = _most_rows(draft, cuts, budget, text, _rows(report))
    if budget is not None and _size(text) > budget:  # only clipped user strings are left: clip the text itself
        text = _clip_blocks(text, budget)
    return text


def _rows(report: Report) -> int:
    """The longest per-case table's row count (timings or correctness)."""
    return max(len(report.timing.cases) if report.timing else 0,
               len(report.correctness.cases) if report.correctness else 0)


def _most_rows(draft: Callable[[list[Cut], int], str], cuts: list[Cut], budget: int, fits: str, total: int) -> str:
    """The draft with as many per-case rows as fit ``budget`` (at least :data:`MAX_ROWS_WHEN_CUT`, which
    ``fits``): a binary search, since the size grows with the rows."""
    low, high = MAX_ROWS_WHEN_CUT, total - 1  # ``total`` rows would not have needed the cut
    while low < high:
        middle = (low + high + 1) // 2
        text = draft(cuts, middle)
        if _size(text) <= budget:
            low, fits = middle, text
        else:
            high = middle - 1
    return fits


_CLIPPED = "\n\n(cut at GitHub's size limit)\n"


def _clip_blocks(text: str, budget: int) -> str:
    """The first ``budget`` bytes of ``text``, cut at a line and with any block it opened closed again, so what
    follows it (the next op's report in a check run) renders as its own Markdown, never inside a code fence."""
    room = max(budget - _size(_CLIPPED) - len("\n```\n</details>\n"), 0)
    head = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1] if "\n" in head else ""
    lines = head.splitlines()
    if sum(line.startswith("```") for line in lines) % 2:
        head += "```\n"
    if head.count("<details>") > head.count("</details>"):
        head += "</details>\n"
    return head + _CLIPPED
