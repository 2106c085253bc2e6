"""The progress display (rich), JSON lines, and the closing summary."""

import io
import json

from evaluator.verdict import Verdict
from kernelevo.search.budget import Budget
from kernelevo.search.progress import JsonLinesReporter, RichReporter, fmt_duration, progress_rows, summary_lines
from kernelevo.search.result import Progress, SearchResult


def snapshot(**kw):
    base = dict(generation=3, evaluated=17, accepted=9, best_fitness=1.2, best_speedup_vs_eager=14.2,
                best_speedup_vs_compile=1.18, tokens=123456, cost_usd=0.4321, elapsed_s=125, eta_s=3700, timed=True,
                last={"id": "g3-1", "operator": "mutate", "accepted": False, "reason": "incorrect"})
    return Progress(**{**base, **kw})


def test_rows_show_generation_counts_speedups_money_and_eta():
    rows = dict(progress_rows(snapshot(), Budget(candidates=64, usd=2.0, minutes=90)))
    assert rows["generation"] == "3"
    assert rows["candidates"] == "17 / 64 evaluated, 9 accepted"
    assert rows["best"] == "14.20x vs eager, 1.18x vs torch.compile"
    assert rows["tokens"] == "123,456" and rows["money"] == "$0.4321 / $2.00"
    assert rows["time"] == "2m05s elapsed, ETA 1h01m (budget 90 min)"
    assert rows["last"] == "g3-1 (mutate): incorrect"


def test_untimed_runs_say_speedups_need_a_gpu():
    rows = dict(progress_rows(snapshot(timed=False, best_speedup_vs_eager=None), Budget()))
    assert rows["best"] == "accepted (not timed: speedups need a GPU)"
    assert dict(progress_rows(snapshot(timed=False, accepted=0), Budget()))["best"] == "nothing accepted yet"
    assert fmt_duration(None) == "?" and fmt_duration(7) == "7s"


def test_json_lines_and_rich_panel():
    out = io.StringIO()
    JsonLinesReporter(out)(snapshot())
    assert json.loads(out.getvalue())["best_speedup_vs_compile"] == 1.18
    from rich.console import Console

    console = Console(file=io.StringIO(), width=100, record=True)
    reporter = RichReporter("rms_norm", Budget(), console=console)
    console.print(reporter.render(snapshot()))
    text = console.export_text()
    assert "kernelevo optimize rms_norm" in text and "1.18x vs torch.compile" in text
    reporter(snapshot())
    reporter(snapshot(event="done", last=None, stop_reason="plateau"))
    console.print(reporter.render(snapshot(last=reporter._last, stop_reason="plateau")))
    text = console.export_text()
    assert "g3-1 (mutate): incorrect" in text and "stopped" in text and "plateau" in text


def test_summary_lines_name_the_stop_reason_the_best_and_the_run_directory():
    result = SearchResult(op_id="rms_norm", run_dir="runs/x", stop_reason="plateau", best={
        "id": "g2-0", "source": "", "fitness": 1.1, "verdict": Verdict.accept("ok", timing={
            "geomean_speedup_vs_eager": 15.0, "geomean_speedup_vs_compile": 1.1}).to_dict()},
        candidates_evaluated=20, candidates_accepted=7, tokens_in=1000, tokens_out=500, cost_usd=0.01,
        evaluator_busy_fraction=0.9, baselines=None, started="", ended="", time_to_first_accepted_s=3.0, timed=True,
        elapsed_s=61, unpriced_models=["local-llama"])
    text = "\n".join(summary_lines(result))
    assert "rms_norm: stopped (plateau) after 20 candidates, 7 accepted, 1m01s." in text
    assert "Best g2-0: 15.00x vs eager, 1.10x vs torch.compile" in text
    assert "1,500 tokens, $0.0100 (unpriced models: local-llama)" in text and "runs/x" in text
