"""Publishing decisions and the rendered report/PR body/status comment."""

from __future__ import annotations

from bot_harness import timing

from bot.comments import MARKER, find_status_comment, render_status
from bot.report import assess, conservative_speedup, escape_md, render, report_context


def result(speedup=1.5, spread=0.02, accepted=True, timed=True):
    verdict = {"verdict": "accepted" if accepted else "rejected", "reason": "ok", "detail": "ok <b>@team</b>",
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
    assert round(conservative_speedup(timing(1.5, 0.0)), 6) == 1.5
    assert conservative_speedup(timing(1.5, 0.1)) < 1.5
    assert conservative_speedup({"cases": [{"candidate": {}}]}) is None


def test_report_renders_evidence_and_escapes_untrusted_text():
    ctx = report_context("a/b", "ops/x.py::f", result(), {"backend": "triton", "head_sha": "c" * 40},
                         "kernels/f")
    text = render("report.md.j2", **ctx)
    assert "| 0 | 1.0000 [0.9800–1.0200] | 4.5000" in text
    assert "4.50x over eager, 1.50x over torch.compile" in text
    assert "kernelevo optimize ops/x.py --op ops/x.py::f --backend triton" in text
    assert "kernelevo verify kernels/f" in text
    assert "<b>" not in text and "@\u200bteam" in text
    body = render("pr_body.md.j2", origin="#3", note="", **ctx)
    assert "for #3 at commit cccccccccccc" in body and "| 1 | 4.50x | 1.50x |" in body


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
