"""Wiring the real service together from settings (``kernelevo serve``).

:func:`missing_settings` lists every setting the App cannot start without, so the error names all
of them at once; :func:`build` creates the GitHub client factory, delivery store, job runner, work
queue and the ASGI app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelevo.settings import Settings

REQUIRED = {
    "webhook_secret": "KERNELEVO_WEBHOOK_SECRET (the App's webhook secret)",
    "github_app_id": "KERNELEVO_GITHUB_APP_ID (the App's numeric id)",
}


def missing_settings(settings: Settings) -> list[str]:
    """Every required setting that is unset, as the environment variable a person must set."""
    missing = [text for name, text in REQUIRED.items() if not getattr(settings, name)]
    if not settings.github_private_key and not settings.github_private_key_path:
        missing.append("KERNELEVO_GITHUB_PRIVATE_KEY or KERNELEVO_GITHUB_PRIVATE_KEY_PATH (the App's PEM key)")
    elif settings.github_private_key_path and not Path(settings.github_private_key_path).is_file():
        missing.append(f"KERNELEVO_GITHUB_PRIVATE_KEY_PATH points to {settings.github_private_key_path}, "
                       "which is not a file")
    return missing


class ConfigurationError(RuntimeError):
    """The service cannot start; the message lists what to set."""


def _private_key(settings: Settings) -> str:
    if settings.github_private_key:
        return settings.github_private_key.get_secret_value()
    return Path(settings.github_private_key_path).read_text()


def build(settings: Settings, *, workspace_provider: Any = None, search: Any = None,
          deliveries: Any = None) -> tuple[Any, Any]:
    """The ASGI app and its :class:`~bot.context.BotContext`; raises :class:`ConfigurationError`."""
    missing = missing_settings(settings)
    if missing:
        raise ConfigurationError("kernelevo serve cannot start; set:\n  " + "\n  ".join(missing))
    from bot.app import create_app
    from bot.auth import InstallationTokens
    from bot.context import BotContext
    from bot.github_api import GitHubAPI, token_exchange
    from bot.jobflow import BotJobHooks
    from bot.workqueue import WorkQueue
    from bot.workspace import tarball_workspace
    from kernelevo.jobs import LocalRunner

    if deliveries is None:
        deliveries = _delivery_store(settings)
    api = settings.github_api_url
    tokens = InstallationTokens(settings.github_app_id, _private_key(settings), token_exchange(api))
    installations: dict[str, int] = {}
    workspace = workspace_provider or tarball_workspace(api, lambda repo: tokens.get(installations[repo]))
    hooks = BotJobHooks()
    runner = LocalRunner(workspace, search=search, hooks=hooks)
    work = WorkQueue(settings.bot_workers)
    ctx = BotContext(
        github=lambda inst: GitHubAPI(api, inst, tokens, max_wait_s=settings.bot_max_rate_limit_wait_s),
        jobs=runner, work=work, workspace=workspace, bot_login=settings.bot_login,
        progress_interval_s=settings.bot_progress_interval_s, forget_installation=tokens.forget,
        installations=installations,
    )
    hooks.ctx = ctx
    app = create_app(secret=settings.webhook_secret.get_secret_value(), deliveries=deliveries, work=work, ctx=ctx)
    return app, ctx


def _delivery_store(settings: Settings) -> Any:
    from bot.deliveries import MemoryDeliveryStore, RedisDeliveryStore

    if settings.bot_delivery_store == "memory":
        return MemoryDeliveryStore()
    import redis

    client = redis.Redis.from_url(settings.redis_url)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise ConfigurationError(f"cannot reach Redis at KERNELEVO_REDIS_URL ({exc}); start Redis or set "
                                 "KERNELEVO_BOT_DELIVERY_STORE=memory for a single process") from None
    return RedisDeliveryStore(client)
