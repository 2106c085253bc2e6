"""One settings object for the whole tool, read lazily from the environment and from secret files.

Nothing here runs at import time: call :func:`get_settings` where a value is needed. Every field is
``KERNELEVO_<NAME>`` in the environment, or a file named ``kernelevo_<name>`` in :data:`SECRETS_DIR`
(Docker and Compose mount their secrets there); the environment wins where both are given. Secrets are
``SecretStr`` so that they never appear in logs, reprs or error messages; they never reach a sandboxed
process either: sandboxes get an allowlisted environment (``evaluator.roles.sandbox_environment``) and no
view of ``/run`` (``kernelevo.sandbox.policy``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

# Where Docker, Compose and Kubernetes mount secrets: one file per setting, named kernelevo_<field>.
SECRETS_DIR = Path("/run/secrets")
# Characters a Redis password may hold: printable ASCII without spaces (the secret file is read stripped, and
# the Redis container reads the same file into --requirepass).
_REDIS_PASSWORD = re.compile(r"^[!-~]{8,512}$")
# The status page's operator token is a password sent with every request: shorter ones could be guessed.
STATUS_TOKEN_MIN_CHARS = 16


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "kernelevo"


class Settings(BaseSettings):
    """Process-wide configuration; every field can be set as ``KERNELEVO_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="KERNELEVO_", extra="ignore", populate_by_name=True)

    # General
    cache_dir: Path = Field(default_factory=_default_cache_dir, description="compile caches and runs")
    disable: bool = Field(default=False, description="turn off runtime dispatch to accepted kernels")
    log: str = Field(default="", description="comma-separated debug topics printed to stderr: 'dispatch' (each "
                                             "dispatch decision of kernelevo.dispatch) or 'all'")

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
    # Commands per window, counted in Redis (bot.state.within_limit): what one commenter or one PR can make the
    # App spend on GitHub's API (5,000 calls an hour per installation) and on the workers.
    bot_user_commands_per_window: int = Field(default=10, ge=1, description="commands one commenter may give per "
                                              "repository and window (every comment counts, trusted or not)")
    bot_pr_commands_per_window: int = Field(default=30, ge=1, description="commands per PR and window (trusted "
                                            "commenters' only, so strangers cannot use up a PR's allowance)")
    bot_rate_window_s: int = Field(default=3600, ge=60, description="the rate limits' window, in seconds")

    # Status page (bot.status_page, docs/status-page.md)
    status_token: SecretStr | None = Field(default=None, description="the operator view's token (at least "
                                           f"{STATUS_TOKEN_MIN_CHARS} characters; a secret file); unset: the "
                                           "operator view is off")
    status_public_repos: str = Field(default="", description="comma- or space-separated owner/name whose jobs "
                                     "anonymous visitors see by name (every other job is only counted)")

    # Queue (the Celery worker tier, docs/workers.md)
    redis_url: str = Field(default="redis://127.0.0.1:6379/0", repr=False,
                           description="where Redis is; its password goes in redis_password (a secret file), "
                                       "and the URL clients get then carries it (so reprs leave the URL out)")
    redis_password: SecretStr | None = Field(default=None, description="Redis's requirepass (a secret file)")
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

    @field_validator("llm_api_key", "github_private_key", "webhook_secret", "redis_password", "status_token",
                     mode="after")
    @classmethod
    def _empty_secret_is_none(cls, value: SecretStr | None) -> SecretStr | None:
        """An empty secret file (an LLM endpoint without a key) means "not set", not an empty credential."""
        return None if value is not None and not value.get_secret_value() else value

    @field_validator("status_token", mode="after")
    @classmethod
    def _status_token_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        """Refused at start-up rather than quietly leaving the operator view off: the operator learns it at once.
        Runs after :meth:`_empty_secret_is_none` (validators of a field run in the order they are defined)."""
        if value is None:
            return None
        token = value.get_secret_value().strip()
        if len(token) < STATUS_TOKEN_MIN_CHARS:
            raise ValueError(f"must be at least {STATUS_TOKEN_MIN_CHARS} characters (e.g. `python3 -c 'import "
                             "secrets; print(secrets.token_urlsafe(32))'`), or unset to leave the operator view off")
        return SecretStr(token)

    @field_validator("redis_password", mode="after")
    @classmethod
    def _redis_password_fits(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if value is None:
            return None
        if not _REDIS_PASSWORD.match(value.get_secret_value()):
            raise ValueError("must be 8 to 512 printable ASCII characters without spaces (e.g. "
                             "`python3 -c 'import secrets; print(secrets.token_hex(32))'`)")
        url = info.data.get("redis_url")
        if isinstance(url, str) and "@" in urlsplit(url).netloc:
            raise ValueError("the Redis URL (KERNELEVO_REDIS_URL) already holds credentials: give the password in "
                             "one place (the kernelevo_redis_password secret file) and leave it out of the URL")
        return value

    @model_validator(mode="after")
    def _redis_url_with_password(self) -> Settings:
        """Clients (redis-py, Celery) take one URL: put the password into it, percent-encoded."""
        if self.redis_password is not None and "@" not in urlsplit(self.redis_url).netloc:
            scheme, sep, rest = self.redis_url.partition("://")
            password = quote(self.redis_password.get_secret_value(), safe="")
            self.redis_url = f"{scheme}{sep}:{password}@{rest}"
        return self

    @field_serializer("redis_url")
    def _redis_url_without_password(self, url: str) -> str:
        """Dumps show the URL as it was given: the password stays in ``redis_password`` (a ``SecretStr``), so a
        dump neither leaks it nor, validated again, holds it twice."""
        if self.redis_password is None:
            return url
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


class SettingsError(ValueError):
    """The environment or a secret file holds a setting that is not valid: one line per variable, saying what it
    must be."""


def describe_errors(exc: ValidationError) -> str:
    """``KERNELEVO_GITHUB_APP_ID: must be a valid integer (got 'abc')``, one line per field; a secret's value
    is never repeated."""
    lines = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        info = Settings.model_fields.get(field)
        secret = info is not None and "SecretStr" in str(info.annotation)
        got = "" if secret or "input" not in error else f" (got {error['input']!r})"
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"KERNELEVO_{field.upper()}: {message[:1].lower()}{message[1:]}{got}")
    return "\n".join(lines)


def load_settings(secrets_dir: Path | None = SECRETS_DIR) -> Settings:
    """Read the environment and the secret files of ``secrets_dir`` (skipped where it does not exist: a
    developer's machine, a sandbox); :class:`SettingsError` names what is invalid or unreadable."""
    use = secrets_dir if secrets_dir is not None and secrets_dir.is_dir() else None
    try:
        return Settings(_secrets_dir=use)  # type: ignore[call-arg]  # pydantic-settings init option, not a field
    except ValidationError as exc:
        raise SettingsError(describe_errors(exc)) from None
    except OSError as exc:  # a secret file (or the folder) this user may not read
        raise SettingsError(f"cannot read the secret files in {use}: {exc.strerror} ({exc.filename}); make them "
                            "readable by the service's group (deploy/secrets/README.md)") from None


@lru_cache(maxsize=1)
def _read_once() -> Settings | SettingsError:
    try:
        return load_settings()
    except SettingsError as exc:  # kept too: the op dispatcher asks on every call of a user's op
        return exc


def get_settings() -> Settings:
    """The settings, read on first use only (:func:`load_settings` from :data:`SECRETS_DIR`); invalid settings
    raise the same :class:`SettingsError` on every call without reading the environment and the files again."""
    read = _read_once()
    if isinstance(read, SettingsError):
        raise read
    return read


def reset_settings_cache() -> None:
    """Forget the cached settings (tests change the environment between cases)."""
    _read_once.cache_clear()
