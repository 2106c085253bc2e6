"""KernelEvo: verified, faster kernels for annotated PyTorch ops.

Importing this package is cheap on purpose (no torch, triton, network or compile work): user code
that only decorates ops pays nothing until a kernel is actually dispatched.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "explain", "optimize"]


def __getattr__(name: str):
    # Lazy so that ``import kernelevo`` stays cheap; ``kernelevo.op`` itself imports nothing heavy.
    if name == "optimize":
        from kernelevo.op import optimize

        return optimize
    if name == "explain":  # which kernel an op dispatches to here, and why not (kernelevo.dispatch.explain)
        from kernelevo.dispatch import explain

        return explain
    raise AttributeError(f"module 'kernelevo' has no attribute {name!r}")
