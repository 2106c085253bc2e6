"""The report's plots with matplotlib (the ``plots`` extra): PNG for GitHub, SVG for the HTML report.

matplotlib is imported only when a plot is drawn, and only its object API with the Agg canvas is used (no
pyplot, no global backend). Figures have an explicit white background with dark text and mid-tone colours,
so a PNG reads the same in GitHub's light and dark themes. Output is deterministic: no dates or software
versions in the metadata, a fixed hash salt for SVG ids, fonts as paths.

Every plot has data behind it or is not drawn: :func:`plot_names` says which ones a report can have.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from kernelevo.report.model import Baseline, Report

PLOT_TITLES = {
    "speedup": "Speedup per case against each baseline",
    "fitness": "Best fitness over time and over proposer tokens",
    "rejections": "Rejected candidates by reason",
    "lineage": "The winner's lineage",
}
INSTALL_HINT = "plots need the `plots` extra: pip install 'kernelevo[plots]'"

_COLOURS = {Baseline.EAGER: "#4C72B0", Baseline.COMPILE_DEFAULT: "#DD8452", Baseline.COMPILE_MAX_AUTOTUNE: "#55A868"}
_TEXT = "#222222"
_GRID = "#BBBBBB"
_ACCENT = "#C44E52"
_REJECTED = "#777777"


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed."""


def available() -> bool:
    """Whether plots can be drawn here (matplotlib importable); asked only right before plotting."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_names(report: Report) -> list[str]:
    """The plots ``report`` has data for, in the order they are shown."""
    names = []
    if report.timing is not None and any(c.speedups for c in report.timing.cases):
        names.append("speedup")
    if report.timeline:
        names.append("fitness")
    if report.cost.rejected:
        names.append("rejections")
    if report.lineage:
        names.append("lineage")
    return names


def render_plots(report: Report, fmt: str, names: Iterable[str] | None = None) -> dict[str, bytes]:
    """``{name: image}`` for each plot of ``report`` (``fmt``: ``png`` or ``svg``)."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"plot format must be png or svg, not {fmt!r}")
    if not available():
        raise PlotsUnavailable(INSTALL_HINT)
    import matplotlib

    draw = {"speedup": _speedup, "fitness": _fitness, "rejections": _rejections, "lineage": _lineage}
    with matplotlib.rc_context({"svg.hashsalt": "kernelevo-report", "svg.fonttype": "path",
                                "font.family": "DejaVu Sans"}):
        return {name: _save(draw[name](report), fmt) for name in (names or plot_names(report))}


# -- drawing --------------------------------------------------------------------------------------------------------

def _figure(width: float, height: float, ncols: int = 1) -> tuple[Any, list[Any]]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, facecolor="white", layout="constrained")
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    for ax in axes:
        ax.set_facecolor("white")
        ax.tick_params(colors=_TEXT, labelcolor=_TEXT)
        for spine in ax.spines.values():
            spine.set_color(_TEXT)
        ax.grid(True, color=_GRID, linewidth=0.5, alpha=0.7)
        ax.set_axisbelow(True)
    return fig, axes


def _label(ax: Any, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, color=_TEXT, fontsize=11)
    ax.set_xlabel(xlabel, color=_TEXT)
    ax.set_ylabel(ylabel, color=_TEXT)


def _plain(text: str) -> str:
    """Text shown as written: a ``$`` is a dollar sign, never the start of a formula for mathtext."""
    return text.replace("$", r"\$")


def _save(fig: Any, fmt: str) -> bytes:
    buffer = io.BytesIO()
    metadata: dict[str, Any] = ({"Software": None} if fmt == "png"
                                else {"Date": None, "Creator": None, "Format": None, "Type": None})
    fig.savefig(buffer, format=fmt, metadata=metadata, facecolor="white")
    return buffer.getvalue()


def _speedup(report: Report) -> Any:
    assert report.timing is not None
    cases = report.timing.cases
    baselines = [b for b in Baseline if any(b in c.speedups for c in cases)]
    from matplotlib.ticker import FuncFormatter

    fig, (ax,) = _figure(max(7.0, 1.5 + 0.5 * len(cases) * max(len(baselines), 1)), 3.8)
    width = 0.8 / max(len(baselines), 1)
    for i, baseline in enumerate(baselines):
        xs = [n + (i - (len(baselines) - 1) / 2) * width for n in range(len(cases))]
        ys = [c.speedups.get(baseline, 1.0) for c in cases]
        # bars grow from 1x (as fast): up for a speedup, down for a slowdown (from the axis they would read as gains)
        ax.bar(xs, [y - 1.0 for y in ys], bottom=1.0, width=width * 0.95, color=_COLOURS[baseline],
               label=f"vs {baseline.label}")
    ax.axhline(1.0, color=_ACCENT, linewidth=1.2, linestyle="--", label="1x (as fast)")
    ax.set_xticks(range(len(cases)), [f"case {c.case}" for c in cases], color=_TEXT)
    ax.set_yscale("log")
    ticks = FuncFormatter(lambda value, _: f"{value:g}x")
    ax.yaxis.set_major_formatter(ticks)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}x" if str(f"{value:g}")[0] in "25" else ""))
    _label(ax, PLOT_TITLES["speedup"], "", "baseline median / kernel median (log)")
    ax.legend(facecolor="white", edgecolor=_GRID, labelcolor=_TEXT, fontsize=8)
    return fig


def _best_so_far(points: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    xs, ys, best = [], [], 0.0
    for x, y in sorted(points):
        best = max(best, y)
        xs.append(x)
        ys.append(best)
    return xs, ys


def _fitness(report: Report) -> Any:
    timeline = report.timeline or []
    fig, (by_time, by_tokens) = _figure(9.0, 3.4, ncols=2)
    for ax, key, xlabel in ((by_time, "elapsed_s", "seconds since the run started"),
                            (by_tokens, "tokens", "proposer tokens spent (in + out)")):
        points = [(float(getattr(p, key)), p.fitness) for p in timeline if getattr(p, key) is not None]
        if key == "tokens" and not any(x for x, _ in points):
            ax.text(0.5, 0.5, "no proposer tokens spent\n(a proposer without a model)", ha="center", va="center",
                    color=_TEXT, transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            _label(ax, "Best fitness over tokens", xlabel, "")
            continue
        accepted = [(x, y) for (x, y), p in zip(points, timeline) if p.accepted]
        rejected = [(x, y) for (x, y), p in zip(points, timeline) if not p.accepted]
        xs, ys = _best_so_far(points)
        ax.step(xs, ys, where="post", color=_COLOURS[Baseline.EAGER], linewidth=1.8, label="best so far")
        if accepted:
            ax.scatter(*zip(*accepted), s=14, color=_COLOURS[Baseline.COMPILE_MAX_AUTOTUNE], label="accepted",
                       zorder=3)
        if rejected:
            ax.scatter(*zip(*rejected), s=14, color=_ACCENT, marker="x", label="rejected", zorder=3)
        _label(ax, "Best fitness over " + ("time" if key == "elapsed_s" else "tokens"), xlabel,
               "fitness (speedup vs best baseline)" if report.timing else "fitness (1 = accepted, untimed)")
        ax.legend(facecolor="white", edgecolor=_GRID, labelcolor=_TEXT, fontsize=8)
    return fig


def _rejections(report: Report) -> Any:
    rejected = report.cost.rejected or {}
    reasons = sorted(rejected, key=lambda r: (-rejected[r], r.value))
    fig, (ax,) = _figure(6.0, 1.2 + 0.45 * len(reasons))
    ax.barh([_plain(r.value) for r in reasons][::-1], [rejected[r] for r in reasons][::-1],
            color=_COLOURS[Baseline.EAGER])
    for y, reason in enumerate(reasons[::-1]):
        ax.text(rejected[reason], y, f" {rejected[reason]}", va="center", color=_TEXT)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # candidates are counted: no 0.25 of one
    ax.set_xlim(0, max(rejected.values()) * 1.12)  # room for the count after the longest bar
    ax.tick_params(axis="y", labelcolor=_TEXT)
    _label(ax, PLOT_TITLES["rejections"], "candidates", "")
    return fig


def _lineage(report: Report) -> Any:
    steps = report.lineage or []
    fig, (ax,) = _figure(max(5.0, 1.6 * len(steps)), 3.2)
    xs = list(range(len(steps)))
    ys = [s.fitness for s in steps]
    ax.plot(xs, ys, color=_GRID, linewidth=1.2, zorder=1)
    for x, step in zip(xs, steps):  # an ancestor the verifier rejected (a repair's parent) is a grey cross
        winner = x == len(steps) - 1
        colour = _ACCENT if winner else _COLOURS[Baseline.EAGER] if step.accepted else _REJECTED
        ax.scatter([x], [step.fitness], s=60 if step.accepted else 70, color=colour,
                   marker="o" if step.accepted else "X", zorder=2)
        label = f"{step.id}\n{step.operator or ''}" + ("" if step.accepted else "\n(rejected)")
        ax.annotate(_plain(label), (x, step.fitness), textcoords="offset points", xytext=(0, 8), ha="center",
                    va="bottom", color=_TEXT, fontsize=8)
    ax.set_xticks(xs, [f"gen {s.generation}" if s.generation is not None else "?" for s in steps], color=_TEXT)
    ax.margins(x=0.15)
    top = max(ys) or 1.0
    # room above the highest point for its two- or three-line label (a single point has no range to pad)
    low = -0.06 * top if min(ys) >= 0 else min(ys) - 0.1 * (top - min(ys))  # fitness is never negative: no axis below 0
    ax.set_ylim(low, top + 0.35 * (top - low))
    _label(ax, PLOT_TITLES["lineage"] + " (root first; the winner in red)", "", "fitness")
    return fig
