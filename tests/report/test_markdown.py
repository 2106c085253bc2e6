"""The Markdown report: its structure, GitHub's size limits, and every figure traced back to the run's records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_data import write_run

from kernelevo.report.build import build, read_records
from kernelevo.report.markdown import (
    PR_BODY_LIMIT,
    Cut,
    Links,
    PullRequest,
    Target,
    render_markdown,
)
from kernelevo.report.model import Status

HEADINGS = ["## KernelEvo: `ops/norm.py::rms_norm`", "### Speed per case", "### Correctness evidence", "### Search",
            "### Environment", "### Reproduce"]


def tables(text: str) -> list[list[list[str]]]:
    """Every pipe table of ``text``: rows of cells (header and separator rows included)."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif current:
            found.append(current)
            current = []
    return found


def table_with(text: str, header: str) -> list[dict[str, str]]:
    (table,) = [t for t in tables(text) if header in t[0]]
    return [dict(zip(table[0], row)) for row in table[2:]]


def close(shown: str, value: float) -> bool:
    """``shown`` (as printed: 4 significant digits, ``1.23x``, ``70%``, ``1.23e-05``) is ``value``, rounded."""
    number = float(shown.rstrip("x%").replace(",", ""))
    if shown.endswith("%"):
        return abs(number - value * 100) <= 0.5
    digits = len(re.sub(r"e.*|\D", "", shown.rstrip("x%")).lstrip("0")) or 1
    return abs(number - value) <= abs(value) * 10 ** (1 - digits) + 1e-12


def spread(cell: str) -> tuple[str, str, str]:
    median, p25, p75 = re.fullmatch(r"(\S+) \((\S+)–(\S+)\)", cell).groups()
    return median, p25, p75


def test_the_report_has_every_section_and_fits_both_limits(gpu_run):
    report = build(read_records(gpu_run))
    assert report.status is Status.IMPROVED
    text = render_markdown(report, Target.FILE)
    positions = [text.index(heading) for heading in HEADINGS]
    assert positions == sorted(positions)
    assert len(tables(text)) == 5  # summary, timings, correctness per case, rejections, lineage
    for target in (Target.PR_BODY, Target.CHECK_SUMMARY):
        rendered = render_markdown(report, target)
        assert rendered == text and len(rendered.encode()) <= target.value  # small: nothing cut
    body = render_markdown(report, Target.PR_BODY, pull=PullRequest(origin="#7", commit="a" * 40))
    assert body.startswith("<!-- kernelevo:follow-up op=ops/norm.py::rms_norm -->")
    assert "found by KernelEvo for #7 at commit aaaaaaaaaaaa" in body


def test_every_figure_is_the_archives(gpu_run):
    text = render_markdown(build(read_records(gpu_run)))
    summary = json.loads((gpu_run / "summary.json").read_text())
    verdict = summary["best"]["verdict"]
    rows = table_with(text, "roofline")
    assert len(rows) == len(verdict["timing"]["cases"])
    for row, case in zip(rows, verdict["timing"]["cases"]):
        assert int(row["case"]) == case["case"]
        for column, key in (("kernel", "candidate"), ("eager", "eager"), ("torch.compile", "compile_default"),
                            ("torch.compile max-autotune", "compile_max_autotune")):
            median, p25, p75 = spread(row[column])
            stats = case[key]
            assert close(median, stats["median_ms"]) and close(p25, stats["p25_ms"]) and close(p75, stats["p75_ms"])
            if key != "candidate":
                speedup = stats["median_ms"] / case["candidate"]["median_ms"]
                label = "vs " + column
                assert close(row[label], speedup)
        assert close(row["roofline"], case["roofline_fraction"])
    timing = verdict["timing"]
    geomean = re.search(r"Geomean: (\S+) over eager, (\S+) over torch.compile \(its faster mode in each case\),"
                        r" (\S+) over", text).groups()
    assert all(close(shown, timing[key]) for shown, key in zip(geomean, (
        "geomean_speedup_vs_eager", "geomean_speedup_vs_compile", "geomean_speedup_vs_best")))

    checks = {c["case"]: c["checks"] for c in verdict["correctness"]["cases"]}
    calls = re.search(r"(\d+) cases × (\d+) seeds, inputs drawn from (\d+) distributions .*?: (\d+) judged calls", text)
    assert [int(n) for n in calls.groups()] == [len(checks), verdict["correctness"]["seeds"],
                                                 len(verdict["correctness"]["distributions"]),
                                                 sum(len(c) for c in checks.values())]
    for row in table_with(text, "worst abs err"):
        case = checks[int(row["case"])]
        assert int(row["calls"]) == len(case) and int(row["failed"]) == sum(not c["ok"] for c in case)
        assert close(row["worst abs err"], max(c["max_abs_err"] for c in case))
        assert close(row["worst rel err"], max(c["max_rel_err"] for c in case))
        (tolerance,) = next(c["tolerance"] for c in verdict["correctness"]["cases"] if c["case"] == int(row["case"]))
        shown = row["tolerance (atol, rtol, rel)"].split(", ")
        assert all(close(x, tolerance[key]) for x, key in zip(shown, ("atol", "rtol", "rel"), strict=True))

    archive = [json.loads(line) for line in (gpu_run / "archive.jsonl").read_text().splitlines()]
    judged = [r for r in archive if r["kind"] == "evaluated"]
    rejected = {row["rejected because"]: int(row["candidates"]) for row in table_with(text, "rejected because")}
    assert rejected == {reason: sum(r["verdict"]["reason"] == reason for r in judged if not r["accepted"])
                        for reason in {r["verdict"]["reason"] for r in judged if not r["accepted"]}}
    line = re.search(r"candidates: (\d+) judged, (\d+) accepted, (\d+) rejected; (\d+) duplicates? skipped",
                     text).groups()
    assert [int(x) for x in line] == [summary["candidates_evaluated"], summary["candidates_accepted"],
                                      sum(rejected.values()), summary["duplicates"]]
    tokens = re.search(r"tokens ([\d,]+) in / ([\d,]+) out; cost \$(\S+)", text).groups()
    assert [int(tokens[0].replace(",", "")), int(tokens[1].replace(",", ""))] == [summary["tokens_in"],
                                                                                  summary["tokens_out"]]
    assert float(tokens[2]) == round(summary["cost_usd"], 2)
    assert close(re.search(r"GPU time: (\S+) GPU-minutes", text).group(1), summary["elapsed_s"] / 60)
    assert f"candidate `g3-0` (rowwise-1pass, tune, generation 3): `{gpu_run / 'best' / 'kernel.py'}`" in text
    lineage = table_with(text, "operator")
    assert [r["candidate"] for r in lineage] == ["`g1-0`", "`g2-0`", "`g3-0`"]
    assert [float(r["fitness"]) for r in lineage] == [1.2, 1.4, 1.6]
    env = verdict["environment"]
    for key in ("gpu", "driver", "cuda_runtime", "torch", "triton"):
        assert env[key] in text
    assert "gpu-node-7" not in text  # the worker's host name is not for a PR


def test_a_baseline_that_did_not_run_is_not_measured(tmp_path):
    text = render_markdown(build(read_records(write_run(tmp_path / "r", drop_baseline=True))))
    row = table_with(text, "roofline")[0]
    assert row["torch.compile max-autotune"] == "not measured"
    assert row["vs torch.compile max-autotune"] == "not measured"


def test_no_improvement_and_failure_reports(tmp_path, failed_run):
    flat = build(read_records(write_run(tmp_path / "flat", speedup=1.01)))
    assert flat.status is Status.NO_IMPROVEMENT
    assert "**Result (no improvement):** nothing beats eager and torch.compile by more than 3%" in render_markdown(flat)

    failed = build(read_records(failed_run))
    assert failed.status is Status.FAILED and failed.winner is None and failed.timing is None
    text = render_markdown(failed)
    assert "**Result (failed):** no candidate passed verification (search stopped: budget\\_candidates)" in text
    section = text.split("### What went wrong", 1)[1].split("###", 1)[0]
    assert "What to try:" in section and "computed something else" in section and "did not compile" in section
    assert "g0-0: incorrect: case 0: incorrect (details)" in section
    assert "### Speed per case" not in text and "### Reproduce" in text


@pytest.mark.parametrize("target", [Target.PR_BODY, Target.CHECK_SUMMARY])
def test_a_huge_report_is_shortened_and_says_what_was_cut(tmp_path, target):
    """1,500 cases: only per-case rows are cut, as few as the limit needs; every other part stays."""
    report = build(read_records(write_run(tmp_path / "big", n_cases=1500)))
    full = render_markdown(report, Target.FILE)
    assert len(full.encode()) > PR_BODY_LIMIT
    links = Links(full_report="https://github.com/o/r/blob/b/kernels/x/report.md")
    text = render_markdown(report, target, links)
    size = len(text.encode())
    assert target.value - 2_000 < size <= target.value  # the room is used: at most a row pair short of the limit
    cut = re.search(r"> Shortened to fit GitHub's limit of [\d,]+ characters; cut: (.*?)\. The full report", text)
    shown = len(table_with(text, "roofline"))
    assert cut.group(1) == f"per-case rows after the first {shown}" and shown > 20
    assert len(table_with(text, "worst abs err")) == shown
    assert text.count(f"{1500 - shown} more cases are in the full report.") == 2  # timings and correctness
    assert "[report](https://github.com/o/r/blob/b/kernels/x/report.md)" in text
    for kept in ("Checks passed:", "- python ", "### Reproduce", "Geomean:", "**The winner's lineage"):
        assert kept in text, kept
    assert text.count("<details>") == text.count("</details>")


def test_a_small_share_cuts_more_and_names_each_cut_in_order(tmp_path):
    """A share too small for every per-case table: more parts go, least important first, each named."""
    report = build(read_records(write_run(tmp_path / "big", n_cases=1500)))
    text = render_markdown(report, Target.CHECK_SUMMARY, limit=7_000)
    assert len(text.encode()) <= 7_000 and "### Reproduce" in text and "Geomean:" in text
    cut = re.search(r"; cut: (.*?)\.\n", text).group(1).split("; ")
    rows = len(table_with(text, "roofline"))
    order = [c.value.format(rows=rows) for c in Cut]
    assert len(cut) > 1 and all(c in order for c in cut) and cut == sorted(cut, key=order.index)
    assert Cut.ROWS.value.format(rows=rows) in cut and rows >= 20
    assert text.count("<details>") == text.count("</details>")


def test_the_shortened_text_stays_whole_markdown(tmp_path):
    """Even the last resort (only the result and how to reproduce) keeps fences and details balanced."""
    long_op = "ops/" + "n" * 200 + ".py::" + "f" * 200
    report = build(read_records(write_run(tmp_path / "big", n_cases=4000, op_id=long_op)))
    text = render_markdown(report, Target.PR_BODY)
    assert len(text.encode()) <= PR_BODY_LIMIT and text.count("```") % 2 == 0
    assert text.count("<details>") == text.count("</details>")


def test_plot_links_are_the_callers(gpu_run: Path):
    report = build(read_records(gpu_run))
    text = render_markdown(report, links=Links(plot=lambda name: f"plots/{name}.png"))
    assert [m for m in re.findall(r"!\[[^\]]*\]\(([^)]*)\)", text)] == [
        "plots/speedup.png", "plots/fitness.png", "plots/rejections.png", "plots/lineage.png"]


def test_a_limit_shortens_the_report_to_its_share_of_a_summary(tmp_path):
    """A check run showing several ops' reports gives each a share: the report fits it and says so."""
    report = build(read_records(write_run(tmp_path / "big", n_cases=300)))
    links = Links(full_report="https://github.com/o/r/blob/b/kernels/x/report.md")
    assert render_markdown(report, Target.CHECK_SUMMARY, links, limit=10**6) == render_markdown(
        report, Target.CHECK_SUMMARY, links)  # a limit above GitHub's changes nothing
    text = render_markdown(report, Target.CHECK_SUMMARY, links, limit=15_000)
    assert len(text.encode()) <= 15_000 and "### Reproduce" in text and "Geomean:" in text
    assert "> Shortened to fit its share (15,000 characters) of a summary shared with other ops' reports, within" \
           " GitHub's limit of 65,535 characters" in text
    assert text.count("<details>") == text.count("</details>")


def test_a_share_too_small_for_the_essentials_is_clipped_with_its_blocks_closed(tmp_path):
    long_op = "ops/" + "n" * 200 + ".py::" + "f" * 200
    report = build(read_records(write_run(tmp_path / "big", n_cases=50, op_id=long_op)))
    for limit in (600, 1_500, 2_500):
        text = render_markdown(report, Target.CHECK_SUMMARY, limit=limit)
        assert len(text.encode()) <= limit and text.endswith("(cut at GitHub's size limit)\n")
        assert text.count("```") % 2 == 0 and text.count("<details>") == text.count("</details>")


def test_the_calls_that_re_checked_timed_calls_are_counted(tmp_path):
    run = write_run(tmp_path / "r")
    summary = json.loads((run / "summary.json").read_text())
    for case in summary["best"]["verdict"]["correctness"]["cases"]:
        case["checks"][-1]["phase"] = "timed-call re-validation"  # the evaluator's phase name (timing_judge)
    (run / "summary.json").write_text(json.dumps(summary))
    text = render_markdown(build(read_records(run)))
    assert "9 judged calls (3 of them re-checking the outputs of timed calls), 0 failed" in text
