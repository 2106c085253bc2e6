#!/usr/bin/env bash
# The system packages KernelEvo needs beside Python: bubblewrap (the sandbox every untrusted process runs in),
# a C compiler (Triton's launcher stubs, the GPU trace shim) and redis-server (the job queue; the tests start
# their own). With --tests, also what only the tests need: Debian's chromium, the headless browser the status-page
# tests drive through Playwright (tests/bot/browser.py launches it by path; Playwright's own browser downloads are
# never used). .ci/run passes --tests; the README's first command does not, so installing KernelEvo stays small.
# Installs what is missing with apt-get (as root, or through sudo); elsewhere says what to install.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ "${1:-}" = "--tests" ]; then
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
  if [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; then
    ($sudo apt-get update -qq && $sudo apt-get install -y -qq "${need[@]}") >/dev/null
    exit 0
  fi
fi
echo "kernelevo: please install ${need[*]} with your package manager (e.g. dnf install ${need[*]})" >&2
exit 1
