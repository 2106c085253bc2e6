"""Showing a search as it runs: a live rich panel for people, JSON lines for machines, or nothing.

Each reporter is a callable taking :class:`Progress` (the ``on_progress`` hook of ``run_search``);
the text is built by pure functions so that it can be tested without a terminal.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kernelevo.search.budget import Budget
from kernelevo.search.result import Progress, SearchResult

if TYPE_CHECKING:
    from rich.live import Live


def fmt_duration(seconds: float | None) -> str:
    """``1h02m``, ``3m05s``, ``12s``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def fmt_speedup(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _limit(used: str, limit: Any) -> str:
    return f"{used} / {limit}" if limit is not None else used


def progress_rows(p: Progress, budget: Budget) -> list[tuple[str, str]]:
    """The label/value rows of the live display."""
    if p.timed:
        best = (f"{fmt_speedup(p.best_speedup_vs_eager)} vs eager,"
                f" {fmt_speedup(p.best_speedup_vs_compile)} vs torch.compile")
    elif p.accepted:
        best = "accepted (not timed: speedups need a GPU)"
    else:
        best = "nothing accepted yet"
    rows = [
        ("generation", str(p.generation)),
        ("candidates", f"{_limit(str(p.evaluated), budget.candidates)} evaluated, {p.accepted} accepted"),
        ("best", best),
        ("tokens", _limit(f"{p.tokens:,}", f"{budget.tokens:,}" if budget.tokens else None)),
        ("money", _limit(f"${p.cost_usd:.4f}", f"${budget.usd:.2f}" if budget.usd else None)),
        ("time", f"{fmt_duration(p.elapsed_s)} elapsed, ETA {fmt_duration(p.eta_s)}"
                 + (f" (budget {budget.minutes:g} min)" if budget.minutes else "")),
    ]
    if p.last:
        verdict = "accepted" if p.last.get("accepted") else (p.last.get("reason") or p.last.get("kind") or "?")
        rows.append(("last", f"{p.last.get('id')} ({p.last.get('operator')}): {verdict}"))
    if p.stop_reason:
        rows.append(("stopped", p.stop_reason))
    return rows


class JsonLinesReporter:
    """One JSON object per event on ``stream`` (flushed, for pipes)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, progress: Progress) -> None:
        self.stream.write(json.dumps(progress.to_dict(), default=str) + "\n")
        self.stream.flush()


class RichReporter:
    """A live panel (rich) redrawn on every event; use as a context manager around the search."""

    def __init__(self, op_id: str, budget: Budget, console: Any = None) -> None:
        from rich.console import Console

        self.op_id, self.budget = op_id, budget
        self.console = console or Console(stderr=True)
        self.live: Live | None = None  # while the panel is shown
        self._last: dict[str, Any] | None = None

    def render(self, progress: Progress | None) -> Any:
        from rich.panel import Panel
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        for label, value in progress_rows(progress, self.budget) if progress else [("status", "starting...")]:
            table.add_row(label, value)
        return Panel(table, title=f"kernelevo optimize {self.op_id}", expand=False)

    def __enter__(self) -> RichReporter:
        from rich.live import Live

        live = self.live = Live(self.render(None), console=self.console, refresh_per_second=4, transient=False)
        live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def __call__(self, progress: Progress) -> None:
        if progress.last is None and self._last is not None:  # keep showing the last candidate judged
            progress = replace(progress, last=self._last)
        self._last = progress.last
        if self.live is not None:
            self.live.update(self.render(progress))


def summary_lines(result: SearchResult) -> list[str]:
    """The closing summary of one op's search, in plain words."""
    lines = [f"{result.op_id}: stopped ({result.stop_reason}) after {result.candidates_evaluated} candidates,"
             f" {result.candidates_accepted} accepted, {fmt_duration(result.elapsed_s)}."]
    best = result.best_candidate
    timing = best.verdict.timing if best is not None and best.verdict is not None else None
    if best is None:
        lines.append("No candidate was accepted.")
    elif result.timed and timing is not None:
        lines.append(f"Best {best.id}: {fmt_speedup(timing.geomean_speedup_vs_eager)} vs eager,"
                     f" {fmt_speedup(timing.geomean_speedup_vs_compile)} vs torch.compile"
                     f" (fitness {best.fitness:.3f}).")
    else:
        lines.append(f"Best {best.id}: accepted.")
    if best is not None:
        lines.append(f"Best kernel: {Path(result.run_dir) / 'best' / 'kernel.py'}")
    if result.note:
        lines.append(result.note)
    if result.tokens_in or result.tokens_out:
        lines.append(f"Proposer: {result.tokens_in + result.tokens_out:,} tokens, ${result.cost_usd:.4f}"
                     + (f" (unpriced models: {', '.join(result.unpriced_models)})" if result.unpriced_models else ""))
    lines.append(f"Run directory: {result.run_dir}")
    return lines
