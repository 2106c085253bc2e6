"""The repository tarball: deterministic, leaves out what is not the repo, and is unpacked as hostile input."""

import io
import os
import tarfile

import pytest

from workflows.repo_tarball import TarballError, pack_repo, unpack_repo

CAPS = dict(max_unpacked_bytes=2**20, max_files=100)


def tree(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_packing_is_deterministic_and_leaves_out_git_runs_and_caches(tmp_path):
    repo = tmp_path / "repo"
    for name in ("ops/norm.py", ".git/HEAD", "runs/r1/archive.jsonl", "ops/__pycache__/x.pyc", "a.pyc",
                 ".venv/lib.py", "pkg.egg-info/PKG-INFO", ".github/kernelevo.yml"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "inside").symlink_to("ops/norm.py")
    (repo / "outside").symlink_to("/etc/passwd")
    os.mkfifo(repo / "pipe")
    first = pack_repo(repo, **CAPS)
    os.utime(repo / "ops" / "norm.py", (0, 123456))
    assert pack_repo(repo, **CAPS) == first  # times and owners do not change the hash

    out = unpack_repo(first, tmp_path / "out", **CAPS)
    assert tree(out) == [".github", ".github/kernelevo.yml", "inside", "ops", "ops/norm.py", "run.sh"]
    assert (out / "inside").read_text() == "ops/norm.py" and os.access(out / "run.sh", os.X_OK)


def test_packing_stops_at_the_caps(tmp_path):
    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    with pytest.raises(TarballError, match="MiB"):
        pack_repo(tmp_path, max_unpacked_bytes=1024, max_files=100)


def hostile(*members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def regular(name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def device(name):
    info = tarfile.TarInfo(name)
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info, None


@pytest.mark.parametrize("members", [
    [regular("/etc/evil")],
    [regular("../evil")],
    [regular("ok/../../evil")],
    [link("l", "/etc/passwd")],
    [link("l", "../../outside")],
    [link("h", "/etc/passwd", tarfile.LNKTYPE)],
    [device("dev/null")],
], ids=["absolute", "dotdot", "nested-dotdot", "symlink-absolute", "symlink-out", "hardlink-out", "device"])
def test_unpacking_refuses_what_would_escape_the_tree(tmp_path, members):
    dest = tmp_path / "dest"
    with pytest.raises(TarballError, match="unsafe"):
        unpack_repo(hostile(*members), dest, **CAPS)
    assert not (tmp_path / "evil").exists() and not (tmp_path / "outside").exists()


def test_unpacking_stops_a_decompression_bomb_and_garbage(tmp_path):
    bomb = hostile(regular("zeros", b"\0" * (2 * 2**20)))
    assert len(bomb) < 20_000
    with pytest.raises(TarballError, match="more than"):
        unpack_repo(bomb, tmp_path / "a", **CAPS)
    many = hostile(*(regular(f"f{i}") for i in range(101)))
    with pytest.raises(TarballError, match="more than 100 files"):
        unpack_repo(many, tmp_path / "b", **CAPS)
    with pytest.raises(TarballError, match="cannot be unpacked"):
        unpack_repo(b"not a tarball", tmp_path / "c", **CAPS)
