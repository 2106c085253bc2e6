"""``kernelevo report``: render a run (its directory, or a search result / job record JSON) for people.

Markdown (GitHub-flavoured, as the bot puts it in a PR) or one self-contained HTML file. With ``--out`` the
files are written there (Markdown with its PNG plots under ``plots/``); without it the report goes to stdout
(Markdown without plots). Exit 0 when written, 2 when the run cannot be read.
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)


def report_command(
    run: Path = typer.Argument(..., metavar="RUN", help="a run directory (runs/...), its summary.json, or a job"
                                                       " record JSON (kernelevo jobs show ID --json)"),
    fmt: str = typer.Option("md", "--format", help="md (GitHub Markdown) or html (one self-contained file)"),
    out: Path | None = typer.Option(None, "--out", help="write report.md (+ plots/) or report.html into DIR",
                                    metavar="DIR"),
) -> None:
    """Render RUN's report: result, per-case timings, correctness evidence, environment, cost, how to reproduce."""
    from kernelevo.report import plots
    from kernelevo.report.build import RecordsError, build, read_records
    from kernelevo.report.html import render_html
    from kernelevo.report.markdown import Links, Target, render_markdown

    if fmt not in ("md", "html"):
        typer.echo(f"kernelevo report: --format must be md or html, not {fmt!r}", err=True)
        raise typer.Exit(2)
    try:
        report = build(read_records(run))
    except RecordsError as exc:
        typer.echo(f"kernelevo report: {exc}", err=True)
        raise typer.Exit(2) from None
    if fmt == "html":
        text = render_html(report)
        if out is None:
            typer.echo(text, nl=False)
            return
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.html").write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out / 'report.html'}")
        return
    images: dict[str, bytes] = {}
    if out is not None:
        if plots.available():
            images = plots.render_plots(report, "png")
        else:
            typer.echo(f"kernelevo report: no plots ({plots.INSTALL_HINT})", err=True)
    links = Links(plot=lambda name: f"plots/{name}.png" if name in images else None)
    text = render_markdown(report, Target.FILE, links)
    if out is None:
        typer.echo(text, nl=False)
        return
    (out / "plots").mkdir(parents=True, exist_ok=True)
    for name, data in images.items():
        (out / "plots" / f"{name}.png").write_bytes(data)
    (out / "report.md").write_text(text, encoding="utf-8")
    typer.echo(f"wrote {out / 'report.md'}" + (f" and {len(images)} plots in {out / 'plots'}" if images else ""))
