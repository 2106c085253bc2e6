"""The report as one self-contained HTML file: inline CSS, the plots inline as SVG images, no external asset.

Jinja2 autoescapes every value. Plots are embedded as ``data:image/svg+xml`` images rather than inline ``<svg>``
markup: an image is inert (no script, no link, no style leaks into the page) whatever text a plot holds.
Without matplotlib the report still renders and says plots need the ``plots`` extra.
"""

from __future__ import annotations

import base64

from kernelevo.report import plots
from kernelevo.report.model import Baseline, Report
from kernelevo.report.render_env import html_env, render_template


def _data_uri(svg: bytes) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def render_html(report: Report, images: dict[str, bytes] | None = None) -> str:
    """``report`` as HTML. ``images``: SVG plots by name (default: drawn now, when matplotlib is installed)."""
    plots_note = ""
    if images is None:
        try:
            images = plots.render_plots(report, "svg")
        except plots.PlotsUnavailable as exc:
            images, plots_note = {}, str(exc)
    figures = [(plots.PLOT_TITLES[name], _data_uri(images[name])) for name in plots.plot_names(report)
               if name in images]
    return render_template(html_env(), "report.html.j2", r=report, figures=figures, plots_note=plots_note,
                           baselines=list(Baseline))
