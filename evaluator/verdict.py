"""Verdicts: what the evaluator concluded about one candidate, and why, as one typed model tree.

A verdict is data that crosses every boundary of the project (the CLI's ``--json``, the search's archive, the
kernel store's manifest, the Celery result, the bot's report), so there is exactly one model of it here and every
consumer reads it by attribute. ``reason`` is one of :class:`Reason`; ``detail`` is a sentence a person can act on
(which case, which check, which line, what to do next).

Producers (the evaluator's parent side) build the evidence as plain dicts and call :meth:`Verdict.reject` /
:meth:`Verdict.accept`; pydantic validates them into the submodels. Three rules keep old records and the JSON
contract working:

* evidence submodels ignore keys they do not know (records written by older versions carry ``init_seed``,
  per-case ``seeds`` lists and the like), and migrate the one renamed structure (per-case ``seeds`` -> ``checks``);
* evidence submodels dump exactly the fields that were given, so ``to_dict()`` has the shape producers wrote and
  the consumers that still read dicts (the bot, job records) see what they always saw;
* the top level refuses unknown keys (its fields change only here, and records of every earlier version use a
  subset of them): an unknown key is a producer's typo that would silently drop evidence, or a record from a
  newer version that this one would misread and rewrite without it.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

log = logging.getLogger(__name__)


class Reason(str, enum.Enum):
    """Why a candidate was accepted or rejected (the CLI contract's ``reason`` field)."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"
    INCORRECT = "incorrect"
    STATIC_VIOLATION = "static_violation"
    CHEAT_SUSPECTED = "cheat_suspected"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    TOO_SLOW = "too_slow"

    def __str__(self) -> str:  # the value in f-strings and messages on every Python version ("ok", not "Reason.OK")
        return str(self.value)


class EvalSetupError(Exception):
    """The evaluation itself could not run (bad task file, missing dependency): exit status 2.

    The message names the file and the problem and says what to do next.
    """


class NeedsGPU(EvalSetupError):
    """This candidate can only be run on a GPU (a CUDA or load_inline kernel evaluated with ``--device cpu``);
    a CUDA compile check has passed where one was possible. Other candidates of the same task may still run."""


# -- the base of evidence models ------------------------------------------------------------------------------------

UNKNOWN_KEYS = "unknown_evidence_keys"  # validation context entry: a list that collects the keys a model ignored


class _GivenFields(BaseModel):
    """Dumps only the fields that were given (or assigned later) plus any extra entries: the JSON of a verdict is
    what its producer wrote, typed, and not a table of nulls for everything that did not apply.

    Schemas are built when the module is imported, never on first use: pydantic's deferred build is not
    thread-safe (concurrent first instantiations can see a half-rebuilt class and fail), and the search judges
    candidates from several threads at once. Building all of them costs under 10 ms."""

    @model_serializer(mode="wrap")
    def _dump_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        given = self.model_fields_set | set(self.__pydantic_extra__ or ())
        return {key: value for key, value in data.items() if key in given}

    @model_validator(mode="before")
    @classmethod
    def _note_unknown(cls, data: Any, info: ValidationInfo) -> Any:
        """With ``context={UNKNOWN_KEYS: [...]}``, record the keys this model does not know (producers validate
        this way, so that evidence a model would drop shows up in the log instead of vanishing)."""
        sink = (info.context or {}).get(UNKNOWN_KEYS) if isinstance(info.context, dict) else None
        if sink is not None and isinstance(data, Mapping) and cls.model_config.get("extra") == "ignore":
            sink.extend(f"{cls.__name__}.{key}" for key in data if key not in cls.model_fields)
        return data


class _Evidence(_GivenFields):
    """Evidence is frozen once judged; keys of other versions are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")


# -- static checks --------------------------------------------------------------------------------------------------

class StaticFinding(_Evidence):
    """One broken static rule: where (1-based line, 0-based column) and what to do instead."""

    rule: str
    line: int
    col: int = 0
    message: str


class StaticEvidence(_Evidence):
    """What the static step saw: its findings, the kernels defined and those launched from ``forward``, and
    whether findings were enforced (they are reported but not enforced when static checks are switched off)."""

    violations: list[StaticFinding] = []
    kernels: list[str] = []
    launched: list[str] = []
    enforced: bool = True


# -- correctness ----------------------------------------------------------------------------------------------------

class TensorSpec(_Evidence):
    """A tensor argument or output of a case: its shape and dtype (``torch.float32``)."""

    shape: list[int]
    dtype: str
    contiguous: bool | None = None  # as the task laid it out (None: recorded before layouts were)

    @property
    def short_dtype(self) -> str:
        return self.dtype.removeprefix("torch.")


class ScalarSpec(_Evidence):
    """A non-tensor argument of a case: its type name and, for plain scalars, its value."""

    type: str
    value: bool | int | float | str | None = None


def _value_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "tensor" if "shape" in value else "scalar"
    return "tensor" if isinstance(value, TensorSpec) else "scalar"


ValueSpec = Annotated[Annotated[TensorSpec, Tag("tensor")] | Annotated[ScalarSpec, Tag("scalar")],
                      Discriminator(_value_kind)]


class ToleranceSpec(_Evidence):
    """The bounds one output had to meet: ``|out-ref| <= widen * (atol + rtol*|ref|)`` and relative L2 ``<= rel``."""

    atol: float
    rtol: float
    rel: float
    widen: float = 1.0


class CheckResult(_Evidence):
    """One judged call's outcome: the check's number within its case, the phase (``correctness`` or
    ``timed-call re-validation``), the input distribution, and the worst errors over its outputs."""

    check: int = 0  # 0: not numbered (records of versions that numbered seeds instead)
    phase: str = ""
    distribution: str = "task"
    ok: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    rel_l2_err: float | None = None


class CaseEvidence(_Evidence):
    """One case: its inputs and outputs, the tolerances, and every judged check."""

    case: int
    inputs: list[ValueSpec] = []
    outputs: list[ValueSpec] = []
    tolerance: list[ToleranceSpec] = []
    widen_max: float = 1.0
    checks: list[CheckResult] = []

    @model_validator(mode="before")
    @classmethod
    def _checks_from_seeds(cls, data: Any) -> Any:
        """Older versions listed one entry per seed (``seeds``) where checks are listed now: same outcome fields."""
        if isinstance(data, Mapping) and "checks" not in data and isinstance(data.get("seeds"), list):
            checks = [{**entry, "check": number} for number, entry in enumerate(data["seeds"], 1)
                      if isinstance(entry, Mapping)]
            return {**{k: v for k, v in data.items() if k != "seeds"}, "checks": checks}
        return data

    @field_validator("tolerance", mode="before")
    @classmethod
    def _no_tolerance(cls, value: Any) -> Any:
        return [] if value is None else value

    @property
    def tensor_inputs(self) -> list[TensorSpec]:
        return [v for v in self.inputs if isinstance(v, TensorSpec)]

    @property
    def shapes(self) -> str:
        """``16x128, 128`` for the tensor inputs: how details and reports name a case."""
        return ", ".join("x".join(map(str, spec.shape)) for spec in self.tensor_inputs)


class Correctness(_Evidence):
    """How correctness was established: seeds, input distributions, the reference's precision, the protocol's
    checks (sentences), and per case the judged calls."""

    seeds: int = 0
    distributions: list[str] = []
    dropped_distributions: list[str] = []
    reference_precision: str | None = None
    checks: list[str] = []
    cases: list[CaseEvidence] = []
    init_inputs: list[ValueSpec] = []  # the constructor arguments ModelNew was built and checked with
    small_cases: bool = False  # the task's small cases were judged in place of its scored ones (a CPU run)

    @field_validator("seeds", mode="before")
    @classmethod
    def _seed_count(cls, value: Any) -> Any:
        """Older versions recorded the seeds themselves; the count is what is kept (seeds stay secret now)."""
        return len(value) if isinstance(value, list) else value

    @property
    def checked_calls(self) -> int:
        return sum(len(case.checks) for case in self.cases)


# -- timing ---------------------------------------------------------------------------------------------------------

class TimeStats(_Evidence):
    """Per-call times of one timed function (ms): median and spread; ``host_median_ms`` is the host clock from the
    start event to a device-wide sync (the judge's cross-check against work outside the timed stream)."""

    median_ms: float
    p25_ms: float | None = None
    p75_ms: float | None = None
    min_ms: float | None = None
    mean_ms: float | None = None
    n: int | None = None
    host_median_ms: float | None = None


class TraceFinding(_Evidence):
    """One thing the kernel trace judge found (``fail`` findings reject the candidate)."""

    kind: str
    severity: str  # "fail" | "warn" | "info"
    message: str


class TraceEvidence(_Evidence):
    """What the kernel trace (CUPTI, GPU only) showed while the candidate ran: the kernels launched during the
    parent's call and trial windows, traced busy time against the event-timed figure, and the findings.

    It covers the correctness calls and the timed trials alike, so it sits beside ``timing``, not inside it. Its
    producer (the trace checks) is still growing: entries without a field here yet are kept, not ignored.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    phase: str = ""  # the last phase judged: "correctness calls" or "timing"
    windows: int = 0  # call and trial windows the trace was judged in
    kernels: dict[str, int] = {}  # launches per readable kernel name (the most frequent)
    trials: int = 0
    traced_over_timed_median: float | None = None  # traced busy time / event-timed interval, per trial
    traced_over_timed_max: float | None = None
    launches_outside_windows: int = 0  # the harness's own work, mostly
    findings: list[TraceFinding] = []


class TimingCase(_Evidence):
    """One case's timings: the candidate, the baselines that ran, CUDA-graph replay where it was used, the
    speedups, and the physical floor."""

    case: int
    candidate: TimeStats
    eager: TimeStats | None = None
    compile_default: TimeStats | None = None
    compile_max_autotune: TimeStats | None = None
    candidate_graph_ms: float | None = None
    eager_graph_ms: float | None = None
    empty_graph: bool = False
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    speedup_vs_best: float | None = None
    best_baseline_ms: float | None = None
    floor_ms: float | None = None
    roofline_fraction: float | None = None

    @property
    def best_compile(self) -> TimeStats | None:
        """The faster of the two torch.compile baselines (None when neither ran)."""
        compiled = [s for s in (self.compile_default, self.compile_max_autotune) if s is not None]
        return min(compiled, key=lambda s: s.median_ms, default=None)


class Timing(_Evidence):
    """GPU timings of an accepted-or-judged candidate: per case, geomeans, the measured machine rates the floor
    comes from, notes on baselines that could not run, and how it was measured."""

    cases: list[TimingCase] = []
    geomean_speedup_vs_eager: float | None = None
    geomean_speedup_vs_compile: float | None = None
    geomean_speedup_vs_best: float | None = None
    copy_bandwidth_gbps: float | None = None
    matmul_tflops: float | None = None
    baseline_notes: dict[str, str] = {}
    notes: list[str] = []  # how the candidate's own timing was taken where it differs from the method
    method: str = ""


# -- costs, resources, environment ----------------------------------------------------------------------------------

class Overhead(_GivenFields):
    """Where the evaluation's time and memory went (seconds unless named otherwise).

    Mutable, unlike the evidence: the session adds ``total_s`` after the verdict is built, and producers fill it
    in as phases end (item assignment, ``overhead["load_s"] = ...``, works for them). New phases are kept as
    extra entries until they get a field here.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    prefetched: bool | None = None
    static_s: float | None = None  # the static check, in the parent
    process_startup_s: float | None = None
    waited_for_process_s: float | None = None
    load_s: float | None = None
    load_phases: dict[str, float] = {}  # the candidate process's own account: guards, import, construction...
    check_s: float | None = None
    check_phases: dict[str, float] = {}
    checked_calls: int | None = None
    output_handoff: str | None = None  # "vmm", "file", or "file (CUDA VMM hand-off failed: ...)"
    judge_s: float | None = None
    time_s: float | None = None
    time_phases: dict[str, float] = {}
    revalidate_s: float | None = None
    trace_s: float | None = None  # waiting for and judging the kernel trace (GPU), every phase's together
    cleanup_s: float | None = None  # ending the candidate's process, keeping its builds, removing its folder
    plain_run_s: float | None = None  # the plain run of an accepted candidate (evaluator.plain_run), all of it
    plain_phases: dict[str, float] = {}  # near-duplicates made, builds staged, process ready, load, calls, judging
    plain_calls: int | None = None
    plain_judged_calls: int | None = None
    peak_gpu_memory_mb: float | None = None
    peak_host_memory_mb: float | None = None
    total_s: float | None = None

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def recorded(self) -> dict[str, Any]:
        """The entries that were recorded, known and extra, in the order they were recorded (JSON values)."""
        return self.model_dump(mode="json")


class KernelResources(_Evidence):
    """What one launched kernel uses (GPU only): registers, spills, shared memory... Other integer attributes a
    kernel reports (``kernelevo.cuda`` reports the driver's) are kept as extra entries."""

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, int] = Field(init=False)

    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    local_bytes: int | None = None
    const_bytes: int | None = None
    max_threads_per_block: int | None = None
    max_dynamic_shared_bytes: int | None = None

    def recorded(self) -> dict[str, int]:
        return self.model_dump(mode="json")


class Environment(_Evidence):
    """What the verdict was reached on: versions, the device, and how untrusted code was isolated. Other facts a
    worker reports are kept as extra entries."""

    model_config = ConfigDict(frozen=True, extra="allow")

    date: str | None = None
    python: str | None = None
    torch: str | None = None
    triton: str | None = None
    host: str | None = None
    cpu: str | None = None
    gpu: str | None = None
    capability: str | None = Field(default=None, pattern=r"^[0-9]{1,3}\.[0-9]{1,3}$")  # "9.0"
    sm_count: int | None = None
    gpu_memory_gb: float | None = None
    l2_cache_mb: float | None = None
    shared_memory_per_block: int | None = None  # bytes one block may opt in to
    cuda_runtime: str | None = None
    driver: str | None = None
    triton_interpreter: bool | None = None
    isolation: str | None = None  # "bubblewrap", or the override in force
    isolation_enforced: list[str] = []
    output_handoff: str | None = None  # CUDA: "vmm", or "file (why)", as the session's probe decided

    @property
    def capability_tuple(self) -> tuple[int, int] | None:
        """``(9, 0)`` from ``"9.0"``; None when unknown (never for a malformed value: that does not validate)."""
        if self.capability is None:
            return None
        major, minor = self.capability.split(".")
        return int(major), int(minor)

    def recorded(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# -- the verdict ----------------------------------------------------------------------------------------------------

Outcome = Literal["accepted", "rejected"]
MAX_PROBLEMS_SHOWN = 3
IDENTITY = ("task", "candidate", "device", "backend")  # what an unrecordable verdict still says about itself


class SanitizerStatus(str, enum.Enum):
    CLEAN = "clean"
    ERRORS = "errors"  # the tool found hazards or bad accesses
    UNAVAILABLE = "unavailable"  # the tool is missing or refuses this machine
    FAILED = "failed"  # the run did not complete (the candidate crashed, a timeout): inconclusive


class SanitizerResult(BaseModel):
    """One compute-sanitizer tool run on an accepted kernel (evaluator.sanitize): its outcome and the tool's
    own summary line."""

    tool: str
    status: SanitizerStatus
    summary: str = ""
    excerpt: str = ""
    seconds: float = 0.0


class Verdict(BaseModel):
    """The evaluator's conclusion about one candidate, with the evidence behind it.

    Not frozen: the timing judge turns a re-validation failure into ``cheat_suspected`` on the verdict it caught,
    and the session records the total time; assignments are validated.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    verdict: Outcome
    reason: Reason
    detail: str = ""
    task: str = ""
    candidate: str = ""
    device: str = "cpu"
    backend: str = "unknown"  # "triton" | "cuda" | "load_inline" | "unknown"
    static: StaticEvidence = Field(default_factory=StaticEvidence)
    correctness: Correctness | None = None
    timing: Timing | None = None
    timing_note: str = ""
    trace: TraceEvidence | None = None  # GPU: the kernel trace's summary
    flags: list[str] = []
    overhead: Overhead = Field(default_factory=Overhead)
    resources: dict[str, KernelResources] = {}  # per launched kernel
    environment: Environment = Field(default_factory=Environment)
    logs: str = ""

    @model_validator(mode="before")
    @classmethod
    def _older_shapes(cls, data: Any) -> Any:
        """Records of older versions: ``{}`` stood for "no correctness evidence" / "not timed"; an accepted
        verdict's reason can only be ``ok``."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for key in ("correctness", "timing"):
            if data.get(key) == {}:
                data[key] = None
        if "reason" not in data and data.get("verdict") == "accepted":
            data["reason"] = Reason.OK
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        if (self.verdict == "accepted") != (self.reason is Reason.OK):
            raise ValueError(f"a {self.verdict} verdict cannot have reason {self.reason.value!r}: accepted goes with "
                             "'ok' and only with it")
        return self

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"

    @property
    def timed(self) -> bool:
        """True when the verdict carries GPU timings (so speedups are real)."""
        return self.timing is not None

    # -- producers --------------------------------------------------------------------------------------------------
    @classmethod
    def reject(cls, reason: Reason, detail: str, **evidence: Any) -> Verdict:
        """A rejected verdict for ``reason`` with a human-readable ``detail``."""
        return cls._judged("rejected", reason, detail, evidence)

    @classmethod
    def accept(cls, detail: str, **evidence: Any) -> Verdict:
        """An accepted verdict (correct, clean, and, on GPU, timed)."""
        return cls._judged("accepted", Reason.OK, detail, evidence)

    @classmethod
    def _judged(cls, outcome: Outcome, reason: Reason, detail: str, evidence: dict[str, Any]) -> Verdict:
        """Validate a producer's evidence.

        A keyword the model lacks is the verifier's own bug: TypeError, as a constructor would raise. Evidence
        that does not validate (a forged or garbled reply from a candidate's process can put anything in its part)
        never becomes an accepted verdict and never stops the session: the verdict is a rejection naming the
        fields (``crashed``, or the rejection's own reason). Evidence keys a submodel does not know are logged.
        """
        unknown = sorted((set(evidence) - set(cls.model_fields)) | ({"verdict"} & set(evidence)))
        if unknown:
            raise TypeError(f"Verdict.{'accept' if outcome == 'accepted' else 'reject'}: unknown evidence {unknown}; "
                            "add the field to evaluator/verdict.py or fix the producer")
        ignored: list[str] = []
        try:
            verdict = cls.model_validate({"verdict": outcome, "reason": reason, "detail": detail, **evidence},
                                         context={UNKNOWN_KEYS: ignored})
        except ValidationError as exc:
            return cls._unrecordable(exc, reason, detail, evidence)
        for key in sorted(set(ignored)):
            log.warning("verdict evidence %s is not in the verdict model (evaluator/verdict.py) and was dropped", key)
        return verdict

    @classmethod
    def _unrecordable(cls, exc: ValidationError, reason: Any, detail: str, evidence: Mapping[str, Any]) -> Verdict:
        """The rejection for evidence that did not validate: it keeps who and what was judged, and says why."""
        log.error("verdict evidence failed validation: %s", exc)
        problems = "; ".join(f"{_where(error['loc'])}: {error['msg']}" for error in exc.errors()[:MAX_PROBLEMS_SHOWN])
        if exc.error_count() > MAX_PROBLEMS_SHOWN:
            problems += f" (and {exc.error_count() - MAX_PROBLEMS_SHOWN} more)"
        why = (f"the evaluation's evidence could not be recorded ({problems}): a garbled or forged reply from the "
               "candidate's process, or a verifier bug; rerun it, and report it if it repeats")
        kept = reason if isinstance(reason, Reason) and reason is not Reason.OK else None
        identity = {k: evidence[k] for k in IDENTITY if isinstance(evidence.get(k), str)}
        return cls(verdict="rejected", reason=kept or Reason.CRASHED, detail=f"{detail} ({why})" if kept else why,
                   logs=str(evidence.get("logs") or ""), **identity)

    # -- JSON -------------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON data (the shape ``kernelevo eval --json`` prints and the bot reads)."""
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """A verdict from its JSON data, including records of older versions (see the module docstring);
        raises ``pydantic.ValidationError`` naming the field when the data is not a verdict."""
        return cls.model_validate(data)

    @classmethod
    def coerce(cls, value: Verdict | Mapping[str, Any] | None) -> Verdict | None:
        """The edge for callers that hold a verdict as JSON (job records, run-directory records): a verdict as is,
        its JSON data validated, None for none."""
        if value is None or isinstance(value, Verdict):
            return value
        return cls.from_dict(value)


def _where(loc: tuple[int | str, ...]) -> str:
    """A validation error's location, printable and short (dict keys there may come from a candidate)."""
    parts = ["".join(ch for ch in str(part) if ch.isprintable())[:40] for part in loc]
    return ".".join(parts) or "verdict"
