#!/usr/bin/env bash
# Download the Debian packages the GPU machine lacks into .sysdeb/ for the device tool's `carry`:
# bubblewrap (the sandbox) and redis-server (bench/celery_throughput.py), with the libraries they link.
# bench/device_run.sh unpacks them under /tmp (dpkg -x) and runs them with LD_LIBRARY_PATH; nothing is installed.
# Usage: bash bench/fetch_sysdeb.sh    (run on this machine, a Debian 12 host, from the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx "/.sysdeb/" .git/info/exclude 2>/dev/null || echo "/.sysdeb/" >> .git/info/exclude
mkdir -p .sysdeb
cd .sysdeb
apt-get download bubblewrap libcap2 libselinux1 libpcre2-8-0 \
  redis-server redis-tools libjemalloc2 liblzf1 liblua5.1-0 libhiredis0.14
ls
