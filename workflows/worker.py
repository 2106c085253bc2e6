"""How ``kernelevo worker`` starts a Celery worker: its device, queues, node name, environment (pure).

One worker per GPU: ``--gpu N`` pins the process to that GPU through ``CUDA_VISIBLE_DEVICES`` before
anything could touch CUDA, serves the ``gpu`` queue with one chunk at a time, each in a fresh child
process. ``--device cpu`` serves the ``cpu`` queue (Triton's interpreter stands in for a GPU). A
worker never holds a GitHub credential: the repository comes in the job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from workflows.models import QueueName

_GITHUB_SECRET = re.compile(r"(GITHUB|^GH_).*(TOKEN|KEY|SECRET|PASSWORD)|WEBHOOK_SECRET", re.I)
_NODE_NAME = re.compile(r"^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$")


def github_credentials(env: Mapping[str, str]) -> list[str]:
    """Names of variables in ``env`` that hold GitHub credentials (the worker drops them)."""
    return sorted(name for name in env if _GITHUB_SECRET.search(name))


@dataclass(frozen=True)
class WorkerPlan:
    device: str
    queues: list[str]
    node: str
    env: dict[str, str] = field(default_factory=dict)  # variables to set before Celery starts
    argv: list[str] = field(default_factory=list)  # the `celery worker` arguments


def plan_worker(*, gpu: int | None, device: str | None, queues: str | None, name: str | None, hostname: str,
                pid: int, loglevel: str = "info") -> WorkerPlan:
    """The worker to start for these options; ValueError (with the fix) for a bad combination."""
    if gpu is not None and device not in (None, "cuda"):
        raise ValueError("give --gpu N for a GPU worker or --device cpu for a CPU worker, not both")
    if gpu is None and device in (None, "cuda"):
        raise ValueError("choose the worker's device: --gpu N (one worker per GPU) or --device cpu")
    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"--device must be cpu (GPU workers take --gpu N), not {device!r}")
    if gpu is not None and gpu < 0:
        raise ValueError(f"--gpu must be a GPU index (0, 1, ...), not {gpu}")
    kind = "cuda" if gpu is not None else "cpu"
    default_queue = QueueName.for_device(kind).value
    chosen = [q.strip() for q in (queues or default_queue).split(",") if q.strip()]
    known = {q.value for q in QueueName}
    unknown = [q for q in chosen if q not in known]
    if unknown or not chosen:
        raise ValueError(f"--queues: unknown queue(s) {', '.join(unknown) or '(none given)'};"
                         f" known: {', '.join(sorted(known))}")
    node = name or (f"gpu{gpu}@{hostname}" if gpu is not None else f"cpu-{pid}@{hostname}")
    if "@" not in node:
        node = f"{node}@{hostname}"
    if not _NODE_NAME.match(node):
        raise ValueError(f"--name {node!r}: use letters, digits, '.', '_' and '-' (NAME or NAME@HOST)")
    env = {"KERNELEVO_WORKER_DEVICE": kind, "CUDA_VISIBLE_DEVICES": str(gpu) if gpu is not None else ""}
    argv = ["worker", "--queues", ",".join(chosen), "--hostname", node, "--concurrency", "1", "--pool", "prefork",
            "--max-tasks-per-child", "1", "--prefetch-multiplier", "1", "--without-gossip", "--without-mingle",
            "--loglevel", loglevel]
    return WorkerPlan(device=kind, queues=chosen, node=node, env=env, argv=argv)
