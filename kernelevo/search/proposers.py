"""Choosing a proposer by name: ``offline`` (default without an endpoint), ``llm``, or ``module:factory``.

The ``module:factory`` form loads any callable returning a :class:`Proposer` (a plug-in seam, and how
tests drive the CLI with a scripted proposer).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TypeGuard

from kernelevo.search.proposer import Proposer
from kernelevo.settings import get_settings


class ProposerError(ValueError):
    """The proposer named cannot be built; the message says what is missing."""


def default_proposer_name() -> str:
    """``llm`` when an endpoint is configured (KERNELEVO_LLM_BASE_URL), else ``offline``."""
    return "llm" if get_settings().llm_base_url else "offline"


def _load(spec: str, what: str) -> Callable[[], object]:
    """The factory ``module:attr`` names (a class or function called without arguments)."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProposerError(f"{what}: cannot import {module_name} ({exc})") from exc
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise ProposerError(f"{what}: {module_name} has no {attr!r}") from None
    if not callable(factory):
        raise ProposerError(f"{what}: {spec} is a {type(factory).__name__}, not a proposer class or factory")
    return factory  # type: ignore[no-any-return]  # checked callable above


def _is_proposer(obj: object) -> TypeGuard[Proposer]:
    return callable(getattr(obj, "propose", None))


def make_proposer(name: str | None = None, *, model: str | None = None) -> Proposer:
    """Build the proposer called ``name`` (None: the default for this configuration); ``model`` picks the
    LLM model for this search (the offline proposer has none)."""
    name = name or default_proposer_name()
    if name == "offline":
        factory = _load("kernelevo.search.offline.sandboxed:SandboxedOfflineProposer", "the offline proposer")
    elif name == "llm":
        if not get_settings().llm_base_url:
            raise ProposerError(
                "the llm proposer needs an endpoint: set KERNELEVO_LLM_BASE_URL and KERNELEVO_LLM_MODEL"
                " (and KERNELEVO_LLM_API_KEY if it wants one), or use --proposer offline"
            )
        try:
            from kernelevo.search.llm import LLMProposer
        except ImportError as exc:
            raise ProposerError(f"the llm proposer: cannot import kernelevo.search.llm ({exc})") from exc
        factory = lambda: LLMProposer.from_settings(model=model)  # noqa: E731
    elif ":" in name:
        factory = _load(name, f"proposer {name!r}")
    else:
        raise ProposerError(f"unknown proposer {name!r}: use offline, llm or MODULE:FACTORY")
    proposer = factory()
    if not _is_proposer(proposer):
        raise ProposerError(f"proposer {name!r} has no propose(request) method")
    return proposer
