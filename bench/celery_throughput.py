"""Search throughput through the worker tier against the same searches run in-process.

    python bench/celery_throughput.py --device cuda                   # the H200 run (one worker on GPU 0)
    python bench/celery_throughput.py --device cpu --budget-candidates 2 --ops rms_norm   # smoke test
    python bench/celery_throughput.py --combine A/celery_throughput.json B/... --out DIR  # other ops' runs, one table
    python bench/celery_throughput.py --paths celery --ops swiglu     # one path only (the other from another call)

For each op of bench/ops (default: rms_norm, swiglu, layer_norm) and the same budget, seed and search shape:

* **in-process**: ``kernelevo optimize bench/ops/OP.py --json-lines``, as a user runs it without Redis;
* **through Celery**: a real ``redis-server`` (``deploy/redis.conf``) and one ``kernelevo worker`` (``--gpu 0``
  or ``--device cpu``) started here, the op submitted with ``kernelevo jobs submit --json`` and followed with
  ``kernelevo jobs show --json`` until it ends.

Candidates per GPU-minute: evaluated candidates over the time the GPU is held for the op: in-process, the wall
time of the ``kernelevo optimize`` process (start to exit); through Celery, the job's wall time from its first
chunk's start to its end (chunk hand-offs, repository unpacking, archive restores and re-measured baselines all
count against the worker tier; queue time before the first chunk does not). The ratio Celery / in-process is the
target (>= 0.95). The search loop's own elapsed time is recorded too (``search_s``) with its ratio. Writes
``<out>/celery_throughput.json`` (date, GPU, driver, torch, triton, per-op rows, geomean ratio) and prints a
Markdown table. The in-process wall includes Python's start-up and imports, which a warm worker has already paid.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._report import header  # noqa: E402

TERMINAL = {"succeeded", "failed", "cancelled", "no_improvement"}
DEFAULT_OPS = ("rms_norm", "swiglu", "layer_norm")


def _machine(device: str) -> dict[str, Any]:
    """GPU and driver (nvidia-smi), torch and triton versions: where the numbers were measured."""
    import torch
    import triton

    gpu = {"name": None, "driver": None}
    if device == "cuda" and shutil.which("nvidia-smi"):
        line = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", "0"],
                              capture_output=True, text=True).stdout.strip()
        if line:
            gpu["name"], _, gpu["driver"] = (part.strip() for part in line.partition(","))
    return {**header("celery_throughput", torch=torch.__version__, triton=triton.__version__), "device": device,
            "gpu": gpu}


def _caches(root: Path) -> dict[str, str]:
    return {"KERNELEVO_CACHE_DIR": str(root / "kernelevo"), "TRITON_CACHE_DIR": str(root / "triton"),
            "TORCH_EXTENSIONS_DIR": str(root / "torch_extensions")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelevo.cli", *args]


def _search_flags(args: argparse.Namespace) -> list[str]:
    """The flags both paths share: the same budget, seed and shape, and no early plateau stop."""
    flags = ["--device", args.device, "--budget-candidates", str(args.budget_candidates), "--seed", str(args.seed),
             "--plateau", "1000"]
    if args.budget_minutes:
        flags += ["--budget-minutes", str(args.budget_minutes)]
    if args.generation_size:
        flags += ["--generation-size", str(args.generation_size)]
    if args.parallel_evaluations:
        flags += ["--parallel-evaluations", str(args.parallel_evaluations)]
    return flags


def run_in_process(op: str, args: argparse.Namespace, env: dict[str, str], work: Path) -> dict[str, Any]:
    started = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    log = args.out / f"in-process-{op}.log"  # the search's progress lines, kept where a time-boxed run can read them
    args.out.mkdir(parents=True, exist_ok=True)
    with log.open("w") as err:
        done = subprocess.run(_cli("optimize", str(ROOT / "bench" / "ops" / f"{op}.py"), "--json-lines",
                                   "--proposer", "offline", "--runs-dir", str(work / "runs"), *_search_flags(args)),
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
                              timeout=args.timeout_s)
    wall = time.monotonic() - started
    print(f"{op} in-process: rc {done.returncode}, {wall:.1f} s", flush=True)
    (args.out / f"in-process-{op}.jsonl").write_text(done.stdout)  # the progress events, for a failed run too
    results = [json.loads(line) for line in done.stdout.splitlines()
               if line.startswith("{") and '"event": "result"' in line]
    if not results:  # rc 1 with a result: the search ran and accepted nothing (still a throughput figure)
        tail = _portable(log.read_text(errors="replace"))[-3000:]
        raise RuntimeError(f"kernelevo optimize {op} failed (rc {done.returncode}): {tail}")
    result = results[-1]
    evaluated, elapsed = result["candidates_evaluated"], result["elapsed_s"]
    return {"evaluated": evaluated, "accepted": result["candidates_accepted"], "search_s": elapsed,
            "process_wall_s": round(wall, 3), "stop_reason": result["stop_reason"], "phases": result.get("phases"),
            "candidates_per_minute": evaluated / (wall / 60) if wall else None,
            **_kept_run(work / "runs", args.out, op)}


def _kept_run(runs: Path, out: Path, op: str) -> dict[str, Any]:
    """The in-process search's run directory: where its evaluation time went (bench/run.py's summary) and the
    directory itself as ``<out>/run-<op>.tgz`` (`kernelevo report` renders it; reports of a GPU run need one)."""
    from bench.run import evaluation_costs
    from kernelevo.search.rundir import RunDir

    run_dirs = sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    if not run_dirs:
        return {"evaluation_costs": {"n": 0}, "run_archive": None}
    target = out / f"run-{op}.tgz"
    with tarfile.open(target, "w:gz") as tar:
        tar.add(run_dirs[-1], arcname=run_dirs[-1].name)
    return {"evaluation_costs": evaluation_costs(RunDir(run_dirs[-1]).candidates()), "run_archive": target.name}


def _portable(text: str) -> str:
    """A log excerpt without this machine's paths (the report is committed): the checkout, the interpreter's
    prefix and the folders on PYTHONPATH (wheels unpacked for a device run) become ``<repo>``, ``<python>`` and
    ``<site>``."""
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    for path, name in ((str(ROOT), "<repo>"), (sys.prefix, "<python>"), (sys.base_prefix, "<python>"),
                       *((p, "<site>") for p in extra)):
        text = text.replace(path, name)
    return text


class Services:
    """A redis-server and one ``kernelevo worker``, each in its own process group, stopped together."""

    def __init__(self, args: argparse.Namespace, env: dict[str, str], work: Path) -> None:
        binary = args.redis_server or shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server not found: install it (apt-get install redis-server) or pass "
                             "--redis-server PATH")
        self.port = _free_port()
        self.env = {**env, "KERNELEVO_REDIS_URL": f"redis://127.0.0.1:{self.port}/0"}
        self.work = work
        self.procs: list[subprocess.Popen[bytes]] = []
        (work / "redis").mkdir(parents=True)
        self._start([binary, str(ROOT / "deploy" / "redis.conf"), "--port", str(self.port), "--dir",
                     str(work / "redis"), "--maxmemory", "2gb"], "redis.log")
        self._wait(lambda: self._ping(), "redis-server")
        where = ["--gpu", "0"] if args.device == "cuda" else ["--device", "cpu"]
        self._start(_cli("worker", *where, "--name", "bench", "--loglevel", "warning"), "worker.log")

    def _start(self, argv: list[str], log: str) -> None:
        out = (self.work / log).open("ab")
        self.procs.append(subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                           start_new_session=True))

    def _ping(self) -> bool:
        with socket.socket() as s:
            try:
                s.connect(("127.0.0.1", self.port))
            except OSError:
                return False
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")

    @staticmethod
    def _wait(condition: Any, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not come up in {timeout:.0f} s")
            time.sleep(0.2)

    def check_alive(self) -> None:
        for proc, log in zip(self.procs, ("redis.log", "worker.log")):
            if proc.poll() is not None:
                tail = (self.work / log).read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{log.removesuffix('.log')} exited with status {proc.returncode}: {tail}")

    def jobs(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(_cli("jobs", *args, "--json"), cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"kernelevo jobs {' '.join(args)} failed: {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(30)


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def run_through_celery(op: str, args: argparse.Namespace, services: Services) -> dict[str, Any]:
    submitted = time.monotonic()
    record = services.jobs("submit", str(ROOT / "bench" / "ops" / f"{op}.py"), "--proposer", "offline",
                           *_search_flags(args))["job"]
    deadline = submitted + args.timeout_s
    shown = 0.0
    while record["state"] not in TERMINAL:
        services.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {record['id']} ({op}) still {record['state']} after {args.timeout_s} s")
        time.sleep(1.0)
        record = services.jobs("show", record["id"])
        if time.monotonic() - shown > 15:
            shown = time.monotonic()
            print(f"{op} through Celery: {record['state']}, {record['progress']['evaluated']} evaluated, "
                  f"chunk {record['chunks']}", flush=True)
    wall = _seconds(record.get("started_at"), record.get("finished_at"))
    evaluated = record["progress"]["evaluated"]
    return {"job": record["id"], "state": record["state"], "error": record.get("error"), "evaluated": evaluated,
            "accepted": record["progress"]["accepted"], "chunks": record["chunks"],
            "recoveries": record["recoveries"], "search_s": record["progress"]["elapsed_s"], "job_wall_s": wall,
            "submit_to_end_s": round(time.monotonic() - submitted, 3),
            "stop_reason": (record.get("result") or {}).get("stop_reason"),
            "phases": ((record.get("result") or {}).get("summary") or {}).get("phases"),
            "candidates_per_minute": evaluated / (wall / 60) if wall else None}


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def table(rows: list[dict[str, Any]]) -> str:
    def cell(value: Any, fmt: str = ".2f") -> str:
        return "—" if value is None else format(value, fmt)

    lines = ["| op | in-process cand/min | Celery cand/min | ratio | chunks | evaluated (in-process / Celery) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        a, b = r.get("in_process", {}), r.get("celery", {})
        lines.append(f"| {r['op']} | {cell(a.get('candidates_per_minute'))} | {cell(b.get('candidates_per_minute'))} | "
                     f"{cell(r['ratio'], '.3f')} | {b.get('chunks', '—')} | {a.get('evaluated', '—')} / "
                     f"{b.get('evaluated', '—')} |")
    return "\n".join(lines)


def phase_table(rows: list[dict[str, Any]]) -> str:
    """Where each path's wall time went (the last session's phases; `other` is the wall not in them: Python's
    start-up in-process, chunk set-up and hand-offs through Celery). Rows measured before phases were recorded
    show dashes."""
    names = ("session_start_s", "baselines_s", "search_s", "sanitize_s")
    lines = ["| op | path | wall s | session start s | of it baselines s | search s | sanitize s | other s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for path, wall_key in (("in_process", "process_wall_s"), ("celery", "job_wall_s")):
            side = r.get(path) or {}
            phases, wall = side.get("phases") or {}, side.get(wall_key)
            cells = [phases.get(n) for n in names]
            known = [phases.get(n) for n in ("session_start_s", "search_s", "sanitize_s")]
            other = wall - sum(known) if wall is not None and all(v is not None for v in known) else None
            shown = ["—" if v is None else f"{v:.1f}" for v in (wall, *cells, other)]
            lines.append(f"| {r['op']} | {path.replace('_', '-')} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each row's ratios (Celery / in-process candidates per minute; in-process / Celery search time) and their
    geometric means over the rows."""
    for row in rows:
        a = row.get("in_process", {}).get("candidates_per_minute")
        b = row.get("celery", {}).get("candidates_per_minute")
        row["ratio"] = b / a if a and b else None
        x, y = row.get("in_process", {}).get("search_s"), row.get("celery", {}).get("search_s")
        row["search_time_ratio"] = x / y if x and y else None  # same candidates: less time is more throughput
    return {"rows": rows, "geomean_ratio": geomean([r["ratio"] for r in rows if r["ratio"]]),
            "geomean_search_time_ratio": geomean([r["search_time_ratio"] for r in rows if r["search_time_ratio"]]),
            "target_ratio": 0.95}


PATHS = ("in_process", "celery")


def _print_report(report: dict[str, Any]) -> None:
    """The throughput table, where each path's wall went, and the geomean against the target."""
    print(table(report["rows"]))
    print("\n" + phase_table(report["rows"]))
    ratio = report["geomean_ratio"]
    print(f"\ngeomean Celery/in-process: {ratio:.3f} (target >= 0.95)" if ratio else "\nno ratio measured")


def _shown(path: Path) -> str:
    """A report's name in a combined report: relative to the repository where it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def merge_rows(reports: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every op's two paths from the runs that measured them (a device call is time-boxed: three ops take
    several calls, and an op's two paths may come from two). A path a time-boxed run finished counts; one
    measured twice, or an op left with a single path, is refused. Each row says which run gave each path."""
    merged: dict[str, dict[str, Any]] = {}
    for name, report in reports:
        for row in report["rows"]:
            target = merged.setdefault(row["op"], {"op": row["op"], "from": {}})
            for path in PATHS:
                if path not in row:
                    continue
                if path in target:
                    raise SystemExit(f"{row['op']}: the {path} path is in {target['from'][path]} and in {name}: "
                                     "measured twice, keep one")
                target[path], target["from"][path] = row[path], name
    missing = [f"{op} ({', '.join(p for p in PATHS if p not in row)})" for op, row in merged.items()
               if any(p not in row for p in PATHS)]
    if missing:
        raise SystemExit(f"ops without both paths: {'; '.join(missing)}: run the missing path with --paths")
    return list(merged.values())


def combine(reports: list[Path], out: Path) -> int:
    """One report from runs on the same machine and versions (the ops, or an op's two paths, split over calls).
    Refuses runs of different GPUs, drivers, versions, budgets or seeds, a path measured twice, an op missing one."""
    loaded = [json.loads(path.read_text()) for path in reports]
    same = ("device", "gpu", "versions", "budget_candidates", "seed")
    for path, report in zip(reports[1:], loaded[1:]):
        differs = [key for key in same if report.get(key) != loaded[0].get(key)]
        if differs:
            raise SystemExit(f"{path}: {', '.join(differs)} differ from {reports[0]}: not one measurement")
    names = [_shown(path) for path in reports]
    rows = merge_rows(list(zip(names, loaded)))
    report = {**{key: loaded[0][key] for key in ("benchmark", "machine", *same)},
              "dates": [r["date"] for r in loaded], "combined_from": names, "partial": False,
              **summarise(rows), "log_tails": {n: r.get("log_tails", {}) for n, r in zip(names, loaded)}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "celery_throughput.json").write_text(json.dumps(report, indent=2) + "\n")
    _print_report(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS))
    parser.add_argument("--budget-candidates", type=int, default=24)
    parser.add_argument("--budget-minutes", type=float, default=None, help="a wall-time cap of each search too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generation-size", type=int, default=None)
    parser.add_argument("--parallel-evaluations", type=int, default=None)
    parser.add_argument("--timeout-s", type=float, default=1800, help="per op and path")
    parser.add_argument("--redis-server", default=None, help="path of redis-server (default: on PATH)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "celery_throughput")
    parser.add_argument("--paths", default="in_process,celery",
                        help="which paths to run (in_process, celery); --combine pairs runs of one path each")
    parser.add_argument("--combine", type=Path, nargs="+", default=None, metavar="REPORT",
                        help="merge the celery_throughput.json of runs of other ops into --out (runs nothing)")
    args = parser.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out)
    ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    unknown = [op for op in ops if not (ROOT / "bench" / "ops" / f"{op}.py").is_file()]
    if unknown:
        parser.error(f"no bench op {', '.join(unknown)} (see bench/ops/)")
    paths = [p.strip().replace("-", "_") for p in args.paths.split(",") if p.strip()]
    if not paths or any(p not in PATHS for p in paths):
        parser.error(f"--paths takes {' and/or '.join(PATHS)}, not {args.paths!r}")

    rows: list[dict[str, Any]] = []
    logs: dict[str, str] = {}

    def write(partial: bool) -> dict[str, Any]:
        """The report so far (written after every op and path: a time-boxed run keeps what it measured)."""
        report = {**machine, "budget_candidates": args.budget_candidates, "seed": args.seed, "partial": partial,
                  "paths": paths,
                  **summarise(rows), "log_tails": logs}
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "celery_throughput.json").write_text(json.dumps(report, indent=2) + "\n")
        return report

    machine = _machine(args.device)
    # `timeout` ends a time-boxed run with SIGTERM: leave through the finally blocks (the worker stopped, its log kept)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    with tempfile.TemporaryDirectory(prefix="kernelevo-celery-bench-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "PYTHONUNBUFFERED": "1"}
        env.pop("KERNELEVO_REDIS_URL", None)
        # Each path starts with empty compile caches of its own (Triton, NVRTC, torch extensions), shared by its ops:
        # neither profits from kernels the other compiled.
        inproc_env = {**env, **_caches(work / "cache-in-process")}
        # One op at a time on both paths (the worker idles while the in-process search runs): a time-boxed run
        # still pairs every op it reached.
        services = Services(args, {**env, **_caches(work / "cache-celery")}, work / "celery") \
            if "celery" in paths else None
        try:
            for op in ops:
                rows.append({"op": op})
                if "in_process" in paths:
                    rows[-1]["in_process"] = run_in_process(op, args, inproc_env, work / f"inproc-{op}")
                    write(partial=True)
                if services is not None:
                    rows[-1]["celery"] = run_through_celery(op, args, services)
                    write(partial=True)
        finally:
            if services is not None:
                services.stop()
            logs.update({name: _portable((work / "celery" / name).read_text(errors="replace")[-4000:])
                         for name in ("redis.log", "worker.log") if (work / "celery" / name).is_file()})
            write(partial=True)
    report = write(partial=False)
    _print_report(report)
    return 0 if all(r["celery"]["state"] in TERMINAL - {"failed", "cancelled"} for r in rows if "celery" in r) else 1


if __name__ == "__main__":
    sys.exit(main())
