"""Every parse in the project goes through kernelevo.pyast (CPython 3.11's AST converter is not
thread-safe: python/cpython#106905 failed a CI run when replies were parsed on several threads)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kernelevo import pyast

ROOT = Path(__file__).resolve().parents[2]


def test_no_package_code_calls_ast_parse_directly():
    direct = [f"{path.relative_to(ROOT)}:{n}"
              for package in ("kernelevo", "evaluator", "bot", "workflows")
              for path in sorted((ROOT / package).rglob("*.py")) if path.name != "pyast.py"
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\bast\.parse\(", line)]
    assert direct == [], f"use kernelevo.pyast.parse instead: {direct}"


def test_parsing_from_many_threads_gives_the_same_trees():
    source = "def f(x):\n" + "".join(f"    x = (x + {i}) * (x - {i})\n" for i in range(200)) + "    return x\n"
    with ThreadPoolExecutor(8) as pool:
        dumps = set(pool.map(lambda _: len(pyast.parse(source).body[0].body), range(64)))
    assert dumps == {201}


def test_syntax_errors_surface_with_the_file_name():
    with pytest.raises(SyntaxError) as caught:
        pyast.parse("def broken(:\n", filename="ops/broken.py")
    assert caught.value.filename == "ops/broken.py"
