"""Whose kernel is this? Names CUPTI reports, sorted into the candidate's own kernels, allowed ATen memory
kernels, library families and everything else.

CUPTI reports the name the GPU function has in its binary: a Triton kernel is named after its Python function;
a CUDA ``__global__`` function keeps its name under ``extern "C"`` and is Itanium-mangled otherwise
(``_Z3addPfS_i``, ``_ZN2ns3addEPf``); ATen and the CUDA libraries have their own recognisable names. Because a
hostile candidate chooses its kernel names, the library table is consulted *first*: a candidate kernel named
like a cuBLAS or ATen kernel counts as that library, and deriving the candidate's names reports the clash.
"""

from __future__ import annotations

import ast
import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from evaluator.static_model import TRITON_JIT, build_model, decorator_names, resolve
from kernelevo import pyast


class Family(str, enum.Enum):
    OWN = "own"  # defined in the candidate's source
    ATEN_MEMORY = "aten_memory"  # fill/copy/cast kernels of the allocation and copy ops a candidate may run
    ATEN_COMPUTE = "aten_compute"
    BUSY_WAIT = "busy_wait"  # torch.cuda._sleep: the harness's launch cover, never a candidate's work
    CUBLAS = "cublas"
    CUTLASS = "cutlass"
    CUDNN = "cudnn"
    CUDA_LIBRARY = "cuda_library"  # Thrust/CUB, cuFFT, cuRAND, NCCL
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FamilyRule:
    family: Family
    label: str  # how a finding names the family
    pattern: re.Pattern[str]


def _rule(family: Family, label: str, *patterns: str, flags: int = 0) -> FamilyRule:
    return FamilyRule(family, label, re.compile("|".join(f"(?:{p})" for p in patterns), flags))


# The one classification table. Order matters: the first rule that matches a name decides. Patterns are searched
# in the raw (mangled) name CUPTI reports; tests hold real names for every rule.
FAMILY_RULES: tuple[FamilyRule, ...] = (
    # at::cuda::spin_kernel (aten/src/ATen/cuda/Sleep.cu), launched by torch.cuda._sleep.
    _rule(Family.BUSY_WAIT, "torch.cuda._sleep busy-wait", r"^_ZN2at4cuda\w*spin_kernel"),
    # fill_/zero_/zeros/ones/full: at::native::FillFunctor<T> inside an elementwise kernel template.
    _rule(Family.ATEN_MEMORY, "ATen fill", r"^_ZN2at6native\w*\d+FillFunctorI"),
    # copy_/_to_copy/contiguous/clone, casts included: the lambdas of direct_copy_kernel_cuda (Copy.cu) and its
    # float8/half/bfloat16 specialisations.
    _rule(Family.ATEN_MEMORY, "ATen copy/cast", r"^_ZN2at6native\w*copy_kernel_cuda"),
    # Attention kernels shipped inside ATen (flash, memory-efficient): before CUTLASS, which they are built on.
    _rule(Family.ATEN_COMPUTE, "ATen compute (attention)", r"pytorch_flash", r"fmha_cutlass", r"^_ZN2at6native\w*fmha"),
    _rule(Family.ATEN_COMPUTE, "ATen compute", r"^_ZN2at", r"^_ZN3c10"),
    # cuDNN before cuBLAS: its implicit-GEMM convolutions are named sm80_xmma_fprop_implicit_gemm_...
    _rule(Family.CUDNN, "cuDNN", r"cudnn", r"xmma_(?:fprop|dgrad|wgrad)", r"implicit_convolve", r"explicit_convolve",
          r"conv2d_grouped_direct", r"winograd", flags=re.I),
    # cuBLAS / cuBLASLt: mangled kernels carry cublas* parameter types; architecture-prefixed SASS GEMMs;
    # cuBLASLt's JIT kernels (nvjet_*); the classic helper kernels with distinctive names.
    _rule(Family.CUBLAS, "cuBLAS", r"cublas", r"^nvjet_",
          r"^(?:sm\d+|ampere|volta|turing|hopper|blackwell|maxwell)_\w*(?:gemm|xmma)", r"(?:^|_)xmma_gemm",
          r"gemv2[NT]_kernel", r"gemvNSP_kernel", r"gemmk1_kernel", r"gemmSN_[NT]{2}_kernel", r"splitKreduce_kernel",
          flags=re.I),
    _rule(Family.CUTLASS, "CUTLASS", r"cutlass", flags=re.I),
    _rule(Family.CUDA_LIBRARY, "CUDA library (Thrust/CUB/cuFFT/cuRAND/NCCL)", r"^_ZN6thrust", r"^_ZN3cub",
          r"CUB_\d{6}", r"cufft", r"vector_fft", r"regular_fft", r"curand", r"(?:^|\d)nccl", flags=re.I),
)

# Namespaces a candidate's own CUDA kernel cannot live in (a match there is the library's, whatever its name).
_RESERVED_SCOPES = frozenset({"at", "c10", "torch", "std", "cub", "thrust", "cutlass", "cute", "cudnn", "cublas",
                              "cublasLt", "pytorch_flash", "flash", "nvidia", "triton"})
# Source files whose anonymous namespaces hold a candidate's kernels: load_inline writes cuda.cu and main.cpp.
OWN_SOURCE_FILES = frozenset({"cuda_cu", "main_cpp"})


@dataclass(frozen=True)
class MangledName:
    """The part of an Itanium-mangled function name that says where it lives: scope and unqualified name."""

    scope: tuple[str, ...]
    base: str
    templated: bool

    def display(self) -> str:
        parts = [_scope_display(s) for s in self.scope] + [self.base]
        return "::".join(parts) + ("<...>" if self.templated else "")


def anonymous_file(component: str) -> str | None:
    """``_GLOBAL__N__50c743a2_11_Indexing_cu_89862edb`` -> ``Indexing_cu`` (nvcc names anonymous namespaces
    after the file); ``""`` for a host compiler's ``_GLOBAL__N_1``; None when not an anonymous namespace."""
    if not component.startswith("_GLOBAL__N_"):
        return None
    m = re.match(r"_GLOBAL__N__[0-9a-f]+_(\d+)_", component)
    if m is None:
        return ""
    start = m.end()
    return component[start:start + int(m.group(1))]


def _scope_display(component: str) -> str:
    file = anonymous_file(component)
    if file is None:
        return component
    return f"(anonymous namespace in {file.replace('_cu', '.cu')})" if file else "(anonymous namespace)"


def parse_mangled(name: str) -> MangledName | None:
    """Scope and name of ``_Z...`` function names (the subset kernels use: plain, nested, templated)."""
    if not name.startswith("_Z"):
        return None
    i, n = 2, len(name)
    if name.startswith("L", i):
        i += 1
    parts: list[str] = []
    templated = False
    nested = name.startswith("N", i)
    if nested:
        i += 1
        while i < n and name[i] in "rVKRO":
            i += 1
    if name.startswith("St", i):
        parts.append("std")
        i += 2
    while i < n:
        c = name[i]
        if c.isdigit():
            j = i
            while j < n and name[j].isdigit():
                j += 1
            length = int(name[i:j])
            if length == 0 or j + length > n:
                return None
            parts.append(name[j:j + length])
            i = j + length
            if not nested:
                templated = name.startswith("I", i)
                break
        elif c == "L" and nested:
            i += 1
        elif c == "I":
            templated = True
            break
        else:
            break
    if not parts:
        return None
    return MangledName(tuple(parts[:-1]), parts[-1], templated)


def display_name(name: str, limit: int = 160) -> str:
    """A readable form for findings: ``at::native::reduce_kernel<...>`` for mangled names, the name otherwise."""
    parsed = parse_mangled(name)
    text = parsed.display() if parsed is not None else name
    return text if len(text) <= limit else text[:limit - 3] + "..."


def library_rule(name: str) -> FamilyRule | None:
    """The first table rule that claims ``name`` (None: no library's name)."""
    for rule in FAMILY_RULES:
        if rule.pattern.search(name):
            return rule
    return None


@dataclass(frozen=True)
class OwnKernels:
    """Kernel names the candidate's source defines: Triton ``@triton.jit`` functions and CUDA ``__global__``s."""

    triton: frozenset[str] = frozenset()
    cuda: frozenset[str] = frozenset()
    source_files: frozenset[str] = OWN_SOURCE_FILES

    @property
    def names(self) -> frozenset[str]:
        return self.triton | self.cuda


@dataclass(frozen=True)
class KernelClass:
    family: Family
    label: str
    display: str

    @property
    def own(self) -> bool:
        return self.family is Family.OWN


def classify(name: str, own: OwnKernels) -> KernelClass:
    """Which family a kernel CUPTI reported belongs to, given the candidate's own names."""
    shown = display_name(name)
    rule = library_rule(name)
    if rule is not None:
        return KernelClass(rule.family, rule.label, shown)
    if name in own.names:
        return KernelClass(Family.OWN, "the candidate's kernel", shown)
    parsed = parse_mangled(name)
    if parsed is not None:
        foreign_files = [f for f in (anonymous_file(s) for s in parsed.scope) if f and f not in own.source_files]
        if foreign_files:
            return KernelClass(Family.ATEN_COMPUTE, f"ATen compute ({foreign_files[0].replace('_cu', '.cu')})", shown)
        if parsed.base in own.cuda and not _RESERVED_SCOPES.intersection(parsed.scope):
            return KernelClass(Family.OWN, "the candidate's kernel", shown)
    return KernelClass(Family.UNKNOWN, "not defined in the candidate's source", shown)


# --- the candidate's names, read from its source ---

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^()]*\)")
_GLOBAL_DECL = re.compile(r"__global__\s+[\w:<>,\s*&]*?\b([A-Za-z_]\w*)\s*\(")


def cuda_kernel_names(source: str) -> set[str]:
    """Names of the ``__global__`` functions a CUDA C++ source declares."""
    text = _LAUNCH_BOUNDS.sub(" ", _COMMENTS.sub(" ", source))
    return {m.group(1) for m in _GLOBAL_DECL.finditer(text)} - {"void", "static", "inline"}


def _string_constants(tree: ast.AST) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def own_kernels(source: str) -> OwnKernels:
    """The kernel names a candidate module defines, read from its AST without importing it."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return OwnKernels()
    aliases = build_model(tree).aliases
    triton: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and TRITON_JIT in decorator_names(node, aliases):
            triton.add(node.name)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)
              and resolve(node.func, aliases) == TRITON_JIT):
            triton.add(node.args[0].id)  # k = triton.jit(fn): the GPU function is named after fn
    cuda: set[str] = set()
    for text in _string_constants(tree):
        if "__global__" in text:
            cuda |= cuda_kernel_names(text)
    return OwnKernels(frozenset(triton), frozenset(cuda))


def impersonations(own: OwnKernels) -> list[tuple[str, FamilyRule]]:
    """Candidate kernel names that a library's name pattern claims (the kernel would count as that library)."""
    return sorted(((name, rule) for name in own.names if (rule := library_rule(name)) is not None),
                  key=lambda item: item[0])
