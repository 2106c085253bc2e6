"""kernelevo.cuda: NVRTC compile (CPU), disk cache, argument packing, and launches on the GPU."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

from kernelevo import cuda
from kernelevo.settings import reset_settings_cache

VECTOR_ADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""

ROW_SUM = r"""
#include <cuda_bf16.h>
// One block per row; a shared-memory tree reduction over the columns.
extern "C" __global__ void row_sum(const float* x, float* out, int rows, int cols) {
    extern __shared__ float partial[];
    int row = blockIdx.x;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[(long long)row * cols + c];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = partial[0];
}
"""

BROKEN = """extern "C" __global__ void broken(float* out) {
    int i = threadIdx.x;
    out[i] = undefined_name * 2.0f;
}
"""


@pytest.fixture(scope="session")
def shared_headers(tmp_path_factory):
    """One install of NVRTC's bundled headers for the whole session (it is not what the tests test)."""
    return tmp_path_factory.mktemp("nvrtc-headers")


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch, shared_headers):
    """Every test compiles into its own empty cache, in memory and on disk."""
    from kernelevo._cuda_nvrtc import nvrtc_version

    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / f"headers-nvrtc{nvrtc_version()}").symlink_to(shared_headers, target_is_directory=True)
    monkeypatch.setenv("KERNELEVO_CACHE_DIR", str(tmp_path))
    reset_settings_cache()
    cuda.clear_memory_cache()
    yield tmp_path / "cuda"
    cuda.clear_memory_cache()
    reset_settings_cache()


# --------------------------------------------------------------------------- CPU: compile and cache


def test_compile_check_ok_for_vector_add():
    check = cuda.compile_check(VECTOR_ADD, "vector_add")
    assert check.ok, check.log


def test_compile_produces_cubin_defining_the_kernel():
    kernel = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")
    assert (kernel.name, kernel.arch) == ("vector_add", "sm_90")
    assert kernel.cubin[:4] == b"\x7fELF"


def test_bundled_headers_are_available():
    assert cuda.compile_check(ROW_SUM, "row_sum").ok


def test_toolkit_headers_used_when_nvrtc_cannot_bundle_its_own(monkeypatch):
    from kernelevo import _cuda_nvrtc

    if not _cuda_nvrtc._include_dirs():
        pytest.skip("no CUDA toolkit headers on this machine")
    monkeypatch.setattr(_cuda_nvrtc, "_bundled_headers_supported", False)  # as with NVRTC 13.0
    assert cuda.compile_check(ROW_SUM, "row_sum").ok


def test_compile_error_names_kernel_and_line():
    with pytest.raises(cuda.CudaCompileError) as info:
        cuda.compile(BROKEN, "broken", arch="sm_90")
    message = str(info.value)
    assert "'broken'" in message
    assert "line 3" in message
    assert "undefined_name" in message  # the NVRTC log and the offending source line
    assert info.value.lines == [3]


def test_compile_check_reports_error_instead_of_raising():
    check = cuda.compile_check(BROKEN, "broken")
    assert not check.ok
    assert "line 3" in check.log


def test_missing_extern_c_is_a_compile_error_naming_the_mangled_symbol():
    source = VECTOR_ADD.replace('extern "C" ', "")
    with pytest.raises(cuda.CudaCompileError, match=r'extern "C"') as info:
        cuda.compile(source, "vector_add", arch="sm_90")
    assert "_Z10vector_add" in str(info.value)


@pytest.mark.parametrize(
    ("options", "arch"),
    [(("-arch=sm_80",), "sm_90"), ((), "compute_90"), ((), "90")],
)
def test_bad_arch_or_arch_option_is_rejected(options, arch):
    with pytest.raises(cuda.CudaCompileError, match="arch"):
        cuda.compile(VECTOR_ADD, "vector_add", options=options, arch=arch)


def test_second_compile_reads_disk_cache_without_nvrtc(cache_dir):
    first = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")
    compiles = cuda.nvrtc_compile_count()
    assert (cache_dir / f"{first.key}.cubin").read_bytes() == first.cubin

    assert cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90") is first  # in-process hit
    cuda.clear_memory_cache()
    again = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")  # disk hit
    assert again is not first
    assert again.cubin == first.cubin
    assert cuda.nvrtc_compile_count() == compiles


def test_corrupt_cache_file_is_recompiled(cache_dir):
    first = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")
    (cache_dir / f"{first.key}.cubin").write_bytes(b"truncated")
    cuda.clear_memory_cache()
    compiles = cuda.nvrtc_compile_count()
    assert cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90").cubin[:4] == b"\x7fELF"
    assert cuda.nvrtc_compile_count() == compiles + 1


def test_failed_compile_is_not_cached(cache_dir):
    cuda.compile_check(BROKEN, "broken")
    compiles = cuda.nvrtc_compile_count()
    assert not cuda.compile_check(BROKEN, "broken").ok
    assert cuda.nvrtc_compile_count() == compiles + 1
    assert not list(cache_dir.glob("*.cubin"))


def test_cache_key_changes_with_options_and_arch():
    base = cuda.cache_key(VECTOR_ADD, "vector_add", (), "sm_90")
    assert cuda.cache_key(VECTOR_ADD, "vector_add", (), "sm_90") == base
    assert cuda.cache_key(VECTOR_ADD, "vector_add", ("--use_fast_math",), "sm_90") != base
    assert cuda.cache_key(VECTOR_ADD, "vector_add", (), "sm_80") != base
    assert cuda.cache_key(VECTOR_ADD + " ", "vector_add", (), "sm_90") != base

    compiles = cuda.nvrtc_compile_count()
    plain = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")
    fast = cuda.compile(VECTOR_ADD, "vector_add", options=["--use_fast_math"], arch="sm_90")
    older = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_80")
    assert len({plain.key, fast.key, older.key}) == 3
    assert cuda.nvrtc_compile_count() == compiles + 3


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_launch_without_gpu_gives_clear_error():
    kernel = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")
    x = torch.ones(4)
    with pytest.raises(cuda.CudaLaunchError, match="no CUDA device.*compile_check"):
        kernel[1, 4](x, x, x, 4)
    with pytest.raises(cuda.CudaLaunchError, match="no CUDA device"):
        kernel.resources()


# --------------------------------------------------------------------------- CPU: pure helpers

CPU = torch.device("cpu")


def test_pack_args_types_and_values():
    t = torch.zeros(3)
    packed = cuda.pack_args(
        [t, 7, -2.5, True, np.int64(2**40), np.uint64(2**64 - 1), np.float64(0.1)] + [np.float16(1.0), np.int8(-3)],
        device=CPU,
    )
    expected = [
        (ctypes.c_void_p, t.data_ptr()),
        (ctypes.c_int32, 7),
        (ctypes.c_float, -2.5),
        (ctypes.c_bool, True),
        (ctypes.c_int64, 2**40),
        (ctypes.c_uint64, 2**64 - 1),
        (ctypes.c_double, 0.1),
        (ctypes.c_uint16, 0x3C00),  # the bits of half(1.0)
        (ctypes.c_int8, -3),
    ]
    assert [(type(p), p.value) for p in packed] == expected


def test_pack_args_int_out_of_int32_range_asks_for_explicit_type():
    assert cuda.pack_args([2**31 - 1, -(2**31)], device=CPU)[0].value == 2**31 - 1
    with pytest.raises(ValueError, match=r"args\[1\].*int32.*np\.int64"):
        cuda.pack_args([1, 2**31], device=CPU, kernel="k")


def test_pack_args_rejects_tensor_on_other_device():
    with pytest.raises(ValueError, match=r"args\[0\]: tensor is on cpu.*cuda:0"):
        cuda.pack_args([torch.zeros(2)], device=torch.device("cuda", 0), kernel="k")


@pytest.mark.parametrize("bad", [None, "x", [1, 2], np.zeros(2), 1 + 2j])
def test_pack_args_rejects_other_types(bad):
    with pytest.raises(TypeError, match=r"args\[0\]: cannot pass"):
        cuda.pack_args([bad], device=CPU)


def test_param_sizes_checked_against_kernel_signature():
    from kernelevo._cuda_args import check_param_sizes

    packed = cuda.pack_args([torch.zeros(1), 3, np.int64(4)], device=CPU)
    check_param_sizes(packed, [8, 4, 8], "k")
    check_param_sizes(packed, None, "k")  # driver cannot tell: no check
    with pytest.raises(ValueError, match="'k' takes 4 arguments, got 3"):
        check_param_sizes(packed, [8, 4, 8, 4], "k")
    with pytest.raises(ValueError, match=r"args\[1\]: passed a 4-byte value.*parameter 1 is 8 bytes.*np\.int64"):
        check_param_sizes(packed, [8, 8, 8], "k")


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        ((4, 128), ((4, 1, 1), (128, 1, 1), 0)),
        (((4, 2), (32, 8)), ((4, 2, 1), (32, 8, 1), 0)),
        (((1, 2, 3), 64, 1024), ((1, 2, 3), (64, 1, 1), 1024)),
    ],
)
def test_launch_shapes(launch, expected):
    from kernelevo._cuda_args import normalize_launch

    assert normalize_launch(launch) == expected


BAD_LAUNCHES = [(4,), (0, 128), ((1, 2, 3, 4), 1), (4, 128, -1), (4, 1.5), (4, 128, 0, 0)]


@pytest.mark.parametrize("launch", BAD_LAUNCHES)
def test_bad_launch_shapes_rejected_before_any_gpu_work(launch):
    kernel = cuda.compile(VECTOR_ADD, "vector_add", arch="sm_90")
    with pytest.raises(ValueError, match="vector_add"):
        kernel[launch]


def test_import_is_cheap():
    import subprocess
    import sys

    code = "import sys, kernelevo.cuda; print(sorted({'torch', 'numpy', 'cuda.bindings'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_vector_add_matches_torch():
    n = 100_003
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(a)
    cuda.compile(VECTOR_ADD, "vector_add")[(n + 255) // 256, 256](a, b, out, n)
    torch.testing.assert_close(out, a + b)


@pytest.mark.gpu
def test_row_sum_with_dynamic_shared_memory_matches_torch():
    rows, cols, threads = 257, 3000, 256
    x = torch.randn(rows, cols, device="cuda")
    out = torch.empty(rows, device="cuda")
    cuda.compile(ROW_SUM, "row_sum")[rows, threads, threads * 4](x, out, rows, cols)
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_dynamic_shared_memory_above_48k():
    rows, cols, threads = 4, 50_000, 1024
    x = torch.randn(rows, cols, device="cuda")
    out = torch.empty(rows, device="cuda")
    cuda.compile(ROW_SUM, "row_sum")[rows, threads, 64 * 1024](x, out, rows, cols)
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-4, atol=1e-2)


@pytest.mark.gpu
def test_two_d_grid_and_int64_argument():
    source = r"""
    extern "C" __global__ void fill2d(float* out, int rows, int cols, long long base) {
        int r = blockIdx.y * blockDim.y + threadIdx.y;
        int c = blockIdx.x * blockDim.x + threadIdx.x;
        if (r < rows && c < cols) out[r * cols + c] = (float)(base - (1LL << 40)) + r * 1000 + c;
    }
    """
    rows, cols = 37, 129
    out = torch.empty(rows, cols, device="cuda")
    grid = ((cols + 31) // 32, (rows + 7) // 8)
    cuda.compile(source, "fill2d")[grid, (32, 8)](out, rows, cols, np.int64(2**40 + 5))
    r = torch.arange(rows, device="cuda", dtype=torch.float32)[:, None]
    c = torch.arange(cols, device="cuda", dtype=torch.float32)[None, :]
    torch.testing.assert_close(out, 5 + r * 1000 + c)


@pytest.mark.gpu
def test_launch_is_recorded_by_graph_capture_on_side_stream():
    n = 4096
    kernel = cuda.compile(VECTOR_ADD, "vector_add")
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kernel[n // 256, 256](a, b, out, n)  # warm-up: loads the module outside capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    out.zero_()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        kernel[n // 256, 256](a, b, out, n)
    torch.cuda.synchronize()
    assert torch.count_nonzero(out) == 0  # captured, not executed
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b)
    a.fill_(1.0)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 1.0 + b)


@pytest.mark.gpu
def test_resources_report_registers_and_limits():
    res = cuda.compile(ROW_SUM, "row_sum").resources()
    assert res["registers"] > 0
    assert res["max_threads_per_block"] > 0
    assert res["local_bytes"] >= 0
    assert set(res) >= {"registers", "shared_bytes", "local_bytes", "max_threads_per_block"}


@pytest.mark.gpu
def test_default_arch_is_current_gpu():
    major, minor = torch.cuda.get_device_capability()
    assert cuda.compile(VECTOR_ADD, "vector_add").arch == f"sm_{major}{minor}"


@pytest.mark.gpu
def test_wrong_argument_count_or_width_is_caught_before_launch():
    source = r"""
    extern "C" __global__ void scale(float* out, long long n, double factor) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) out[i] = (float)(out[i] * factor);
    }
    """
    kernel = cuda.compile(source, "scale")
    out = torch.ones(8, device="cuda")
    with pytest.raises(ValueError, match="takes 3 arguments, got 2"):
        kernel[1, 8](out, np.int64(8))
    with pytest.raises(ValueError, match=r"args\[1\]: passed a 4-byte value"):
        kernel[1, 8](out, 8, np.float64(2.0))
    kernel[1, 8](out, np.int64(8), np.float64(2.5))
    torch.testing.assert_close(out, torch.full((8,), 2.5, device="cuda"))


@pytest.mark.gpu
def test_launch_error_is_a_value_the_user_can_act_on():
    kernel = cuda.compile(VECTOR_ADD, "vector_add")
    x = torch.zeros(4, device="cuda")
    with pytest.raises(cuda.CudaLaunchError, match=r"vector_add.*block=\(4096, 1, 1\)"):
        kernel[1, 4096](x, x, x, 4)
