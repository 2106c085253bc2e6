"""Static discovery: tricky sources, config globs, unparsable files, diffing, and the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kernelevo.commands import discover_cmd
from kernelevo.discovery import diff_ops, discover, discover_source, path_matches
from kernelevo.discovery_git import diff_revisions, diff_worktree, discover_at_rev

TRICKY = Path(__file__).parents[1] / "fixtures" / "repos" / "tricky"


@pytest.fixture
def tricky(tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(TRICKY, root)
    return root


def _ids(result) -> set[str]:
    return {op.op_id for op in result.ops}


def test_tricky_repo_finds_every_kind_of_op():
    result = discover(TRICKY)
    by_id = {op.op_id: op for op in result.ops}
    assert set(by_id) == {
        "pkg/ops.py::scale_rows", "pkg/ops.py::relu", "pkg/ops.py::computed_cases",
        "pkg/ops.py::Outer.Inner.method", "pkg/ops.py::Outer.Block", "pkg/ops.py::factory.<locals>.local_op",
        "pkg/sub/other.py::via_submodule", "tasks/softmax_task.py::Model",
    }
    assert result.errors == []
    assert (by_id["pkg/ops.py::scale_rows"].cases, by_id["pkg/ops.py::scale_rows"].small_cases) == (2, 1)
    assert by_id["pkg/ops.py::relu"].cases == 3  # inputs=_cases: a module-level def returning a literal
    assert by_id["pkg/ops.py::computed_cases"].cases is None  # a comprehension: not visible statically
    kinds = {op.qualname: op.kind for op in result.ops}
    assert kinds["Outer.Block"] == "module" and kinds["Outer.Inner.method"] == "method"
    assert kinds["Model"] == "task" and by_id["tasks/softmax_task.py::Model"].cases == 2
    assert all(op.source_hash.startswith("sha256:") for op in result.ops)


def test_config_excludes_and_explicit_globs(tricky):
    assert not any(op.path.startswith("vendor/") for op in discover(tricky).ops)
    everything = discover(tricky, include=["**/*.py"], exclude=[])
    assert "vendor/ops.py::vendored" in _ids(everything)
    only_tasks = discover(tricky, include=["tasks/**"], exclude=[])
    assert _ids(only_tasks) == {"tasks/softmax_task.py::Model"}


def test_unparsable_and_undecodable_files_are_reported_not_fatal(tricky):
    (tricky / "pkg" / "broken.py").write_text("import kernelevo\n\ndef f(:\n    pass\n")
    (tricky / "pkg" / "latin.py").write_bytes(b"# kernelevo \xe9\xff\n")
    result = discover(tricky)
    assert "pkg/ops.py::scale_rows" in _ids(result)
    errors = {e.path: e for e in result.errors}
    assert errors["pkg/broken.py"].line == 3 and "does not parse" in errors["pkg/broken.py"].message
    assert "not UTF-8" in errors["pkg/latin.py"].message
    assert str(errors["pkg/broken.py"]).startswith("pkg/broken.py:3:")


def test_discovery_never_imports_repository_code(tricky):
    sentinel = tricky / "IMPORTED"
    (tricky / "pkg" / "side_effect.py").write_text(
        f"open({str(sentinel)!r}, 'w').close()\nimport kernelevo\n\n"
        "@kernelevo.optimize(inputs=lambda d: [])\ndef op(x):\n    return x\n"
    )
    assert "pkg/side_effect.py::op" in _ids(discover(tricky))
    assert not sentinel.exists()


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import kernelevo\n@kernelevo.optimize(inputs=f)\ndef a(x): ...\n", {"a"}),
        ("import kernelevo as ke\n@ke.optimize(inputs=f)\ndef a(x): ...\n", {"a"}),
        ("from kernelevo import optimize\n@optimize(inputs=f)\ndef a(x): ...\n", {"a"}),
        ("from kernelevo import optimize as o\n@o(inputs=f)\ndef a(x): ...\n@optimize(inputs=f)\ndef b(x): ...\n",
         {"a"}),
        ("from kernelevo import optimize as o\n@o\ndef bare(x): ...\n", {"bare"}),
        ("from kernelevo import op as kop\n@kop.optimize(inputs=f)\ndef a(x): ...\n", {"a"}),
        ("import kernelevo.op\n@kernelevo.op.optimize(inputs=f)\ndef a(x): ...\n", {"a"}),
        ("def optimize(**k): ...\n@optimize(inputs=f)\ndef a(x): ...\n# kernelevo\n", set()),
        ("import kernelevo\n@other.optimize(inputs=f)\ndef a(x): ...\n", set()),
        ("import kernelevo\nclass A:\n  class B:\n    @kernelevo.optimize(inputs=f)\n    async def m(self): ...\n",
         {"A.B.m"}),
        ("import kernelevo\nif True:\n  @kernelevo.optimize(inputs=f)\n  def c(x): ...\n", {"c"}),
        ("import kernelevo\n@functools.cache\n@kernelevo.optimize(inputs=f)\n@other\ndef s(x): ...\n", {"s"}),
    ],
)
def test_aliases_and_nesting(source, expected):
    ops, errors = discover_source(source, "m.py")
    assert {op.qualname for op in ops} == expected and errors == []


def test_task_file_needs_model_and_get_inputs():
    ops, _ = discover_source("class Model: ...\ndef get_init_inputs(): return []\n", "t.py")
    assert ops == []
    ops, _ = discover_source("class Model: ...\ndef get_inputs(): return [1]\n", "t.py")
    assert [(op.op_id, op.kind, op.cases) for op in ops] == [("t.py::Model", "task", 1)]


@pytest.mark.parametrize(
    "path, patterns, matches",
    [
        ("src/a.py", ["src/**"], True),
        ("src/deep/er/a.py", ["src/**"], True),
        ("lib/src/a.py", ["src/**"], False),
        ("lib/src/a.py", ["**/src/**"], True),
        ("a.py", ["**/*.py"], True),
        ("x/legacy/y.py", ["**/legacy/"], True),
        ("tests/test_a.py", ["tests/test_?.py"], True),
        ("tests/test_ab.py", ["tests/test_?.py"], False),
        ("vendor/", ["vendor/**"], True),  # directories are matched with a trailing slash (pruned)
        ("vendor", ["vendor/**"], False),
        ("src/a/b.py", ["src/"], True),  # a folder glob covers what is under it
        ("a/b/c.py", ["**.py"], True),  # a `**` not followed by `/` spans folders
        ("a/b/c.py", ["a/*.py"], False),  # `*` stays within one folder
        ("a/[x].py", ["a/[x].py"], True),  # brackets are literal
        ("a/x.py", ["a/[x].py"], False),
        ("a/b/c/d.py", ["**/b/**/d.py"], True),
        ("a/d.py", ["/a/d.py"], True),  # a leading slash is ignored
    ],
)
def test_globs(path, patterns, matches):
    assert path_matches(path, patterns) is matches


def test_a_glob_cannot_backtrack_however_many_double_stars_it_has(glob_steps):
    path = "a/" * 300 + "y.py"
    assert not path_matches(path, ["**/" * 40 + "x.py", "*a*a*a*a*a*a*a*a*a*b"])
    assert path_matches("a/" * 300 + "x.py", ["**/" * 40 + "x.py"])
    # at most one step per character, glob and form (the glob, the glob as a folder) and a start each: linear, where
    # the regular expression it replaced backtracked (~50 s at 10 `**/` and 30 folders)
    assert 0 < glob_steps[0] <= 3 * 2 * (len(path) + 1)


def test_discovery_never_follows_a_symlink(tmp_path):
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host.py").write_text("import kernelevo\n\n\n@kernelevo.optimize\ndef host(x):\n    return x\n")
    root = tmp_path / "repo"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "own.py").write_text("import kernelevo\n\n\n@kernelevo.optimize\ndef own(x):\n    return x\n")
    (root / "ops" / "leak.py").symlink_to(outside / "host.py")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(root / "ops" / "pipe.py")  # would block a plain read
    assert _ids(discover(root, ["**/*.py"], [])) == {"ops/own.py::own"}
    named = discover(root, ["**/*.py"], [], files=["ops/leak.py", "linked/host.py", "ops/pipe.py", "ops/own.py",
                                                   "../outside/host.py"])
    assert _ids(named) == {"ops/own.py::own"} and named.errors == []


def test_diff_ops_is_pure_and_sorted():
    before = {"a.py::x": "h1", "a.py::y": "h2", "b.py::z": "h3"}
    after = {"a.py::x": "h1", "a.py::y": "h2'", "c.py::w": "h4"}
    diff = diff_ops(before, after)
    assert (diff.added, diff.changed, diff.removed) == (["c.py::w"], ["a.py::y"], ["b.py::z"])
    assert diff_ops(after, after).to_dict() == {"added": [], "changed": [], "removed": []}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tricky) -> Path:
    _git(tricky, "init", "-q", "-b", "main")
    _git(tricky, "config", "user.email", "t@example.com")
    _git(tricky, "config", "user.name", "t")
    _git(tricky, "add", "-A")
    _git(tricky, "commit", "-qm", "base")
    return tricky


def _edit_ops(root: Path) -> None:
    ops = root / "pkg" / "ops.py"
    text = ops.read_text().replace("return x * w", "return x * w * 1.0")  # scale_rows changed
    text = text.replace("@opt(inputs=_cases, backends=(\"triton\",))\ndef relu(x):\n    return torch.relu(x)\n", "")
    text += "\n\n@ke.optimize(inputs=_cases)\ndef gelu(x):\n    return torch.nn.functional.gelu(x)\n"
    ops.write_text(text)
    (root / "tasks" / "softmax_task.py").write_text((root / "tasks" / "softmax_task.py").read_text() + "\n")


def test_diff_between_revisions(git_repo):
    base = _git(git_repo, "rev-parse", "HEAD").strip()
    _edit_ops(git_repo)
    (git_repo / "pkg" / "broken.py").write_text("import kernelevo\ndef (\n")
    (git_repo / "README.md").write_text("unrelated\n")
    _git(git_repo, "add", "-A")
    _git(git_repo, "commit", "-qm", "change")
    diff, errors = diff_revisions(git_repo, base, "HEAD")
    assert diff.added == ["pkg/ops.py::gelu"]
    assert diff.changed == ["pkg/ops.py::scale_rows", "tasks/softmax_task.py::Model"]
    assert diff.removed == ["pkg/ops.py::relu"]
    assert [e.path for e in errors] == ["pkg/broken.py"]
    # the whole tree at a revision matches a working-tree scan of that revision
    assert discover_at_rev(git_repo, "HEAD").hashes() == discover(git_repo).hashes()


def test_diff_of_changed_working_tree_files(git_repo):
    _edit_ops(git_repo)
    diff, _ = diff_worktree(git_repo, ["pkg/ops.py", "pkg/gone.py"])
    assert (diff.added, diff.changed, diff.removed) == (
        ["pkg/ops.py::gelu"], ["pkg/ops.py::scale_rows"], ["pkg/ops.py::relu"])
    assert diff_worktree(git_repo, ["pkg/sub/other.py"])[0].to_dict() == {"added": [], "changed": [],
                                                                        "removed": []}


def _cli():
    app = typer.Typer()
    discover_cmd.register(app)
    app.command("noop")(lambda: None)  # two commands keep typer in subcommand mode
    return app


def test_cli_lists_ops_as_json_and_table():
    runner = CliRunner()
    result = runner.invoke(_cli(), ["discover", str(TRICKY), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["ops"]) == 8 and data["errors"] == []
    table = runner.invoke(_cli(), ["discover", str(TRICKY)])
    assert table.exit_code == 0 and "pkg/ops.py::scale_rows" in table.output


def test_cli_diff_modes_and_errors(git_repo):
    runner = CliRunner()
    base = _git(git_repo, "rev-parse", "HEAD").strip()
    _edit_ops(git_repo)
    changed = runner.invoke(_cli(), ["discover", str(git_repo), "--changed", "pkg/ops.py", "--json"])
    assert json.loads(changed.output)["added"] == ["pkg/ops.py::gelu"]
    _git(git_repo, "commit", "-qam", "change")
    revs = runner.invoke(_cli(), ["discover", str(git_repo), "--base", base, "--head", "HEAD"])
    assert revs.exit_code == 0 and "removed  pkg/ops.py::relu" in revs.output
    bad_rev = runner.invoke(_cli(), ["discover", str(git_repo), "--base", "no-such-rev"])
    assert bad_rev.exit_code == 2 and "no-such-rev" in bad_rev.output
    (git_repo / ".github" / "kernelevo.yml").write_text("paths:\n  inclde: [x]\n")
    bad_config = runner.invoke(_cli(), ["discover", str(git_repo)])
    assert bad_config.exit_code == 2 and "line 2: paths.inclde: unknown key" in bad_config.output


def test_changed_files_outside_git_are_all_added(tricky):
    diff, errors = diff_worktree(tricky, ["pkg/ops.py", "vendor/ops.py"], base=None)
    assert diff.removed == [] and diff.changed == [] and errors == []
    assert "pkg/ops.py::scale_rows" in diff.added
    assert not any(op.startswith("vendor/") for op in diff.added)  # still honours the config
    result = CliRunner().invoke(_cli(), ["discover", str(tricky), "--changed", "pkg/ops.py", "--json"])
    assert result.exit_code == 0 and "pkg/ops.py::relu" in json.loads(result.output)["added"]
