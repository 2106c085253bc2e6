#!/usr/bin/env bash
# Download the wheels the GPU machine lacks (its image has torch, triton, cuda-core, rich, typer, jinja2, pyyaml,
# but not pydantic, celery, redis, openai or PyGithub) into .whl/ for the device tool's `carry`.
# Usage: bash bench/fetch_wheels.sh [extra NAME==VERSION ...]    (run on this machine, from the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
mkdir -p .whl
pkgs=(pydantic==2.13.4 pydantic-core==2.46.4 pydantic-settings==2.14.1 python-dotenv annotated-types typing-inspection
      # the worker tier (bench/celery_throughput.py): Celery on Redis and its dependencies
      celery==5.7.0 kombu==5.7.0 billiard==4.3.2 vine==5.1.0 amqp==5.4.2 click==8.5.1 click-didyoumean==0.3.1
      click-repl==0.4.1 click-plugins==1.1.1.2 prompt-toolkit==3.0.53 wcwidth python-dateutil==2.9.0.post0 six
      tzlocal tzdata redis==8.1.0 tenacity==9.2.1
      # honest public kernels of tests/public_corpus
      liger-kernel==0.8.5 fla-core==0.6.0 einops
      # PROFILE=1 in bench/device_run.sh: sampled Python stacks of every process of a run
      py-spy==0.4.3
      "$@")
for pkg in "${pkgs[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$pkg"
done
ls .whl
