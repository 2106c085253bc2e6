"""Wiring the real service together from settings (``kernelevo serve`` and ``kernelevo bot-worker``).

:func:`missing_settings` lists every setting the App cannot start without, so the error names all of
them at once; :func:`build` creates the web process (GitHub client factory, Redis-backed state, the
worker tier's jobs client, work queue, ASGI app); :func:`worker_context` the bot worker's context.
Both sides hold the App's key; the search workers never do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kernelevo.settings import Settings

if TYPE_CHECKING:  # annotations only: the modules are imported when the service is built
    from starlette.applications import Starlette

    from bot.context import BotContext, WorkspaceProvider
    from bot.workqueue import WorkQueue
    from workflows.client import JobsClient

REQUIRED = {
    "webhook_secret": "KERNELEVO_WEBHOOK_SECRET (the App's webhook secret)",
    "github_app_id": "KERNELEVO_GITHUB_APP_ID (the App's numeric id)",
}
PRIVATE_KEY = "KERNELEVO_GITHUB_PRIVATE_KEY or KERNELEVO_GITHUB_PRIVATE_KEY_PATH (the App's PEM key)"
DEVICES = ("cuda", "cpu")

T = TypeVar("T")


def missing_settings(settings: Settings) -> list[str]:
    """Every required setting that is unset, as the environment variable a person must set."""
    missing = [text for name, text in REQUIRED.items() if not getattr(settings, name)]
    if not settings.github_private_key and not settings.github_private_key_path:
        missing.append(PRIVATE_KEY)
    elif settings.github_private_key_path and not Path(settings.github_private_key_path).is_file():
        missing.append(f"KERNELEVO_GITHUB_PRIVATE_KEY_PATH points to {settings.github_private_key_path}, "
                       "which is not a file")
    return missing


class ConfigurationError(RuntimeError):
    """The service cannot start; the message lists what to set."""


def _required(value: T | None, setting: str) -> T:
    """The value of a setting :func:`_check` requires (it has already named every unset one at once)."""
    if value is None:
        raise ConfigurationError(f"kernelevo serve cannot start; set:\n  {setting}")
    return value


def _private_key(settings: Settings) -> str:
    if settings.github_private_key:
        return settings.github_private_key.get_secret_value()
    return Path(_required(settings.github_private_key_path, PRIVATE_KEY)).read_text()


def _check(settings: Settings, device: str) -> None:
    missing = missing_settings(settings)
    if missing:
        raise ConfigurationError("kernelevo serve cannot start; set:\n  " + "\n  ".join(missing))
    if device not in DEVICES:
        raise ConfigurationError(f"--device must be one of {', '.join(DEVICES)}, not {device!r}")
    problem = private_key_problem(_private_key(settings))
    if problem:
        raise ConfigurationError(f"kernelevo serve cannot start: {PRIVATE_KEY} {problem}")


def private_key_problem(pem: str) -> str | None:
    """Why ``pem`` cannot sign the App's JWTs (None: it can); checked at start-up, not at the first webhook."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    try:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        return f"is not a PEM private key without a passphrase ({type(exc).__name__}); download the App's key again"
    if not isinstance(key, rsa.RSAPrivateKey):
        return "is not an RSA key (GitHub Apps sign their JWTs with RS256)"
    return None


def _jobs(settings: Settings, app: Any = None) -> JobsClient:
    from workflows.client import JobsClient
    from workflows.redis_conn import QueueUnavailable

    try:
        return JobsClient.from_settings(settings, check=True, app=app)
    except QueueUnavailable as exc:
        raise ConfigurationError(str(exc)) from None


def base_context(settings: Settings, *, device: str = "cuda", celery_app: Any = None,
                 workspace_provider: WorkspaceProvider | None = None, work: WorkQueue | None = None) -> BotContext:
    """The :class:`~bot.context.BotContext` both sides share (GitHub, Redis state, jobs client)."""
    _check(settings, device)
    from bot.auth import InstallationTokens
    from bot.context import BotContext
    from bot.github_api import GitHubAPI, token_exchange
    from bot.state import BotState
    from bot.workspace import tarball_workspace

    jobs = _jobs(settings, celery_app)
    api = settings.github_api_url
    app_id = _required(settings.github_app_id, REQUIRED["github_app_id"])
    tokens = InstallationTokens(app_id, _private_key(settings), token_exchange(api))
    return BotContext(
        github=lambda inst: GitHubAPI(api, inst, tokens, max_wait_s=settings.bot_max_rate_limit_wait_s),
        jobs=jobs, state=BotState(jobs.store.client),
        workspace=workspace_provider or tarball_workspace(
            api, tokens.get, max_unpacked_bytes=settings.queue_unpack_max_bytes,
            max_files=settings.queue_unpack_max_files, root=settings.cache_dir), work=work,
        bot_login=settings.bot_login, progress_interval_s=settings.bot_progress_interval_s, device=device,
        max_unpacked_bytes=settings.queue_unpack_max_bytes, max_files=settings.queue_unpack_max_files,
        forget_installation=tokens.forget)


def build(settings: Settings, *, device: str = "cuda", workspace_provider: WorkspaceProvider | None = None,
          delivery_lease_s: float | None = None) -> tuple[Starlette, BotContext]:
    """The web process: the ASGI app and its context; raises :class:`ConfigurationError`."""
    _check(settings, device)
    from bot.app import create_app
    from bot.deliveries import LEASE_S, Deliveries
    from bot.status_page import StatusAccess
    from bot.workqueue import WorkQueue

    work = WorkQueue(settings.bot_workers)
    try:
        ctx = base_context(settings, device=device, workspace_provider=workspace_provider, work=work)
    except Exception:
        work.stop()
        raise
    deliveries = Deliveries(ctx.state, lease_s=delivery_lease_s or LEASE_S)
    secret = _required(settings.webhook_secret, REQUIRED["webhook_secret"]).get_secret_value()
    token = settings.status_token.get_secret_value() if settings.status_token else None
    access = StatusAccess.from_values(token=token, public_repos=settings.status_public_repos,
                                      api_url=settings.github_api_url)
    app = create_app(secret=secret, deliveries=deliveries, work=work, ctx=ctx, status_access=access)
    return app, ctx


def worker_context(settings: Settings, *, device: str, celery_app: Any) -> BotContext:
    """The bot worker's context (no work queue: Celery runs its tasks)."""
    return base_context(settings, device=device, celery_app=celery_app)
