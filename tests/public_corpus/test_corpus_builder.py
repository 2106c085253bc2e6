"""The corpus builder on a small made-up package: what it pastes, in which order, and what it refuses."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_builder as cb  # noqa: E402

ADAPTER = "class ModelNew:\n    pass\n"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "fakelib"
    for rel, text in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_pastes_dependencies_first_and_removes_internal_imports(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "base.py": "from __future__ import annotations\nBASE = 1\n",
        "ops/__init__.py": "",
        "ops/utils.py": "from fakelib.base import BASE\n\ndef helper():\n    return BASE\n",
        "ops/kernel.py": (
            "import math\nfrom fakelib.ops.utils import (\n    helper,\n)\nfrom .utils import helper as h\n\n"
            "def run():\n    if True:\n        from fakelib.base import BASE\n    return h() + BASE\n"),
    })
    cand = cb.build("fakelib", "fakelib.ops.kernel", ADAPTER, "header", root=root)
    assert cand.modules == ["fakelib.base", "fakelib.ops.utils", "fakelib.ops.kernel"]
    src = cand.source
    assert src.startswith("# header\nfrom __future__ import annotations\n")
    assert "from fakelib" not in src and "from .utils" not in src
    assert "h = helper" in src  # a renamed import keeps its name
    assert "        pass\n" in src  # the block left empty gets a pass
    assert src.rstrip().endswith("class ModelNew:\n    pass")
    namespace: dict = {}
    exec(compile(src, "candidate", "exec"), namespace)  # noqa: S102 - our own made-up package
    assert namespace["run"]() == 2
    assert len(cand.removed_imports) == 4
    line = src.splitlines().index("def helper():") + 1
    assert cand.origin(line) == "fakelib/ops/utils.py:3"


def test_constants_replace_a_package_init_and_reexports_redirect(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "import importlib\n__version__ = '9'\n",
        "ops/__init__.py": "from fakelib.ops.index import prepare\nfrom fakelib.ops.heavy import everything\n",
        "ops/index.py": "def prepare():\n    return 3\n",
        "ops/heavy.py": "everything = 1\n",
        "kernel.py": "from fakelib import __version__\nfrom fakelib.ops import prepare\n",
    })
    cand = cb.build("fakelib", "fakelib.kernel", ADAPTER, "h", root=root,
                    constants={"fakelib": {"__version__": "'9'"}}, reexports={"fakelib.ops": "fakelib.ops.index"})
    assert cand.modules == ["fakelib.ops.index", "fakelib.kernel"]
    assert "__version__ = '9'" in cand.source and "everything" not in cand.source


def test_type_checking_imports_pull_in_nothing(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "heavy.py": "X = 1\n",
        "kernel.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fakelib.heavy import X\n",
    })
    cand = cb.build("fakelib", "fakelib.kernel", ADAPTER, "h", root=root)
    assert cand.modules == ["fakelib.kernel"]
    ast.parse(cand.source)


@pytest.mark.parametrize("text, why", [
    ("import fakelib.other\n", "module object"),
    ("from fakelib import other\n", "module object"),
    ("from fakelib.other import *\n", "import \\*"),
])
def test_refuses_what_cannot_be_pasted_name_by_name(tmp_path: Path, text: str, why: str) -> None:
    root = _package(tmp_path, {"other.py": "Y = 1\n", "kernel.py": text})
    with pytest.raises(cb.BuildError, match=why):
        cb.build("fakelib", "fakelib.kernel", ADAPTER, "h", root=root)


def test_reports_names_two_modules_bind_differently(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "a.py": "import torch\nfrom typing import TypeVar\nF = TypeVar('F')\n",
        "kernel.py": "import torch\nimport torch.nn.functional as F\nfrom fakelib.a import F as G\n",
    })
    cand = cb.build("fakelib", "fakelib.kernel", ADAPTER, "h", root=root)
    assert cand.shadowed == ["F (fakelib/a.py, then fakelib/kernel.py)"]


def test_missing_package_is_an_actionable_error() -> None:
    with pytest.raises(cb.BuildError, match="pip install"):
        cb.package_root("surely_not_an_installed_package_kernelevo")
