"""``kernelevo serve`` (the GitHub App's webhook service) and ``kernelevo bot-worker`` (its ``bot`` queue).

``serve`` runs the Starlette app under uvicorn and, unless ``--no-bot-worker``, a child
``kernelevo bot-worker`` with the same settings: one command to deploy. The child dies with its parent
(``PR_SET_PDEATHSIG``), and ``serve`` exits when the child does, so a supervisor restarts both together.
Neither process runs a search: jobs go to the worker tier (``kernelevo worker``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import typer

DEVICE_HELP = "where the bot's jobs run: cuda (GPU workers, `kernelevo worker --gpu N`) or cpu (`--device cpu`)"


def register(app: typer.Typer) -> None:
    """Add the ``serve`` and ``bot-worker`` commands to the CLI."""
    app.command("serve")(serve_command)
    app.command("bot-worker")(bot_worker_command)


def _die_with_parent() -> None:
    """In the child, before exec: receive SIGTERM when the parent dies, even by ``kill -9`` (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _settings_or_exit():
    import logging

    from kernelevo.sandbox import harden_trusted_process
    from kernelevo.settings import get_settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    harden_trusted_process()  # the App's key and tokens: not readable by other processes of this user
    return get_settings()


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="interface to listen on (behind a TLS proxy)"),
    port: int = typer.Option(8080, "--port", help="TCP port"),
    device: str = typer.Option("cuda", "--device", help=DEVICE_HELP),
    bot_worker: bool = typer.Option(True, "--bot-worker/--no-bot-worker",
                                    help="also run the bot-queue worker as a child process"),
    delivery_lease_s: float = typer.Option(30.0, "--delivery-lease-s", min=1.0,
                                           help="how long after a crash a redelivery of an unfinished delivery"
                                                " is refused as 'being handled'"),
    tick_s: float = typer.Option(60.0, "--tick-s", min=1.0, help="the bot worker's reconcile/sweep interval"),
) -> None:
    """Serve POST /webhook and GET /healthz for the KernelEvo GitHub App (and its bot-queue worker).

    Needs KERNELEVO_WEBHOOK_SECRET, KERNELEVO_GITHUB_APP_ID, the App's private key
    (KERNELEVO_GITHUB_PRIVATE_KEY or KERNELEVO_GITHUB_PRIVATE_KEY_PATH) and Redis
    (KERNELEVO_REDIS_URL); see docs/github-app.md.
    """
    import logging

    import uvicorn

    from bot.service import ConfigurationError, build

    settings = _settings_or_exit()
    try:
        asgi, ctx = build(settings, device=device, delivery_lease_s=delivery_lease_s)
    except ConfigurationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    work = ctx.work
    if work is None:  # the web process runs its handlers on this queue
        raise RuntimeError("bot.service.build returned a context without a work queue")
    child = None
    stopping, child_died = threading.Event(), threading.Event()
    if bot_worker:
        child = subprocess.Popen([sys.executable, "-m", "kernelevo.cli", "bot-worker", "--device", device,
                                  "--tick-s", str(tick_s)], preexec_fn=_die_with_parent)

        def watch() -> None:
            code = child.wait()
            if not stopping.is_set():
                child_died.set()
                logging.getLogger("kernelevo.serve").error(
                    "the bot worker (pid %d) exited with %s; stopping so that the supervisor restarts both",
                    child.pid, code)
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, name="kernelevo-bot-worker-watch", daemon=True).start()
    try:
        uvicorn.run(asgi, host=host, port=port, log_level="info")
    finally:
        stopping.set()
        work.stop()
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
    if child_died.is_set():
        raise typer.Exit(1)


def bot_worker_command(
    device: str = typer.Option("cuda", "--device", help=DEVICE_HELP + " (the jobs sweeps queue)"),
    loglevel: str = typer.Option("info", "--loglevel", help="debug, info, warning, error"),
    name: str | None = typer.Option(None, "--name", help="Celery node name [bot-PID@host]"),
    tick_s: float = typer.Option(60.0, "--tick-s", min=1.0, help="reconcile/sweep interval in seconds"),
) -> None:
    """Serve the bot queue: publish finished jobs, update check runs and status comments, run sweeps.

    Same settings as `kernelevo serve` (it holds the App's key); started by it unless --no-bot-worker.
    """
    from bot.service import ConfigurationError
    from bot.worker import run_bot_worker

    settings = _settings_or_exit()
    try:
        run_bot_worker(settings, device=device, loglevel=loglevel, name=name, tick_s=tick_s)
    except ConfigurationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
