#!/usr/bin/env bash
# One call on the GPU machine: install carried wheels, run the GPU tests, run the benchmarks.
# Usage (device tool): bash bench/device_run.sh smoke|check|verifier|search   — results under $OUT.
# Before the first call: bash bench/fetch_wheels.sh (here), then carry [".whl"].
# On a machine of several GPUs, run one mode per GPU side by side, each with its own TAG:
#   CUDA_VISIBLE_DEVICES=0 bash bench/device_run.sh verifier & CUDA_VISIBLE_DEVICES=1 TAG=b bash ... search; wait
set -uo pipefail
mode=${1:-all}
tag=${TAG:-a}
OUT=${OUT:-/tmp/kernelevo-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "/tmp/site-$tag" \
    .whl/*.whl && export PYTHONPATH=/tmp/site-$tag:$PWD || exit 3
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 KERNELEVO_CACHE_DIR=/tmp/kernelevo-cache-$tag TRITON_CACHE_DIR=/tmp/triton-cache-$tag
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
case "$mode" in
  smoke)
    python3 -m pytest -q -x -m gpu tests/kernelevo/test_cuda.py 2>&1 | tail -15 | tee "$OUT/pytest_cuda.txt"
    python3 -m kernelevo.cli eval --task tests/tasks/axpy.py --candidate tests/candidates/honest/axpy_launcher.py \
      --device cuda --json > "$OUT/smoke_axpy.json"; echo "exit=$?"
    python3 -c "import json; v=json.load(open('$OUT/smoke_axpy.json')); print(v['verdict'], v['reason'], v['detail']); print(json.dumps(v['timing'], indent=1)[:3000]); print(v.get('logs','')[-2000:])"
    ;;
  verifier)  # BENCH_S / SUITE_S: seconds for each half (the lease is short); SUITE_ONLY: file substrings
    timeout "${BENCH_S:-280}" python3 bench/verifier_bench.py --out /tmp/verifier --only "${BENCH_ONLY:-}" 2>&1 \
      | tee "$OUT/verifier_bench.log" | tail -30
    tar czf "$OUT/verifier.tgz" -C /tmp verifier
    timeout "${SUITE_S:-290}" python3 bench/gpu_suite.py --small --skip-slow --only "${SUITE_ONLY:-}" --out "$OUT/gpu_suite_small.json" 2>&1 \
      | tee "$OUT/gpu_suite.log" | tail -25
    ;;
  check)  # the GPU tests in TESTS, then the adversarial suite on the tasks' small cases (SUITE_S seconds)
    python3 -m pytest -q -m gpu ${TESTS:-tests/evaluator/test_handoff.py tests/kernelevo/test_cuda.py} 2>&1 \
      > "$OUT/pytest-$tag.txt"; tail -5 "$OUT/pytest-$tag.txt"
    timeout "${SUITE_S:-290}" python3 bench/gpu_suite.py --small --skip-slow --only "${SUITE_ONLY:-}" \
      --out "$OUT/gpu_suite_small-$tag.json" 2>&1 | tee "$OUT/gpu_suite-$tag.log" | tail -25
    ;;
  search)  # OPS (comma-separated), MINUTES per op, PARALLEL evaluations (0: auto): the issue-4 bench suite
    # outputs reach the reference through CUDA IPC: prove that works here before spending the lease on a search
    handoff=auto
    python3 -m pytest -q -x -m gpu tests/evaluator/test_handoff.py > "$OUT/pytest-handoff-$tag.txt" 2>&1 || { handoff=file; echo "CUDA IPC hand-over failed (pytest-handoff-$tag.txt): searching with files"; }
    timeout "${SEARCH_S:-560}" python3 bench/run.py --device cuda --ops "${OPS:-rms_norm,swiglu}" --output-handoff $handoff \
      --budget-minutes "${MINUTES:-2}" --parallel-evaluations "${PARALLEL:-0}" --out "/tmp/search-$tag" 2>&1 | tee "$OUT/search-$tag.log" | tail -30
    tar czf "$OUT/search-$tag.tgz" -C /tmp "search-$tag"
    ;;
esac
