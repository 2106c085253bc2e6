"""What the sandbox can do on this machine's GPU: run it there and read the JSON.

    python bench/sandbox_probe.py --out sandbox_probe.json

Checks, each reported with its evidence: which isolation is available (bubblewrap, namespaces, cgroup v2);
whether a sandboxed process sees the GPU and can JIT-compile and run a Triton kernel; whether CUDA IPC
works between two sandboxes (separate PID namespaces) and between two plain processes; whether the verifier's
CUDA VMM hand-off (an allocation exported as a file descriptor, passed over a Unix socket) works between two
sandboxes (``vmm_sandboxed``: the descriptor's file type, the access the reader was granted, the sums read back,
and a late write into the exported copy caught); whether compute-sanitizer runs here (memcheck and racecheck on a
tiny program).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPU_CHILD = r"""
import json, sys, time
t = time.time()
import torch, triton, triton.language as tl
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)
x = torch.zeros(1000, device="cuda")
add_one[(4,)](x, 1000, BLOCK=256)
torch.cuda.synchronize()
print(json.dumps({"device": torch.cuda.get_device_name(), "sum": float(x.sum()), "seconds": time.time() - t}))
"""

PRODUCER = r"""
import json, sys, base64, torch
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
d = x.untyped_storage()._share_cuda_()
print(json.dumps([d[0], base64.b64encode(d[1]).decode(), d[2], d[3], base64.b64encode(d[4]).decode(), d[5],
                  base64.b64encode(d[6]).decode() if d[6] else None, d[7]]), flush=True)
sys.stdin.readline()
"""

CONSUMER = r"""
import json, sys, base64, torch
d = json.loads(sys.argv[1])
torch.cuda.init()
try:
    s = torch.UntypedStorage._new_shared_cuda(d[0], base64.b64decode(d[1]), d[2], d[3], base64.b64decode(d[4]), d[5],
                                              base64.b64decode(d[6]) if d[6] else None, d[7])
    t = torch.empty(0, dtype=torch.float32, device="cuda").set_(s, 0, (1 << 20,), (1,))
    print(json.dumps({"ok": True, "sum": float(t.sum())}))
except Exception as exc:
    print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}))
"""

VMM_PRODUCER = r"""
import json, socket, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import torch
from evaluator.sandboxed import handoff
key, mode = int(sys.argv[2]), sys.argv[3]
torch.cuda.init()
x = (torch.arange(1 << 20, device="cuda", dtype=torch.float32) % 97)[7:].view(-1, 3)  # an offset, strided view
outbox = handoff.Outbox(key, "vmm")
item = outbox.send([x, x.to(torch.bfloat16).t()], Path("unused.pt"), "call 1")
fds = outbox.take_fds()
if mode == "socket":  # a forged descriptor: the parent must refuse it
    pairs = [socket.socketpair() for _ in fds]
    fds = [a.fileno() for a, _b in pairs]
handoff.fd_sender(0)(fds)
if mode == "tamper":  # a late write into the copy already handed over
    outbox._exports[0].view(torch.float32, [4]).fill_(-1.0)
    torch.cuda.synchronize()
print(json.dumps({"item": item, "nfds": len(fds), "export_failed": outbox.export_failed}), flush=True)
socket.socket(fileno=0).recv(1)  # keep the allocations until the reader is done
"""

VMM_CONSUMER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from evaluator.sandboxed import handoff, vmm
item, key, fds = json.loads(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
torch.cuda.init()
try:
    outs = handoff.receive(item, "cuda", key, fds)
    d = item["vmm"][0]
    with vmm.imported(fds[d["fd"]], d["size_bytes"], 0) as (_raw, access):
        pass
    print(json.dumps({"ok": True, "access": access, "sums": [float(o.double().sum()) for o in outs],
                      "shapes": [list(o.shape) for o in outs], "dtypes": [str(o.dtype) for o in outs]}))
except handoff.HandoffError as exc:
    print(json.dumps({"ok": False, "kind": exc.kind, "error": str(exc)[:400]}))
"""

RACE_CU = r"""
#include <cstdio>
__global__ void racy(int *x) { x[0] = threadIdx.x; }
__global__ void oob(int *x) { x[threadIdx.x + 32] = 1; }
int main() { int *x; cudaMalloc(&x, 32 * sizeof(int)); racy<<<1, 64>>>(x); oob<<<1, 32>>>(x);
  cudaDeviceSynchronize(); printf("done\n"); return 0; }
"""


def sandboxed(code: str, *args: str, gpu: bool = True, timeout: float = 180, stdin: int | None = None,
              pass_fds: tuple[int, ...] = ()) -> dict:
    from kernelevo.sandbox import Bind, SandboxPolicy, current, gpu_binds, spawn, system_binds

    report = current()
    private = Path(tempfile.mkdtemp(prefix="probe-"))
    binds = (*system_binds([ROOT]), Bind(source=private, writable=True), *(gpu_binds() if gpu else ()))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(private), "TMPDIR": str(private),
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    policy = SandboxPolicy(name="probe", binds=binds, env=env, cwd=private, gpu=gpu)
    started = time.time()
    script = private / "child.py"  # a file: Triton reads a jit function's source from it
    script.write_text(code)
    proc = spawn(policy, [sys.executable, str(script), *args], report,
                 stdin=subprocess.PIPE if stdin is None else stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 pass_fds=pass_fds)
    return {"proc": proc, "started": started}


def run_sandboxed(code: str, *args: str, timeout: float = 180, pass_fds: tuple[int, ...] = ()) -> dict:
    handle = sandboxed(code, *args, pass_fds=pass_fds)
    try:
        out, err = handle["proc"].proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        handle["proc"].kill()
        return {"ok": False, "error": "timeout"}
    text = out.decode().strip().splitlines()
    result = {"returncode": handle["proc"].returncode, "stderr": err.decode()[-1500:],
              "seconds": round(time.time() - handle["started"], 2)}
    try:
        result.update(json.loads(text[-1]))
    except (IndexError, ValueError):
        result["stdout"] = out.decode()[-500:]
    return result


def ipc_between(sandbox: bool) -> dict:
    if sandbox:
        producer = sandboxed(PRODUCER)["proc"]
        line = producer.proc.stdout.readline().decode()
        try:
            consumer = run_sandboxed(CONSUMER, line.strip())
        finally:
            producer.proc.stdin.write(b"\n")
            producer.proc.stdin.flush()
            producer.kill()
        return consumer
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
    line = producer.stdout.readline()
    try:
        done = subprocess.run([sys.executable, "-c", CONSUMER, line.strip()], capture_output=True, text=True,
                              timeout=120)
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        producer.kill()
        producer.wait(timeout=30)


def vmm_between_sandboxes(mode: str = "honest", key: int = 0x5EED_F00D) -> dict:
    """One sandbox exports two outputs through the verifier's VMM hand-off (``mode``: ``honest``, ``tamper``: it
    writes into the copy after handing it over, ``socket``: it sends sockets instead), the parent reads the
    descriptors as it does a candidate's, another sandbox imports them and sums them."""
    import socket

    from evaluator import processes
    from evaluator.session import attach_handoff_fds

    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        producer = sandboxed(VMM_PRODUCER, str(ROOT), str(key), mode, stdin=child_end.fileno())["proc"]
    finally:
        child_end.close()
    fds: list[int] = []
    try:
        line = producer.proc.stdout.readline().decode()
        if not line:
            return {"ok": False, "error": "the exporting sandbox said nothing",
                    "stderr": producer.proc.stderr.read().decode()[-1500:]}
        sent = json.loads(line)
        if "vmm" not in sent["item"]:
            return {"ok": False, "error": f"no VMM export: {sent.get('export_failed')}"}
        try:
            fds = processes.receive_declared_fds(parent_end, sent["nfds"])
        except processes.FdProtocolError as exc:
            return {"ok": False, "refused_by_parent": str(exc)}
        kinds = []
        for fd in fds:
            info = os.fstat(fd)
            kinds.append({"mode": oct(info.st_mode), "rdev": f"{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"})
        item = {"vmm": sent["item"]["vmm"], "fds": fds}
        request, numbered = attach_handoff_fds({"op": "compare", "outputs": [{"sent": item}]})
        started = time.time()
        result = run_sandboxed(VMM_CONSUMER, str(ROOT), json.dumps(request["outputs"][0]["sent"]), str(key),
                               json.dumps(numbered), pass_fds=tuple(numbered))
        return {**result, "fd_kinds": kinds, "expected_sum": expected_sum(),
                "import_seconds": round(time.time() - started, 2)}
    finally:
        for fd in fds:
            os.close(fd)
        parent_end.close()
        producer.kill()


def expected_sum() -> float:
    """The sum of the probe's first output, computed without torch: (i % 97) over i = 7 .. 2**20 - 1."""
    return float(sum(i % 97 for i in range(7, 1 << 20)))


def sanitizer() -> dict:
    tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(tool).exists() or not Path(nvcc).exists():
        return {"available": False, "why": "compute-sanitizer or nvcc not found"}
    work = Path(tempfile.mkdtemp(prefix="sanitizer-"))
    (work / "race.cu").write_text(RACE_CU)
    built = subprocess.run([nvcc, "-arch=sm_90", "-o", str(work / "race"), str(work / "race.cu")],
                           capture_output=True, text=True, timeout=180)
    if built.returncode:
        return {"available": False, "why": built.stderr[-800:]}
    result = {}
    for check in ("memcheck", "racecheck"):
        done = subprocess.run([tool, "--tool", check, str(work / "race")], capture_output=True, text=True,
                              timeout=180)
        result[check] = {"returncode": done.returncode, "output": (done.stdout + done.stderr)[-1200:]}
    result["available"] = "ERROR SUMMARY" in result["memcheck"]["output"]
    return result


def _safe(fn) -> dict:
    try:
        return fn()
    except Exception as exc:  # a probe that fails is a finding, not the end of the run
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    from kernelevo.sandbox import current

    report = current()
    result: dict = {"isolation": report.model_dump(mode="json"), "enforced": report.enforced(),
                    "kernel": os.uname().release, "bwrap": shutil.which("bwrap")}
    skipped = {"skipped": report.problem}
    result["gpu_in_sandbox"] = _safe(lambda: run_sandboxed(GPU_CHILD)) if report.working else skipped
    result["ipc_plain"] = _safe(lambda: ipc_between(sandbox=False))
    result["ipc_sandboxed"] = _safe(lambda: ipc_between(sandbox=True)) if report.working else skipped
    result["vmm_sandboxed"] = ({mode: _safe(lambda mode=mode: vmm_between_sandboxes(mode))
                                for mode in ("honest", "tamper", "socket")} if report.working else skipped)
    result["compute_sanitizer"] = _safe(sanitizer)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps({k: (v if k != "compute_sanitizer" else {c: (x.get("returncode") if isinstance(x, dict) else x)
                                                                for c, x in v.items()}) for k, v in result.items()},
                     indent=1, default=str)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
