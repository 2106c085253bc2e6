"""Kernel tracing below Python: evidence of what a candidate launched that the candidate cannot forge.

The verifier's Python-level guards (launch counter, op recorder) live in the candidate's interpreter, where
import-time code can rewrite them. This package adds a record taken underneath: ``shim.c``, preloaded into the
candidate process (LD_PRELOAD) before the interpreter starts, records every kernel, copy and memset with CUPTI's
activity API and streams MAC-authenticated frames to the parent over a pipe; the parent reads them
(``reader.py``, ``records.py``) and decides (``judge.py``).

Modules: ``build`` (compile the shim here, cached), ``reader`` (the channel and the reading thread), ``frames`` and
``records`` (framing, MAC, typed records), ``kernel_names`` (whose kernel is this), ``tags`` (MARK tags of the
harness's windows), ``judge`` (findings), ``client`` (the harness's bound entry points in the candidate process).
"""
