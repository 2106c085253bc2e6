"""Evaluating candidates against one task: the orchestrator (runs in the parent; never initialises CUDA and
never imports task or candidate code).

A session starts a reference process (the task only) that computes references and baselines once, and
keeps a candidate process pre-started. Each candidate is checked statically here, then imported,
run, compared and (on CUDA) timed in its own fresh process; whatever the candidate does, the session
records a verdict and goes on to the next one.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evaluator import kept_builds, processes, roles
from evaluator.gpu_phases import GpuPhases
from evaluator.options import EvalOptions
from evaluator.placement import place_for
from evaluator.verdict import EvalSetupError, NeedsGPU, Reason, Verdict
from kernelevo import pyast, sandbox

log = logging.getLogger(__name__)

MAX_PREFETCHED = 2  # the candidate about to be evaluated and the one after it


class EvaluationSession:
    """Evaluates many candidates for one task; references (and GPU baselines) are computed once."""

    def __init__(self, task: str | Path, device: str = "cpu", options: EvalOptions | None = None,
                 cache_dir: Path | None = None):
        if device not in ("cpu", "cuda"):
            raise EvalSetupError(f"unknown device {device!r}: use cpu or cuda")
        self.task_display = str(task)  # as the user gave it (reports stay free of machine-specific paths)
        self.task_path = Path(task).resolve()
        if not self.task_path.is_file():
            raise EvalSetupError(f"{task}: task file not found")
        refused = roles.refused_task_roots(_text(self.task_path), self.task_path.parent)
        if refused:
            raise EvalSetupError(
                f"{task}: load_op names {refused[0]}, outside the task's folder and the repositories KernelEvo "
                "generated tasks for in this process: a task may import only from its own folder (move the op "
                "next to the task, or annotate it with @kernelevo.optimize and let KernelEvo write the task)")
        self.device = device
        self.options = options or EvalOptions()
        self.small = self.options.small_cases if self.options.small_cases is not None else device == "cpu"
        self.seeds = [secrets.randbits(31) for _ in range(max(self.options.seeds, 1))]
        self.init_seed = secrets.randbits(32)  # every bit random: the candidate's initial_seed() shows its low half
        self.timing_seeds = [secrets.randbits(31) for _ in range(max(self.options.timing_input_sets, 1))]
        self.workdir = Path(tempfile.mkdtemp(prefix="kernelevo-eval-"))
        self.procs = self.workdir / "procs"
        self.inputs_dir = self.workdir / "inputs"
        self.procs.mkdir()
        self.inputs_dir.mkdir()
        if cache_dir is None:
            from kernelevo.settings import get_settings

            cache_dir = get_settings().cache_dir
        self.cache_dir = Path(cache_dir)
        self.task_roots = roles.task_read_roots(self.task_path)
        self.placement = place_for(self.task_path, _text(self.task_path))
        self._prefetched: dict[str, processes.Worker] = {}
        self._plain: processes.Worker | None = None  # a plain process started ahead that has seen no candidate
        self._preparing: ThreadPoolExecutor | None = None  # makes plain runs' near-duplicates ahead (a GPU host)
        self._closed = False
        # evaluate_source may run on several threads at once (the search's parallel evaluations)
        self._lock = threading.Lock()  # the prefetched candidates
        self._reference_lock = threading.RLock()  # one request at a time to the reference process
        self.gpu = GpuPhases()
        if self.options.output_handoff not in ("auto", "file"):
            raise EvalSetupError(f"output_handoff={self.options.output_handoff!r}: use auto or file")
        # CUDA: outputs as VMM file descriptors where the harness-only probe shows they work (decided once, below,
        # before any candidate exists; a candidate's failure changes only how its own outputs travel).
        self.handoff_mode = "file"
        self.baselines: dict[str, Any] | None = None
        self.timing_files: list[list[str]] | None = None  # per case, the input files of the timed calls (reference)
        self.start_phases: dict[str, float] = {}
        try:
            report = sandbox.require_isolation("candidate kernels and the task's code")
        except sandbox.IsolationUnavailable as exc:
            raise EvalSetupError(str(exc)) from None
        self.isolation = "bubblewrap" if report.working else report.mode.value
        self.isolation_report = report
        self.trace_shim = self._trace_shim() if device == "cuda" else None
        self.pool = processes.WorkerPool("candidate", device, self.procs, self.options.memory_mb,
                                         ready=self.options.ready_workers, trace=self.trace_shim,
                                         workspace=self.placement.repo)
        from evaluator.static_check import warm_up

        # the static checker's first use imports torch and triton (seconds): done while the reference starts
        threading.Thread(target=warm_up, name="kernelevo-static-warm-up", daemon=True).start()
        try:
            self._return_plain(None)  # the first plain process starts with the candidate pool's (on a GPU host)
            self._start_reference()
            if device == "cuda" and self.options.output_handoff == "auto":
                self._decide_handoff()
        except BaseException:
            self.close()
            raise

    # -- reference side ---------------------------------------------------------------------------
    def _start_reference(self) -> None:
        # The reference holds every case's inputs and float64 answers: give it more room than a candidate.
        reference_mb = self.options.memory_mb * (4 if self.device == "cuda" else 1)
        clock = time.perf_counter
        began = clock()
        self.reference = processes.spawn_worker("reference", self.device, self.procs, max(reference_mb, 4096),
                                                read_only=[*self.task_roots, self.procs], writable=[self.inputs_dir])
        ready = self._ref({"op": "ready"}, wait_ready=True)
        loaded = clock()
        self.reference_startup_s = float(ready.get("startup_s", 0.0))
        self.plan = self._ref({"op": "load", "task": str(self.task_path), "small": self.small, "seeds": self.seeds,
                               "init_seed": self.init_seed, "inputs_dir": str(self.inputs_dir)})
        self.environment = {**self.plan.get("environment", {}), "isolation": self.isolation,
                            "isolation_enforced": self.isolation_report.enforced()}
        self._distributions = dict(zip(self.seeds, self.plan.get("distributions", [])))
        planned = clock()
        if self.device == "cuda":
            self.baselines = self._ref({"op": "baselines", "seeds": self.timing_seeds,
                                        "trials": self.options.timing_trials, "warmup_ms": self.options.warmup_ms,
                                        "modes": list(self.options.baselines)}, timeout=1800)
            # the reference's private input files for timed calls: the session's own, never in run records
            self.timing_files = self.baselines.pop("timing_inputs", None)
        # where the session's start went (the search's summary reports it beside the search's own time)
        self.start_phases = {"reference_start_s": round(loaded - began, 3), "load_s": round(planned - loaded, 3),
                             "baselines_s": round(clock() - planned, 3)}

    def _trace_shim(self) -> Any:
        """The kernel-trace shim for candidate processes (GPU verdicts rest on it: no shim, no GPU verdict)."""
        from evaluator.tracing.build import BuildError, build_shim

        built = build_shim(self.cache_dir / "trace")
        if isinstance(built, BuildError):
            raise EvalSetupError(f"--device cuda needs the kernel-trace shim (CUPTI), which cannot be built here: "
                                 f"{built}")
        return built

    def distribution_of(self, seed: int) -> str:
        """The input distribution the reference drew ``seed``'s inputs from."""
        return self._distributions.get(seed, "task")

    def restart_reference(self) -> None:
        """Replace a reference process that died or hung, so the session stays usable."""
        with self._reference_lock:
            self.reference.kill()
            self._start_reference()

    def _decide_handoff(self) -> None:
        """The session's output hand-off, from a probe the harness runs alone (:mod:`evaluator.handoff_probe`)."""
        from evaluator.handoff_probe import probe

        decision = probe(self.pool.take, self.reference_request, self.options.timeout_s)
        self.handoff_mode = decision.mode
        self.environment["output_handoff"] = decision.describe()
        if decision.why:
            log.warning("candidate outputs go through files in this session: %s", decision.why)

    @staticmethod
    def note_file_handoff(why: str) -> None:
        """One candidate's outputs went through files (its process could not export them, or sent descriptors the
        reference could not map): a candidate's doing, so the session's mode stays as the probe decided."""
        log.info("one candidate's outputs went through files (%s); the session's hand-off is unchanged", why)

    def reference_request(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One request to the reference process (thread-safe; GPU work shared with other evaluations). A compare
        request's VMM outputs carry the parent's descriptors (:func:`evaluator.run_candidate.sent_for`); they go
        with the request, numbered in it."""
        request, fds = attach_handoff_fds(request)
        with self._reference_lock, self.gpu.shared():
            return self.reference.request(request, timeout, fds)

    def _ref(self, request: dict[str, Any], timeout: float | None = None, wait_ready: bool = False) -> dict[str, Any]:
        timeout = timeout or max(self.options.timeout_s, 600)
        try:
            reply = self.reference.wait_ready(timeout) if wait_ready else self.reference_request(request, timeout)
        except (processes.WorkerDied, processes.WorkerTimeout, processes.WorkerMemoryExceeded) as exc:
            raise EvalSetupError(f"{self.task_path}: the reference process failed ({exc}). Last output:\n"
                                 f"{self.reference.log_tail(1500)}") from exc
        if reply.get("ok", True) is False:
            raise EvalSetupError(reply.get("message", "the reference process failed"))
        return reply

    # -- candidates -------------------------------------------------------------------------------
    def evaluate(self, candidate: str | Path) -> Verdict:
        """Evaluate a candidate file."""
        path = Path(candidate)
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise EvalSetupError(f"{candidate}: cannot read the candidate file ({exc})") from exc
        return self.evaluate_source(source, name=path.stem, display=str(candidate))

    def evaluate_source(self, source: str, name: str | None = None, display: str | None = None) -> Verdict:
        """Evaluate candidate source text (the search hands generated modules straight in)."""
        from evaluator.static_check import check_source

        started = time.perf_counter()
        shown = display or name or "candidate"
        report = check_source(source, shown, allow_torch=self.plan.get("allow_ops", []))
        static_s = round(time.perf_counter() - started, 3)
        evidence: dict[str, Any] = {
            "task": self.task_display, "candidate": shown, "device": self.device,
            "backend": report.backend, "environment": self.environment,
            "static": static_evidence(report, self.options.static_checks),
        }
        unverified = optional_paths_flag(report.optional_imports)
        if unverified:
            evidence["flags"] = [unverified]
        if self.device == "cpu":
            evidence["timing_note"] = ("not timed: no GPU. On CPU, accepted means verified correct and clean "
                                       "(Triton kernels run in the interpreter); timings need --device cuda.")
        rejection = static_verdict(report, shown, evidence, self.options.static_checks)
        if rejection is not None:
            self._drop_prefetched(source)
            return rejection
        if self.device == "cpu" and report.backend == "load_inline":
            raise NeedsGPU(f"{shown}: load_inline candidates build CUDA extensions and run only on a GPU: "
                                 "evaluate with --device cuda")
        from evaluator.plain_run import loads_during_guarded_run, start_load
        from evaluator.run_candidate import run_candidate

        with self._lock:
            worker = self._prefetched.pop(_source_key(source), None)
        plain = self._take_plain()
        prepared = self._prepare_plain() if plain is not None else None
        loading = False
        try:
            if plain is not None and loads_during_guarded_run(report.backend):
                loading = True  # from here it has had the candidate (or part of it): never kept for another
                start_load(self, plain, source)  # a long load (a load_inline build) made beside the guarded run's
            verdict = run_candidate(self, source, evidence, report, prefetched=worker)
            verdict.overhead["static_s"] = static_s
            if self.options.plain_run and verdict.accepted:
                used, plain = plain, None
                if used is not None:  # the next evaluation's starts up while this one's plain run goes on
                    self._return_plain(None)
                verdict = self.confirm_plain(source, verdict, used, loading, prepared)  # it ends the process
        finally:
            if loading and plain is not None:  # it has had this candidate: never kept for another one
                plain.kill()
                plain.remove_private()
                plain = None
            self._return_plain(plain)
        if self.options.sanitize and verdict.accepted and self.device == "cuda":
            verdict = self._sanitized(source, verdict)
        verdict.overhead["total_s"] = round(time.perf_counter() - started, 3)
        return verdict

    def _take_plain(self) -> processes.Worker | None:
        """A plain process for this evaluation's acceptance, started ahead where processes are (a GPU host): the one
        kept since an earlier evaluation or one started now, so that it starts up while the guarded run goes on. On a
        small CPU machine it would compete for the cores, and a rejected candidate never needs it: None there (the
        plain run starts its own on acceptance)."""
        if not (self.options.plain_run and self.starts_ahead()):
            return None
        with self._lock:
            kept, self._plain = self._plain, None
        if kept is not None and kept.process.poll() is None:
            return kept
        if kept is not None:
            kept.kill()
        from evaluator.plain_run import spawn_plain

        return spawn_plain(self)

    def _return_plain(self, unused: processes.Worker | None) -> None:
        """After an evaluation: a plain process it did not use (its candidate was rejected) is kept for the next one,
        else the next one is started now (or already was, when the guarded run accepted: while this evaluation's
        plain run goes on), so that it is ready by the next acceptance. Unused means it has seen no candidate:
        nothing was written to its folder and its start-up message is still unread."""
        if not (self.options.plain_run and self.starts_ahead()) or self._closed:
            if unused is not None:
                unused.kill()
            return
        with self._lock:
            if self._plain is None and unused is not None:
                self._plain, unused = unused, None
            wanted = self._plain is None
        if unused is not None:
            unused.kill()
        if not wanted:
            return
        from evaluator.plain_run import spawn_plain

        started: processes.Worker | None = spawn_plain(self)
        with self._lock:
            if self._plain is None and not self._closed:
                self._plain, started = started, None
        if started is not None:
            started.kill()

    def confirm_plain(self, source: str, verdict: Verdict, worker: processes.Worker | None = None,
                      loading: bool = False, prepared: Future[Any] | None = None) -> Verdict:
        """An accepted verdict kept only if the candidate computes the same in a plain process, as a user's program
        runs it (:mod:`evaluator.plain_run`; ``worker``: a plain process started earlier, ``loading``: one already
        loading this candidate, ``prepared``: its near-duplicates, asked for as the guarded run started)."""
        from evaluator.plain_run import confirm

        return confirm(self, source, verdict, worker, loading, prepared)

    def _prepare_plain(self) -> Future[Any]:
        """The next plain run's near-duplicates and parameter step, asked for now (:func:`evaluator.plain_run.prepare`)
        on the session's one preparing thread; a rejected candidate leaves them unused."""
        from evaluator.plain_run import prepare

        with self._lock:
            if self._preparing is None:
                self._preparing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelevo-plain-prepare")
            return self._preparing.submit(prepare, self)

    def _sanitized(self, source: str, verdict: Verdict) -> Verdict:
        """An accepted verdict checked once more under compute-sanitizer: errors reject it as incorrect."""
        from evaluator.sanitize import SanitizerStatus

        results = self.sanitize(source)
        evidence = verdict.to_dict()
        evidence.setdefault("flags", [])
        for result in results:
            evidence["flags"].append(f"compute-sanitizer {result.tool}: {result.status.value} ({result.summary})")
        errors = [r for r in results if r.status is SanitizerStatus.ERRORS]
        if not errors:
            return Verdict.from_dict(evidence)
        for key in ("verdict", "reason", "detail"):
            evidence.pop(key, None)
        detail = "; ".join(f"compute-sanitizer {r.tool} found errors: {r.summary}. {r.excerpt[:600]}" for r in errors)
        return Verdict.reject(Reason.INCORRECT, detail + " (a race or an out-of-bounds access: fix the kernel's "
                                                          "synchronisation or its masks)", **evidence)

    def prefetch(self, source: str, name: str | None = None) -> None:
        """Start loading the candidate that will be evaluated next (its process imports it while the current
        candidate runs); :meth:`evaluate_source` with the same source picks it up. Only on CUDA by default (on a
        small CPU machine the overlap just competes for cores)."""
        from evaluator.run_candidate import send_load
        from evaluator.static_check import check_source

        key = _source_key(source)
        with self._lock:
            if not self.starts_ahead() or key in self._prefetched:
                return
        report = check_source(source, name or "candidate", allow_torch=self.plan.get("allow_ops", []))
        if report.syntax_error is not None or (self.options.static_checks and report.violations):
            return  # rejected without running: nothing to prepare
        worker = self.pool.take()
        send_load(self, worker, source, report)
        with self._lock:
            while len(self._prefetched) >= MAX_PREFETCHED:  # the oldest was never asked for (a duplicate, say)
                self._prefetched.pop(next(iter(self._prefetched))).kill()
            self._prefetched[key] = worker

    def starts_ahead(self) -> bool:
        """Whether processes for what comes next start while the current evaluation runs (``options.prefetch``;
        None: on CUDA only, since on a small CPU machine the overlap just competes for cores)."""
        return self.options.prefetch if self.options.prefetch is not None else self.device == "cuda"

    def _drop_prefetched(self, source: str) -> None:
        with self._lock:
            worker = self._prefetched.pop(_source_key(source), None)
        if worker is not None:
            worker.kill()

    def sanitize(self, source: str) -> list[Any]:
        """Run ``source`` under compute-sanitizer racecheck and memcheck (GPU; see :mod:`evaluator.sanitize`)."""
        from evaluator.sanitize import sanitize

        with self.gpu.exclusive():
            return sanitize(self, source)

    # -- kept builds (evaluator.kept_builds) ----------------------------------------------------
    def _builds_for(self, source: str) -> Path:
        """The kept builds of exactly this source (a candidate can only ever leave builds for itself)."""
        return self.cache_dir / "kept-builds" / _source_key(source)[:32]

    def stage_builds(self, worker: processes.Worker, source: str) -> None:
        """Copy the kept builds of this source into the process's own folder before it loads."""
        kept_builds.stage(self._builds_for(source), worker.private, worker.home)

    def keep_builds(self, worker: processes.Worker, source: str) -> None:
        """After an evaluation, keep what the process built for this source's next time (the process is dead)."""
        kept_builds.keep(worker.private, self._builds_for(source))

    def close(self) -> None:
        """Stop the processes and remove the session's scratch files."""
        with self._lock:
            self._closed = True
            plain, self._plain = self._plain, None
            prefetched = list(self._prefetched.values())
            self._prefetched.clear()
            preparing, self._preparing = self._preparing, None
        if preparing is not None:  # a preparation in flight fails once the reference is gone; nobody waits for it
            preparing.shutdown(wait=False, cancel_futures=True)
        for worker in [*prefetched, *([plain] if plain is not None else [])]:
            worker.kill()
        self.pool.close()
        if getattr(self, "reference", None) is not None:
            self.reference.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> EvaluationSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def attach_handoff_fds(request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
    """A compare (or hand-off probe) request as the reference reads it, and the descriptors to send with it:
    each VMM output's parent-side descriptors (``sent["fds"]``, aligned with ``sent["vmm"]``) are numbered in the
    request (``"fd"``: an index, None where there is none or no room), at most one message's worth in all."""
    if request.get("op") not in ("compare", "handoff_probe"):
        return request, []
    fds: list[int] = []
    outputs = []
    for output in request.get("outputs", []):
        sent = output.get("sent") if isinstance(output, dict) else None
        if isinstance(sent, dict) and isinstance(sent.get("vmm"), list):
            given = sent.get("fds")
            parent_fds: list[Any] = given if isinstance(given, list) else []
            descriptors = []
            for k, descriptor in enumerate(sent["vmm"]):
                fd = parent_fds[k] if k < len(parent_fds) else None
                numbered = dict(descriptor) if isinstance(descriptor, dict) else {}
                if type(fd) is int and fd >= 0 and len(fds) < processes.MAX_FDS_PER_MESSAGE:
                    numbered["fd"] = len(fds)
                    fds.append(fd)
                else:
                    numbered["fd"] = None
                descriptors.append(numbered)
            output = {**output, "sent": {**{k: v for k, v in sent.items() if k != "fds"}, "vmm": descriptors}}
        outputs.append(output)
    return {**request, "outputs": outputs}, fds


def _source_key(source: str) -> str:
    import hashlib

    return hashlib.sha256(source.encode()).hexdigest()


def evaluate(task: str | Path, candidate: str | Path, device: str = "cpu",
             options: EvalOptions | None = None) -> Verdict:
    """Evaluate one candidate file against one task file (see :class:`EvaluationSession`).

    A candidate the static checks reject is answered without starting any process.
    """
    options = options or EvalOptions()
    early = _static_rejection(Path(task), Path(candidate), device, options)
    if early is not None:
        return early
    with EvaluationSession(task, device=device, options=options) as session:
        return session.evaluate(candidate)


def _static_rejection(task: Path, candidate: Path, device: str, options: EvalOptions) -> Verdict | None:
    from evaluator.static_check import check_source

    if not options.static_checks or not task.is_file():
        return None
    try:
        source = candidate.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalSetupError(f"{candidate}: cannot read the candidate file ({exc})") from exc
    report = check_source(source, str(candidate), allow_torch=_declared_allow_ops(task))
    if report.syntax_error is None and not report.violations:
        return None
    evidence = {"task": str(task), "candidate": str(candidate), "device": device,
                "backend": report.backend, "static": static_evidence(report, True)}
    return static_verdict(report, str(candidate), evidence, enforce=True)


def static_evidence(report: Any, enforced: bool) -> dict[str, Any]:
    """The static part of a verdict's evidence."""
    return {"violations": [v.__dict__ for v in report.violations], "kernels": report.kernels,
            "launched": report.launched, "enforced": enforced}


def optional_paths_flag(modules: list[str]) -> str | None:
    """What a verdict says of the candidate's optional imports (``StaticReport.optional_imports``): the guarded
    process refuses them all, the plain run imports those installed on this machine as a user's program does, and
    the code that the success of the others selects in a user's program (where they are installed) runs nowhere
    here."""
    from evaluator.static_optional import installed

    missing = sorted({m for m in modules if not installed(m)})
    if not missing:
        return None
    return (f"optional imports not installed on the verifier's machine ({', '.join(missing[:8])}"
            f"{', ...' if len(missing) > 8 else ''}): where a user's program has them, the code their success "
            "selects was not run here")


def static_verdict(report: Any, shown: str, evidence: dict[str, Any], enforce: bool) -> Verdict | None:
    """The rejection a static report calls for (a syntax error always; violations when enforced)."""
    if report.syntax_error is not None:
        return Verdict.reject(Reason.COMPILE_ERROR, f"{shown}:{report.syntax_error.line}: "
                              f"{report.syntax_error.message}", **evidence)
    if not (enforce and report.violations):
        return None
    first = report.violations[0]
    more = f" (and {len(report.violations) - 1} more)" if len(report.violations) > 1 else ""
    return Verdict.reject(Reason.STATIC_VIOLATION, f"[{first.rule}] {first.message}{more}", **evidence)


def _declared_allow_ops(task: Path) -> list[str]:
    """The task's ALLOW_TORCH_OPS read from its source as a literal (the task is not imported here)."""
    import ast

    try:
        tree = pyast.parse(task.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ALLOW_TORCH_OPS"
                                                 for t in node.targets):
            try:
                return [str(x) for x in ast.literal_eval(node.value)]
            except ValueError:
                return []
    return []


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
