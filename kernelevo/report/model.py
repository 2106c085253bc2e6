"""The report's typed model: everything a reviewer sees, each figure taken from the run's records.

Built by :mod:`kernelevo.report.build` from a run directory or a job's result, rendered by
:mod:`kernelevo.report.markdown`, :mod:`kernelevo.report.html` and :mod:`kernelevo.report.plots`. Evidence keeps
the verifier's own types (:mod:`evaluator.verdict`): a time is a :class:`~evaluator.verdict.TimeStats`, the
environment an :class:`~evaluator.verdict.Environment`, a rejection a :class:`~evaluator.verdict.Reason`. A
figure the records do not hold is ``None`` here and "not measured" in every rendering, never a stand-in value.
"""

from __future__ import annotations

import enum

from pydantic import BaseModel, ConfigDict, Field

from evaluator.verdict import Environment, KernelResources, Reason, SanitizerResult, TimeStats, ToleranceSpec

SCHEMA_VERSION = 1


class Status(str, enum.Enum):
    """What the run amounts to, as the headline says it."""

    IMPROVED = "improved"  # accepted, timed, and faster than the baselines beyond noise
    NO_IMPROVEMENT = "no_improvement"  # accepted and timed, but not faster beyond noise
    NOT_TIMED = "not_timed"  # accepted on CPU: correct, no speed claim
    FAILED = "failed"  # nothing accepted, or the job itself failed

    def __str__(self) -> str:
        return str(self.value)


class Baseline(str, enum.Enum):
    """The baselines a kernel is timed against (the verdict's ``TimingCase`` field names)."""

    EAGER = "eager"
    COMPILE_DEFAULT = "compile_default"
    COMPILE_MAX_AUTOTUNE = "compile_max_autotune"

    @property
    def label(self) -> str:
        return {"eager": "eager", "compile_default": "torch.compile",
                "compile_max_autotune": "torch.compile max-autotune"}[self.value]

    def __str__(self) -> str:
        return str(self.value)


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpInfo(_Part):
    """The op: its id (``path::qualname``) and where it is defined."""

    op_id: str
    path: str | None = None
    qualname: str | None = None
    line: int | None = None
    source_hash: str | None = None


class Winner(_Part):
    """The best accepted kernel: what it is, how it was found, and what it uses on the device."""

    id: str
    backend: str
    device: str
    fitness: float
    detail: str = ""
    generation: int | None = None
    operator: str | None = None
    strategy: str | None = None
    model: str | None = None
    flags: list[str] = []
    kernels: dict[str, KernelResources] = {}
    source_lines: int = 0
    kernel_path: str | None = None  # where the kernel's source is (run directory or follow-up branch), if known


class CaseTiming(_Part):
    """One case's times (ms, with spread) for the kernel and each baseline, the speedups and the roofline."""

    case: int
    shapes: str = ""
    kernel: TimeStats
    baselines: dict[Baseline, TimeStats] = {}
    speedups: dict[Baseline, float] = {}  # baseline median / kernel median, for each baseline that ran
    floor_ms: float | None = None
    roofline_fraction: float | None = None


class TimingSummary(_Part):
    """Per case timings and the geomeans the verifier computed."""

    cases: list[CaseTiming]
    geomean_vs_eager: float | None = None
    geomean_vs_compile: float | None = None
    geomean_vs_best: float | None = None
    conservative_vs_best: float | None = None  # p25 of the best baseline / p75 of the kernel, geomean
    copy_bandwidth_gbps: float | None = None
    matmul_tflops: float | None = None
    method: str = ""
    baseline_notes: dict[str, str] = {}


class CaseCorrectness(_Part):
    """One case's correctness evidence: its inputs, the judged calls and the worst errors among them."""

    case: int
    shapes: str = ""
    calls: int
    failed: int
    worst_abs_err: float | None = None
    worst_rel_err: float | None = None
    tolerance: list[ToleranceSpec] = []


class CorrectnessSummary(_Part):
    """How correctness was established: cases x seeds x distributions, the worst errors, the checks passed."""

    cases: list[CaseCorrectness]
    seeds: int
    distributions: list[str]
    calls: int
    failed: int
    revalidations: int = 0  # of the calls, those that re-judged the outputs of timed calls
    worst_abs_err: float | None = None
    worst_rel_err: float | None = None
    reference_precision: str | None = None
    checks: list[str] = []  # the anti-cheat protocol's checks, each passed by the winner
    static_enforced: bool = True
    kernels_launched: list[str] = []
    trace_findings: list[str] = []  # warn/info findings of the GPU kernel trace (a fail would have rejected it)
    sanitizer: list[SanitizerResult] = []  # compute-sanitizer tools run on the winner, with their outcome


class SearchCost(_Part):
    """What the search spent and what it judged."""

    stop_reason: str
    candidates_evaluated: int
    candidates_accepted: int
    rejected: dict[Reason, int] | None = None  # None: the records at hand do not list rejections
    duplicates: int | None = None
    proposal_errors: int | None = None
    generations: int | None = None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    unpriced_models: list[str] = []
    elapsed_s: float | None = None
    gpu_minutes: float | None = None  # wall time holding the GPU (one GPU per search); None on CPU
    evaluator_busy_fraction: float | None = None
    time_to_first_accepted_s: float | None = None
    proposer: str | None = None


class Point(_Part):
    """One judged candidate on the search's timeline (for the fitness-over-time and over-tokens plots)."""

    id: str
    elapsed_s: float | None
    tokens: int  # cumulative proposer tokens (in + out) spent when it was judged
    fitness: float
    accepted: bool
    reason: Reason | None = None


class LineageStep(_Part):
    """One ancestor of the winner (root first, the winner last)."""

    id: str
    generation: int | None = None
    operator: str | None = None
    strategy: str | None = None
    fitness: float
    accepted: bool


class Failure(_Part):
    """Why nothing was accepted (or the job failed), and what to try next."""

    what: str
    tries: list[str] = []
    examples: list[str] = []  # a few rejection details, most common reason first


class Report(_Part):
    """A run, as reviewers read it (Markdown for GitHub, a self-contained HTML file, plots)."""

    schema_version: int = SCHEMA_VERSION
    status: Status
    headline: str
    op: OpInfo
    device: str
    backend: str
    proposer: str | None = None
    run_dir: str | None = None
    started: str | None = None
    ended: str | None = None
    winner: Winner | None = None
    timing: TimingSummary | None = None
    timing_note: str = ""
    note: str = ""
    correctness: CorrectnessSummary | None = None
    environment: Environment = Field(default_factory=Environment)
    cost: SearchCost
    timeline: list[Point] | None = None  # None: no per-candidate records (a job result without its run directory)
    lineage: list[LineageStep] | None = None
    failure: Failure | None = None
    reproduce: list[str] = []  # shell commands, already quoted
