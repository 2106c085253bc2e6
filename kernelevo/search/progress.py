"""Showing a search as it runs: a live rich panel on a terminal, plain lines in logs, JSON lines for machines.

Each reporter is a callable taking :class:`Progress` (the ``on_progress`` hook of ``run_search``);
the text is built by pure functions so that it can be tested without a terminal. The ETA shown is
:func:`estimate_eta`: measured time per candidate times the candidates the run can still evaluate before a
budget (or, when nothing improves any more, the plateau rule) stops it, capped by the time budget left.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from evaluator.verdict import ScalarSpec, TensorSpec, Verdict
from kernelevo.envelope import verified_scope_lines
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


@dataclass(frozen=True)
class RunPace:
    """What a run has shown so far, for its ETA: per-candidate time from the candidates judged in this session
    (the first one's wait, which includes setting the op up, is not counted), and how generations went."""

    evaluated: int  # candidates counted against the budget so far
    per_candidate_s: float | None  # measured seconds per candidate; None before two were judged
    elapsed_s: float  # of the whole run, as the time budget counts it
    candidates_per_generation: float | None  # measured; None before a generation closed
    generations_without_improvement: int
    in_generation: int  # candidates judged in the generation now open


@dataclass(frozen=True)
class Eta:
    seconds: float
    bound: str  # what ends the run at that time: "candidates budget", "time budget" or "plateau"

    def text(self) -> str:
        return f"{fmt_duration(self.seconds)} ({self.bound})"


def estimate_eta(budget: Budget, pace: RunPace) -> Eta | None:
    """When the run will stop at the pace measured so far (None when nothing bounds it or the pace is unknown).

    The candidates it can still evaluate are the fewest any limit leaves: the candidate budget, and the plateau
    rule (``plateau_generations`` generations without improvement, at the measured candidates per generation),
    which is what ends most CPU runs since nothing is timed there; the time budget caps the result."""
    options: list[Eta] = []
    if pace.per_candidate_s is not None:
        left: list[tuple[float, str]] = []
        if budget.candidates is not None:
            left.append((max(0, budget.candidates - pace.evaluated), "candidates budget"))
        if budget.plateau_generations is not None and pace.candidates_per_generation:
            generations = max(0, budget.plateau_generations - pace.generations_without_improvement)
            if generations:  # the open generation is one of them, and it has at least one candidate to go
                current = max(pace.candidates_per_generation - pace.in_generation, 1.0)
                left.append(((generations - 1) * pace.candidates_per_generation + current, "plateau"))
            else:
                left.append((0.0, "plateau"))
        if left:
            count, bound = min(left, key=lambda item: item[0])
            options.append(Eta(count * pace.per_candidate_s, bound))
    if budget.minutes is not None:
        options.append(Eta(max(0.0, budget.minutes * 60 - pace.elapsed_s), "time budget"))
    return min(options, key=lambda eta: eta.seconds) if options else None


class PaceTracker:
    """Turns the stream of :class:`Progress` events into a :class:`RunPace` (no clock: the events' elapsed time)."""

    def __init__(self) -> None:
        self.first: tuple[int, float] | None = None  # (judged count, elapsed) at the first candidate judged here
        self.judged = 0  # candidates judged in this session (replayed ones from a resumed run excluded)
        self.last_elapsed = 0.0
        self.generations = 0
        self.evaluated_at_generation = 0  # evaluated count when the last generation closed
        self.best_fitness = 0.0
        self.without_improvement = 0
        self.progress: Progress | None = None

    def observe(self, progress: Progress) -> None:
        self.progress = progress
        last = progress.last
        if (progress.event == "candidate" and last is not None and not last.get("replayed")
                and last.get("kind", "evaluated") == "evaluated"):  # duplicates cost nothing and count nothing
            self.judged += 1
            self.last_elapsed = progress.elapsed_s
            if self.first is None:
                self.first = (self.judged, progress.elapsed_s)
        elif progress.event == "generation":
            self.generations = max(self.generations, progress.generation)
            improved = progress.best_fitness > self.best_fitness
            self.without_improvement = 0 if improved else self.without_improvement + 1
            self.best_fitness = max(self.best_fitness, progress.best_fitness)
            self.evaluated_at_generation = progress.evaluated

    def pace(self) -> RunPace | None:
        p = self.progress
        if p is None:
            return None
        per_candidate = None
        if self.first is not None and self.judged > self.first[0]:
            per_candidate = (self.last_elapsed - self.first[1]) / (self.judged - self.first[0])
        per_generation = self.evaluated_at_generation / self.generations if self.generations else None
        return RunPace(evaluated=p.evaluated, per_candidate_s=per_candidate, elapsed_s=p.elapsed_s,
                       candidates_per_generation=per_generation,
                       generations_without_improvement=self.without_improvement,
                       in_generation=max(0, p.evaluated - self.evaluated_at_generation))

    def eta(self, budget: Budget) -> Eta | None:
        pace = self.pace()
        return None if pace is None else estimate_eta(budget, pace)


def _time_row(p: Progress, budget: Budget, eta: Eta | None) -> str:
    if p.event == "done" or p.stop_reason:
        left = "done"
    elif eta is not None:
        left = f"ETA {eta.text()}"
    else:
        left = "ETA ?"
    return f"{fmt_duration(p.elapsed_s)} elapsed, {left}" + (f" (budget {budget.minutes:g} min)" if budget.minutes
                                                             else "")


_NO_ETA = object()  # progress_rows without an estimate: the engine's own (p.eta_s)


def progress_rows(p: Progress, budget: Budget, eta: Any = _NO_ETA) -> list[tuple[str, str]]:
    """The label/value rows of the live display (``eta``: from :func:`estimate_eta`; else the event's own)."""
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
                 + (f" (budget {budget.minutes:g} min)" if budget.minutes else "") if eta is _NO_ETA
         else _time_row(p, budget, eta)),
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


def plain_line(op_id: str, p: Progress, budget: Budget, eta: Eta | None) -> str | None:
    """One log line for an event (None for events not worth a line): what a CI log shows as the search runs."""
    rows = dict(progress_rows(p, budget, eta))
    if p.event == "candidate" and p.last is not None:
        kind = p.last.get("kind") or "evaluated"
        head = (f"candidate {rows.get('last', '?')}" if kind == "evaluated" else
                f"candidate {p.last.get('id')} ({p.last.get('operator')}): {kind}, not counted")
    elif p.event == "generation":
        head = f"generation {p.generation} done"
    elif p.event == "done":
        head = f"stopped ({p.stop_reason or '?'})"
    else:
        return None
    spend = f", {rows['tokens']} tokens, {rows['money']}" if p.tokens or p.cost_usd else ""
    return (f"kernelevo optimize {op_id}: {head}; {rows['candidates']}; best: {rows['best']}{spend}; "
            f"{rows['time']}")


class PlainReporter:
    """Plain progress lines for logs (no terminal: CI): one per candidate judged and per generation, flushed."""

    def __init__(self, op_id: str, budget: Budget, stream: IO[str]) -> None:
        self.op_id, self.budget, self.stream = op_id, budget, stream
        self.tracker = PaceTracker()

    def __call__(self, progress: Progress) -> None:
        self.tracker.observe(progress)
        line = plain_line(self.op_id, progress, self.budget, self.tracker.eta(self.budget))
        if line is not None:
            self.stream.write(line + "\n")
            self.stream.flush()


class RichReporter:
    """A live panel (rich) redrawn on every event; use as a context manager around the search. Whatever is
    printed after the search (a summary, the resume hint after Ctrl-C) must come after ``__exit__``: while the
    panel is live it redraws over the lines below it."""

    def __init__(self, op_id: str, budget: Budget, console: Any = None) -> None:
        from rich.console import Console

        self.op_id, self.budget = op_id, budget
        self.console = console or Console(stderr=True)
        self.live: Live | None = None  # while the panel is shown
        self._last: dict[str, Any] | None = None
        self.tracker = PaceTracker()

    def render(self, progress: Progress | None) -> Any:
        from rich.panel import Panel
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        rows = (progress_rows(progress, self.budget, self.tracker.eta(self.budget)) if progress
                else [("status", "starting...")])
        for label, value in rows:
            table.add_row(label, value)
        return Panel(table, title=f"kernelevo optimize {self.op_id}", expand=False)

    def __enter__(self) -> RichReporter:
        from rich.live import Live

        live = self.live = Live(self.render(None), console=self.console, refresh_per_second=4, transient=False)
        live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.__exit__(*exc)

    def __call__(self, progress: Progress) -> None:
        self.tracker.observe(progress)
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
        if best.verdict is not None:
            lines += scope_lines(best.verdict, best.source, result.device)
    if result.note:
        lines.append(result.note)
    if result.tokens_in or result.tokens_out:
        lines.append(f"Proposer: {result.tokens_in + result.tokens_out:,} tokens, ${result.cost_usd:.4f}"
                     + (f" (unpriced models: {', '.join(result.unpriced_models)})" if result.unpriced_models else ""))
    lines.append(f"Run directory: {result.run_dir}")
    return lines


def _case_text(value: TensorSpec | ScalarSpec) -> str:
    if isinstance(value, TensorSpec):
        return f"{value.short_dtype}[{', '.join(map(str, value.shape))}]"
    return repr(value.value) if value.value is not None or value.type == "NoneType" else value.type


def scope_lines(verdict: Verdict, source: str, device: str) -> list[str]:
    """Where the accepted kernel was verified and where dispatch will use it (the summary's envelope lines)."""
    from kernelevo.search.targets import envelope_from_verdict

    cases = verdict.correctness.cases if verdict.correctness else []
    if not cases:
        return []
    try:
        envelope = envelope_from_verdict(verdict, device)
    except ValueError as exc:  # cases the store cannot cover (mixed ranks): said, not hidden
        return [f"No dispatch envelope can cover the verified cases ({exc})."]
    return verified_scope_lines(envelope, [[_case_text(v) for v in case.inputs] for case in cases], source,
                                small_only=bool(verdict.correctness and verdict.correctness.small_cases))
