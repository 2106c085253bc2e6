#!/usr/bin/env bash
# The system packages only the tests need, beside those of deploy/system-packages.sh: Debian's chromium, the
# headless browser the status-page tests drive through Playwright (tests/bot/browser.py launches it by path;
# Playwright's own browser downloads are never used). .ci/run calls this; the README's first command does not,
# so installing KernelEvo stays small. Installs what is missing with apt-get (as root, or through sudo);
# elsewhere says what to install. Without it the browser tests skip, saying so.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
  if [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; then
    ($sudo apt-get update -qq && $sudo apt-get install -y -qq "${need[@]}") >/dev/null
    exit 0
  fi
fi
echo "kernelevo tests: please install ${need[*]} with your package manager (e.g. dnf install ${need[*]})" >&2
exit 1
