"""The offline proposer: Triton kernels generated from the op's traced graph (no model needed).

``OfflineProposer`` is imported lazily so that ``import kernelevo.search.offline`` stays cheap.
"""

__all__ = ["OfflineProposer"]


def __getattr__(name: str):
    if name == "OfflineProposer":
        from kernelevo.search.offline.proposer import OfflineProposer

        return OfflineProposer
    raise AttributeError(name)
