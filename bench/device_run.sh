#!/usr/bin/env bash
# One call on the GPU machine: unpack the carried system packages and wheels, then one mode. Results under $OUT.
# Usage (device tool): carry [".whl", ".sysdeb"], command "bash bench/device_run.sh MODE [MODE...]" (run in order)
#   sandbox   sandbox probe (PROBE_S seconds: bubblewrap, GPU inside it, CUDA IPC and VMM hand-off between
#             sandboxes, compute-sanitizer), the GPU tests of the trace and the sanitizer (TESTS_S seconds),
#             then the candidate suite (SUITE_S seconds; SUITE_ONLY substrings; RESUME: an earlier run's results,
#             whose entries are kept and not run again)
#   check     the GPU tests in TESTS (CHECK_S seconds), then the candidate suite on the tasks' small cases (SUITE_S seconds)
#   suite     the candidate suite alone (SUITE_S, SUITE_ONLY, RESUME as above)
#   verifier  bench/verifier_bench.py (BENCH_S; READY processes started ahead; PLAIN=1: with the plain run; REPEATS;
#             PROFILE=1: under py-spy, every process's stacks in profile-verifier.txt) then the
#             candidate suite (SUITE_S)
#   search    bench/run.py on OPS (comma-separated), MINUTES per op, PARALLEL evaluations (0: auto)
#   celery    bench/celery_throughput.py: the same OPS as Celery jobs on a worker of this GPU and in-process
#             (CANDIDATES per op, MINUTES cap per search, CELERY_S seconds; PATHS: in_process and/or celery)
#   offline   bench/ops/_check_offline.py: every offline strategy of OPS through the verifier (OFFLINE_S)
#   corpus    bench/public_corpus.py on the tasks' small cases (CORPUS_S seconds; CORPUS_ONLY entry id substrings)
#   vmm       the GPU tests of the CUDA VMM output hand-off between sandboxes and the session's probe (TESTS_S)
#   startup   bench/startup_probe.py: where a candidate process's start-up goes (plain, sandboxed, traced, ...)
#   smoke     the CUDA tests and one evaluation
#   SUITE=0 skips the candidate suite that sandbox, check and verifier end with.
# Before the first call, here: bash bench/fetch_wheels.sh and bash bench/fetch_sysdeb.sh (.whl/, .sysdeb/).
# On a machine of several GPUs, run one mode per GPU side by side, each with its own TAG:
#   CUDA_VISIBLE_DEVICES=0 BUNDLE=0 bash bench/device_run.sh check & CUDA_VISIBLE_DEVICES=1 TAG=b BUNDLE=0 bash ...
#   search; wait; cd "$OUT" && tar czf results.tgz --remove-files *   (at most 8 files come back from $OUT)
set -uo pipefail
[ $# -gt 0 ] || set -- smoke
tag=${TAG:-a}
OUT=${OUT:-/tmp/kernelevo-out}
mkdir -p "$OUT"

# bubblewrap and redis-server from Debian packages, unpacked (the image has neither; nothing is installed system-wide)
sys=/tmp/sys-$tag
if ls .sysdeb/*.deb >/dev/null 2>&1; then
  mkdir -p "$sys/bin"
  for f in .sysdeb/*.deb; do dpkg -x "$f" "$sys"; done
  libs=$sys/usr/lib/x86_64-linux-gnu:$sys/lib/x86_64-linux-gnu
  for tool in bwrap redis-server; do
    [ -x "$sys/usr/bin/$tool" ] || continue
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$sys/usr/bin/$tool" > "$sys/bin/$tool"
    chmod +x "$sys/bin/$tool"
  done
  export PATH=$sys/bin:$PATH
fi
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target "/tmp/site-$tag" \
    .whl/*.whl && export PYTHONPATH=/tmp/site-$tag:$PWD || exit 3
  # not a site-packages folder and under /tmp: the sandbox binds it read-only only when named (docs/sandbox.md)
  export KERNELEVO_SANDBOX_READ_ONLY=/tmp/site-$tag
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 KERNELEVO_CACHE_DIR=/tmp/kernelevo-cache-$tag TRITON_CACHE_DIR=/tmp/triton-cache-$tag
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu-$tag.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$OUT/gpu-$tag.txt"
command -v bwrap >/dev/null || echo "no bwrap: untrusted code is refused (KERNELEVO_ISOLATION=required)"

suite() {  # the candidate suite on the tasks' small cases, time-boxed; prints passes and failures
  [ "${SUITE:-1}" = 0 ] && return 0
  timeout "${SUITE_S:-290}" python3 bench/gpu_suite.py --small --skip-slow --only "${SUITE_ONLY:-}" \
    ${RESUME:+--resume "$RESUME"} --out "$OUT/gpu_suite-$tag.json" > "$OUT/suite-$tag.log" 2>&1
  grep -c "^PASS" "$OUT/suite-$tag.log"; grep "^FAIL" "$OUT/suite-$tag.log" | cut -c1-230 | head -20
  tail -2 "$OUT/suite-$tag.log"
}

profiler() {  # PROFILE=1: the command under py-spy (carried in .whl/), every process's sampled stacks in $OUT/profile-<name>.txt
  [ "${PROFILE:-0}" = 1 ] && [ -x "/tmp/site-$tag/bin/py-spy" ] \
    && echo "/tmp/site-$tag/bin/py-spy record --subprocesses --nonblocking --rate 250 --format raw -o $OUT/profile-$1.txt --"
}

# At most 8 files come back from $OUT: everything a call wrote goes back as one archive (results-$tag.tgz), with the
# GPU line beside it (unpack here: tar xzf results-a.tgz).
bundle() {
  (cd "$OUT" && find . -type f ! -name "results-$tag.tgz" ! -name "gpu-$tag.txt" | sed 's|^\./||' > /tmp/bundle-$tag.list
   [ -s /tmp/bundle-$tag.list ] && tar czf "results-$tag.tgz" -T /tmp/bundle-$tag.list \
     && xargs -d '\n' rm -f < /tmp/bundle-$tag.list && find . -mindepth 1 -type d -empty -delete)
}
[ "${BUNDLE:-1}" = 1 ] && trap bundle EXIT  # side by side on several GPUs: BUNDLE=0 for each, then one tar at the end

for mode in "$@"; do
echo "== $mode"
case "$mode" in
  sandbox)
    timeout "${PROBE_S:-150}" python3 bench/sandbox_probe.py --out "$OUT/sandbox_probe.json" > "$OUT/probe-$tag.log" 2>&1
    python3 - "$OUT/sandbox_probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); print("isolation:", d["isolation"].get("working"), d["isolation"].get("problem"))
print("gpu in sandbox:", {k: d["gpu_in_sandbox"].get(k) for k in ("device", "sum", "seconds", "error", "returncode")})
print("ipc plain:", d["ipc_plain"], "| ipc sandboxed:", d["ipc_sandboxed"])
print("vmm sandboxed:", str(d.get("vmm_sandboxed"))[:600])
print("sanitizer:", {k: (v.get("returncode") if isinstance(v, dict) else v) for k, v in d["compute_sanitizer"].items()})
PY
    timeout "${TESTS_S:-60}" python3 -m pytest -q -m gpu tests/evaluator/test_sanitize.py \
      tests/evaluator/test_tracing_gpu.py > "$OUT/pytest_gpu-$tag.txt" 2>&1; tail -4 "$OUT/pytest_gpu-$tag.txt"
    suite
    ;;
  suite)
    suite
    ;;
  check)
    timeout "${CHECK_S:-300}" python3 -m pytest -q -m gpu ${TESTS:-tests/evaluator/test_handoff.py tests/kernelevo/test_cuda.py} \
      > "$OUT/pytest-$tag.txt" 2>&1; tail -5 "$OUT/pytest-$tag.txt"
    suite
    ;;
  verifier)
    timeout "${BENCH_S:-280}" $(profiler verifier) python3 bench/verifier_bench.py --out /tmp/verifier \
      --only "${BENCH_ONLY:-}" ${READY:+--ready "$READY"} ${PLAIN:+--plain-run} ${REPEATS:+--repeats "$REPEATS"} 2>&1 \
      | tee "$OUT/verifier_bench-$tag.log" | tail -30
    tar czf "$OUT/verifier-$tag.tgz" -C /tmp verifier
    suite
    ;;
  search)
    timeout "${SEARCH_S:-560}" python3 bench/run.py --device cuda --ops "${OPS:-rms_norm,swiglu}" \
      --budget-minutes "${MINUTES:-2}" --parallel-evaluations "${PARALLEL:-0}" --out "/tmp/search-$tag" 2>&1 \
      | tee "$OUT/search-$tag.log" | tail -30
    tar czf "$OUT/search-$tag.tgz" -C /tmp "search-$tag"
    ;;
  celery)
    timeout "${CELERY_S:-560}" python3 bench/celery_throughput.py --device cuda --ops "${OPS:-rms_norm,swiglu,layer_norm}" \
      --paths "${PATHS:-in_process,celery}" \
      --budget-candidates "${CANDIDATES:-24}" ${MINUTES:+--budget-minutes "$MINUTES"} --out "$OUT/celery-$tag" 2>&1 \
      | tee "$OUT/celery-$tag.log" | tail -16
    ;;
  offline)
    timeout "${OFFLINE_S:-150}" python3 bench/ops/_check_offline.py --device cuda --ops "${OPS:-rms_norm}" \
      --baselines eager --out "$OUT/offline-$tag.json" > "$OUT/offline-$tag.log" 2>&1; tail -20 "$OUT/offline-$tag.log" | cut -c1-400
    ;;
  corpus)
    timeout "${CORPUS_S:-200}" python3 bench/public_corpus.py --device cuda --small --only "${CORPUS_ONLY:-}" \
      --out "$OUT/public_corpus-$tag.json" \
      > "$OUT/corpus-$tag.log" 2>&1; tail -"${CORPUS_TAIL:-16}" "$OUT/corpus-$tag.log" | cut -c1-260
    ;;
  vmm)
    timeout "${TESTS_S:-120}" python3 -m pytest -q -m gpu -rs tests/evaluator/test_handoff_vmm.py \
      tests/evaluator/test_handoff_vmm_redteam.py tests/evaluator/test_handoff_probe.py \
      > "$OUT/pytest_vmm-$tag.txt" 2>&1; tail -15 "$OUT/pytest_vmm-$tag.txt" | cut -c1-400
    ;;
  startup)
    timeout "${STARTUP_S:-120}" python3 bench/startup_probe.py --out "$OUT/startup_probe-$tag.json" 2>&1 \
      | tee "$OUT/startup-$tag.log" | cut -c1-600
    ;;
  smoke)
    python3 -m pytest -q -x -m gpu tests/kernelevo/test_cuda.py 2>&1 | tail -15 | tee "$OUT/pytest_cuda-$tag.txt"
    python3 -m kernelevo.cli eval --task tests/tasks/axpy.py --candidate tests/candidates/honest/axpy_launcher.py \
      --device cuda --json > "$OUT/smoke_axpy-$tag.json"; echo "exit=$?"
    ;;
  *) echo "unknown mode $mode (sandbox, check, suite, verifier, search, celery, offline, corpus, vmm, startup, smoke)"; exit 2 ;;
esac
done
