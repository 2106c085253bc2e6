"""Module attribute chains: where ``module.a.b`` really leads, and whether a candidate may go there.

Modules re-export what they import: ``typing.sys``, ``dataclasses.builtins``, ``torch.os``,
``triton.language.core.builtins`` and ``triton.language.extra.module_from_spec`` are all real
attributes, so an allowlisted import is a door to everything its module imported. This module follows a
dotted name through the installed modules themselves, statically (``vars()`` and
``inspect.getattr_static``: no descriptor, property or module ``__getattr__`` of theirs runs), and
refuses a chain that leaves its module's own package (another module, or a function or class defined in
a refused module), plus, for the standard-library helpers and ``kernelevo.cuda``, any member outside the
module's public API (``__all__``) or the members :mod:`evaluator.import_policy` lists.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import types
from dataclasses import dataclass

from evaluator.import_policy import POLICIES, REFUSED_WHY, ModulePolicy

# Attribute names that are always a module the candidate may not reach, whatever object they hang off
# (the fallback when the installed package cannot be inspected, e.g. Triton missing on this machine).
DANGEROUS_MODULE_NAMES = frozenset({
    "sys", "builtins", "os", "posix", "importlib", "gc", "inspect", "ctypes", "subprocess", "socket",
    "threading", "_thread", "multiprocessing", "pkgutil", "platform", "shutil", "pathlib", "io", "marshal",
    "pickle", "weakref", "traceback", "linecache", "code", "runpy", "mmap", "tempfile", "glob",
})  # fmt: skip
# Importing these to inspect them is cheap and runs no candidate code (torch is imported by the tables anyway).
_INSPECTABLE_ROOTS = frozenset({"torch", "triton", "kernelevo", "packaging"} | {p.split(".")[0] for p in POLICIES})
_MISSING = object()


@dataclass(frozen=True)
class ChainFinding:
    """Why a dotted name may not be used: the rule id, the prefix that is refused, and the reason."""

    rule: str
    prefix: str
    why: str


def policy_for(dotted: str) -> tuple[str, ModulePolicy] | None:
    """(module, policy) of the longest prefix of ``dotted`` that the import policy names."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in POLICIES:
            return prefix, POLICIES[prefix]
    return None


@functools.lru_cache(maxsize=64)
def _module(name: str) -> types.ModuleType | None:
    """The installed module ``name`` when it is one this checker may import to inspect, else None."""
    if name in sys.modules:
        return sys.modules[name]
    if name.split(".")[0] not in _INSPECTABLE_ROOTS or ("." in name and name.split(".")[0] in ("torch", "triton")):
        return None  # torch/triton submodules: only as far as importing the package loaded them
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - not installed or broken here: fall back to the name checks
        return None


def _family(root: str, value: object) -> bool:
    name = getattr(value, "__name__", "") if isinstance(value, types.ModuleType) else ""
    return name == root or name.startswith(root + ".")


_FOREIGN_ROOTS = frozenset(REFUSED_WHY) | {"importlib", "builtins", "frozen_importlib", "frozen_importlib_external",
                                           "posixpath", "ntpath", "genericpath", "thread"}


# Modules whose allowed members are defined in a C twin of another name: threading.Lock is _thread.allocate_lock.
_IMPLEMENTED_IN = {"threading": "_thread"}


def _foreign_definition(value: object, family: str) -> str | None:
    """The refused top-level module a function or class comes from (``importlib``, ``os``...), else None."""
    if isinstance(value, type):
        module = inspect.getattr_static(value, "__module__", None)
    elif isinstance(value, types.FunctionType | types.BuiltinFunctionType):
        module = value.__module__  # a C-level slot of these types: no code of theirs runs
    else:
        return None
    if not isinstance(module, str):
        return None
    raw = module.split(".")[0]
    root = raw.lstrip("_")
    if family in (raw, root) or _IMPLEMENTED_IN.get(family) == raw:
        return None
    if raw in _FOREIGN_ROOTS or root in _FOREIGN_ROOTS:
        return "importlib" if "importlib" in root else root
    return None


def _step(value: object, owner: str, part: str) -> object:
    """``value.part`` looked up without running any of the object's code; ``_MISSING`` when unknown."""
    if isinstance(value, types.ModuleType):
        found = vars(value).get(part, _MISSING)
        if found is _MISSING:
            name = f"{owner}.{part}"
            found = sys.modules.get(name, _MISSING)
            if found is _MISSING and name in POLICIES and name.split(".")[0] not in ("torch", "triton"):
                found = _module(name) or _MISSING  # a stdlib submodule such as importlib.util: cheap to load
        return found
    try:
        return inspect.getattr_static(value, part, _MISSING)
    except Exception:  # noqa: BLE001 - exotic objects: treat as unknown
        return _MISSING


def _walk(dotted: str) -> ChainFinding | None:
    """Follow ``dotted`` through the installed modules; a finding when it leaves its package."""
    parts = dotted.split(".")
    root = parts[0]
    value: object = _module(root)
    if value is None:
        return None
    for i in range(1, len(parts)):
        owner, part = ".".join(parts[:i]), parts[i]
        value = _step(value, owner, part)
        if value is _MISSING:
            return None
        prefix = ".".join(parts[: i + 1])
        if isinstance(value, types.ModuleType) and not _family(root, value):
            why = REFUSED_WHY.get(value.__name__.split(".")[0], "is a module the candidate did not import")
            return ChainFinding("banned-import", prefix, f"reaches module `{value.__name__}` through `{owner}` "
                                f"(`{value.__name__}` {why}); import only allowed modules and use their own API")
        foreign = _foreign_definition(value, root)
        if foreign is not None:
            return ChainFinding("banned-import", prefix, f"reaches `{foreign}` code through `{owner}`; use only "
                                "the module's own public API")
        if not isinstance(value, types.ModuleType | type):
            return None  # a function or a value: what hangs off it is judged by the other rules
    return None


def _policy_member(dotted: str) -> ChainFinding | None:
    """A finding when ``dotted`` uses a member of a policy module that the policy does not allow."""
    found = policy_for(dotted)
    if found is None:
        return None
    module, policy = found
    if module == dotted or policy.by_tables:
        return None
    member = dotted[len(module) + 1 :].split(".")[0]
    if member in policy.excluded:
        return ChainFinding(policy.rule, f"{module}.{member}", policy.excluded[member])
    if policy.members is not None:
        if member not in policy.members:
            why = policy.why_limited or f"{module} allows only {', '.join(sorted(policy.members))}"
            return ChainFinding(policy.rule, f"{module}.{member}", f"is not allowed: {why}")
        return None
    mod = _module(module)
    public = getattr(mod, "__all__", None) if mod is not None else None
    if member.startswith("_") and not (member.startswith("__") and member.endswith("__")):
        return ChainFinding("private-api", f"{module}.{member}", f"is private to {module}")
    if isinstance(public, list | tuple) and member not in public and not member.startswith("__"):
        return ChainFinding("banned-import", f"{module}.{member}", f"is not part of {module}'s public API (its "
                            "__all__); use only documented names")
    return None


def _installed_value_is_data(dotted: str) -> bool:
    """True when ``dotted`` is, in the installed modules, a plain value (``sys.platform``: a string), not a module."""
    parts = dotted.split(".")
    value: object = _module(parts[0])
    if value is None:
        return False
    for i in range(1, len(parts)):
        value = _step(value, ".".join(parts[:i]), parts[i])
        if value is _MISSING:
            return False
    return isinstance(value, str | int | float | bool | tuple) and not isinstance(value, types.ModuleType)


@functools.lru_cache(maxsize=4096)
def chain_finding(dotted: str) -> ChainFinding | None:
    """Why the module-rooted dotted name may not be used, or None (other rules may still apply)."""
    parts = dotted.split(".")
    for i, part in enumerate(parts[1:], 1):
        if part in DANGEROUS_MODULE_NAMES and not (i == 1 and parts[0] == "importlib"):
            prefix = ".".join(parts[: i + 1])
            if _installed_value_is_data(prefix):
                continue  # sys.platform is a string, not the platform module
            return ChainFinding("banned-import", prefix, f"reaches module `{part}` through `{'.'.join(parts[:i])}` "
                                f"(`{part}` {REFUSED_WHY.get(part, 'is not on the candidate allowlist')}); "
                                "import only allowed modules and use their own API")
    return _policy_member(dotted) or _walk(dotted)


@functools.lru_cache(maxsize=4096)
def real_module_name(dotted: str) -> str:
    """``dotted`` with its longest module prefix named as that module names itself:
    ``triton.language.core.knobs.getenv`` is ``triton.knobs.getenv`` (``triton.language.core`` imports
    ``triton.knobs``), so every rule about a module judges every way to reach it; ``dotted`` itself where no prefix
    is such a re-export (or the modules cannot be inspected). Followed as :func:`_walk` follows a chain: no code of
    the modules runs."""
    parts = dotted.split(".")
    value: object = _module(parts[0])
    if value is None:
        return dotted
    real = dotted
    for i in range(1, len(parts)):
        value = _step(value, ".".join(parts[:i]), parts[i])
        if not isinstance(value, types.ModuleType):
            break
        name = vars(value).get("__name__")
        if isinstance(name, str) and name != ".".join(parts[: i + 1]):
            real = ".".join([name, *parts[i + 1:]])
    return real


@functools.lru_cache(maxsize=4096)
def is_module(dotted: str) -> bool:
    """True when the dotted name stands for a module (``triton.language``, ``torch.nn.functional``)."""
    if dotted in POLICIES or dotted in sys.modules:
        return True
    parts = dotted.split(".")
    value: object = _module(parts[0])
    if value is None:
        return False
    for i in range(1, len(parts)):
        value = _step(value, ".".join(parts[:i]), parts[i])
        if value is _MISSING:
            return False
    return isinstance(value, types.ModuleType)
