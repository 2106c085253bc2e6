"""Load on the webhook endpoint: signed deliveries at a fixed rate, latency and throughput.

The real app (``bot.app.create_app`` with every router, the work queue and its deliveries claimed in
Redis, as deployed; ``redis-server`` must be installed) runs under uvicorn in a child process on
127.0.0.1; this process sends GitHub-shaped deliveries open-loop at ``--rate`` per second (bounded by
``--count`` and ``--max-seconds``) and records each response's latency. Deliveries are PR comments
without commands, PR comments with malformed commands replayed (duplicates), pings and unrouted
events, i.e. the request path in full (signature, dedupe, parse, route, enqueue); the queued handlers
run in the server while the load goes on but make no GitHub calls for these deliveries.

    python bench/webhook_load.py [--rate 200] [--count 3000] [--max-seconds 60] [--out bench/results/webhook_load.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret"
WEBHOOKS = ROOT / "tests" / "fixtures" / "github" / "webhooks"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port: int, redis_port: int) -> None:
    """Child process: the real app (deliveries claimed in Redis, as deployed), with a context whose GitHub and
    job queue are never reached by these deliveries."""
    import redis
    import uvicorn

    from bot.app import create_app
    from bot.context import BotContext
    from bot.deliveries import Deliveries
    from bot.state import BotState
    from bot.workqueue import WorkQueue

    state = BotState(redis.Redis(port=redis_port))
    work = WorkQueue(4)

    def no_workspace(repo, sha):
        raise RuntimeError("the benchmark makes no checkouts")

    ctx = BotContext(github=lambda inst: _Unreachable(), jobs=_Unreachable(), state=state, workspace=no_workspace,
                     work=work)
    app = create_app(secret=SECRET, deliveries=Deliveries(state), work=work, ctx=ctx)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


class _Unreachable:
    def __getattr__(self, name):
        raise RuntimeError(f"benchmark deliveries must not call GitHub ({name})")


def _payloads() -> list[tuple[str, dict]]:
    comment = json.loads((WEBHOOKS / "issue_comment_created.with-installation.json").read_text())
    comment["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    plain = json.loads(json.dumps(comment))
    plain["comment"]["body"] = "LGTM, thanks!\n\nSome more text about the change."
    ping = json.loads((WEBHOOKS / "ping_with-app_id.json").read_text())
    return [("issue_comment", plain), ("ping", ping), ("star", {"action": "created", "repository": {}})]


async def _load(url: str, rate: float, count: int, max_seconds: float) -> dict:
    import httpx

    from bot.signature import sign

    kinds = _payloads()
    bodies = [(name, json.dumps(p).encode()) for name, p in kinds]
    latencies: list[float] = []
    lateness: list[float] = []
    statuses: dict[str, int] = {}
    errors: list[str] = []
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
    async with httpx.AsyncClient(base_url=url, timeout=10, limits=limits) as client:
        async def one(i: int, scheduled: float) -> None:
            name, body = bodies[i % len(bodies)]
            delivery = f"bench-{i // 50 * 50}" if i % 50 == 49 else f"bench-{i}-{uuid.uuid4().hex[:8]}"
            headers = {"X-GitHub-Event": name, "X-GitHub-Delivery": delivery,
                       "X-Hub-Signature-256": sign(SECRET, body), "Content-Type": "application/json"}
            start = time.perf_counter()
            lateness.append(start - scheduled)
            try:
                response = await client.post("/webhook", content=body, headers=headers)
                statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            latencies.append(time.perf_counter() - start)

        t0 = time.perf_counter()
        tasks = []
        for i in range(count):
            scheduled = t0 + i / rate
            if scheduled - t0 > max_seconds:
                break
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i, scheduled)))
        await asyncio.gather(*tasks)
        duration = time.perf_counter() - t0
    ms = sorted(x * 1000 for x in latencies)

    def pct(p: float) -> float | None:
        return round(ms[min(len(ms) - 1, int(p / 100 * len(ms)))], 3) if ms else None

    return {"sent": len(tasks), "completed": len(ms), "errors": len(errors), "error_examples": errors[:3],
            "statuses": statuses, "duration_s": round(duration, 3),
            "throughput_per_s": round(len(ms) / duration, 1) if duration else None,
            "latency_ms": {"p50": pct(50), "p90": pct(90), "p99": pct(99), "max": round(ms[-1], 3) if ms else None,
                           "mean": round(statistics.fmean(ms), 3) if ms else None},
            "send_lateness_ms_p99": round(sorted(lateness)[int(0.99 * (len(lateness) - 1))] * 1000, 3)
            if lateness else None}


@contextlib.contextmanager
def _redis():
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("webhook_load: redis-server is needed (the bot claims deliveries in Redis): "
                         "bash deploy/system-packages.sh")
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                             "no"], stdout=subprocess.DEVNULL)
    try:
        _wait_port(port)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port}")


def _versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in ("starlette", "uvicorn", "httpx", "PyGithub", "redis")} | {
        "python": platform.python_version()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="deliveries per second (open loop)")
    parser.add_argument("--count", type=int, default=3000, help="deliveries at most")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="sending time at most")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "webhook_load.json")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis-port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.redis_port)
        return
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with _redis() as redis_port:
        cmd = [sys.executable, __file__, "--serve", str(port), "--redis-port", str(redis_port)]
        server = subprocess.Popen(cmd, env=env)
        try:
            _wait_port(port)
            sys.path.insert(0, str(ROOT))
            result = asyncio.run(_load(f"http://127.0.0.1:{port}", args.rate, args.count, args.max_seconds))
        finally:
            server.terminate()
            server.wait(10)
    record = {"benchmark": "webhook_load", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "processor": platform.machine()},
              "versions": _versions(), "delivery_store": "redis",
              "config": {"rate_per_s": args.rate, "count": args.count, "max_seconds": args.max_seconds,
                         "mix": "PR comments without commands, pings, unrouted events; every 50th a replay"},
              **result}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: record[k] for k in ("sent", "completed", "errors", "statuses", "throughput_per_s",
                                              "latency_ms", "delivery_store")}, indent=2))


if __name__ == "__main__":
    main()
