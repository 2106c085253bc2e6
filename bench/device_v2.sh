#!/usr/bin/env bash
# One call on the GPU machine for the sandboxed verifier: carried bubblewrap (.sysdeb) and wheels (.whl), then
# the sandbox probe, the GPU tests of the trace and the sanitizer, and the candidate suite. Results under $OUT.
# Usage (device tool): carry [".whl", ".sysdeb"], command "bash bench/device_v2.sh"; SUITE_S / TESTS_S: time boxes.
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
mkdir -p "$OUT" /tmp/sys/bwrapbin
for f in .sysdeb/*.deb; do dpkg -x "$f" /tmp/sys; done
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:/tmp/sys/lib/x86_64-linux-gnu exec /tmp/sys/usr/bin/bwrap "$@"\n' \
  > /tmp/sys/bwrapbin/bwrap && chmod +x /tmp/sys/bwrapbin/bwrap
export PATH=/tmp/sys/bwrapbin:$PATH
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 KERNELEVO_CACHE_DIR=/tmp/kc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
timeout 60 python3 bench/sandbox_probe.py --out "$OUT/sandbox_probe.json" > "$OUT/probe.log" 2>&1
python3 - "$OUT/sandbox_probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); print("isolation:", d["isolation"].get("working"), d["isolation"].get("problem"))
print("gpu in sandbox:", {k: d["gpu_in_sandbox"].get(k) for k in ("device", "sum", "seconds", "error", "returncode")})
print("ipc plain:", d["ipc_plain"], "| ipc sandboxed:", d["ipc_sandboxed"])
print("sanitizer:", {k: (v.get("returncode") if isinstance(v, dict) else v) for k, v in d["compute_sanitizer"].items()})
PY
timeout "${TESTS_S:-60}" python3 -m pytest -q -m gpu tests/evaluator/test_sanitize.py tests/evaluator/test_tracing_gpu.py \
  > "$OUT/pytest_gpu.txt" 2>&1; tail -4 "$OUT/pytest_gpu.txt"
timeout "${SUITE_S:-170}" python3 bench/gpu_suite.py --small --skip-slow --only "${SUITE_ONLY:-}" --out "$OUT/gpu_suite.json" \
  > "$OUT/suite.log" 2>&1; grep -c "^PASS" "$OUT/suite.log"; grep "^FAIL" "$OUT/suite.log" | cut -c1-230 | head -20; tail -2 "$OUT/suite.log"
