"""Pure helpers of :mod:`kernelevo.cuda`: launch shapes and kernel-argument packing (no GPU needed)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1

# numpy scalar type name -> the ctypes type of the same width and signedness (the C++ parameter type).
_NUMPY_CTYPES = {
    "bool": ctypes.c_bool,
    "bool_": ctypes.c_bool,  # numpy < 2
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


def _dim3(value: Any, what: str, kernel: str) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else value
    ok = (
        isinstance(dims, tuple)
        and 1 <= len(dims) <= 3
        and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)
    )
    if not ok:
        raise ValueError(
            f"kernel {kernel!r}: {what} must be a positive int or a tuple of 1 to 3 positive ints, got {value!r}"
        )
    return (*dims, *(1,) * (3 - len(dims)))


def normalize_launch(launch: Any, kernel: str = "") -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """Turn ``k[grid, block]`` / ``k[grid, block, shared_mem]`` into ((gx, gy, gz), (bx, by, bz), bytes)."""
    if not isinstance(launch, tuple) or len(launch) not in (2, 3):
        raise ValueError(
            f"kernel {kernel!r}: launch with kernel[grid, block] or kernel[grid, block, shared_mem_bytes], "
            f"got kernel[{launch!r}]"
        )
    grid = _dim3(launch[0], "grid", kernel)
    block = _dim3(launch[1], "block", kernel)
    shared = launch[2] if len(launch) == 3 else 0
    if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
        raise ValueError(f"kernel {kernel!r}: shared_mem_bytes must be an int >= 0, got {shared!r}")
    return grid, block, shared


def _pack_one(index: int, arg: Any, device: Any, kernel: str, torch: Any) -> Any:
    where = f"kernel {kernel!r}, args[{index}]"
    if torch is not None and isinstance(arg, torch.Tensor):
        if arg.device != device:
            raise ValueError(
                f"{where}: tensor is on {arg.device}, but kernels launch on {device}; "
                f"move it with .to({str(device)!r}) or switch devices with torch.cuda.device(...)"
            )
        return ctypes.c_void_p(arg.data_ptr())
    type_name = type(arg).__name__
    if type(arg).__module__ == "numpy":  # before Python types: np.float64 subclasses float
        if type_name == "float16":  # __half: pass its 16 bits
            return ctypes.c_uint16(int(arg.view("uint16")))
        if type_name in _NUMPY_CTYPES:
            return _NUMPY_CTYPES[type_name](arg.item())
    if isinstance(arg, bool):
        return ctypes.c_bool(arg)
    if isinstance(arg, int):
        if not _INT32_MIN <= arg <= _INT32_MAX:
            raise ValueError(
                f"{where}: Python int {arg} does not fit in int32; pass an explicitly typed numpy scalar "
                "such as np.int64(...) or np.uint32(...) matching the kernel's parameter type"
            )
        return ctypes.c_int32(arg)
    if isinstance(arg, float):
        return ctypes.c_float(arg)
    raise TypeError(
        f"{where}: cannot pass {type_name}; kernel arguments are CUDA tensors, Python int (int32), "
        "float (float32), bool, or numpy scalars (np.int64, np.uint64, np.float64, np.float16, ...)"
    )


def pack_args(args: Sequence[Any], *, device: Any, kernel: str = "") -> list[Any]:
    """Turn launcher arguments into the ctypes values ``cuLaunchKernel`` copies parameters from.

    Tensors become their data pointer and must live on ``device`` (a ``torch.device``; the launcher
    passes the current CUDA device). Python ints become int32 (error if they do not fit: say the
    type with a numpy scalar), floats float32, bools C++ ``bool``; numpy scalars keep their exact type.
    Pure: reads no GPU state, so it is testable anywhere.
    """
    import sys

    torch = sys.modules.get("torch")
    return [_pack_one(i, a, device, kernel, torch) for i, a in enumerate(args)]


def check_param_sizes(packed: Sequence[Any], sizes: Sequence[int] | None, kernel: str = "") -> None:
    """Reject a launch whose arguments do not match the kernel's parameters in number or byte size.

    ``sizes`` comes from the loaded kernel (None when the driver cannot report it). Without this
    check a missing argument or an int32 passed for a 64-bit parameter reads garbage on the GPU.
    """
    if sizes is None:
        return
    if len(packed) != len(sizes):
        raise ValueError(f"kernel {kernel!r} takes {len(sizes)} arguments, got {len(packed)}")
    for index, (value, size) in enumerate(zip(packed, sizes)):
        if ctypes.sizeof(value) != size:
            raise ValueError(
                f"kernel {kernel!r}, args[{index}]: passed a {ctypes.sizeof(value)}-byte value "
                f"but the kernel's parameter {index} is {size} bytes; pass a numpy scalar of that type "
                "(np.int64, np.uint64, np.float64, np.int16, ...)"
            )
