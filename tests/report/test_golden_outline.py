"""Golden tests of the Markdown's structure: the outline (headings, table header rows, collapsible sections,
images, the result line's kind) of the report of an improved, a flat and a failed run, against committed files.

Numbers and prose are asserted elsewhere (test_markdown.py traces every figure to the archive); these files pin
what a reviewer scans first. After an intended change of the templates, regenerate them with
``KERNELEVO_UPDATE_GOLDEN=1 python -m pytest tests/report/test_golden_outline.py`` and review the diff."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from report_data import write_run

from kernelevo.report.build import build, read_records
from kernelevo.report.markdown import Links, Target, render_markdown
from kernelevo.report.plots import plot_names

GOLDEN = Path(__file__).parent / "golden"
_RESULT = re.compile(r"^\*\*Result \(([^)]*)\):\*\*")


def outline(markdown: str) -> str:
    """The report's skeleton: what the eye lands on, without the numbers that vary from run to run."""
    lines, previous = [], ""
    for line in markdown.splitlines():
        result = _RESULT.match(line)
        if result:
            lines.append(f"result: {result.group(1)}")
        elif line.startswith("#"):
            lines.append(line)
        elif line.startswith("|") and not previous.startswith("|"):  # a table's header row
            lines.append("table: " + line)
        elif "<summary>" in line:
            lines.append("details: " + re.sub(r"\(\d+ [a-z ]+\)", "(N)", re.sub(r"</?[a-z]+>", "", line).strip()))
        elif line.startswith("!["):
            lines.append("image: " + line)
        elif line.startswith("```"):
            lines.append(line)
        previous = line
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name, speedup, failed", [("improved", 1.6, False), ("no_improvement", 1.01, False),
                                                    ("failed", 1.6, True)])
def test_the_report_outline_matches_its_golden_file(tmp_path, failed_run, name, speedup, failed):
    run = failed_run if failed else write_run(tmp_path / name, speedup=speedup)
    report = build(read_records(run))
    # as the bot renders a PR body: every plot linked, collapsible sections
    links = Links(plot=lambda plot: f"plots/{plot}.png" if plot in plot_names(report) else None)
    got = outline(render_markdown(report, Target.PR_BODY, links))
    golden = GOLDEN / f"{name}.outline"
    if os.environ.get("KERNELEVO_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(got)
    assert golden.is_file(), f"{golden} is missing: run with KERNELEVO_UPDATE_GOLDEN=1 once and commit it"
    assert got == golden.read_text(), f"the report's structure changed; if intended, regenerate {golden.name}"
