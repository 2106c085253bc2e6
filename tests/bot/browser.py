"""Headless Chromium for the bot's page tests: Debian's ``chromium`` driven by Playwright's Python client.

Playwright's own browser downloads (``playwright install``) are never used: the tests launch the system's
Chromium by path, which ``deploy/system-packages.sh --tests`` installs (``.ci/run`` calls it). Without it the tests
that need a browser skip, saying how to install it; everything else about them (Playwright itself, the
bot) must be present.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CANDIDATES = ("chromium", "chromium-browser")
INSTALL_HINT = "install Debian's chromium (`bash deploy/system-packages.sh --tests`, or `apt-get install -y chromium`)"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chromium_path() -> str | None:
    """The system Chromium's executable, or None."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The system Chromium's path; skips the calling test when it is not installed."""
    path = chromium_path()
    if path is None:
        pytest.skip(f"no chromium on PATH: {INSTALL_HINT}; CI installs it, so CI runs this test")
    return path


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright's sync ``Browser``), closed on exit."""
    path = require_chromium()
    from playwright.sync_api import sync_playwright  # the `dev` extra installs it

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def is_png(path: Path) -> bool:
    data = path.read_bytes()
    return len(data) > len(PNG_SIGNATURE) + 100 and data.startswith(PNG_SIGNATURE)
