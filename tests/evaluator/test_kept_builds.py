"""Kept builds (evaluator/kept_builds.py): what a candidate's process compiled, reused by its later processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from evaluator import kept_builds


def _triton_cache(private: Path, home: str) -> Path:
    cache = private / kept_builds.TRITON_CACHE
    kernel, launcher = cache / "KERNELKEY", cache / "LAUNCHERKEY"
    kernel.mkdir(parents=True)
    launcher.mkdir()
    (kernel / "softmax.cubin").write_bytes(b"\x7fELF device code")
    (kernel / "softmax.json").write_text("{}")
    (kernel / "softmax.ptx").write_text("// ptx")
    children = {name: f"{home}/.triton/cache/KERNELKEY/{name}" for name in ("softmax.cubin", "softmax.json",
                                                                            "softmax.ptx")}
    (kernel / "__grp__softmax.json").write_text(json.dumps({"child_paths": children}))
    (launcher / "__triton_launcher.so").write_bytes(b"\x7fELF host code")
    (kernel / "linked.cubin").symlink_to("/etc/passwd")
    return cache


def test_triton_kernels_are_kept_and_host_code_and_links_are_not(tmp_path):
    built, kept = tmp_path / "w1", tmp_path / "kept"
    _triton_cache(built, "/home/alice")
    (built / "torch_extensions" / "ext").mkdir(parents=True)  # load_inline's: its build names where it was made
    (built / "torch_extensions" / "ext" / "ext.so").write_bytes(b"\x7fELF load_inline")
    kept_builds.keep(built, kept)
    files = sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file())
    assert files == ["triton/KERNELKEY/__grp__softmax.json",
                     "triton/KERNELKEY/softmax.cubin", "triton/KERNELKEY/softmax.json",
                     "triton/KERNELKEY/softmax.ptx"]
    assert not any(p.is_symlink() for p in kept.rglob("*"))


def test_staged_groups_name_the_new_processes_home(tmp_path):
    built, kept, fresh = tmp_path / "w1", tmp_path / "kept", tmp_path / "w2"
    _triton_cache(built, "/home/alice")
    kept_builds.keep(built, kept)
    (fresh / "home").mkdir(parents=True)
    kept_builds.stage(kept, fresh, Path("/u/bob7"))
    group = json.loads((fresh / kept_builds.TRITON_CACHE / "KERNELKEY" / "__grp__softmax.json").read_text())
    assert group["child_paths"] == {name: f"/u/bob7/.triton/cache/KERNELKEY/{name}"
                                    for name in ("softmax.cubin", "softmax.json", "softmax.ptx")}
    assert (fresh / kept_builds.TRITON_CACHE / "KERNELKEY" / "softmax.cubin").read_bytes() == b"\x7fELF device code"


def test_a_group_naming_a_file_it_does_not_have_is_dropped(tmp_path):
    built, kept, fresh = tmp_path / "w1", tmp_path / "kept", tmp_path / "w2"
    cache = _triton_cache(built, "/home/alice")
    group = cache / "KERNELKEY" / "__grp__softmax.json"
    group.write_text(json.dumps({"child_paths": {"softmax.cubin": "/etc/shadow"}}))  # a name of another file
    (cache / "KERNELKEY" / "__grp__other.json").write_text("not json")
    kept_builds.keep(built, kept)
    kept_builds.stage(kept, fresh, Path("/root"))
    staged = fresh / kept_builds.TRITON_CACHE / "KERNELKEY"
    assert not (staged / "__grp__softmax.json").exists() and not (staged / "__grp__other.json").exists()
    assert (staged / "softmax.cubin").is_file()  # Triton compiles again: a miss, never a wrong file


def test_each_kind_is_kept_once_and_without_a_home_triton_kernels_are_not_staged(tmp_path):
    built, kept, fresh = tmp_path / "w1", tmp_path / "kept", tmp_path / "w2"
    _triton_cache(built, "/home/alice")
    kept_builds.keep(built, kept)
    (built / kept_builds.TRITON_CACHE / "KERNELKEY" / "softmax.cubin").write_bytes(b"changed")
    kept_builds.keep(built, kept)
    assert (kept / "triton" / "KERNELKEY" / "softmax.cubin").read_bytes() == b"\x7fELF device code"
    fresh.mkdir()
    kept_builds.stage(kept, fresh, None)
    assert not (fresh / "home").exists()
    assert not list(tmp_path.glob("kept/*.partial-*")) and os.listdir(kept) == ["triton"]
