"""CUDA driver side of :mod:`kernelevo.cuda`: load a cubin into torch's context and launch it.

Uses the driver C API through ``cuda.bindings`` (``cuModuleLoadData``, ``cuLaunchKernel``,
``cuFuncGetAttribute``), which has kept its shape across cuda-python releases, unlike the launch and
stream wrappers of ``cuda.core``. Everything runs in the device's primary context, the one PyTorch uses,
so kernels see torch's allocations and launch onto torch's streams.
"""

from __future__ import annotations

import ctypes
from typing import Any

_contexts: dict[int, Any] = {}
_driver: Any = None  # the binding module, imported on first use (launchers call this per launch)

#: ``resources()`` keys and the CUfunction attributes they come from.
RESOURCE_ATTRIBUTES = {
    "registers": "CU_FUNC_ATTRIBUTE_NUM_REGS",
    "shared_bytes": "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES",
    "local_bytes": "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES",
    "const_bytes": "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES",
    "max_threads_per_block": "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "max_dynamic_shared_bytes": "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
}


class CudaLaunchError(RuntimeError):
    """A kernel could not be loaded or launched (no GPU, wrong arguments, bad launch shape)."""


def driver_module() -> Any:
    """Import the CUDA driver binding (``cuda.bindings.driver``, or the pre-12.6 ``cuda.cuda``)."""
    global _driver
    if _driver is None:
        try:
            from cuda.bindings import driver
        except ImportError:
            from cuda import cuda as driver  # cuda-python < 12.6
        _driver = driver
    return _driver


def check(err: Any, what: str) -> None:
    """Raise :class:`CudaLaunchError` naming the driver call and its error when ``err`` is not success."""
    if int(err) == 0:
        return
    driver = driver_module()
    name = getattr(err, "name", str(err))
    detail = ""
    result = driver.cuGetErrorString(err)
    if int(result[0]) == 0 and result[1]:
        detail = ": " + result[1].decode(errors="replace")
    raise CudaLaunchError(f"{what} failed with {name}{detail}")


def ensure_context(device_index: int) -> None:
    """Make ``device_index``'s primary context (PyTorch's) current on this thread."""
    driver = driver_module()
    ctx = _contexts.get(device_index)
    if ctx is None:
        (err,) = driver.cuInit(0)
        check(err, "cuInit")
        err, dev = driver.cuDeviceGet(device_index)
        check(err, "cuDeviceGet")
        err, ctx = driver.cuDevicePrimaryCtxRetain(dev)
        check(err, "cuDevicePrimaryCtxRetain")
        _contexts[device_index] = ctx
    err, current = driver.cuCtxGetCurrent()
    check(err, "cuCtxGetCurrent")
    if int(current) != int(ctx):
        (err,) = driver.cuCtxSetCurrent(ctx)
        check(err, "cuCtxSetCurrent")


def load_function(cubin: bytes, name: str, device_index: int) -> tuple[Any, Any]:
    """Load ``cubin`` on ``device_index`` and return (module, function ``name``)."""
    driver = driver_module()
    ensure_context(device_index)
    err, module = driver.cuModuleLoadData(cubin)
    check(err, f"loading the cubin of kernel {name!r} (cuModuleLoadData)")
    err, function = driver.cuModuleGetFunction(module, name.encode())
    check(err, f"finding kernel {name!r} in its cubin (cuModuleGetFunction)")
    return module, function


def param_sizes(function: Any, limit: int = 4096) -> list[int] | None:
    """Byte size of each kernel parameter (``cuFuncGetParamInfo``, CUDA 12.4+); None where unsupported."""
    driver = driver_module()
    get = getattr(driver, "cuFuncGetParamInfo", None)
    if get is None:
        return None
    sizes: list[int] = []
    for index in range(limit):
        err, _offset, size = get(function, index)
        if int(err) != 0:
            # INVALID_VALUE past the last parameter; anything else means the driver cannot say.
            invalid = driver.CUresult.CUDA_ERROR_INVALID_VALUE
            return sizes if int(err) == int(invalid) else None
        sizes.append(int(size))
    return None


def function_attributes(function: Any) -> dict[str, int]:
    """Registers, static shared/local/constant bytes and thread limits of a loaded kernel."""
    driver = driver_module()
    out = {}
    for key, attr_name in RESOURCE_ATTRIBUTES.items():
        err, value = driver.cuFuncGetAttribute(getattr(driver.CUfunction_attribute, attr_name), function)
        check(err, f"cuFuncGetAttribute({attr_name})")
        out[key] = int(value)
    return out


def set_max_dynamic_shared(function: Any, nbytes: int) -> None:
    """Allow ``nbytes`` of dynamic shared memory (needed above the default 48 KiB)."""
    driver = driver_module()
    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err,) = driver.cuFuncSetAttribute(function, attr, nbytes)
    check(err, f"allowing {nbytes} bytes of dynamic shared memory (cuFuncSetAttribute)")


def launch(
    function: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared_mem: int,
    stream_handle: int,
    packed: list[Any],
    name: str,
) -> None:
    """``cuLaunchKernel`` on the stream whose raw handle is ``stream_handle``; ``packed`` from pack_args."""
    driver = driver_module()
    pointers = (ctypes.c_void_p * max(len(packed), 1))(*[ctypes.addressof(v) for v in packed])
    (err,) = driver.cuLaunchKernel(
        function, *grid, *block, shared_mem, driver.CUstream(stream_handle), ctypes.addressof(pointers), 0
    )
    check(err, f"launching kernel {name!r} with grid={grid} block={block} shared_mem={shared_mem}")
