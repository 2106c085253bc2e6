"""Static discovery on a generated 10,000-file repository: working tree scan, whole-tree scan at a git
revision, and a pull-request diff.

Writes bench/results/discovery_<hostname>.json (date, machine, versions, seconds).

    python bench/discovery_bench.py [--files 10000] [--no-git] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import header

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

PLAIN = '''"""Module {i}: ordinary code with no ops."""

import math


class Thing{i}:
    def __init__(self, n):
        self.n = n

    def value(self):
        return sum(math.sqrt(k) for k in range(self.n))


def helper_{i}(a, b):
    if a > b:
        return a - b
    return [x * 2 for x in range(a, b)]
''' + "\n".join(f"\n\ndef filler_{{i}}_{k}(x):\n    return x + {k}\n" for k in range(20))

OP = '''import torch
import kernelevo as ke
from kernelevo import optimize as opt


@ke.optimize(inputs=lambda device: [(torch.randn(64, 64, device=device),), (torch.randn(8, 3, device=device),)])
def op_{i}(x):
    return torch.relu(x) * {i}


class Block{i}(torch.nn.Module):
    @opt(inputs=lambda device: [(torch.randn(4, device=device),)])
    def forward(self, x):
        return x + {i}
'''

TASK = '''import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1) * {i}


def get_inputs():
    return [torch.randn(8, 128)]


def get_init_inputs():
    return []
'''

MENTIONS = '"""Uses kernelevo elsewhere."""\nimport kernelevo\n\nVALUE_{i} = kernelevo.__version__\n'
BROKEN = "import kernelevo\n\ndef broken_{i}(:\n    pass\n"


def generate(root: Path, files: int, seed: int = 0) -> dict[str, int]:
    """Write ``files`` Python files in nested packages: ~1% with ops, 0.5% task files, 1% that mention
    kernelevo without ops, 0.1% that do not parse, the rest plain modules."""
    rng = random.Random(seed)
    counts = {"op_files": 0, "task_files": 0, "mention_files": 0, "broken_files": 0, "plain_files": 0}
    for i in range(files):
        directory = root / f"pkg{i % 20}" / f"sub{(i // 20) % 25}"
        directory.mkdir(parents=True, exist_ok=True)
        roll = rng.random()
        if roll < 0.01:
            text, kind = OP, "op_files"
        elif roll < 0.015:
            text, kind = TASK, "task_files"
        elif roll < 0.025:
            text, kind = MENTIONS, "mention_files"
        elif roll < 0.026:
            text, kind = BROKEN, "broken_files"
        else:
            text, kind = PLAIN, "plain_files"
        (directory / f"mod_{i}.py").write_text(text.format(i=i))
        counts[kind] += 1
    return counts


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run(files: int, use_git: bool) -> dict:
    from kernelevo.discovery import discover
    from kernelevo.discovery_git import diff_revisions, discover_at_rev

    with tempfile.TemporaryDirectory(prefix="kernelevo-discovery-bench-") as tmp:
        root = Path(tmp)
        counts = generate(root, files)
        bytes_total = sum(p.stat().st_size for p in root.rglob("*.py"))
        discover(root)  # warm the page cache: the figure below is parse cost, not disk latency
        result, scan_s = _timed(lambda: discover(root))
        out = {
            "files": files, "bytes": bytes_total, "generated": counts, "ops_found": len(result.ops),
            "errors_reported": len(result.errors), "files_scanned": result.files_scanned,
            "working_tree_scan_seconds": scan_s,
        }
        expected_ops = 2 * counts["op_files"] + counts["task_files"]
        if len(result.ops) != expected_ops or len(result.errors) != counts["broken_files"]:
            raise SystemExit(f"discovery found {len(result.ops)} ops / {len(result.errors)} errors, "
                             f"expected {expected_ops} / {counts['broken_files']}")
        if use_git:
            _git(root, "init", "-q", "-b", "main")
            _git(root, "-c", "user.email=b@example.com", "-c", "user.name=b", "add", "-A")
            _git(root, "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "base")
            at_rev, rev_s = _timed(lambda: discover_at_rev(root, "HEAD"))
            assert at_rev.hashes() == result.hashes()
            op_files = sorted({op.path for op in result.ops})[:10]
            for rel in op_files:  # a pull request touching 10 op files and 10 plain ones
                path = root / rel
                path.write_text(path.read_text().replace("* ", "*  ", 1))
            for rel in sorted(p.relative_to(root).as_posix() for p in root.rglob("mod_1*.py"))[:10]:
                (root / rel).write_text((root / rel).read_text() + "\n# touched\n")
            _git(root, "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qam", "pr")
            (diff, _), diff_s = _timed(lambda: diff_revisions(root, "HEAD~1", "HEAD"))
            out.update({"git_whole_tree_scan_seconds": rev_s, "pr_diff_seconds": diff_s,
                        "pr_diff_changed_ops": len(diff.changed)})
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--no-git", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    host = socket.gethostname()
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    report = {**header("discovery", git=git), **run(args.files, not args.no_git)}
    out = args.out or Path(__file__).parent / "results" / f"discovery_{host}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
