"""kernels/<op-name>/: written and read by one module; envelopes derived from verified cases."""

from __future__ import annotations

import ast
import json
from types import SimpleNamespace

import pytest
import torch

from evaluator.verdict import Verdict
from kernelevo.kernel_store import (
    KernelStoreError,
    envelope_from_cases,
    find_kernels,
    find_kernels_with_errors,
    op_name,
    read_kernel,
    write_kernel,
)

KERNEL = "from torch import nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def _op(identifier: str, source_hash: str = "sha256:aa", kind: str = "function"):
    return SimpleNamespace(op_id=identifier, source_hash=source_hash, kind=kind)


def _verdict() -> Verdict:
    return Verdict.accept(
        "correct on 2 cases x 5 seeds", device="cuda", backend="triton",
        correctness={"cases": [{"case": 0, "checks": [{"check": s, "ok": True} for s in range(5)]},
                               {"case": 1, "checks": [{"check": s, "ok": True} for s in range(5)]}]},
        timing={"geomean_speedup_vs_eager": 3.0, "geomean_speedup_vs_compile": 1.2,
                "geomean_speedup_vs_best": 1.2},
        environment={"gpu": "H200", "torch": "2.13.0"},
    )


def test_write_then_read_round_trips(tmp_path):
    envelope = {"device_type": "cuda", "capabilities": [[9, 0]], "backend": "triton", "versions": {}, "args": []}
    directory = write_kernel(tmp_path, _op("models/norm.py::RMSNorm.forward"), KERNEL, _verdict(), envelope)
    assert directory == tmp_path / "kernels" / "rmsnorm_forward"
    stored = read_kernel(directory)
    assert (stored.op_id, stored.source_hash, stored.kind) == ("models/norm.py::RMSNorm.forward", "sha256:aa",
                                                               "function")
    assert stored.envelope == envelope and stored.kernel_path.read_text() == KERNEL
    assert stored.results["geomean_speedup_vs_best"] == 1.2
    assert (stored.results["cases_checked"], stored.results["checks_per_case"]) == (2, 5)
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["kernelevo_version"] and manifest["format"] == 1 and manifest["created"]
    test_source = stored.test_path.read_text()
    ast.parse(test_source)
    assert stored.test_path.name == "test_rmsnorm_forward.py" and "verify_kernel" in test_source
    assert stored.repo_root == tmp_path


def test_rewriting_the_same_op_replaces_and_other_ops_get_a_longer_name(tmp_path):
    first = write_kernel(tmp_path, _op("a/ops.py::softmax"), KERNEL, _verdict(), {"args": []})
    again = write_kernel(tmp_path, _op("a/ops.py::softmax", "sha256:bb"), KERNEL, _verdict(), {"args": []})
    other = write_kernel(tmp_path, _op("b/ops.py::softmax"), KERNEL, _verdict(), {"args": []})
    assert first == again and read_kernel(first).source_hash == "sha256:bb"
    assert other.name == "b_ops_softmax"
    assert [k.op_id for k in find_kernels(tmp_path)] == ["b/ops.py::softmax", "a/ops.py::softmax"]  # by name


def test_op_names():
    assert op_name("pkg/ops.py::scale_rows") == "scale_rows"
    assert op_name("tasks/19_ReLU.py::Model") == "19_relu"
    assert op_name("pkg/ops.py::factory.<locals>.inner") == "factory_inner"


def test_unreadable_directories_are_reported(tmp_path):
    write_kernel(tmp_path, _op("a.py::f"), KERNEL, _verdict(), {"args": []})
    (tmp_path / "kernels" / "broken").mkdir()
    (tmp_path / "kernels" / "broken" / "manifest.json").write_text("{not json")
    (tmp_path / "kernels" / "nokernel").mkdir()
    (tmp_path / "kernels" / "nokernel" / "manifest.json").write_text(
        json.dumps({"op_id": "x.py::g", "source_hash": "h", "envelope": {}}))
    kernels, errors = find_kernels_with_errors(tmp_path)
    assert [k.name for k in kernels] == ["f"]
    assert sorted(str(e).split("kernels/")[1].split(":")[0] for e in errors) == [
        "broken/manifest.json", "nokernel/kernel.py"]
    with pytest.raises(KernelStoreError, match="missing"):
        read_kernel(tmp_path / "kernels" / "absent")
    assert find_kernels(tmp_path / "nowhere") == []


def test_envelope_from_cases():
    cases = [
        (torch.zeros(8, 64, dtype=torch.bfloat16), torch.zeros(64), 1e-6, 1),
        (torch.zeros(3, 64, dtype=torch.float16), torch.zeros(64), 1e-5, -1),
    ]
    env = envelope_from_cases(cases, device_type="cuda", capabilities=[[9, 0]], backend="triton",
                              versions={"torch": "2.13.0"})
    assert env["args"][0] == {"kind": "tensor", "dtypes": ["bfloat16", "float16"], "rank": 2,
                              "dims": [{"min": 3, "max": 8}, {"min": 64, "max": 64}], "contiguous": True}
    strided = envelope_from_cases([(torch.zeros(4, 8)[:, ::2],), (torch.zeros(4, 4),)], device_type="cpu",
                                  capabilities=None, backend="triton")
    assert "contiguous" not in strided["args"][0]  # one checked input was not: any layout
    assert "init" not in env
    built = envelope_from_cases(cases, device_type="cpu", capabilities=None, backend="triton", init=[64, 1e-5])
    assert built["init"] == [{"kind": "value", "type": "int", "values": [64]},
                             {"kind": "value", "type": "float", "values": [1e-5]}]
    assert env["args"][2] == {"kind": "value", "type": "float", "values": [1e-6, 1e-5]}
    assert env["args"][3] == {"kind": "value", "type": "int", "values": [-1, 1]}
    with pytest.raises(ValueError, match="ranks"):
        envelope_from_cases([(torch.zeros(2),), (torch.zeros(2, 2),)], device_type="cpu", capabilities=None,
                            backend="triton")
    with pytest.raises(ValueError, match="different numbers of arguments"):
        envelope_from_cases([(1,), (1, 2)], device_type="cpu", capabilities=None, backend="triton")
