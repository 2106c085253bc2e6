"""``kernelevo serve``: run the GitHub App's webhook service (Starlette + uvicorn)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the CLI."""
    app.command("serve")(serve_command)


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="interface to listen on (behind a TLS proxy)"),
    port: int = typer.Option(8080, "--port", help="TCP port"),
) -> None:
    """Serve POST /webhook and GET /healthz for the KernelEvo GitHub App.

    Needs KERNELEVO_WEBHOOK_SECRET, KERNELEVO_GITHUB_APP_ID and the App's private key
    (KERNELEVO_GITHUB_PRIVATE_KEY or KERNELEVO_GITHUB_PRIVATE_KEY_PATH); see docs/github-app.md.
    """
    import logging

    import uvicorn

    from bot.service import ConfigurationError, build
    from kernelevo.settings import get_settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asgi, _ = build(get_settings())
    except ConfigurationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    uvicorn.run(asgi, host=host, port=port, log_level="info")
