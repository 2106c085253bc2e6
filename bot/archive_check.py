"""Is a checkout exactly the commit a maintainer approved?

The bot checks a commit out from GitHub's tarball of it, which git archive builds, and git archive applies the
commit's own ``.gitattributes``: ``export-subst`` fills ``$Format:...$`` placeholders in at download time (with
ref names the owner of a fork picks at will), ``export-ignore`` leaves files out. What the workers would import
could then differ from the diff a maintainer approved. The commit's tree, read through the API, names every file
with its git object id; the checkout must hold exactly those files with exactly those ids. Symbolic links and
submodules are not compared: the safe extraction never puts a link on disk (``workflows.untar``), and archives
hold no submodules.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

REGULAR_FILES = frozenset({"100644", "100755"})


class TreeEntry(BaseModel):
    """One entry of a recursive git tree listing (``GET /repos/{owner}/{repo}/git/trees/{sha}?recursive=1``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    path: str
    mode: str
    type: str
    sha: str


def tree_entries(listing: list[dict[str, Any]]) -> list[TreeEntry]:
    return [TreeEntry.model_validate(entry) for entry in listing]


def git_blob_id(data: bytes) -> str:
    """git's object id of a file with these bytes (what a tree lists)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def differences(root: Path, tree: list[TreeEntry]) -> list[str]:
    """Where the checkout under ``root`` differs from the commit's ``tree``: files missing, changed, or not in the
    commit (sorted, one line each; empty when the checkout is the commit)."""
    expected = {e.path: e.sha for e in tree if e.type == "blob" and e.mode in REGULAR_FILES}
    not_compared = {e.path for e in tree if e.type != "tree" and e.path not in expected}
    found: set[str] = set()
    out: list[str] = []
    for folder, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            found.add(rel)
            if rel in not_compared:
                continue
            if rel not in expected:
                out.append(f"{rel}: not in the commit")
            elif path.is_symlink() or git_blob_id(path.read_bytes()) != expected[rel]:
                out.append(f"{rel}: not the commit's content")
    out += [f"{rel}: left out" for rel in expected if rel not in found]
    return sorted(out)
