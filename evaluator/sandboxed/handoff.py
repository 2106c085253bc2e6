"""Candidate outputs on their way from the candidate process to the reference process.

Two ways, one interface (:meth:`Outbox.send` in the candidate process, :func:`receive` in the reference):

- ``vmm`` (CUDA): right after a checked call each output is copied, device to device, into an allocation the
  harness owns (:mod:`evaluator.sandboxed.vmm`), exported as a POSIX file descriptor. The descriptors go to the
  parent over the request socket (``SCM_RIGHTS``; the reply says how many), and the parent passes them on with
  the reference's compare request. Nothing crosses host memory or disk (``torch.save`` of a 128 MB output plus
  its load costs about a second, and an evaluation hands over twenty or more). A keyed fingerprint of the copy is
  taken before the candidate runs again; the reference maps the allocation read-only where the driver allows,
  copies it into memory of its own, releases the mapping and recomputes the fingerprint on its copy before
  comparing: memory changed after the call returned (the candidate process can still write it) is
  ``cheat_suspected``, and what is compared is exactly what was fingerprinted. The key is drawn per evaluation by
  the parent and never written anywhere the candidate's code can read except the runner's own request.
- ``file`` (CPU, and the fallback): ``torch.save`` into the evaluation folder, loaded with ``weights_only=True``
  so a candidate cannot smuggle code into the reference process.
- ``raw`` (the plain process, :mod:`evaluator.sandboxed.plain`): the outputs' bytes back to back in one file, with
  each output's dtype and shape in the reply (validated here, the file's size included).

Descriptors are plain JSON (the reference never unpickles anything the candidate produced) and are validated
before use: dtype from a fixed list, the view inside the declared allocation size, that size a multiple of the
granularity and within the device (the driver refuses a mapping larger than the allocation behind the
descriptor), one file descriptor per output.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from evaluator.sandboxed.wire import MAX_FDS_PER_MESSAGE

_P = (1 << 31) - 1  # a prime: index weights (i * a + b) mod P are a keyed hash of the position
_CHUNK = 1 << 24  # words per fingerprint step (bounds the temporary memory to a few hundred MB)
_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


class HandoffError(Exception):
    """Outputs could not be received. ``kind``: ``tampered`` (changed after the call returned),
    ``invalid`` (a descriptor that does not describe a tensor) or ``unavailable`` (the driver could not import
    or map the allocation: VMM hand-off may not work between these processes, send files instead)."""

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


def probe_tensor(seed: int, nbytes: int, device: str) -> torch.Tensor:
    """The bytes of the session's hand-off probe: both processes draw the same ones from the parent's seed."""
    generator = torch.Generator(device=device).manual_seed(int(seed))
    return torch.randint(0, 256, (int(nbytes),), dtype=torch.uint8, generator=generator, device=device)


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
    harness (not module state a candidate could reach by name).

    In ``vmm`` mode the copies of one phase's outputs stay allocated until the next phase begins
    (:meth:`release_exports`): the parent asks for the next phase only once the reference has judged this one,
    and the process is killed after the last. No pool: a phase keeps all its outputs at once (the reference
    judges them together), so nothing could be reused within it, and cuMemCreate costs far less than a call.
    """

    def __init__(self, key: int, mode: str):
        self.key, self.mode = int(key), mode
        self._sent: list[tuple[str, list[torch.Tensor], list[int]]] = []
        self._fingerprint = fingerprint
        self._exports: list[Any] = []  # vmm.Export of this phase
        self._pending_fds: list[int] = []  # exported, not yet sent to the parent
        self.export_failed: str | None = None  # why vmm exports stopped (the session then uses files)

    def send(self, outputs: list[torch.Tensor], path: Path, where: str) -> dict[str, Any]:
        """Hand ``outputs`` (of the call ``where``) over: VMM descriptors (``{"vmm": [...]}``) in ``vmm`` mode when
        the outputs are CUDA tensors and the reply has room for their descriptors, else a file at ``path``."""
        tensors = [o.detach() for o in outputs]
        if (self.mode == "vmm" and tensors and all(t.is_cuda and t.numel() for t in tensors)
                and len(self._pending_fds) + len(tensors) <= MAX_FDS_PER_MESSAGE):
            try:
                descriptors, prints = self._export(tensors)
            except (RuntimeError, ImportError) as exc:  # no binding, old driver, unsupported: files still work
                self.export_failed, self.mode = f"{type(exc).__name__}: {exc}"[:500], "file"
            else:
                self._sent.append((where, tensors, prints))
                return {"vmm": descriptors, "kept": len(self._sent) - 1, "path": str(path)}
        self._sent.append((where, tensors, [self._fingerprint(t, self.key) for t in tensors]))
        return save_file(tensors, path)

    def _export(self, tensors: list[torch.Tensor]) -> tuple[list[dict[str, Any]], list[int]]:
        from evaluator.sandboxed import vmm

        made: list[Any] = []
        try:
            for t in tensors:
                made.append(vmm.Export(t.numel() * t.element_size(), t.device.index or 0))
                made[-1].view(t.dtype, list(t.shape)).copy_(t)
            torch.cuda.synchronize()
            copies = [e.view(t.dtype, list(t.shape)) for e, t in zip(made, tensors)]
            prints = [self._fingerprint(c, self.key) for c in copies]
            fds = [e.take_fd() for e in made]
        except BaseException:
            for e in made:
                e.release()
            raise
        first = len(self._pending_fds)
        self._pending_fds += fds
        self._exports += made
        descriptors = [{"fd": first + k, "device": e.device, "size_bytes": e.size,
                        "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                        "stride": list(c.stride()), "storage_offset": 0, "fingerprint": p}
                       for k, (e, t, c, p) in enumerate(zip(made, tensors, copies, prints))]
        return descriptors, prints

    def take_fds(self) -> list[int]:
        """The descriptors exported since the last reply, in the order the descriptors number them; the caller
        sends them with the reply and closes them."""
        fds, self._pending_fds = self._pending_fds, []
        return fds

    def release_exports(self) -> None:
        """Free this phase's allocations (the reference has judged them) and any descriptor never sent."""
        for fd in self.take_fds():
            os.close(fd)
        exports, self._exports = self._exports, []
        for export in exports:
            export.release()

    def changed_since_sent(self) -> str | None:
        """The first output sent so far whose contents changed after it was handed over, as ``"output K of
        WHERE"``; None when all are intact."""
        for where, tensors, prints in self._sent:
            for k, (tensor, sent) in enumerate(zip(tensors, prints)):
                if self._fingerprint(tensor, self.key) != sent:
                    return f"output {k} of {where}"
        return None

    def save_kept(self, kept: int, path: Path) -> dict[str, Any]:
        """The outputs sent earlier under index ``kept``, written as a file instead (VMM fallback)."""
        return save_file(self._sent[kept][1], path)


def save_file(tensors: list[torch.Tensor], path: Path) -> dict[str, Any]:
    """Write ``tensors`` for the reference to load: one copy each on the host (``torch.save`` of a view writes its
    whole storage, so a host tensor is copied too; a device tensor's copy to the host is that one copy)."""
    torch.save([t.to("cpu", copy=True) for t in tensors], path)
    return {"file": str(path)}


def fd_sender(channel_fd: int = 0) -> Callable[[list[int]], None]:
    """A function that sends file descriptors to the parent over the request socket (``channel_fd``) in one
    message of one byte; the parent reads them when a reply declares them (``nfds``). Made before the candidate is
    imported (its socket object is the harness's)."""
    channel = socket.socket(fileno=os.dup(channel_fd))

    def send(fds: list[int]) -> None:
        if len(fds) > MAX_FDS_PER_MESSAGE:
            raise ValueError(f"{len(fds)} descriptors in one reply (at most {MAX_FDS_PER_MESSAGE})")
        socket.send_fds(channel, [b"\0"], fds)

    return send


# -- reference process ----------------------------------------------------------------------------
class _Described(BaseModel):
    """An output's dtype and shape as a candidate-side process described them (hostile until validated here)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    dtype: str
    shape: list[int]

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        if value not in _DTYPES:
            raise ValueError(f"dtype {value!r} is not one a kernel output may have")
        return value


class VmmDescriptor(_Described):
    """One output as the candidate process described it (hostile until validated here)."""

    fd: int | None  # index into the compare request's descriptors (the parent numbers them; None: it had none)
    device: int
    size_bytes: int
    stride: list[int]
    storage_offset: int
    fingerprint: int

    def bytes_needed(self) -> int:
        """Bytes from the allocation's start to the end of the view (0 for an empty view)."""
        if not all(self.shape):
            return 0
        last = self.storage_offset + sum((n - 1) * s for n, s in zip(self.shape, self.stride))
        return (last + 1) * _DTYPES[self.dtype].itemsize


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """The strides of a contiguous tensor of ``shape`` (pure)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return strides[::-1]


def validate_vmm(raw: Any, fd_count: int, granularity: int, device_bytes: int) -> list[VmmDescriptor]:
    """The descriptors of one output list, checked against each other, the request's descriptors and the device
    (pure: no driver call); raises :class:`HandoffError` ``invalid``."""
    if not isinstance(raw, list) or not raw:
        raise HandoffError("invalid", "the outputs were sent as no list of VMM descriptors")
    try:
        parsed = [VmmDescriptor.model_validate(d) for d in raw]
    except ValidationError as exc:
        raise HandoffError("invalid", f"malformed output descriptor ({exc.errors()[0]['msg']})") from exc
    fds = [d.fd for d in parsed]
    if any(fd is None or not 0 <= fd < fd_count for fd in fds) or len(set(fds)) != len(fds):
        raise HandoffError("invalid", "output descriptors without a file descriptor of their own")
    for d in parsed:
        if len(d.shape) != len(d.stride) or min([*d.shape, *d.stride, d.storage_offset], default=0) < 0:
            raise HandoffError("invalid", "output descriptor out of range")
        # The harness exports every output as a fresh contiguous copy: any other layout (a zero or overlapping
        # stride that makes a small allocation look like a huge tensor, an offset) is not one it sends.
        if d.storage_offset != 0 or list(d.stride) != contiguous_strides(d.shape):
            raise HandoffError("invalid", "output descriptor with a layout the harness never exports")
        if not 0 < d.size_bytes <= device_bytes or d.size_bytes % granularity:
            raise HandoffError("invalid", f"output allocation of {d.size_bytes} bytes: not a multiple of the "
                                          f"granularity {granularity} within the device's {device_bytes}")
        if d.bytes_needed() > d.size_bytes:
            raise HandoffError("invalid", "output view reaches past its allocation")
    return parsed


def open_candidate_file(path: str) -> Any:
    """The output file the parent named, opened only if it is that very regular file: the candidate owns the folder
    and could leave a link there (to the task, the user's repository or the session's inputs, which this process
    can read), a FIFO (which would block the open) or a link in place of the folder itself. The open follows no
    final link and does not block; what was opened is then checked by its descriptor (its real path and type), so
    no swap between a check and the open helps."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise HandoffError("invalid", f"candidate outputs could not be opened ({type(exc).__name__})") from exc
    # Above outbox/ the path is the parent's (the private folder is a mount point the candidate cannot replace);
    # outbox/ and the file are the candidate's, so they must be exactly what was named.
    named = Path(path)
    expected = os.path.join(os.path.realpath(named.parent.parent), named.parent.name, named.name)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.readlink(f"/proc/self/fd/{fd}") != expected:
            raise HandoffError("invalid", "candidate outputs are not the regular file the verifier named (a link, "
                                          "a FIFO or a moved folder)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def receive(item: dict[str, Any], device: str, key: int | None, fds: Sequence[int] = ()) -> list[Any]:
    """The outputs a candidate process sent (see :meth:`Outbox.send`), ``fds``: the compare request's descriptors
    (the caller closes them); raises :class:`HandoffError`."""
    if "raw" in item:
        return _receive_raw(item, device)
    if "file" in item:
        with open_candidate_file(str(item["file"])) as handle:
            try:
                outputs = torch.load(handle, weights_only=True, map_location=device)
            except Exception as exc:  # the message may quote the file: name the failure, not its text
                raise HandoffError("invalid", f"candidate outputs could not be read safely "
                                              f"({type(exc).__name__})") from exc
        return outputs  # the file stays in the candidate's folder, which the parent removes with the process
    if "vmm" not in item or key is None:
        raise HandoffError("invalid", "the outputs were sent in no known form")
    from evaluator.sandboxed import vmm

    index = torch.cuda.current_device() if device == "cuda" else -1
    if index < 0:
        raise HandoffError("invalid", "VMM descriptors sent to a reference without CUDA")
    try:
        granularity = vmm.granularity(index)
    except (vmm.VmmError, ImportError) as exc:
        raise HandoffError("unavailable", f"CUDA VMM hand-off is unavailable here: {exc}") from exc
    total = torch.cuda.get_device_properties(index).total_memory
    descriptors = validate_vmm(item["vmm"], len(fds), granularity, total)
    if any(d.device != index for d in descriptors):
        raise HandoffError("invalid", f"an output on another CUDA device than this process's ({index})")
    outputs = [_import(fds[d.fd], d, index) for d in descriptors if d.fd is not None]
    for k, (tensor, d) in enumerate(zip(outputs, descriptors)):
        if fingerprint(tensor, key) != d.fingerprint:
            raise HandoffError("tampered", f"output {k} changed after forward returned it (a kernel kept writing "
                                           "into an output it had already handed back)")
    return outputs


class RawOutput(_Described):
    """One output of the plain process as its reply described it (hostile until validated here)."""

    @field_validator("shape")
    @classmethod
    def _sizes(cls, value: list[int]) -> list[int]:
        if len(value) > 16 or any(n < 0 for n in value):
            raise ValueError("not a tensor's shape")
        return value

    def nbytes(self) -> int:
        count = 1
        for n in self.shape:
            count *= n
        return count * _DTYPES[self.dtype].itemsize


def _receive_raw(item: dict[str, Any], device: str) -> list[torch.Tensor]:
    """The outputs in ``item["file"]``, described by ``item["raw"]``: the file holds exactly their bytes."""
    try:
        described = [RawOutput.model_validate(d) for d in item["raw"]]
    except (ValidationError, TypeError) as exc:
        raise HandoffError("invalid", "malformed description of the plain process's outputs") from exc
    with open_candidate_file(str(item["file"])) as handle:
        size, expected = os.fstat(handle.fileno()).st_size, sum(d.nbytes() for d in described)
        if size != expected:
            raise HandoffError("invalid", f"the outputs file holds {size} bytes, not the {expected} its description "
                                          "says")
        data = bytearray(size)  # read once into memory of this process's own (the outputs are views of it)
        view, got = memoryview(data), 0
        while got < size:
            n = handle.readinto(view[got:])
            if not n:
                raise HandoffError("invalid", "the outputs file ended early")
            got += n
    outputs, start = [], 0
    for d in described:
        end = start + d.nbytes()
        flat = torch.frombuffer(data, dtype=torch.uint8, offset=start, count=end - start) if end > start \
            else torch.empty(0, dtype=torch.uint8)
        outputs.append(flat.view(_DTYPES[d.dtype]).reshape(d.shape).to(device))
        start = end
    return outputs


def _import(fd: int, d: VmmDescriptor, device: int) -> torch.Tensor:
    """A private copy of the output a descriptor points to; the mapping is gone when this returns."""
    from evaluator.sandboxed import vmm

    dtype = _DTYPES[d.dtype]
    try:
        with vmm.imported(fd, d.size_bytes, device) as (raw, _access):
            view = raw.view(dtype).as_strided(d.shape, d.stride, d.storage_offset)
            return view.clone(memory_format=torch.contiguous_format)  # imported() synchronises before unmapping
    except (vmm.VmmError, ImportError) as exc:
        raise HandoffError("unavailable", f"CUDA VMM could not map the candidate's output: {exc}") from exc
