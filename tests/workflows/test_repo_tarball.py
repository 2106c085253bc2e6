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


# -- the one extraction (workflows/untar.py, also the bot's checkouts): no link ever reaches the disk ----------


def test_links_to_files_of_the_tarball_become_copies_and_other_links_are_dropped(tmp_path):
    data = hostile(regular("top/ops/a.py", b"A = 1\n"), link("top/ops/sym.py", "a.py"),
                   link("top/hard.py", "top/ops/a.py", tarfile.LNKTYPE), link("top/chain.py", "ops/sym.py"),
                   link("top/dir", "ops"), link("top/missing.py", "ops/nope.py"),
                   link("top/hard_missing.py", "top/nope.py", tarfile.LNKTYPE))
    out = unpack_repo(data, tmp_path / "out", **CAPS)
    assert tree(out) == ["top", "top/chain.py", "top/hard.py", "top/ops", "top/ops/a.py", "top/ops/sym.py"]
    for name in ("top/chain.py", "top/hard.py", "top/ops/sym.py"):
        path = out / name
        assert not path.is_symlink() and path.read_bytes() == b"A = 1\n" and os.stat(path).st_nlink == 1


def test_copies_count_towards_the_size_cap(tmp_path):
    data = hostile(regular("big", b"x" * 600_000), link("copy", "big"))
    with pytest.raises(TarballError, match="MiB"):
        unpack_repo(data, tmp_path / "out", **CAPS)


@pytest.mark.parametrize(("members", "why"), [
    ([link("top/l", "../../x")], "'top/l' links to '../../x', outside the tree"),
    ([link("top/h", "../x", tarfile.LNKTYPE)], "'top/h' links to '../x', outside the tree"),
    ([regular("/".join(["d"] * 65))], "more than 64 folders deep"),
    ([regular("d" * 256)], "longer than 255 bytes"),
    ([regular("x/" * 600)], "longer than 1024 bytes"),
    ([regular("a"), regular("a")], "'a' appears more than once"),
    ([device("top/dev")], "'top/dev' is a device, fifo"),
], ids=["symlink-climbs", "hardlink-climbs", "deep", "long-component", "long-name", "twice", "device"])
def test_unsafe_members_are_refused_by_name_before_anything_is_written(tmp_path, members, why):
    dest = tmp_path / "dest"
    with pytest.raises(TarballError, match="unsafe") as refused:
        unpack_repo(hostile(regular("first.py"), *members), dest, **CAPS)
    assert why in str(refused.value)
    assert list(dest.iterdir()) == []  # refused from the headers: nothing was written


def _path_max_escape(victim_dir):
    """CVE-2025-4517's shape: directory symlinks whose realpath exceeds PATH_MAX, a symlink out through them,
    a hard link through that to the victim, then a regular member of the hard link's name."""
    members, path = [], "top"
    comp = "d" * 60
    for step in "abcdefghijklmnop":
        directory = tarfile.TarInfo(f"{path}/{comp}")
        directory.type = tarfile.DIRTYPE
        members.append((directory, None))
        members.append(link(f"{path}/{step}", comp))
        path = f"{path}/{comp}"
    back = "/".join("abcdefghijklmnop")
    members.append(link(f"top/{back}/l", "../" * 16))
    members.append(link("top/escape", f"{back}/l/../{victim_dir}"))
    members.append(link("top/innocent.py", "top/escape/victim.py", tarfile.LNKTYPE))
    members.append(regular("top/innocent.py", b"PWNED\n"))
    return hostile(*members)


def test_a_symlink_chain_past_path_max_cannot_reach_outside(tmp_path):
    (tmp_path / "outside").mkdir()
    victim = tmp_path / "outside" / "victim.py"
    victim.write_text("SECRET\n")
    data = _path_max_escape("../outside")
    try:
        out = unpack_repo(data, tmp_path / "tree", **CAPS)
    except TarballError:
        out = tmp_path / "tree"
    assert victim.read_text() == "SECRET\n"
    assert not [p for p in out.rglob("*") if p.is_symlink()]


def test_the_bot_checkout_uses_the_same_extraction(tmp_path):
    from bot.workspace import CheckoutError, extract

    checkout = extract(hostile(regular("acme-c0ffee/ops/a.py", b"A\n"), link("acme-c0ffee/b.py", "ops/a.py")),
                       tmp_path / "tree")
    assert checkout.name == "acme-c0ffee" and (checkout / "b.py").read_bytes() == b"A\n"
    assert not (checkout / "b.py").is_symlink()
    with pytest.raises(CheckoutError, match="'acme/dev' is a device"):
        extract(hostile(device("acme/dev")), tmp_path / "other")


def test_a_nul_in_a_name_is_refused():  # tar headers end names at NUL; a PAX record or a caller could still hold one
    from workflows.untar import member_parts

    with pytest.raises(TarballError, match="NUL"):
        member_parts("ops/a\0.py")
    assert member_parts("./top//ops/./a.py") == ("top", "ops", "a.py")
