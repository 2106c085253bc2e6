"""The project's shape, checked like its behaviour: import directions (ARCHITECTURE.md, enforced by import-linter
contracts in pyproject.toml) and types (mypy, configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]' installs it")
    return found


def test_imports_follow_the_layers_of_architecture_md():
    done = subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_a_contract_that_is_broken_fails_the_check(tmp_path):
    """The check can fail: a module of the core importing the bot breaks the core's contract."""
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    contract = '[[tool.importlinter.contracts]]\nname = "the core imports none of the layers above it"'
    assert contract in config
    tree = tmp_path / "tree"
    for package in ("kernelevo", "evaluator", "workflows", "bot"):
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "pyproject.toml").write_text(config, encoding="utf-8")
    with (tree / "kernelevo" / "pyast.py").open("a", encoding="utf-8") as module:
        module.write("\nimport bot.trust  # noqa: E402,F401\n")
    done = subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=tree, capture_output=True, text=True,
                          env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(tree)})
    assert done.returncode != 0
    assert "kernelevo.pyast -> bot.trust" in done.stdout


def test_the_packages_type_check():
    done = subprocess.run([_tool("mypy"), "--no-incremental", "--cache-dir", "/dev/null"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]


_UNBUILT_MODELS = """
import importlib, pkgutil, sys
from pydantic import BaseModel
packages = sys.argv[1:]
for package in packages:
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        importlib.import_module(info.name)
seen, stack = set(), [BaseModel]
while stack:
    for sub in stack.pop().__subclasses__():
        if sub not in seen:
            seen.add(sub)
            stack.append(sub)
ours = [model for model in seen if model.__module__.split(".")[0] in packages]
print(len(ours))
for model in ours:
    if not model.__pydantic_complete__:
        print(f"{model.__module__}.{model.__qualname__}")
"""


def _unbuilt_models(cwd: Path, packages: list[str]) -> tuple[int, list[str]]:
    """A fresh interpreter imports every module of ``packages``; returns how many pydantic models they define and
    which of them are not built yet (deferred, or waiting on a forward reference)."""
    done = subprocess.run([sys.executable, "-c", _UNBUILT_MODELS, *packages], cwd=cwd, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)})
    assert done.returncode == 0, done.stderr[-4000:]
    count, *unbuilt = done.stdout.split()
    return int(count), unbuilt


def test_every_pydantic_model_is_built_at_import():
    """A model built on first use is rebuilt by whichever thread uses it first, and pydantic's rebuild is not
    thread-safe: the search judges several candidates at once, and CI saw a judge thread fail with "BaseModel
    cannot be instantiated directly" while another rebuilt ``Verdict``. Import time is under the import lock."""
    count, unbuilt = _unbuilt_models(ROOT, ["kernelevo", "evaluator", "workflows", "bot"])
    assert count > 50  # the walk found the project's models
    assert unbuilt == []


def test_a_deferred_model_fails_the_build_check(tmp_path):
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text(
        "from pydantic import BaseModel, ConfigDict\n\n\n"
        "class Deferred(BaseModel):\n    model_config = ConfigDict(defer_build=True)\n    x: int\n\n\n"
        "class Built(BaseModel):\n    x: int\n", encoding="utf-8")
    assert _unbuilt_models(tmp_path, ["probe"]) == (2, ["probe.Deferred"])
