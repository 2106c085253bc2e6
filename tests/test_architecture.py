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
