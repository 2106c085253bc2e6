"""Publishing decisions and the rendered report/PR body/status comment."""

from __future__ import annotations

from bot_harness import timing

from bot.comments import MARKER, find_status_comment, render_status
from bot.report import assess, escape_md, follow_up
from evaluator.verdict import Reason, Timing
from kernelevo.report.assess import conservative_speedup


def result(speedup=1.5, spread=0.02, accepted=True, timed=True):
    verdict = {"verdict": "accepted" if accepted else "rejected", "reason": "ok" if accepted else "incorrect",
               "detail": "ok <b>@team</b>",
               "device": "cuda:0", "backend": "triton", "correctness": {"cases": []},
               "timing": timing(speedup, spread) if timed else None, "environment": {"gpu": "H200"}}
    return {"best": {"source": "x", "verdict": verdict, "fitness": speedup}, "stop_reason": "plateau",
            "candidates_evaluated": 5, "cost_usd": 0.5}


def test_assess_publishes_only_clear_wins():
    assert assess(result()).publish
    assert not assess(result(speedup=1.02)).publish
    assert "within the timing spread" in assess(result(speedup=1.1, spread=0.2)).reason
    assert "not timed" in assess(result(timed=False)).reason
    assert "not accepted" in assess(result(accepted=False)).reason
    assert "no candidate passed verification (search stopped: cancelled)" == assess(
        {"best": None, "stop_reason": "cancelled"}).reason
    assert not assess(None).publish


def test_conservative_speedup_uses_quartiles():
    assert round(conservative_speedup(Timing.model_validate(timing(1.5, 0.0))), 6) == 1.5
    assert conservative_speedup(Timing.model_validate(timing(1.5, 0.1))) < 1.5
    untimed = Timing.model_validate({"cases": [{"case": 0, "candidate": {"median_ms": 1.0}}]})
    assert conservative_speedup(untimed) is None


def test_an_unreadable_verdict_is_never_published():
    damaged = result()
    damaged["best"]["verdict"]["timing"]["cases"][0]["case"] = "<script>"
    verdict = assess(damaged)
    assert not verdict.publish and "could not be read" in verdict.reason


def test_report_renders_evidence_and_escapes_untrusted_text():
    made = follow_up("a/b", "ops/x.py::f", result(), {"backend": "triton", "head_sha": "c" * 40}, "kernels/f",
                     branch=None, origin="#3")
    text = made.files["kernels/f/report.md"].decode()
    row = "| 0 |  | 1 (0.98–1.02) | 4.5 (4.41–4.59) | 1.5 (1.47–1.53) | 1.65 (1.617–1.683) | 4.50x | 1.50x | 1.65x |"
    assert row in text
    assert "4.50x over eager, 1.50x over torch.compile" in text
    assert "kernelevo optimize ops/x.py --op ops/x.py::f --backend triton" in text
    assert "kernelevo verify kernels/f" in text
    assert "<b>" not in text and "@\u200bteam" in text
    assert "for #3 at commit cccccccccccc" in made.body and "| 1 |  | 1 (0.98–1.02) |" in made.body
    assert "![" not in made.body and set(made.files) == {"kernels/f/report.md"}  # no branch: no plots to link
    assert made.check_summary.startswith("## KernelEvo: `ops/x.py::f`")  # no PR marker in a check run
    assert "<b>" not in made.check_summary and "| 1 |  | 1 (0.98–1.02) |" in made.check_summary


def test_rejections_come_from_the_archive_or_else_from_the_result():
    archive = [{"id": "g0-0", "kind": "evaluated", "accepted": False, "fitness": 0.0, "generation": 0,
                "verdict": {"verdict": "rejected", "reason": "incorrect", "detail": "case 0 <b>@team</b>"}},
               {"id": "g0-1", "kind": "duplicate", "accepted": False, "verdict": {"reason": "incorrect"}},
               {"id": "g0-2", "kind": "evaluated", "accepted": True, "fitness": 1.4, "generation": 0,
                "source": "y", "verdict": {"reason": "ok"}},
               {"id": "g1-0", "kind": "evaluated", "accepted": True, "fitness": 1.5, "generation": 1,
                "source": "x", "parent_ids": ["g0-0"], "strategy": "tiled", "verdict": {"reason": "ok"}}]
    request = {"backend": "triton", "head_sha": "c" * 40}
    from_archive = follow_up("a/b", "ops/x.py::f", result(), request, "kernels/f", branch="kernelevo/f/main",
                             origin="#3", archive=archive)
    assert from_archive.report.cost.rejected == {Reason.INCORRECT: 1}
    assert [step.id for step in from_archive.report.lineage] == ["g0-0", "g1-0"]  # the winner, found by source
    assert from_archive.report.winner.id == "g1-0" and from_archive.report.winner.strategy == "tiled"
    assert {"kernels/f/plots/rejections.png", "kernels/f/plots/lineage.png"} <= set(from_archive.files)
    counted = {**result(), "rejections": {"incorrect": 4, "timeout": 1, "bogus": 7, "crashed": "x"}}
    from_result = follow_up("a/b", "ops/x.py::f", counted, request, "kernels/f", branch=None, origin="#3")
    assert from_result.report.cost.rejected == {Reason.INCORRECT: 4, Reason.TIMEOUT: 1}
    assert from_result.report.lineage is None  # the result alone holds no per-candidate records
    assert follow_up("a/b", "ops/x.py::f", result(), request, "kernels/f", branch=None,
                     origin="#3").report.cost.rejected is None  # not recorded: never a stand-in zero


def test_the_follow_up_commits_plots_and_links_them_by_blob_address():
    made = follow_up("a/b", "ops/x.py::f", result(), {"backend": "triton", "head_sha": "c" * 40}, "kernels/f",
                     branch="kernelevo/f/main", origin="#3")
    assert set(made.files) == {"kernels/f/report.md", "kernels/f/plots/speedup.png"}
    assert made.files["kernels/f/plots/speedup.png"].startswith(b"\x89PNG")
    assert "(https://github.com/a/b/blob/kernelevo/f/main/kernels/f/plots/speedup.png?raw=true)" in made.body
    assert "(plots/speedup.png)" in made.files["kernels/f/report.md"].decode()


def test_escape_md():
    assert escape_md("`rm` *x* [a](b) <i> @me\nnext") == "\\`rm\\` \\*x\\* \\[a\\](b) \\<i\\> @\u200bme next"


def test_status_comment_is_found_by_marker_and_author():
    rows = [{"job_id": "job-1", "ops": "`ops/x.py::f`", "state": "running", "result": "…"}]
    body = render_status("Queued.", rows)
    assert body.startswith(MARKER) and "| job-1 | `ops/x.py::f` | running | … |" in body
    comments = [{"id": 1, "body": body, "user": {"login": "mallory"}},
                {"id": 2, "body": "hi", "user": {"login": "kernelevo[bot]"}},
                {"id": 3, "body": body, "user": {"login": "kernelevo[bot]"}}]
    assert find_status_comment(comments, "kernelevo[bot]")["id"] == 3


def test_the_check_summary_shows_published_reports_under_the_lines_within_githubs_limit():
    from bot.checks import fit, run_summary
    from bot.state import Conclusion, OpLine, RunLink

    ops = [OpLine(op_id=f"op{i}", job_id=f"job-{i}", outcome=f"outcome {i}", conclusion=Conclusion.SUCCESS,
                  follow_up_pr=10 + i) for i in range(3)]
    ops.append(OpLine(op_id="op3", job_id="job-3", outcome="no PR", conclusion=Conclusion.NEUTRAL))
    run = RunLink(check_run_id=1, repo="a/b", installation_id=2, head_sha="c" * 40, ops=ops)
    small = {f"op{i}": f"## KernelEvo: `op{i}`\n\nreport {i}\n" for i in range(4)}
    text = run_summary(run, {}, small)
    assert text.split("\n\n")[0] == "- `op0`: outcome 0\n- `op1`: outcome 1\n- `op2`: outcome 2\n- `op3`: no PR"
    assert "report 0" in text and "report 2" in text and "report 3" not in text  # only published ops' reports
    assert text.index("report 0") < text.index("report 1") < text.index("report 2")  # in the run's order

    big = {f"op{i}": f"## KernelEvo: `op{i}`\n\n" + "é" * 30_000 for i in range(3)}  # 60 kB each in UTF-8
    text = run_summary(run, {}, big)
    assert len(text.encode()) <= 65_535 and text.count("é" * 30_000) == 1  # the first fits, the others do not
    assert "The report of `op1` does not fit in this summary with the others: see #11." in text
    assert "see #12." in text
    assert run_summary(run, {}) == "- `op0`: outcome 0\n- `op1`: outcome 1\n- `op2`: outcome 2\n- `op3`: no PR"
    cut = fit("é" * 40_000)
    assert len(cut.encode()) <= 65_535 and cut.endswith("(cut at GitHub's size limit)\n")


def many_cases(n: int) -> dict:
    """A search result whose winner was timed and checked on ``n`` cases (a report near GitHub's limit)."""
    made = result()
    t = made["best"]["verdict"]["timing"]
    t["cases"] = [{**t["cases"][0], "case": i} for i in range(n)]
    made["best"]["verdict"]["correctness"] = {"seeds": 2, "cases": [
        {"case": i, "inputs": [{"shape": [64 * (i + 1), 1024], "dtype": "torch.float16"}],
         "checks": [{"seed": s, "distribution": "normal", "max_abs_err": 1e-6, "max_rel_err": 1e-5,
                     "rel_l2_err": 1e-6, "ok": True} for s in range(2)]} for i in range(n)]}
    return made


def test_three_near_limit_reports_each_keep_their_share_of_the_check_run():
    from bot.checks import run_summary
    from bot.report import CheckReport
    from bot.state import Conclusion, OpLine, RunLink

    ops = [f"ops/m{i}.py::f" for i in range(3)]
    made = {op: follow_up("a/b", op, many_cases(330), {"backend": "triton", "head_sha": "c" * 40}, f"kernels/f{i}",
                          branch=f"kernelevo/f{i}/main", origin="#3") for i, op in enumerate(ops)}
    for one in made.values():  # each alone nearly fills a check run
        assert 60_000 < len(one.check_summary.encode()) <= 65_535 and "Shortened" not in one.check_summary
        assert CheckReport.parse(one.check_report).markdown() == one.check_summary
    lines = [OpLine(op_id=op, job_id=f"job-{i}", outcome=f"#{10 + i} (created)", conclusion=Conclusion.SUCCESS,
                    follow_up_pr=10 + i) for i, op in enumerate(ops)]
    run = RunLink(check_run_id=1, repo="a/b", installation_id=2, head_sha="c" * 40, ops=lines)
    text = run_summary(run, {}, {op: one.check_report for op, one in made.items()})
    assert len(text.encode()) <= 65_535 and "does not fit in this summary" not in text
    reports = text.split("\n\n## KernelEvo: ")[1:]
    assert [r.split("\n", 1)[0] for r in reports] == [f"`{op}`" for op in ops]  # every op's report, in order
    for i, part in enumerate(reports):
        assert "Geomean: 4.50x over eager" in part and "### Reproduce" in part
        assert f"kernelevo verify kernels/f{i}" in part
        assert "its share (" in part and "of a summary shared with other ops' reports" in part
        assert f"](https://github.com/a/b/blob/kernelevo/f{i}/main/kernels/f{i}/report.md)" in part
        assert part.count("```") % 2 == 0 and part.count("<details>") == part.count("</details>")


def test_a_report_kept_by_an_older_bot_is_shown_whole_or_pointed_to():
    from bot.checks import run_summary
    from bot.state import Conclusion, OpLine, RunLink

    lines = [OpLine(op_id=f"op{i}", job_id=f"job-{i}", outcome="done", conclusion=Conclusion.SUCCESS,
                    follow_up_pr=10 + i) for i in range(2)]
    run = RunLink(check_run_id=1, repo="a/b", installation_id=2, head_sha="c" * 40, ops=lines)
    kept = {"op0": "## KernelEvo: `op0`\n\nold Markdown\n", "op1": "## KernelEvo: `op1`\n\n" + "x" * 65_520}
    text = run_summary(run, {}, kept)
    assert "old Markdown" in text
    assert "The report of `op1` does not fit in this summary with the others: see #11." in text
    assert len(text.encode()) <= 65_535


def test_the_winner_is_named_by_its_kept_id_and_by_its_source_only_without_one():
    from bot.report import report_of

    base = result()
    source = base["best"]["source"]
    archive = [{"id": "g0-0", "kind": "evaluated", "generation": 0, "operator": "fresh", "accepted": True,
                "source": source, "fitness": 1.1, "parent_ids": []},
               {"id": "g2-1", "kind": "evaluated", "generation": 2, "operator": "tune", "accepted": True,
                "source": source, "fitness": 1.5, "parent_ids": ["g0-0"]}]
    request = {"backend": "triton", "head_sha": "c" * 40}
    named = {**base, "best": {**base["best"], "id": "g2-1"}}  # JobResult.best_id, as the job store keeps it
    report = report_of("ops/x.py::f", named, request, "kernels/f", archive)
    assert report.winner.id == "g2-1" and report.winner.generation == 2
    assert [s.id for s in report.lineage] == ["g0-0", "g2-1"]
    unnamed = report_of("ops/x.py::f", base, request, "kernels/f", archive)  # a result stored before ids were
    assert unnamed.winner.id == "g0-0"  # the first accepted candidate with the winner's source
