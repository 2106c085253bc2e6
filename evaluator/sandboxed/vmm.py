"""CUDA virtual-memory allocations shared between sandboxed processes as POSIX file descriptors.

Legacy CUDA IPC handles (``cudaIpcOpenMemHandle``) do not open across the sandboxes' PID/IPC namespaces; a file
descriptor does: ``cuMemCreate`` with the POSIX-fd handle type, exported with ``cuMemExportToShareableHandle``,
passed with ``SCM_RIGHTS`` and imported with ``cuMemImportFromShareableHandle`` in another process on the same GPU.

The candidate process owns each allocation (:func:`export`) and copies an output into it, so the memory handed
over is the harness's, not the candidate's; the reference process maps it read-only where the driver allows it
(:func:`imported`) and releases everything on the way out. Both sides see the memory as a ``uint8`` torch tensor
built through ``__cuda_array_interface__``, which the caller reinterprets from a validated descriptor.
Runs in sandboxed processes only (it imports torch and calls the driver).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

from kernelevo import _cuda_driver


class VmmError(RuntimeError):
    """A driver call of the hand-off failed (no cuda.bindings, an old driver, an unsupported handle type, a
    handle that is no allocation): the caller falls back to files or refuses the output."""


def _ok(result: Any, what: str) -> tuple[Any, ...]:
    """The values a cuda.bindings call returned after its error code, or :class:`VmmError` naming the call."""
    values = tuple(result) if isinstance(result, tuple) else (result,)
    try:
        _cuda_driver.check(values[0], what)
    except _cuda_driver.CudaLaunchError as exc:
        raise VmmError(str(exc)) from None
    return values[1:]


def _driver(device: int) -> Any:
    try:
        driver = _cuda_driver.driver_module()
        _cuda_driver.ensure_context(device)
    except ImportError as exc:
        raise VmmError(f"cuda.bindings is not installed ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - no driver library, no device: the binding raises its own types
        raise VmmError(f"the CUDA driver is unusable here ({type(exc).__name__}: {exc})") from exc
    return driver


def _properties(driver: Any, device: int) -> Any:
    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = device
    prop.requestedHandleTypes = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    return prop


@lru_cache(maxsize=8)
def granularity(device: int) -> int:
    """The allocation granularity of ``device`` (sizes and mappings are multiples of it); checks first that the
    device shares VMM allocations as file descriptors at all."""
    driver = _driver(device)
    attr = driver.CUdevice_attribute
    (dev,) = _ok(driver.cuDeviceGet(device), "cuDeviceGet")
    for name in ("CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED",
                 "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED"):
        (value,) = _ok(driver.cuDeviceGetAttribute(getattr(attr, name), dev), f"cuDeviceGetAttribute({name})")
        if not int(value):
            raise VmmError(f"CUDA device {device} does not support {name.removeprefix('CU_DEVICE_ATTRIBUTE_')}")
    (value,) = _ok(driver.cuMemGetAllocationGranularity(
        _properties(driver, device), driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity")
    return int(value)


def rounded(nbytes: int, device: int) -> int:
    """``nbytes`` rounded up to the allocation granularity (at least one granule)."""
    step = granularity(device)
    return max(step, -(-int(nbytes) // step) * step)


class _ArrayInterface:
    """Just enough of ``__cuda_array_interface__`` for ``torch.as_tensor`` to view raw device bytes (bytes: numpy's
    type strings have no bfloat16; the caller reinterprets the view). The interface's read-only flag is advisory
    and torch does not honour it, so it is not set: the mapping's access flags are what keeps a reader from
    writing."""

    def __init__(self, pointer: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (int(nbytes),), "typestr": "|u1", "data": (int(pointer), False),
                                         "strides": None, "version": 2}


def bytes_tensor(pointer: int, nbytes: int, device: int) -> torch.Tensor:
    """A ``uint8`` tensor over ``nbytes`` of mapped device memory at ``pointer`` (no copy; the caller keeps the
    mapping alive for as long as the tensor is used)."""
    try:
        return torch.as_tensor(_ArrayInterface(pointer, nbytes), device=torch.device("cuda", device))
    except (RuntimeError, TypeError, ValueError) as exc:
        raise VmmError(f"torch could not view the mapped memory ({type(exc).__name__}: {exc})") from exc


def _access(driver: Any, device: int, flags: Any) -> Any:
    desc = driver.CUmemAccessDesc()
    desc.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    desc.location.id = device
    desc.flags = flags
    return desc


@dataclass
class _Mapping:
    """A physical allocation mapped into this process: what :meth:`release` gives back, in reverse order."""

    driver: Any
    size: int
    handle: Any = None
    pointer: int = 0
    reserved: bool = False
    mapped: bool = False

    def release(self) -> None:
        """Unmap, free the address range, release the handle; each step at most once, errors ignored (the
        process ends soon after a failure, and the driver frees what it held then)."""
        driver, pointer = self.driver, self.pointer
        if self.mapped:
            self.mapped = False
            driver.cuMemUnmap(pointer, self.size)
        if self.reserved:
            self.reserved = False
            driver.cuMemAddressFree(pointer, self.size)
        if self.handle is not None:
            handle, self.handle = self.handle, None
            driver.cuMemRelease(handle)

    def map(self, device: int, readonly: bool) -> str:
        """Reserve an address range, map the handle there and grant this device access; the access granted."""
        driver = self.driver
        (pointer,) = _ok(driver.cuMemAddressReserve(self.size, granularity(device), 0, 0), "cuMemAddressReserve")
        self.pointer, self.reserved = int(pointer), True
        _ok(driver.cuMemMap(self.pointer, self.size, 0, self.handle, 0), "cuMemMap")
        self.mapped = True
        flags = driver.CUmemAccess_flags
        if readonly:
            result = driver.cuMemSetAccess(self.pointer, self.size, [_access(driver, device,
                                                                           flags.CU_MEM_ACCESS_FLAGS_PROT_READ)], 1)
            if int(result[0]) == 0:
                return "read"
        _ok(driver.cuMemSetAccess(self.pointer, self.size,
                                  [_access(driver, device, flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE)], 1),
            "cuMemSetAccess")
        return "readwrite"


class Export:
    """A harness-owned allocation of the candidate process, exported as a file descriptor.

    :meth:`view` is where an output is copied; :meth:`take_fd` hands the descriptor to whoever sends it (and
    closes it); :meth:`release` frees the allocation once the reference has judged what it holds."""

    def __init__(self, nbytes: int, device: int):
        self.device = device
        driver = _driver(device)
        self.size = rounded(nbytes, device)
        self._mapping = _Mapping(driver, self.size)
        self._fd: int | None = None
        try:
            (self._mapping.handle,) = _ok(driver.cuMemCreate(self.size, _properties(driver, device), 0), "cuMemCreate")
            self._mapping.map(device, readonly=False)
            (fd,) = _ok(driver.cuMemExportToShareableHandle(
                self._mapping.handle, driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                "cuMemExportToShareableHandle")
            self._fd = int(fd)
            self._bytes = bytes_tensor(self._mapping.pointer, self.size, device)
        except BaseException:
            self.release()
            raise

    def view(self, dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
        """The allocation's first bytes as a contiguous tensor of ``dtype`` and ``shape``."""
        count = 1
        for n in shape:
            count *= int(n)
        return self._bytes[:count * dtype.itemsize].view(dtype).view(shape)

    def take_fd(self) -> int:
        """The exported descriptor; the caller owns (and closes) it from now on."""
        fd, self._fd = self._fd, None
        if fd is None:
            raise VmmError("the allocation's descriptor was already handed over")
        return fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        self._bytes = None  # type: ignore[assignment]  # no view outlives the mapping
        self._mapping.release()


@contextmanager
def imported(fd: int, size: int, device: int) -> Iterator[tuple[torch.Tensor, str]]:
    """Map the allocation behind ``fd`` (``size`` bytes of it, a multiple of the granularity) read-only where the
    driver allows it, else read-write; yields its bytes and the access granted. Everything is released on exit;
    the caller must have finished (synchronised) all work on the bytes by then, and keeps no view of them."""
    driver = _driver(device)
    mapping = _Mapping(driver, int(size))
    try:
        (mapping.handle,) = _ok(driver.cuMemImportFromShareableHandle(
            int(fd), driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            "cuMemImportFromShareableHandle")
        access = mapping.map(device, readonly=True)
        yield bytes_tensor(mapping.pointer, mapping.size, device), access
    finally:
        try:
            torch.cuda.synchronize(device)
        finally:
            mapping.release()


def warm_up(device: int) -> str | None:
    """Make and free one exported allocation now, before a candidate is imported (the driver binding, numpy for
    the array interface and the driver's own lazy set-up are loaded here, not inside a guarded call); why the
    hand-off cannot work in this process, or None."""
    try:
        Export(1, device).release()
    except (VmmError, ImportError) as exc:
        return f"{type(exc).__name__}: {exc}"[:500]
    return None
