#!/usr/bin/env bash
# Download the wheels the GPU machine lacks (its image has torch, triton, cuda-core, rich, typer, jinja2, pyyaml,
# but not pydantic, celery, redis, openai or PyGithub) into .whl/ for the device tool's `carry`.
# Usage: bash bench/fetch_wheels.sh [extra NAME==VERSION ...]    (run on this machine, from the repo root)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >> .git/info/exclude
mkdir -p .whl
pkgs=(pydantic==2.13.4 pydantic-core==2.46.4 pydantic-settings==2.14.1 python-dotenv annotated-types typing-inspection
      "$@")
for pkg in "${pkgs[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$pkg"
done
ls .whl
