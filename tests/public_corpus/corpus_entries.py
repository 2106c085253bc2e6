"""The public corpus: honest kernels from installed PyPI libraries, each paired with one of our tasks.

Each entry names the library's kernel module (pasted verbatim at test time by ``corpus_builder``), the
adapter that calls it the way the library's own nn.Module does, the task, and what the verifier must say
on a CPU: ``accepted`` where the Triton interpreter can run the kernel, otherwise the setup answer
``needs --device cuda`` (exit status 2, ``NeedsGPU``) -- never ``crashed``. On CUDA every entry must be
accepted. The target is zero false rejects: these kernels are honest and correct.
"""

from __future__ import annotations

import enum
from pathlib import Path

import corpus_builder
from pydantic import BaseModel, ConfigDict, Field

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ADAPTERS = HERE / "adapters"


class CpuExpectation(str, enum.Enum):
    """What the verifier must answer for the entry with ``--device cpu``."""

    ACCEPTED = "accepted"  # the interpreter runs it: fully verified on CPU
    NEEDS_GPU = "needs_gpu"  # libdevice, inline asm or multi-config autotune: exit 2, "needs --device cuda"


class Library(BaseModel):
    """A kernel library on PyPI, read from its installed source."""

    model_config = ConfigDict(frozen=True)

    distribution: str  # PyPI name (pip install ...)
    package: str  # import name
    license: str
    # Library modules a paste replaces by constants (a package __init__ imported only for __version__);
    # "{version}" in an expression stands for the installed version.
    constants: dict[str, dict[str, str]] = Field(default_factory=dict)
    # Packages whose __init__ only re-exports names: paste the module that defines them instead.
    reexports: dict[str, str] = Field(default_factory=dict)

    def version(self) -> str | None:
        return corpus_builder.distribution_version(self.distribution)


class Entry(BaseModel):
    """One candidate: a library kernel module, our adapter for it, and the task it must pass."""

    model_config = ConfigDict(frozen=True)

    library: Library
    module: str  # dotted kernel module inside the package
    kernel: str  # the launcher or autograd Function the adapter calls
    task: str  # task file, relative to the repository root
    adapter: str  # file name under tests/public_corpus/adapters/
    cpu: CpuExpectation
    why_cpu: str = ""  # why the interpreter cannot run it (for NEEDS_GPU)
    # A false reject we know and have not fixed: why. The test expects the rejection (strict xfail, so a fix shows
    # up as XPASS and this must be cleared); bench/public_corpus.py counts it in the false-reject rate.
    known_false_reject: str = ""

    @property
    def id(self) -> str:
        return Path(self.adapter).stem

    @property
    def task_path(self) -> Path:
        return ROOT / self.task

    def header(self, version: str) -> str:
        return (f"KernelEvo public corpus candidate {self.id}: {self.library.distribution} {version} "
                f"({self.library.license}), {self.module} ({self.kernel}) for {self.task}.\n"
                "The library's modules below are pasted verbatim from the installed package; only its imports of "
                "its own modules were removed.\nThe adapter at the end is KernelEvo's.")

    def build(self) -> tuple[corpus_builder.Candidate, str]:
        """The candidate's source (raises ``BuildError``) and the library version it was built from."""
        version = self.library.version()
        if version is None:
            raise corpus_builder.BuildError(f"{self.library.distribution} is not installed: pip install "
                                            f"{self.library.distribution}")
        adapter = corpus_builder.adapter_text(ADAPTERS / self.adapter)
        constants = {module: {name: expr.replace("{version}", version) for name, expr in names.items()}
                     for module, names in self.library.constants.items()}
        candidate = corpus_builder.build(self.library.package, self.module, adapter, self.header(version),
                                         constants=constants, reexports=self.library.reexports)
        return candidate, version


LIGER = Library(distribution="liger-kernel", package="liger_kernel", license="BSD-2-Clause")
FLA = Library(distribution="fla-core", package="fla", license="MIT",
              constants={"fla": {"__version__": "'{version}'"}},
              reexports={"fla.ops.utils": "fla.ops.utils.index"})

# Why the Triton interpreter (CPU) cannot run an entry; the verifier must then say "needs --device cuda".
_LIBDEVICE = ("triton.language.extra.libdevice.rsqrt: libdevice calls return None in the interpreter; also "
              "`eps.to(tl.float32)` on a scalar argument, which the interpreter passes as a Python float")
_AUTOTUNE = "@triton.autotune with several configs: the interpreter cannot benchmark configs"
_BF16 = ("arithmetic on bf16 values (`silu(a).cast(b.dtype) * b`): the interpreter stores bf16 as uint16 and "
         "computes on the raw bits (NaNs and garbage)")

# fla's kernels come with fla.utils and fla.backends, whose glue the verifier accepts where it can tell it never runs or
# cannot be misused (tests/evaluator/test_static_fla.py, each relaxation with the attacks against it): `getattr(torch,
# device)` bound twice, `triton.language._experimental_*` spellings, `importlib.import_module` of a refused package, an
# Enum default member in an except, `inspect.signature` read for parameter names and `inspect.unwrap` as a registry key
# (2026-12-04: 25 -> 22 findings on fla_rms_norm); and since (2026-12-04, issue 17: 22 -> 0 on fla_rms_norm and
# fla_layer_norm) the backend registry's classes, named only in annotations and base lists and made only in a
# `register` nothing calls (their computed getattr, try around a verifier and find_spec of a computed package never
# run), the `shutil`/`pathlib` and `torch.distributed` imports only such dead code reads (static_dormant; the run time
# lets shutil and pathlib be imported), a private Triton backend import in a function nothing calls, the
# `os.environ["TRITON_F32_DEFAULT"] = "ieee"` pin (static_environ), the `tl.extra.cann` alias and `sys.modules` write
# under a `hasattr` the installed Triton answers False (static_absent), `Cls.apply(...)` in a function nothing
# calls (fla's `layer_norm_linear`, whose `F.linear` never runs), `if TYPE_CHECKING:` imports named in annotations
# (cross entropy's ProcessGroup), `sys.modules.get('fla.utils')` (never loaded here) and a probe whose handler asks
# again and logs (rotary's get_multiprocessor_count). Findings left: swiglu 25 -> 8, rotary 28 -> 10, cross entropy
# rows 26 -> 5. Since 2026-12-05 a module-level table nothing running reads keeps nothing alive (static_unread): fla's
# activation table `ACT2FN = {'relu': F.relu, 'gelu': fast_gelu_impl, ...}` and `sigmoidglu_linear =
# SigmoidGLULinearFunction.apply` (swiglu 8 -> 0 static findings).
# Since 2026-12-05 the swiglu module's `@torch.compile` decorations (of GELU helpers nothing calls) also pass at run
# time: the decoration imports torch._inductor, which records TORCHINDUCTOR_CACHE_DIR in the environment and builds
# its kernel templates with Jinja, both from torch's own code (evaluator/sandboxed/guards.py: _LIBRARY_RECORDS,
# _CODE_GENERATORS). Since 2026-12-07 rotary passes too: its varlen branches and `isinstance(seqlen_offsets,
# Tensor)` are dead given what every call passes (None for `cu_seqlens`, the literal 0 for `seqlen_offsets`), read
# through decorators proven to hand the function its wrapper's arguments (`@input_guard`, `@dispatch`,
# `@tensor_cache`: evaluator/static_wrappers.py) and through locals bound once to such tests (`is_varlen`); the
# index helpers reached only from those branches are judged as the branches are (static_liveness.none_reached).

ENTRIES: tuple[Entry, ...] = (
    Entry(library=LIGER, module="liger_kernel.ops.rms_norm", kernel="LigerRMSNormFunction",
          task="bench/ops/rms_norm.py", adapter="liger_rms_norm.py", cpu=CpuExpectation.NEEDS_GPU,
          why_cpu=_LIBDEVICE),
    Entry(library=LIGER, module="liger_kernel.ops.layer_norm", kernel="LigerLayerNormFunction",
          task="bench/ops/layer_norm.py", adapter="liger_layer_norm.py", cpu=CpuExpectation.NEEDS_GPU,
          why_cpu=_LIBDEVICE),
    Entry(library=LIGER, module="liger_kernel.ops.swiglu", kernel="LigerSiLUMulFunction",
          task="bench/ops/swiglu.py", adapter="liger_swiglu.py", cpu=CpuExpectation.NEEDS_GPU,
          why_cpu=_BF16 + "; `gate_multiplier.to(tl.float32)` on a scalar argument (a Python float there)"),
    Entry(library=LIGER, module="liger_kernel.ops.swiglu", kernel="LigerFusedGateUpSiLUMulFunction",
          task="bench/ops/swiglu.py", adapter="liger_swiglu_fused.py", cpu=CpuExpectation.NEEDS_GPU, why_cpu=_BF16),
    Entry(library=LIGER, module="liger_kernel.ops.rope", kernel="LigerRopeFunction",
          task="tests/public_corpus/tasks/rotary_qk.py", adapter="liger_rope.py", cpu=CpuExpectation.NEEDS_GPU,
          why_cpu="arithmetic on bf16 values (q * cos - q2 * sin in the cache's dtype): the interpreter stores bf16 "
                  "as uint16 and computes on the raw bits"),
    Entry(library=LIGER, module="liger_kernel.ops.cross_entropy", kernel="LigerCrossEntropyFunction",
          task="bench/ops/cross_entropy.py", adapter="liger_cross_entropy.py", cpu=CpuExpectation.ACCEPTED),
    Entry(library=LIGER, module="liger_kernel.ops.cross_entropy", kernel="LigerCrossEntropyFunction",
          task="tests/public_corpus/tasks/cross_entropy_rows.py", adapter="liger_cross_entropy_rows.py",
          cpu=CpuExpectation.ACCEPTED),
    Entry(library=FLA, module="fla.modules.norm.layernorm", kernel="rms_norm (LayerNormFunction)",
          task="bench/ops/rms_norm.py", adapter="fla_rms_norm.py", cpu=CpuExpectation.NEEDS_GPU, why_cpu=_AUTOTUNE),
    Entry(library=FLA, module="fla.modules.norm.layernorm", kernel="layer_norm (LayerNormFunction)",
          task="bench/ops/layer_norm.py", adapter="fla_layer_norm.py", cpu=CpuExpectation.NEEDS_GPU,
          why_cpu=_AUTOTUNE),
    Entry(library=FLA, module="fla.modules.activations.ops", kernel="swiglu (SwiGLUFunction)",
          task="bench/ops/swiglu.py", adapter="fla_swiglu.py", cpu=CpuExpectation.NEEDS_GPU, why_cpu=_AUTOTUNE),
    Entry(library=FLA, module="fla.modules.rotary.ops", kernel="rotary_embedding (RotaryEmbeddingFunction)",
          task="bench/ops/rotary.py", adapter="fla_rotary.py", cpu=CpuExpectation.NEEDS_GPU, why_cpu=_AUTOTUNE),
    Entry(library=FLA, module="fla.modules.fused_cross_entropy.ops", kernel="cross_entropy_loss",
          task="tests/public_corpus/tasks/cross_entropy_rows.py", adapter="fla_cross_entropy_rows.py",
          cpu=CpuExpectation.ACCEPTED),
)
