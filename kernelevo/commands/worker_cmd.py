"""``kernelevo worker``: serve search chunks from the Redis queue (one worker per GPU, or a CPU worker)."""

from __future__ import annotations

import os
import socket

import typer


def register(app: typer.Typer) -> None:
    """Add the ``worker`` command to the CLI."""
    app.command("worker")(worker_command)


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"kernelevo worker: {message}", err=True)
    return typer.Exit(code)


def worker_command(
    gpu: int | None = typer.Option(None, "--gpu", help="serve the gpu queue on this GPU (CUDA_VISIBLE_DEVICES=N)"),
    device: str | None = typer.Option(None, "--device", help="cpu: serve the cpu queue (Triton interpreter)"),
    queues: str | None = typer.Option(None, "--queues", help="comma-separated queues [gpu for --gpu, cpu for --device"
                                      " cpu]; add 'bot' to also serve the bot's light work"),
    name: str | None = typer.Option(None, "--name", help="Celery node name [gpuN@host, or cpu-PID@host]"),
    loglevel: str = typer.Option("info", "--loglevel", help="debug, info, warning, error"),
) -> None:
    """Run a Celery worker for KernelEvo's search jobs (see docs/workers.md).

    Reads KERNELEVO_REDIS_URL and the KERNELEVO_QUEUE_* settings; holds no GitHub credential.
    """
    from kernelevo.settings import get_settings, reset_settings_cache
    from workflows.celery_app import check_timings
    from workflows.redis_conn import QueueUnavailable, connect, redact_url
    from workflows.worker import github_credentials, plan_worker

    try:
        plan = plan_worker(gpu=gpu, device=device, queues=queues, name=name, hostname=socket.gethostname(),
                           pid=os.getpid(), loglevel=loglevel)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    dropped = github_credentials(os.environ)
    for variable in dropped:  # before Celery forks anything: no chunk process may inherit them
        del os.environ[variable]
    os.environ.update(plan.env)
    reset_settings_cache()
    settings = get_settings()
    try:
        check_timings(settings)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    try:
        connect(settings.redis_url).close()
    except QueueUnavailable as exc:
        raise _fail(str(exc), 3) from None
    if dropped:
        typer.echo(f"kernelevo worker: ignoring {', '.join(dropped)} (workers hold no GitHub credential)", err=True)
    typer.echo(f"kernelevo worker {plan.node}: device {plan.device}, queues {','.join(plan.queues)},"
               f" Redis {redact_url(settings.redis_url)}", err=True)
    from kernelevo.sandbox import harden_trusted_process
    from workflows.celery_app import app as celery_app

    harden_trusted_process()  # no process of the same user outside a sandbox reads the Redis URL or LLM key here
    celery_app.worker_main(plan.argv)
