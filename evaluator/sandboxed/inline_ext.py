"""``load_inline`` candidates: one build directory per source hash, stale locks removed, builds counted.

``torch.utils.cpp_extension.load_inline`` guards each build with a ``lock`` file that a killed build
leaves behind, hanging every later load of that name on a lock no process holds. The verifier
therefore gives every distinct (sources, flags, torch version) its own directory and name, removes a
lock left by a build that no longer runs, bounds ninja's parallelism, and hands the candidate a module
whose function calls count as kernel launches.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

STALE_LOCK_S = 900.0  # no honest build takes this long; a lock older than this was left by a killed build


def build_key(kwargs: dict[str, Any], torch_version: str) -> str:
    """A stable hash of everything that changes the compiled extension."""
    relevant = {k: kwargs.get(k) for k in ("cpp_sources", "cuda_sources", "functions", "extra_cflags",
                                            "extra_cuda_cflags", "extra_ldflags", "extra_include_paths",
                                            "with_cuda")}
    blob = json.dumps(relevant, sort_keys=True, default=str) + torch_version
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def clear_stale_lock(build_dir: Path, now: float | None = None) -> bool:
    """Remove ``build_dir/lock`` when it is older than :data:`STALE_LOCK_S`; True when removed."""
    lock = build_dir / "lock"
    try:
        age = (now or time.time()) - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    if age > STALE_LOCK_S:
        lock.unlink(missing_ok=True)
        return True
    return False


def install(counter: Any, root: Path) -> None:
    """Replace ``load_inline`` (before the candidate is imported) with the hashed, counted version."""
    import torch
    import torch.utils.cpp_extension as cpp

    original = cpp.load_inline

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        if args:  # positional (name, cpp_sources, cuda_sources, functions, ...)
            names = ["name", "cpp_sources", "cuda_sources", "functions"]
            kwargs.update(dict(zip(names, args)))
        key = build_key(kwargs, torch.__version__)
        build_dir = root / key
        build_dir.mkdir(parents=True, exist_ok=True)
        clear_stale_lock(build_dir)
        kwargs["name"] = f"kernelevo_{key}"
        kwargs["build_directory"] = str(build_dir)
        kwargs.setdefault("verbose", False)
        return counter.wrap_extension(original(**kwargs))

    cpp.load_inline = load_inline
