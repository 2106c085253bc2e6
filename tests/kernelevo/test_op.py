"""The @kernelevo.optimize annotation: what it stores, what it refuses, what it costs, and that the
source hash computed at run time equals the one discovery computes statically."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import kernelevo
from kernelevo.discovery import discover
from kernelevo.op import OptimizedFunction, op_id, op_spec, original, source_hash, split_op_id

TRICKY = Path(__file__).parents[1] / "fixtures" / "repos" / "tricky"


def _cases(device):
    return [(torch.ones(3, device=device),)]


def test_decorated_function_keeps_identity_and_runs_the_original():
    @kernelevo.optimize(inputs=_cases, tolerance=1e-3, backends="triton", allow="torch.matmul")
    def add_one(x):
        """Adds one."""
        return x + 1

    assert isinstance(add_one, OptimizedFunction)
    assert add_one.__name__ == "add_one" and add_one.__doc__ == "Adds one."
    spec = op_spec(add_one)
    assert spec.backends == ("triton",) and spec.allow == ("torch.matmul",) and spec.tolerance == 1e-3
    assert original(add_one).__name__ == "add_one" and not isinstance(original(add_one), OptimizedFunction)
    assert torch.equal(add_one(torch.zeros(2)), torch.ones(2))  # no kernels/: the original runs


def test_module_op_keeps_class_and_reference_does_not_dispatch():
    @kernelevo.optimize(inputs=_cases, init=(3,))
    class Scale(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = torch.nn.Parameter(torch.full((n,), 2.0))

        def forward(self, x):
            return x * self.w

    assert isinstance(Scale, type) and op_spec(Scale).init_args() == [3]
    model = Scale(*op_spec(Scale).init_args())
    assert torch.equal(model(torch.ones(3)), torch.full((3,), 2.0))
    reference = original(Scale)
    assert issubclass(reference, Scale) and reference.forward is not Scale.forward
    assert torch.equal(reference(3)(torch.ones(3)), torch.full((3,), 2.0))


def test_method_ops_bind_self():
    class Holder:
        factor = 3

        @kernelevo.optimize(inputs=_cases)
        def times(self, x):
            return x * self.factor

    assert torch.equal(Holder().times(torch.ones(2)), torch.full((2,), 3.0))


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({}, TypeError, "inputs= must be a callable"),
        ({"inputs": [(1,)]}, TypeError, "inputs= must be a callable"),
        ({"inputs": _cases, "small_inputs": 3}, TypeError, "small_inputs= must be a callable"),
        ({"inputs": _cases, "backends": ("rocm",)}, ValueError, "backends=('rocm',)"),
        ({"inputs": _cases, "backends": ()}, ValueError, "backends=()"),
    ],
)
def test_bad_decorator_arguments_are_refused_with_the_fix(kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        kernelevo.optimize(**kwargs)(lambda x: x)


def test_only_module_subclasses_can_be_decorated_as_classes():
    with pytest.raises(TypeError, match="only torch.nn.Module subclasses"):

        @kernelevo.optimize(inputs=_cases)
        class NotAModule:
            pass


def test_op_ids_round_trip():
    assert op_id("pkg\\ops.py", "A.f") == "pkg/ops.py::A.f"
    assert split_op_id("pkg/ops.py::A.f") == ("pkg/ops.py", "A.f")
    with pytest.raises(ValueError, match="not an op id"):
        split_op_id("pkg/ops.py")


def test_source_hash_covers_decorator_arguments_and_nothing_else():
    base = "import kernelevo\n\n@kernelevo.optimize(inputs=f)\ndef op(x):\n    return x\n\nOTHER = 1\n"
    h = source_hash(base, "op")
    assert h == source_hash(base.replace("OTHER = 1", "OTHER = 2"), "op")
    assert h != source_hash(base.replace("inputs=f", "inputs=g"), "op")
    assert h != source_hash(base.replace("return x", "return -x"), "op")
    assert h == source_hash(base.replace("\n", "\r\n"), "op")
    assert source_hash(base, "missing") is None
    assert source_hash(base, None) != h  # task files hash the whole file


def test_runtime_hash_equals_static_hash_for_every_fixture_op(monkeypatch):
    monkeypatch.syspath_prepend(str(TRICKY))
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    static = {op.op_id: op.source_hash for op in discover(TRICKY).ops if op.kind != "task"}
    assert len(static) == 7
    for identifier, expected in static.items():
        rel, qualname = split_op_id(identifier)
        if "<locals>" in qualname:
            obj = importlib.import_module("pkg.ops").factory()
        else:
            obj = importlib.import_module(rel.removesuffix(".py").replace("/", "."))
            for part in qualname.split("."):
                obj = getattr(obj, part)
        file = Path(getattr(original(obj), "__code__", None).co_filename if not isinstance(obj, type)
                    else sys.modules[obj.__module__].__file__)
        assert source_hash(file.read_text(), obj.__qualname__) == expected, identifier


def test_import_and_decoration_load_nothing_heavy():
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import kernelevo\n"
        "@kernelevo.optimize(inputs=lambda device: [], small_inputs=lambda device: [])\n"
        "def op(x):\n    return x\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    # Which cheap standard modules an interpreter preloads differs between builds and venvs (collections.abc is
    # preloaded in some, not in others), so the check names what must NOT load: anything outside the standard
    # library besides kernelevo.op itself, and the costly standard modules op.py avoids on purpose.
    third_party = {m for m in loaded if m.partition(".")[0] not in sys.stdlib_module_names}
    assert third_party <= {"kernelevo", "kernelevo.op"}, third_party
    heavy_stdlib = {"typing", "inspect", "dataclasses", "ast", "hashlib", "importlib.util", "logging"}
    assert not loaded & heavy_stdlib, loaded & heavy_stdlib
