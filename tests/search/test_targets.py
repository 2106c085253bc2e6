"""What `kernelevo optimize PATH` searches: task files, decorated ops, --op, and the kernel envelope."""

import textwrap

import pytest

from kernelevo.search.targets import TargetError, envelope_from_verdict, find_repo_root, resolve_targets

DECORATED = textwrap.dedent('''
    import torch
    import kernelevo

    @kernelevo.optimize(inputs=lambda device: [(torch.randn(1000, device=device), torch.randn(1000, device=device))])
    def scale_add(x, y):
        return 0.5 * x + y

    @kernelevo.optimize(inputs=lambda device: [(torch.randn(10, device=device),)])
    def double(x):
        return 2 * x
''')


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ops.py").write_text(DECORATED)
    (tmp_path / "task.py").write_text(
        "import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x + 1\n\n"
        "def get_inputs():\n    return [torch.randn(4)]\n\ndef get_init_inputs():\n    return []\n")
    return tmp_path


def test_a_task_file_is_its_own_task(repo, tmp_path):
    [target] = resolve_targets(repo / "task.py")
    assert target.op_id == "task.py::Model" and target.repo_root == repo
    assert target.task_path(tmp_path / "run") == repo / "task.py"


def test_decorated_ops_get_a_generated_task_in_the_run_directory(repo, tmp_path):
    targets = resolve_targets(repo / "pkg" / "ops.py")
    assert [t.op_id for t in targets] == ["pkg/ops.py::scale_add", "pkg/ops.py::double"]
    task = targets[0].task_path(tmp_path / "run")
    assert task == tmp_path / "run" / "task.py"
    assert "pkg/ops.py::scale_add" in task.read_text()


def test_a_directory_is_scanned_and_op_selects_by_id_qualname_or_name(repo):
    assert {t.op_id for t in resolve_targets(repo)} == {"task.py::Model", "pkg/ops.py::scale_add",
                                                        "pkg/ops.py::double"}
    assert [t.op_id for t in resolve_targets(repo, "double")] == ["pkg/ops.py::double"]
    assert [t.op_id for t in resolve_targets(repo, "pkg/ops.py::scale_add")] == ["pkg/ops.py::scale_add"]
    with pytest.raises(TargetError, match="no op named 'triple'; ops found: "):
        resolve_targets(repo, "triple")


def test_a_file_without_ops_says_how_to_mark_one(repo):
    (repo / "plain.py").write_text("x = 1\n")
    with pytest.raises(TargetError, match="@kernelevo.optimize"):
        resolve_targets(repo / "plain.py")
    with pytest.raises(TargetError, match="no such file"):
        resolve_targets(repo / "missing.py")


def test_repo_root_is_the_nearest_git_folder(repo):
    assert find_repo_root(repo / "pkg" / "ops.py") == repo


def test_envelope_covers_the_verified_cases():
    verdict = {"verdict": "accepted", "backend": "triton", "environment": {"torch": "2.13.0", "capability": "9.0"},
               "correctness": {"cases": [
                   {"case": 0, "inputs": [{"shape": [16, 4096], "dtype": "torch.bfloat16"},
                                          {"type": "float", "value": 1e-6}]},
                   {"case": 1, "inputs": [{"shape": [3, 4096], "dtype": "torch.bfloat16"},
                                          {"type": "float", "value": 1e-5}]}]}}
    envelope = envelope_from_verdict(verdict, "cuda")
    assert envelope["device_type"] == "cuda" and envelope["capabilities"] == [[9, 0]]
    tensor, scalar = envelope["args"]
    assert tensor["dtypes"] == ["bfloat16"] and tensor["dims"] == [{"min": 3, "max": 16}, {"min": 4096, "max": 4096}]
    assert scalar["kind"] == "value" and scalar["type"] == "float"
