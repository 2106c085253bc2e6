"""Ops bundled with KernelEvo: ``kernelevo optimize`` with no PATH searches :mod:`kernelevo.examples.rms_norm`."""
