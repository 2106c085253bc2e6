"""Red team, round 2: a malicious pull request against today's fixes of round 1 (tests/bot/test_redteam_pr.py).

Targets: the one tarball extraction (workflows/untar.py), discovery's read_inside and the linear-time globs
(kernelevo/discovery.py, kernelevo/globs.py, kernelevo/repo_config.py), the comment line splitter
(bot/commands.py), and the follow-up folder picked from the base's manifests (bot/jobflow.py). Each test plays
one attack and asserts the safe behaviour; an attack that gets through today is ``xfail(strict=True)`` with what
gets through and where. Everything here is a pure layer attacked directly (no bot harness).
"""

from __future__ import annotations

import io
import json
import os
import random
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from bot.commands import Command, parse_comment
from workflows.untar import TarballError, unpack_tarball

ROOT = Path(__file__).resolve().parents[2]
CAPS = {"max_unpacked_bytes": 1 << 20, "max_files": 100}
SHA = "a" * 40


# -- comments: a command GitHub shows as code (or not at all) still runs ---------------------------------------
#
# bot/commands.py:_command_lines toggles "fenced" at any line starting with ``` or ~~~ after strip(), and strips
# indentation before looking for /kernelevo. CommonMark (GitHub) closes a fence only with the same character, at
# least as long, with no info string; an indented line (4 spaces or a tab) is an indented code block; an HTML
# comment is not rendered at all. A maintainer who pastes or writes such a block sees code (or nothing), not a
# command, yet the bot runs it (`approve` of a fork's commit included).

HIDDEN = {
    "tilde-inside-backtick-fence": f"Please look at this log:\n```\n~~~\n/kernelevo approve {SHA}\n```\n",
    "short-fence-inside-long-fence": f"````\n```\n/kernelevo approve {SHA}\n````\n",
    "closing-fence-with-info-string": f"```\nlog\n```py\n/kernelevo approve {SHA}\n```\n",
    "indented-code-block": f"Output was:\n\n    /kernelevo approve {SHA}\n",
    "tab-indented-code-block": f"Output was:\n\n\t/kernelevo approve {SHA}\n",
    "html-comment": f"LGTM\n<!--\n/kernelevo approve {SHA}\n-->\n",
    "list-item-fence": f"- ```\n  x\n  /kernelevo approve {SHA}\n  ```\n",
}


@pytest.mark.parametrize("body", list(HIDDEN.values()), ids=list(HIDDEN))
def test_a_command_github_shows_as_code_or_hides_is_not_run(body):
    assert not [c for c in parse_comment(body) if isinstance(c, Command)]


def test_a_zero_width_space_before_the_prefix_is_no_command():  # shown as a command but not run: the safe way
    assert not [c for c in parse_comment(f"\u200b/kernelevo approve {SHA}") if isinstance(c, Command)]


# -- the tarball extraction -------------------------------------------------------------------------------------


def _tar(*members: tuple[str, str, object], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for kind, name, arg in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(arg)
                tar.addfile(info, io.BytesIO(arg))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[kind]
            info.linkname = arg or ""
            tar.addfile(info)
    return buf.getvalue()


def _chained_longnames(count: int, size: int, tail: bytes) -> bytes:
    """``count`` GNU long-name headers of ``size`` bytes each, then one small regular member."""
    buf = io.BytesIO()
    for _ in range(count):
        head = tarfile.TarInfo("././@LongLink")
        head.type, head.size = tarfile.GNUTYPE_LONGNAME, size
        buf.write(head.tobuf(format=tarfile.GNU_FORMAT))
        buf.write(tail * (size // len(tail)) + b"\0" * (-size % 512))
    info = tarfile.TarInfo("x")
    info.size = 1
    buf.write(info.tobuf(format=tarfile.USTAR_FORMAT) + b"1" + b"\0" * 511 + b"\0" * 1024)
    return buf.getvalue()


def test_thousands_of_chained_long_name_headers_are_a_tarball_error(tmp_path):
    data = _chained_longnames(3000, 2, b"a\0")  # 3 MB, no member counted, all in headers
    with pytest.raises(TarballError):
        unpack_tarball(io.BytesIO(data), tmp_path / "dest", **CAPS)


def test_a_huge_long_name_header_is_refused_before_it_is_read_into_memory(tmp_path):
    import gzip

    data = gzip.compress(_chained_longnames(1, 16 << 20, b"a" * 4096), 1)
    tracemalloc.start()
    try:
        with pytest.raises(TarballError):
            unpack_tarball(io.BytesIO(data), tmp_path / "dest", **CAPS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"{peak / 2**20:.0f} MiB held for a member name"


REFUSED_SHAPES = {
    "folder-then-file-of-one-name": [("dir", "a", None), ("file", "a", b"x")],
    "file-under-then-file-of-its-folder": [("file", "a/b", b"x"), ("file", "a", b"y")],
    "file-under-a-copied-link": [("file", "f", b"x"), ("sym", "d", "f"), ("file", "d/x", b"y")],
    "dot-slash-twice": [("file", "./a/./b", b"x"), ("file", "a//b", b"y")],
    "root-as-file": [("file", "./", b"x")],
}


@pytest.mark.parametrize("members", list(REFUSED_SHAPES.values()), ids=list(REFUSED_SHAPES))
def test_one_name_as_two_things_is_refused(tmp_path, members):
    with pytest.raises(TarballError):
        unpack_tarball(io.BytesIO(_tar(*members)), tmp_path / "dest", **CAPS)
    assert not any(p.is_symlink() for p in (tmp_path / "dest").rglob("*"))


def test_links_resolve_against_the_archive_never_the_disk(tmp_path):
    data = _tar(("dir", "dir", None), ("sym", "l1", "dir"), ("sym", "l2", "l1"), ("sym", "l3", "l2"),
                ("file", "real/f", b"secret-free"), ("sym", "ln", "real"), ("sym", "via", "ln/f"),
                ("hard", "early", "late"), ("file", "late", b"late"), ("sym", "self", "self"),
                ("sym", "back\\..\\..\\x", "f"), ("sym", "up/l", ".."), ("sym", "through", "up/l/late"))
    dest = unpack_tarball(io.BytesIO(data), tmp_path / "dest", **CAPS)
    found = {p.relative_to(dest).as_posix(): p for p in dest.rglob("*")}
    assert not any(p.is_symlink() for p in found.values())
    assert (dest / "early").read_bytes() == b"late"  # hard link to a later member: a copy
    assert not (dest / "through").exists()  # up/l is the root on disk, but no link is followed: dropped
    assert not (dest / "l3").exists() and not (dest / "via").exists() and not (dest / "self").exists()
    assert all(p.resolve().is_relative_to(dest.resolve()) for p in found.values())


def test_trailing_garbage_after_the_gzip_stream_writes_nothing_extra(tmp_path):
    import gzip

    data = gzip.compress(_tar(("file", "a", b"x"))) + b"\x1f\x8b" + b"junk" * 100
    dest = tmp_path / "dest"
    try:
        unpack_tarball(io.BytesIO(data), dest, **CAPS)
    except TarballError:
        pass
    assert sorted(p.name for p in dest.iterdir()) in ([], ["a"])


# -- discovery and the config's globs ---------------------------------------------------------------------------


def test_a_fifo_in_a_checkout_neither_blocks_nor_is_read(tmp_path):
    from kernelevo.discovery import discover, read_inside

    os.mkfifo(tmp_path / "op.py")
    assert read_inside(tmp_path, "op.py") is None
    assert discover(tmp_path, ["**/*.py"], [], files=["op.py", "./op.py", "op.py/."]).ops == []


def test_the_config_globs_cannot_make_one_path_cost_seconds(glob_steps):
    from kernelevo.repo_config import load_repo_config

    glob = "*a" + "?" * 251 + "b"
    text = "paths:\n  exclude:\n" + "".join(f'    - "{glob}{i:02d}"\n' for i in range(64))  # 256 chars each
    try:
        config = load_repo_config(text)
    except Exception:  # refused when the config is read: safe
        return
    from kernelevo.discovery import is_selected

    rand = random.Random(1)
    path = "".join(rand.choice("ab") for _ in range(1000)) + ".py"  # a file name in the PR
    is_selected(path, config.paths.include, config.paths.exclude)
    # linear: at most one step (a closure bounded by the glob's length) per character, glob and form (the glob, the
    # glob as a folder), and a start each, where the memoised matcher before re-simulated every step
    globs = len(config.paths.include) + len(config.paths.exclude)
    assert 0 < glob_steps[0] <= 2 * globs * (len(path) + 1), glob_steps


# -- the follow-up's folder, picked from the base's manifests ----------------------------------------------------


def _base_with(tmp_path: Path, folders: dict[str, dict[str, str]]) -> Path:
    for folder, files in folders.items():
        for name, text in files.items():
            (tmp_path / "kernels" / folder).mkdir(parents=True, exist_ok=True)
            (tmp_path / "kernels" / folder / name).write_text(text)
    return tmp_path


def test_an_op_differing_only_by_case_cannot_take_a_long_name_folder(tmp_path):
    from bot.jobflow import _refuse_another_ops_folder
    from kernelevo.kernel_store import KernelStoreError

    root = _base_with(tmp_path, {
        "matmul": {"manifest.json": json.dumps({"op_id": "other.py::MatMul"})},
        "ops_mm_matmul": {"manifest.json": json.dumps({"op_id": "ops/mm.py::MatMul"})},
    })
    for op in ("ops/MM.py::MatMul", "ops_mm.py::MatMul", "ops/mm_.py::MatMul"):  # one long name, other ops
        with pytest.raises(KernelStoreError):
            _refuse_another_ops_folder(root, op, "main")


def test_a_fork_op_cannot_take_a_base_folder_that_holds_files_but_no_manifest(tmp_path):
    from bot.jobflow import _refuse_another_ops_folder
    from kernelevo.kernel_store import KernelStoreError

    root = _base_with(tmp_path, {"common": {"kernel.py": "# the maintainers' shared helpers\n"}})
    with pytest.raises(KernelStoreError):
        _refuse_another_ops_folder(root, "fork/evil.py::Common", "main")
