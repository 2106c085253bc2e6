"""Per-call cost of runtime dispatch on CPU: the envelope and hash checks a decorated op pays on every
call, measured as (decorated call) - (direct call of what it ends up running), with trivial op and
kernel bodies so that only the dispatch machinery is timed. Target: under 5 us per call.

Writes bench/results/dispatch_<hostname>.json (date, machine, versions, microseconds per call).

    python bench/dispatch_bench.py [--calls 200000] [--out PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import sys
import tempfile
import timeit
import warnings
from pathlib import Path

from _report import header

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

USER_MODULE = '''
import torch
import kernelevo


@kernelevo.optimize(inputs=lambda device: [
    (torch.randn(64, 128, device=device), torch.randn(128, device=device)),
    (torch.randn(8, 128, device=device), torch.randn(128, device=device)),
])
def rms_like(x, w, eps=1e-6):
    return x


@kernelevo.optimize(inputs=lambda device: [(torch.randn(64, 128, device=device),)])
def no_kernel(x):
    return x
'''
KERNEL = "from torch import nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x, w, eps=1e-6):\n" \
         "        return x\n"


def _per_call_us(fn, calls: int, repeats: int) -> float:
    """Best of ``repeats`` (timeit's advice: higher figures are other processes' noise, not the code)."""
    fn()
    times = timeit.repeat(fn, number=calls, repeat=repeats)
    return min(times) / calls * 1e6


def run(calls: int, device: str = "cpu", repeats: int = 7) -> dict:
    if device == "cpu":  # a CPU-verified Triton kernel dispatches only where Triton runs interpreted
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from kernelevo import dispatch
    from kernelevo.discovery import discover
    from kernelevo.kernel_store import envelope_from_cases, write_kernel
    from kernelevo.settings import reset_settings_cache

    def per_call(fn, n: int = calls) -> float:
        return _per_call_us(fn, n, repeats)

    with tempfile.TemporaryDirectory(prefix="kernelevo-dispatch-bench-") as tmp:
        root = Path(tmp)
        (root / "ops.py").write_text(USER_MODULE)
        op = next(o for o in discover(root).ops if o.qualname == "rms_like")
        cases = [(torch.randn(64, 128), torch.randn(128)), (torch.randn(8, 128), torch.randn(128))]
        capabilities = [list(torch.cuda.get_device_capability())] if device == "cuda" else None
        envelope = envelope_from_cases(cases, device_type=device, capabilities=capabilities, backend="triton")
        write_kernel(root, op, KERNEL, {"verdict": "accepted"}, envelope)
        spec = importlib.util.spec_from_file_location("dispatch_bench_ops", root / "ops.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)

        x, w, big = (torch.randn(32, 128, device=device), torch.randn(128, device=device),
                     torch.randn(1000, 128, device=device))
        os.environ.pop("KERNELEVO_DISABLE", None)
        reset_settings_cache()
        dispatch.clear_caches()
        op_fn, no_kernel = module.rms_like, module.no_kernel
        original, original_nk = op_fn.__wrapped__, no_kernel.__wrapped__
        kernel = dispatch.dispatcher_for_function(op_fn).state.resolve().kernel_class()

        direct_kernel = per_call(lambda: kernel.forward(x, w))
        direct_original = per_call(lambda: original(x, w))
        direct_original_nk = per_call(lambda: original_nk(x))
        to_kernel = per_call(lambda: op_fn(x, w))
        to_kernel_kw = per_call(lambda: op_fn(x, w=w), calls // 10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outside = per_call(lambda: op_fn(big, w))
        without_kernel = per_call(lambda: no_kernel(x))
        os.environ["KERNELEVO_DISABLE"] = "1"
        reset_settings_cache()
        disabled = per_call(lambda: op_fn(x, w))
        os.environ.pop("KERNELEVO_DISABLE")
        reset_settings_cache()
        assert op_fn(x, w) is x  # the kernel path really ran

    return {
        "device": device,
        "calls_per_repeat": calls,
        "direct_call_us": {"kernel": direct_kernel, "original": direct_original},
        "dispatch_overhead_us": {
            "inside_envelope_to_kernel": to_kernel - direct_kernel,
            "inside_envelope_keyword_args": to_kernel_kw - direct_kernel,
            "outside_envelope_to_original": outside - direct_original,
            "no_kernel_stored": without_kernel - direct_original_nk,
            "disabled": disabled - direct_original,
        },
        "target_us": 5.0,
        "repeats": repeats,
        "note": "best of the repeats; overhead = decorated call minus a direct call of the function it ends up "
                "running; "
                "positional tensors (2 tensor args, rank 2 and 1); "
                "keyword calls bind through a precomputed parameter plan",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the op's tensors live (the check itself always runs on the CPU)")
    parser.add_argument("--repeats", type=int, default=7, help="best of this many (more on a busy machine)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    host = socket.gethostname()
    report = {
        **header("dispatch", torch=torch.__version__),
        "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
        **run(args.calls, args.device, args.repeats),
    }
    suffix = "" if args.device == "cpu" else f"_{args.device}"
    out = args.out or Path(__file__).parent / "results" / f"dispatch_{host}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
