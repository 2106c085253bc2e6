"""Loading the candidate suite: ``manifest.yaml`` plus every ``manifest.d/*.yaml`` fragment.

Each fragment holds ``entries:`` in the same format as the main manifest (one fragment per family of
candidates, so that families can grow side by side). Used by ``tests/evaluator/test_suite.py`` and
``bench/gpu_suite.py``; entries come with ``static_checks`` defaulted to true.
"""

from __future__ import annotations

from pathlib import Path

import yaml

CANDIDATES = Path(__file__).resolve().parent
MANIFEST = CANDIDATES / "manifest.yaml"
FRAGMENTS = CANDIDATES / "manifest.d"


def manifest_files() -> list[Path]:
    """The main manifest, then the fragments in name order."""
    return [MANIFEST, *sorted(FRAGMENTS.glob("*.yaml"))]


def load_entries() -> list[dict]:
    """Every entry of every manifest file, with defaults filled in and its source file noted."""
    entries = []
    for path in manifest_files():
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for entry in data.get("entries") or []:
            entry.setdefault("static_checks", True)
            entry["_manifest"] = path.name
            entries.append(entry)
    return entries
