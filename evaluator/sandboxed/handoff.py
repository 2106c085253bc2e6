"""Candidate outputs on their way from the candidate process to the reference process.

Two ways, one interface (:func:`send` in the candidate process, :func:`receive` in the reference):

- ``ipc`` (CUDA): the outputs stay where the kernel wrote them. The candidate process exports each
  output's allocation as a CUDA IPC handle and keeps the tensor alive; the reference process maps it and
  compares in place. Nothing crosses host memory or disk (``torch.save`` of a 100 MB output plus its
  load cost ~0.3 s, and a correctness check writes ten of them). The tensor stays writable by the
  candidate's later kernels, so a keyed fingerprint is taken right after the call, before the candidate
  runs again, and the reference recomputes it before comparing: an output changed after it was returned
  is ``cheat_suspected``. The key is drawn per evaluation by the parent and never written anywhere the
  candidate's code can read except the runner's own request.
- ``file`` (CPU, and the fallback): ``torch.save`` into the evaluation folder, loaded with
  ``weights_only=True`` so a candidate cannot smuggle code into the reference process.

Descriptors are plain JSON (the reference never unpickles anything the candidate produced) and are
validated before use: dtype from a fixed list, the view inside the mapped allocation, the reference
counter's name in torch's own pattern.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import torch

_P = (1 << 31) - 1  # a prime: index weights (i * a + b) mod P are a keyed hash of the position
_CHUNK = 1 << 24  # words per fingerprint step (bounds the temporary memory to a few hundred MB)
_COUNTER_NAME = re.compile(rb"^/torch_[0-9_]+$")
_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}
class HandoffError(Exception):
    """Outputs could not be received. ``kind``: ``tampered`` (changed after the call returned),
    ``invalid`` (a descriptor that does not describe a tensor) or ``unavailable`` (CUDA IPC does not work
    between these processes: send files instead)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def fingerprint(tensor: torch.Tensor, key: int) -> int:
    """A keyed 64-bit hash of a tensor's bytes in logical order, computed on the tensor's device.

    Integer arithmetic wraps identically everywhere, so two processes on the same data agree exactly;
    without the key, a change that keeps the hash cannot be constructed.
    """
    words = _words(tensor.detach())
    a, b = 1 + key % (_P - 1), (key >> 31) % _P
    total = torch.zeros((), dtype=torch.int64, device=words.device)
    for start in range(0, words.numel(), _CHUNK):
        chunk = words[start:start + _CHUNK].to(torch.int64)
        index = torch.arange(start, start + chunk.numel(), dtype=torch.int64, device=words.device)
        total += (chunk * ((index * a + b) % _P)).sum()
    return int(total.item())


def _words(tensor: torch.Tensor) -> torch.Tensor:
    flat = tensor.reshape(-1)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    raw = flat.view(torch.uint8) if flat.numel() else flat.new_empty(0, dtype=torch.uint8)
    for width, dtype in ((4, torch.int32), (2, torch.int16)):
        if raw.numel() % width == 0:
            return raw.view(dtype)
    return raw


# -- candidate process ----------------------------------------------------------------------------
class Outbox:
    """The outputs one phase of an evaluation handed over, kept alive with their fingerprints so that a
    kernel writing into an output after returning it is seen (:meth:`changed_since_sent`). Owned by the
    harness (not module state a candidate could reach by name)."""

    def __init__(self, key: int, mode: str):
        self.key, self.mode = int(key), mode
        self._sent: list[tuple[str, list[torch.Tensor], list[int]]] = []
        self._fingerprint = fingerprint

    def send(self, outputs: list[torch.Tensor], path: Path, where: str) -> dict[str, Any]:
        """Hand ``outputs`` (of the call ``where``) over: CUDA IPC descriptors (``{"ipc": [...]}``) in ``ipc``
        mode when the outputs can be shared, else a file at ``path`` (``{"file": ...}``)."""
        tensors = [o.detach() for o in outputs]
        prints = [self._fingerprint(t, self.key) for t in tensors]
        self._sent.append((where, tensors, prints))
        if self.mode == "ipc" and tensors and all(t.is_cuda and t.numel() for t in tensors):
            try:
                descriptors = [_export(t, p) for t, p in zip(tensors, prints)]
            except RuntimeError:  # this build or driver cannot share the memory: files still work
                pass
            else:
                return {"ipc": descriptors, "kept": len(self._sent) - 1, "path": str(path)}
        return save_file(tensors, path)

    def changed_since_sent(self) -> str | None:
        """The first output sent so far whose contents changed after it was handed over, as ``"output K of
        WHERE"``; None when all are intact."""
        for where, tensors, prints in self._sent:
            for k, (tensor, sent) in enumerate(zip(tensors, prints)):
                if self._fingerprint(tensor, self.key) != sent:
                    return f"output {k} of {where}"
        return None

    def save_kept(self, kept: int, path: Path) -> dict[str, Any]:
        """The outputs sent earlier under index ``kept``, written as a file instead (IPC fallback)."""
        return save_file(self._sent[kept][1], path)


def save_file(tensors: list[torch.Tensor], path: Path) -> dict[str, Any]:
    """Write ``tensors`` (copied to the host) for the reference to load."""
    torch.save([t.cpu().clone() for t in tensors], path)
    return {"file": str(path)}


def _export(tensor: torch.Tensor, print_: int) -> dict[str, Any]:
    (device, handle, size_bytes, offset_bytes, counter, counter_offset, event, event_sync) = \
        tensor.untyped_storage()._share_cuda_()
    return {
        "device": int(device), "handle": _b64(handle), "size_bytes": int(size_bytes),
        "offset_bytes": int(offset_bytes), "counter": _b64(counter), "counter_offset": int(counter_offset),
        "event": _b64(event), "event_sync": bool(event_sync),
        "dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape),
        "stride": list(tensor.stride()), "storage_offset": int(tensor.storage_offset()),
        "fingerprint": print_,
    }


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


# -- reference process ----------------------------------------------------------------------------
def receive(item: dict[str, Any], device: str, key: int | None) -> list[Any]:
    """The outputs a candidate process sent (see :func:`send`); raises :class:`HandoffError`."""
    if "file" in item:
        try:
            outputs = torch.load(item["file"], weights_only=True, map_location=device)
        except Exception as exc:
            raise HandoffError("invalid", f"candidate outputs could not be read safely: {exc}") from exc
        return outputs  # the file stays in the candidate's folder, which the parent removes with the process
    if "ipc" not in item or key is None or not isinstance(item["ipc"], list):
        raise HandoffError("invalid", "the outputs were sent in no known form")
    outputs = [_import(d) for d in item["ipc"]]
    for k, (tensor, descriptor) in enumerate(zip(outputs, item["ipc"])):
        if fingerprint(tensor, key) != descriptor["fingerprint"]:
            raise HandoffError("tampered", f"output {k} changed after forward returned it (a kernel kept writing "
                                           "into an output it had already handed back)")
    return outputs


def _import(d: dict[str, Any]) -> torch.Tensor:
    try:
        dtype = _DTYPES[d["dtype"]]
        shape, stride = [int(s) for s in d["shape"]], [int(s) for s in d["stride"]]
        offset, size_bytes = int(d["storage_offset"]), int(d["size_bytes"])
        handle, counter = base64.b64decode(d["handle"]), base64.b64decode(d["counter"])
        event = None if d.get("event") is None else base64.b64decode(d["event"])
        int(d["fingerprint"])
    except (KeyError, TypeError, ValueError) as exc:
        raise HandoffError("invalid", f"malformed output descriptor ({type(exc).__name__}: {exc})") from exc
    if len(shape) != len(stride) or min(shape + stride + [offset], default=0) < 0 or not _COUNTER_NAME.match(counter):
        raise HandoffError("invalid", "output descriptor out of range")
    last = offset + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else offset - 1
    if (last + 1) * dtype.itemsize > size_bytes:
        raise HandoffError("invalid", "output view reaches past its allocation")
    if not 0 <= int(d["device"]) < torch.cuda.device_count():
        raise HandoffError("invalid", f"output on CUDA device {d['device']}, which this process does not see")
    torch.cuda.init()  # mapping a handle in a process whose CUDA is not yet initialised crashes it
    try:
        storage = torch.UntypedStorage._new_shared_cuda(
            int(d["device"]), handle, size_bytes, int(d["offset_bytes"]), counter, int(d["counter_offset"]),
            event, bool(d["event_sync"]))
    except RuntimeError as exc:
        raise HandoffError("unavailable", f"CUDA IPC could not map the candidate's output: {exc}") from exc
    return torch.empty(0, dtype=dtype, device=f"cuda:{int(d['device'])}").set_(storage, offset, shape, stride)
