"""The offline proposer: Triton kernels generated from the op's traced graph (no model needed).

``OfflineProposer`` is imported lazily so that ``import kernelevo.search.offline`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelevo.search.offline.proposer import OfflineProposer

__all__ = ["OfflineProposer"]


def __getattr__(name: str) -> type[OfflineProposer]:
    if name == "OfflineProposer":
        from kernelevo.search.offline.proposer import OfflineProposer

        return OfflineProposer
    raise AttributeError(name)
