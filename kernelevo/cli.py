"""The ``kernelevo`` command line.

Each subcommand lives in its own module under ``kernelevo.commands`` and registers itself on the
app; heavy imports (torch, triton, the evaluator) happen inside the commands, so ``--help`` is fast.
"""

from __future__ import annotations

import importlib

import typer

# Plain help (no Rich markup mode): Rich would read ``[default: ...]`` and ``[runs/]`` in help texts as markup
# tags and drop them, and it shows flags as ``<bool>``; ``-h`` is the short form every CLI user tries first.
app = typer.Typer(
    name="kernelevo",
    help="Turn annotated PyTorch ops into verified, faster Triton and CUDA kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from kernelevo import __version__

        typer.echo(f"kernelevo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="print the version and exit"),
) -> None:
    """Turn annotated PyTorch ops into verified, faster Triton and CUDA kernels."""

# One module per subcommand; each defines ``register(app)``.
COMMAND_MODULES = [
    "kernelevo.commands.eval_cmd",
    "kernelevo.commands.discover_cmd",
    "kernelevo.commands.verify_cmd",
    "kernelevo.commands.serve_cmd",
    "kernelevo.commands.optimize_cmd",
    "kernelevo.commands.worker_cmd",
    "kernelevo.commands.jobs_cmd",
    "kernelevo.commands.report_cmd",
]


def _register_all() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_all()


def main() -> None:
    """Console-script entry point; an invalid setting in the environment is one clear message and exit 2."""
    from kernelevo.settings import SettingsError

    try:
        app()
    except SettingsError as exc:
        typer.echo(f"kernelevo: invalid settings in the environment:\n{exc}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
