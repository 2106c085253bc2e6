"""One settings object for the whole tool, read lazily from the environment.

Nothing here runs at import time: call :func:`get_settings` where a value is needed.
Secrets are ``SecretStr`` so that they never appear in logs, reprs or error messages, and
:func:`candidate_environment` (in ``evaluator.processes``) never passes them to candidate processes.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "kernelevo"


class Settings(BaseSettings):
    """Process-wide configuration; every field can be set as ``KERNELEVO_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="KERNELEVO_", extra="ignore", populate_by_name=True)

    # General
    cache_dir: Path = Field(default_factory=_default_cache_dir, description="compile caches and runs")
    disable: bool = Field(default=False, description="turn off runtime dispatch to accepted kernels")

    # Isolation of untrusted code (user repositories, candidate kernels)
    isolation: str = Field(default="required", pattern=r"^(required|off)$",
                           description="'required': refuse untrusted code without a sandbox; 'off': trusted "
                                       "single-user machines only")
    cgroup_parent: Path | None = Field(default=None, description="a delegated cgroup v2 directory for sandboxes")

    # Evaluator
    eval_timeout_s: float = Field(default=300.0, description="wall-clock limit per candidate phase")
    eval_memory_mb: int = Field(default=16384, description="host memory cap per candidate process")

    # LLM proposer (any OpenAI-compatible endpoint)
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_endpoint_name: str = Field(default="default", description="the name repositories use for this endpoint "
                                                                  "(`endpoint:` in .github/kernelevo.yml)")
    llm_max_concurrency: int = Field(default=4, description="chat requests in flight at once")
    llm_timeout_s: float = Field(default=180.0, description="per-request timeout")
    llm_max_retries: int = Field(default=5, description="retries on 429/5xx/timeouts")
    llm_max_tokens: int = Field(default=8192, description="completion token limit per request")
    llm_temperature: float = 0.8

    # Search
    price_table: Path | None = Field(default=None, description="JSON price table overriding the built-in one")
    runs_dir: Path = Field(default=Path("runs"), description="where `kernelevo optimize` writes run directories")

    # GitHub App
    github_api_url: str = "https://api.github.com"
    github_app_id: int | None = None
    github_private_key: SecretStr | None = None
    github_private_key_path: Path | None = None
    webhook_secret: SecretStr | None = None
    bot_login: str = "kernelevo[bot]"
    bot_workers: int = Field(default=4, ge=1, description="threads making GitHub API calls for the bot")
    bot_progress_interval_s: float = Field(default=60.0, gt=0, description="min seconds between check updates")
    bot_max_rate_limit_wait_s: float = Field(default=10.0, ge=0, description="longer waits defer the work")

    # Queue (the Celery worker tier, docs/workers.md)
    redis_url: str = "redis://127.0.0.1:6379/0"
    queue_chunk_s: float = Field(default=600.0, gt=0, description="a search chunk ends at its first candidate "
                                 "boundary after this many seconds, and the next chunk is queued")
    queue_visibility_timeout_s: float = Field(default=3600.0, gt=0, description="seconds before Redis hands an "
                                              "unacknowledged message to another worker; above chunk + eval time")
    queue_heartbeat_s: float = Field(default=10.0, gt=0, description="how often a running chunk renews its lease")
    queue_heartbeat_ttl_s: float = Field(default=60.0, gt=0, description="a chunk silent this long is presumed "
                                         "dead and its job is re-queued by the reaper")
    queue_reaper_interval_s: float = Field(default=30.0, gt=0, description="how often a worker runs the reaper")
    queue_lock_retry_s: float = Field(default=30.0, gt=0, description="delay before a job waiting for another "
                                      "search of the same (repo, op) tries again")
    queue_max_recoveries: int = Field(default=5, ge=0, description="a job whose workers died this many times fails")
    queue_blob_max_bytes: int = Field(default=64 * 2**20, gt=0, description="cap on a job's gzip repo tarball")
    queue_unpack_max_bytes: int = Field(default=512 * 2**20, gt=0, description="cap on the unpacked repository")
    queue_unpack_max_files: int = Field(default=50_000, gt=0, description="cap on files in the repository tarball")
    queue_run_max_bytes: int = Field(default=256 * 2**20, gt=0, description="cap on a job's run copy in Redis")
    queue_blob_ttl_s: float = Field(default=7 * 86400.0, gt=0, description="repo tarballs expire after this "
                                    "long without a submit or chunk using them")
    queue_retention_s: float = Field(default=30 * 86400.0, gt=0, description="finished jobs and their runs are "
                                     "kept this long")
    queue_redis_retry_s: float = Field(default=120.0, ge=0, description="workers retry Redis through an outage "
                                       "this long before giving the chunk up")


class SettingsError(ValueError):
    """The environment holds a setting that is not valid: one line per variable, saying what it must be."""


def describe_errors(exc: ValidationError) -> str:
    """``KERNELEVO_GITHUB_APP_ID: must be a valid integer (got 'abc')``, one line per field; a secret's value
    is never repeated."""
    lines = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        info = Settings.model_fields.get(field)
        secret = info is not None and "SecretStr" in str(info.annotation)
        got = "" if secret or "input" not in error else f" (got {error['input']!r})"
        lines.append(f"KERNELEVO_{field.upper()}: {error['msg'].lower()}{got}")
    return "\n".join(lines)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the settings, reading the environment on first use only; :class:`SettingsError` names what is
    invalid."""
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc)) from None


def reset_settings_cache() -> None:
    """Forget the cached settings (tests change the environment between cases)."""
    get_settings.cache_clear()
