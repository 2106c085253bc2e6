"""Whose kernel is this: the classification table on real kernel names (as CUPTI reports them on an H200 with
torch 2.11 / CUDA 13, and as published in public profiles), and the candidate's own names read from its source."""

from __future__ import annotations

import pytest

from evaluator.tracing.judge import allowed_families, policy_for
from evaluator.tracing.kernel_names import (
    FAMILY_RULES,
    Family,
    OwnKernels,
    classify,
    cuda_kernel_names,
    display_name,
    own_kernels,
    parse_mangled,
)


def _src(name: str) -> str:
    """An Itanium source-name: length then identifier."""
    return f"{len(name)}{name}"


NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
# Real names; the ones marked H200 were recorded by bench/tracing_probe.py.
REAL_NAMES: dict[str, Family] = {
    # H200: torch.cuda._sleep
    "_ZN2at4cuda40_GLOBAL__N__758183f4_8_Sleep_cu_088d913f11spin_kernelEl": Family.BUSY_WAIT,
    # H200: zero_ on int8 and float tensors
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIaEESt5arrayIPcLm1EEEEviT0_T1_":
        Family.ATEN_MEMORY,
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_":
        Family.ATEN_MEMORY,
    # H200: a.t().contiguous()
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_"
    "18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_EEvS4_RKT_EUliE_EEviT1_": Family.ATEN_MEMORY,
    # H200: x.to(torch.float16)
    "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_24float16_copy_kernel_cudaERNS_18TensorIteratorBaseEEUlfE_"
    "St5arrayIPcLm2EEEEviT0_T1_": Family.ATEN_MEMORY,
    # public: bf16 casts through direct_copy with an 8-wide manual unroll
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_"
    "18TensorIteratorBaseEENKUlvE1_clEvENKUlvE11_clEvEUlbE_EEvS4_RKT_EUliE_EEviT1_": Family.ATEN_MEMORY,
    # H200: torch.softmax (an anonymous namespace of SoftMax.cu, outside at::)
    "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi8ELb0ELb0EEEvPT0_PKT_iiiPKbib":
        Family.ATEN_COMPUTE,
    # H200: torch.randn
    "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_elementwise_grid_stride_"
    "kernelIfLi4EZNS0_9templates4cuda20normal_and_transformIffPNS_17CUDAGeneratorImplEZZZNS4_13normal_kernelIS7_EEvRK"
    "NS_10TensorBaseEddT_ENKUlvE_clEvENKUlvE0_clEvEUlfE_EEvRNS_18TensorIteratorBaseET1_T2_EUlP24curandStatePhilox4_32_"
    "10E0_ZNS1_27distribution_nullary_kernelIff6float4S7_SM_SF_EEvSH_SJ_RKT3_T4_EUlifE_EEvlNS_15PhiloxCudaStateESI_SJ_":
        Family.ATEN_COMPUTE,
    # public: sum/mean, clamp, gelu
    "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0": Family.ATEN_COMPUTE,
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_49_GLOBAL__N__d2ba64fb_16_TensorCompare_cu_71e06f4e19"
    "launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6detail11ClampLimitsEENKUlvE_clEvENKUlvE5_clEvE"
    "UlfE_St5arrayIPcLm2EEEEviT0_T1_": Family.ATEN_COMPUTE,
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluType"
    "EENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_NS_6detail5ArrayIPcLi2EEEEEviT0_T1_": Family.ATEN_COMPUTE,
    # public: flash attention inside ATen (built on CUTLASS types, still ATen)
    "_ZN13pytorch_flash16flash_fwd_kernelINS_23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb0ELb0EN7cutlass6half_tENS"
    "_19Flash_kernel_traitsILi64ELi128ELi128ELi4ES3_EEEELb0ELb1ELb0ELb0ELb1ELb1ELb0EEEvNS_16Flash_fwd_paramsE":
        Family.ATEN_COMPUTE,
    # H200: a 256x256 fp32 matmul
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x"
    "_cublas": Family.CUBLAS,
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_split_k_"
    "kernel__5x_cublas": Family.CUBLAS,
    # public: cuBLAS gemv, cuBLASLt JIT kernels
    "_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb1E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKfES3"
    "_S1_IfEfEEvT11_T4_S7_": Family.CUBLAS,
    "nvjet_tst_128x64_64x8_1x2_v_bz_TNN": Family.CUBLAS,
    # public: CUTLASS GEMMs (as cuBLAS/torch launch them)
    "_ZN7cutlass7Kernel2I50cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4EEvNT_6ParamsE": Family.CUTLASS,
    "cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_128x64x16_1x1x1_3_tnn_align1_bias_f32_relu": Family.CUTLASS,
    # public: cuDNN implicit-GEMM convolution
    "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x32x32_stage4_warpsize4x1x1_g1_tensor16x"
    "8x16_execute_kernel__5x_cudnn": Family.CUDNN,
    # public: NCCL all-reduce (declared __global__ void ncclDevKernel_...(ncclDevKernelArgsStorage<4096>))
    f"_Z{_src(NCCL)}24ncclDevKernelArgsStorageILm4096EE": Family.CUDA_LIBRARY,
}


@pytest.mark.parametrize("name, family", REAL_NAMES.items(), ids=[n[:60] for n in REAL_NAMES])
def test_real_kernel_names_are_classified(name: str, family: Family):
    assert classify(name, OwnKernels()).family is family


def test_every_table_rule_is_exercised_by_a_real_name():
    used = set()
    for name in REAL_NAMES:
        for i, rule in enumerate(FAMILY_RULES):
            if rule.pattern.search(name):
                used.add(i)
                break
    assert used == set(range(len(FAMILY_RULES)))


def test_display_names_are_readable():
    assert display_name("_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0") == \
        "at::native::reduce_kernel<...>"
    assert display_name("_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi8ELb0ELb0EEEvPT0_"
                        "PKT_iiiPKbib") == "(anonymous namespace in SoftMax.cu)::softmax_warp_forward<...>"
    assert display_name("_Z3addPfS_i") == "add"
    assert display_name("probe_add_kernel") == "probe_add_kernel"
    assert display_name("x" * 500).endswith("...")


def test_parse_mangled_subset():
    assert parse_mangled("_Z3addPfS_i").base == "add"
    nested = parse_mangled("_ZN2ns3addEPf")
    assert (nested.scope, nested.base, nested.templated) == (("ns",), "add", False)
    templated = parse_mangled("_Z6kernelILi4EEvPf")
    assert templated.base == "kernel" and templated.templated
    assert parse_mangled("_ZL6staticPf").base == "static"
    assert parse_mangled("plain_name") is None
    assert parse_mangled("_Z99x") is None


TRITON_CANDIDATE = '''
import triton
import triton.language as tl
from triton import jit
import triton as tr


@triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def rms_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@jit
def aliased_kernel(x_ptr):
    pass


@tr.jit(do_not_specialize=["n"])
def module_alias_kernel(x_ptr, n):
    pass


def plain(x_ptr):
    pass


wrapped = triton.jit(plain)


def helper():
    return 1
'''

CUDA_CANDIDATE = r'''
import kernelevo.cuda as kcuda

SRC = """
// __global__ void commented_out(float* x)
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) { }
template <int N> __global__ void __launch_bounds__(256) tiled(float* x) { }
namespace mine { __global__ void scoped(float* x) { } }
"""
k = kcuda.compile(SRC, "axpy")
'''


def test_own_triton_kernels_follow_aliases_decorators_and_calls():
    own = own_kernels(TRITON_CANDIDATE)
    assert own.triton == {"rms_kernel", "aliased_kernel", "module_alias_kernel", "plain"}
    assert own.cuda == frozenset()


def test_own_cuda_kernels_from_source_strings():
    own = own_kernels(CUDA_CANDIDATE)
    assert own.cuda == {"axpy", "tiled", "scoped"}
    assert cuda_kernel_names("__global__ static void s(int* p);") == {"s"}


def test_unparsable_source_defines_nothing():
    assert own_kernels("def (:").names == frozenset()


def test_own_cuda_kernels_match_their_mangled_names():
    own = own_kernels(CUDA_CANDIDATE)
    assert classify("axpy", own).own  # extern "C"
    assert classify("_Z5tiledILi4EEvPf", own).own  # template instance
    assert classify("_ZN4mine6scopedEPf", own).own  # a namespace of its own
    anon = f"_ZN{_src('_GLOBAL__N__1f2e3d4c_7_cuda_cu_9a8b7c6d')}6scopedEPf"  # load_inline's cuda.cu
    assert classify(anon, own).own


def test_a_library_kernel_with_a_candidate_base_name_is_not_the_candidates():
    own = OwnKernels(cuda=frozenset({"softmax_warp_forward", "reduce_kernel"}))
    torch_softmax = "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIfffLi8ELb0ELb0EEEvPT0_PKT_"
    assert classify(torch_softmax, own).family is Family.ATEN_COMPUTE
    assert classify("_ZN2at6native13reduce_kernelILi128ELi4EEEvv", own).family is Family.ATEN_COMPUTE
    assert classify("_ZN3cub13reduce_kernelEv", own).family is Family.CUDA_LIBRARY


def test_unknown_kernels_are_nobodys():
    cls = classify("_Z12mystery_workPf", own_kernels(TRITON_CANDIDATE))
    assert cls.family is Family.UNKNOWN and not cls.own


def test_a_candidate_kernel_named_like_a_library_kernel_is_the_librarys_and_reported():
    source = '''
import triton
@triton.jit
def nvjet_tst_128x64_64x8_1x2_v_bz_TNN(x):
    pass
SRC = 'extern "C" __global__ void gemv2T_kernel_val(float* x) {}'
'''
    policy, findings = policy_for(source)
    assert classify("nvjet_tst_128x64_64x8_1x2_v_bz_TNN", policy.own).family is Family.CUBLAS
    assert classify("gemv2T_kernel_val", policy.own).family is Family.CUBLAS
    assert [f.names for f in findings] == [("gemv2T_kernel_val",), ("nvjet_tst_128x64_64x8_1x2_v_bz_TNN",)]
    assert all("rename the kernel" in f.message and f.severity.value == "fail" for f in findings)


def test_families_a_task_allows():
    assert allowed_families([]) == {Family.ATEN_MEMORY}
    assert allowed_families(["aten.mm", "aten.clone"]) == {Family.ATEN_MEMORY, Family.CUBLAS, Family.CUTLASS}
    assert Family.CUDNN in allowed_families(["aten.convolution"])
    assert Family.ATEN_COMPUTE in allowed_families(["aten.softmax.int"])
    assert allowed_families(["torch.matmul"]) == {Family.ATEN_MEMORY, Family.CUBLAS, Family.CUTLASS}
