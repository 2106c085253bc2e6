"""What a bot job runs with: the repository's config, narrowed by the comment's options. Pure functions.

The repository's ``.github/kernelevo.yml`` (read from the default branch) sets the budgets, backends,
model and endpoint of every job. A comment's ``--budget``, ``--backend`` and ``--model`` may only lower or
narrow them, unless the commenter has the maintainer permission; what was not applied is said in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot import trust
from bot.commands import Command
from bot.report import code
from kernelevo.repo_config import RepoConfig
from workflows.models import Budgets, JobSpec, Origin, OriginKind, RepoSource

MAINTAINER = "maintain"  # may raise budgets and choose backend and model beyond the config


@dataclass(frozen=True)
class JobSettings:
    """The parts of a :class:`JobSpec` the config and the command decide."""

    backend: str
    model: str | None
    endpoint: str | None
    proposer: str
    budgets: Budgets
    notes: tuple[str, ...] = field(default=())


def config_backend(config: RepoConfig) -> str:
    """The config's backend: its only one, else ``any`` (the search tries both)."""
    return config.backends[0] if len(config.backends) == 1 else "any"


def job_settings(config: RepoConfig, command: Command, *, permission: str, maintainer: str = MAINTAINER) -> JobSettings:
    """The settings of the jobs ``command`` asks for, given the commenter's repository ``permission``."""
    raise_ok = trust.meets(permission, maintainer)
    notes: list[str] = []
    cfg = config.budgets

    tokens = cfg.tokens
    if command.budget is not None:
        if raise_ok or tokens is None or command.budget <= tokens:
            tokens = command.budget
        else:
            notes.append(f"`--budget {command.budget}` is above the repository's `budgets.tokens` ({tokens});"
                         f" using {tokens} (only `{maintainer}` permission may raise it)")

    backend = config_backend(config)
    if command.backend is not None:
        narrows = command.backend in config.backends or (command.backend == "any" and len(config.backends) > 1)
        if raise_ok or narrows:
            backend = command.backend
        else:
            notes.append(f"`--backend {command.backend}` is outside the repository's `backends`"
                         f" ({', '.join(config.backends)}); using {backend} (only `{maintainer}` may change it)")

    model = config.model
    if command.model is not None and command.model != config.model:
        if raise_ok:
            model = command.model
        else:
            notes.append(f"`--model` is ignored: the repository's model ({code(config.model or 'offline proposer')})"
                         f" is used (only `{maintainer}` permission may choose another)")

    no_llm = tokens == 0 or cfg.money_usd == 0
    budgets = Budgets(candidates=cfg.candidates, minutes=cfg.minutes, tokens=tokens or None,
                      usd=cfg.money_usd or None)
    proposer = "llm" if model and not no_llm else "offline"
    return JobSettings(backend=backend, model=model if proposer == "llm" else None, endpoint=config.endpoint,
                       proposer=proposer, budgets=budgets, notes=tuple(notes))


def build_spec(settings: JobSettings, *, repo: str, commit_sha: str, op_id: str, source: RepoSource, device: str,
               origin: Origin) -> JobSpec:
    """One job: one op of one repository at one commit, with the config's endpoint NAME (workers check it)."""
    return JobSpec(repo=repo, commit_sha=commit_sha, op_id=op_id, source=source, device=device,
                   backend=settings.backend, proposer=settings.proposer, model=settings.model,
                   endpoint=settings.endpoint, budgets=settings.budgets, origin=origin)


def pr_origin(*, requested_by: str, installation_id: int, pr_number: int, base_ref: str) -> Origin:
    return Origin(kind=OriginKind.PR, requested_by=requested_by, installation_id=installation_id,
                  pr_number=pr_number, base_ref=base_ref)


def sweep_origin(*, installation_id: int, base_ref: str) -> Origin:
    return Origin(kind=OriginKind.SWEEP, requested_by="schedule", installation_id=installation_id,
                  base_ref=base_ref)
