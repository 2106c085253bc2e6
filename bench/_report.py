"""What every bench result records about where and when it was measured (shared by the bench scripts)."""

from __future__ import annotations

import datetime
import os
import platform
import socket
from typing import Any


def header(benchmark: str, **versions: str) -> dict[str, Any]:
    """Benchmark name, UTC date, machine facts and versions (Python plus the ones given)."""
    return {
        "benchmark": benchmark,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"hostname": socket.gethostname(), "platform": platform.platform(),
                    "processor": platform.machine(), "cpu_count": os.cpu_count()},
        "versions": {"python": platform.python_version(), **versions},
    }
