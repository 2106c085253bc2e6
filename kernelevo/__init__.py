"""KernelEvo: verified, faster kernels for annotated PyTorch ops.

Importing this package is cheap on purpose (no torch, triton, network or compile work): user code
that only decorates ops pays nothing until a kernel is actually dispatched.
"""

__version__ = "0.1.0"
