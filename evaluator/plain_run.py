"""An accepted candidate run once more in a plain process, judged as before (parent side).

The guarded process can be told from a user's program (:mod:`evaluator.sandboxed.plain` says how), so a kernel may
compute correctly only there. Here the candidate that passed is run in a fresh sandboxed process with no in-process
instrumentation, loaded as KernelEvo's dispatcher loads a stored kernel, on every input set of the session's plan
in a random order (some a second time, which must agree bitwise), each call in an autograd state a program uses;
the reference process judges every output. Any failure turns the acceptance into a rejection that says the kernel
behaved differently when it was not observed (or, for an honest kernel, that it is not repeatable).
"""

from __future__ import annotations

import dataclasses
import os
import random
import secrets
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaluator import processes
from evaluator.callplan import InputSet
from evaluator.calls import Judged, OutputChannel, StopEvaluation, call_worker, judge_outputs
from evaluator.verdict import Reason, Verdict

if TYPE_CHECKING:
    from evaluator.session import EvaluationSession

PHASE = "plain process"
VARIED_PHASE = "plain process, other constructor arguments"
NEAR_PHASE = "plain process, near-duplicate inputs"
STEPPED_PHASE = "plain process, parameters changed in place"
PHASES = {"plain": PHASE, "varied": VARIED_PHASE, "near": NEAR_PHASE, "stepped": STEPPED_PHASE}
CHECK = ("accepted candidates run once more in a plain process (no instrumentation, modules as a user's program "
         "loads them), every output judged")
VARIED_CHECK = ("and, in that process, a second ModelNew built with the task's float constructor arguments scaled by "
                "secret factors, judged against the reference built the same way")
AUTOGRAD_STATES = ("no_grad", "inference", "grad")
REPEATED_SHARE = 3  # about one input set in REPEATED_SHARE is called a second time
MAX_CALLS = 4000
MAX_RUN_SCALE = 4.0  # the plain run may take this many times the guarded run's per-phase limit, for its extra calls


@dataclass(frozen=True)
class PlainCall:
    """One call of the plain run: its output's name, the input set, the autograd state, and the group of calls
    on identical inputs it belongs to (None: called once)."""

    name: str
    inputs: InputSet
    autograd: str
    group: str | None = None
    varied_init: bool = False  # made by the ModelNew built with other constructor arguments
    judged: bool = True  # its outputs go to the reference (the others only count as calls a program makes)
    training: bool = False  # ModelNew's training flag
    grads: bool = False  # its trainable parameters' .grad filled, as after a training step
    near: int | None = None  # a near-duplicate of the call before it: the reference's key for its answers
    step: str | None = None  # before this call, ModelNew's trainable parameters are stepped by this file's changes
    stepped: bool = False  # made after the step: judged against the stepped reference

    def request(self, index: dict[str, int]) -> dict[str, Any]:
        """The call as the plain process is asked to make it (``index``: the descriptors' positions by file)."""
        patch = self.inputs.patch
        return {"name": self.name, "input": index[self.inputs.file], "patch": None if patch is None else index[patch],
                "autograd": self.autograd, "varied_init": self.varied_init, "judged": self.judged,
                "training": self.training, "grads": self.grads,
                "step": None if self.step is None else index[self.step]}

    @property
    def kind(self) -> str:
        """Which model and inputs the call's outputs are judged against (see :data:`PHASES`)."""
        return "varied" if self.varied_init else "near" if self.near is not None else \
            "stepped" if self.stepped else "plain"


def plan_plain_calls(sets: list[InputSet], rng: random.Random, varied_init: bool = False, total: int = 0,
                     training_free: bool = False) -> list[PlainCall]:
    """Judged: every input set once, about a third of them once more; with ``varied_init``, two input sets of each
    case through the model built with other constructor arguments: the task's own draw (values at the magnitudes the
    task gives, where a baked-in ``eps`` or temperature shows; scaled or heavy-tailed values can hide it) and a random
    one. Unjudged calls of random input
    sets make the run ``total`` calls long; all in a random order. Each call: a random autograd state, the
    parameters' gradients filled on about a third, and a random training flag where the reference gives the same
    answers in both modes (``training_free``), else eval mode as the reference (pure)."""
    if not sets:
        return []
    repeated = set(rng.sample(range(len(sets)), max(1, len(sets) // REPEATED_SHARE)))
    varied: list[int] = []
    if varied_init:
        by_case: dict[int, list[int]] = {}
        for index, inputs in enumerate(sets):
            by_case.setdefault(inputs.case, []).append(index)
        for _case, indices in sorted(by_case.items()):
            own = [i for i in indices if sets[i].distribution == "task"]
            picked = {*own[:1], rng.choice(indices)}
            varied += [-1 - i for i in sorted(picked)]  # negative: varied
    judged = [*range(len(sets)), *repeated, *varied]
    plain = [len(sets) + rng.randrange(len(sets)) for _ in range(max(0, total - len(judged)))]  # >= len: unjudged
    order = [*judged, *plain]
    rng.shuffle(order)
    calls = []
    for k, index in enumerate(order):
        autograd, training = rng.choice(AUTOGRAD_STATES), training_free and rng.random() < 0.5
        call = PlainCall(f"p{k}-{rng.getrandbits(32):08x}", sets[index % len(sets)], autograd, training=training,
                         grads=rng.random() < 1 / 3)
        if index < 0:
            call = dataclasses.replace(call, inputs=sets[-1 - index], varied_init=True)
        elif index >= len(sets):
            call = dataclasses.replace(call, judged=False)
        elif index in repeated:
            call = dataclasses.replace(call, group=f"plain-{index}")
        calls.append(call)
    return calls


def with_near_duplicates(calls: list[PlainCall], near: list[tuple[InputSet, InputSet, int]],
                         rng: random.Random, follows: frozenset[int] = frozenset()) -> list[PlainCall]:
    """``calls`` with, right after the first judged call of each base input set, its near-duplicates (``near``:
    base, near-duplicate, the reference's key), each after a call of the base (the first after the judged one,
    the others after an unjudged call added for it), or, for a key in ``follows``, right after the near-duplicate
    before it: a cache keyed by part of the previous input answers each stale (pure)."""
    by_base: dict[InputSet, list[tuple[InputSet, int]]] = {}
    for base, duplicate, key in near:
        by_base.setdefault(base, []).append((duplicate, key))
    out = list(calls)
    for base, duplicates in by_base.items():
        at = next((k for k, c in enumerate(out) if c.judged and c.inputs == base and not c.varied_init), None)
        if at is None:
            continue
        first = out[at]
        added: list[PlainCall] = []
        for n, (duplicate, key) in enumerate(duplicates):
            if n and key not in follows:
                added.append(PlainCall(f"b{at}-{rng.getrandbits(32):08x}", base, first.autograd,
                                       training=first.training, judged=False))
            added.append(PlainCall(f"n{at}-{rng.getrandbits(32):08x}", duplicate, first.autograd,
                                   training=first.training, near=key))
        out[at + 1:at + 1] = added
    return out


def with_parameter_step(calls: list[PlainCall], sets: list[InputSet], step: str, rng: random.Random) -> list[PlainCall]:
    """``calls`` followed by a call of one random input set of each case, then the same sets again in the reverse
    order, judged, the first of them after ModelNew's trainable parameters were changed in place (``step``: the
    file of the changes), as an optimizer step changes them between two calls on one batch: a cache keyed by the
    inputs alone (the previous call of a shape, or the previous call) answers them stale (pure)."""
    by_case: dict[int, list[InputSet]] = {}
    for inputs in sets:
        by_case.setdefault(inputs.case, []).append(inputs)
    chosen = [rng.choice(candidates) for _case, candidates in sorted(by_case.items())]
    if not chosen:
        return list(calls)
    before = [PlainCall(f"q{k}-{rng.getrandbits(32):08x}", inputs, rng.choice(AUTOGRAD_STATES), judged=False)
              for k, inputs in enumerate(chosen)]
    after = [PlainCall(f"s{k}-{rng.getrandbits(32):08x}", inputs, rng.choice(AUTOGRAD_STATES), stepped=True,
                       step=step if k == 0 else None)
             for k, inputs in enumerate(reversed(chosen))]
    return [*calls, *before, *after]


def run_length(guarded_calls: int, rng: random.Random) -> int:
    """How many calls the plain run makes: more than the guarded process made (a secret number between 1.5 and 2.5
    times as many), so that a kernel latching "unobserved" gains nothing by counting calls; at most MAX_CALLS."""
    return min(MAX_CALLS, rng.randint(int(1.5 * guarded_calls) + 1, int(2.5 * guarded_calls) + 2))


def spawn_plain(session: EvaluationSession) -> processes.Worker:
    """A plain process for the session's candidates (it starts up while the caller goes on)."""
    return processes.spawn_worker("plain", session.device, session.procs, session.options.memory_mb,
                                  workspace=session.placement.repo)


# The candidates whose plain process loads them while the guarded run goes on (a rejection wastes the process): those
# whose loading is long. A ``load_inline`` build (30-60 s) depends on the absolute path it is built at, and the plain
# process builds under the candidate's own name in its own home, as a program does: no earlier build can be reused.
LOADS_DURING_GUARDED_RUN = frozenset({"load_inline"})


def loads_during_guarded_run(backend: str) -> bool:
    """Whether a candidate of ``backend`` (its static report's) is loaded by its plain process from the start of its
    evaluation, beside the guarded process, instead of after its acceptance (pure)."""
    return backend in LOADS_DURING_GUARDED_RUN


def start_load(session: EvaluationSession, worker: processes.Worker, source: str) -> None:
    """Put the candidate in a plain process's folder (with the builds kept for its source) and ask it to load,
    without waiting: :func:`confirm` reads its start-up and load replies. The process must have seen no candidate:
    nothing is written into a folder a candidate's process has had."""
    from evaluator.run_candidate import write_candidate

    write_candidate(session, worker, source)
    session.stage_builds(worker, source)
    varied_file = session.plan.get("varied_init_file")
    inits = [session.plan["init_file"], *([varied_file] if varied_file else [])]
    fds = [os.open(path, os.O_RDONLY | os.O_CLOEXEC) for path in inits]
    try:
        worker.send({"op": "load", "module": session.placement.request(), "init_seed": session.init_seed}, fds)
    finally:
        for fd in fds:
            os.close(fd)


@dataclass(frozen=True)
class Prepared:
    """What a plain run judges besides the session's input sets, made before it starts (:func:`prepare`): its secret
    random order, the reference's near-duplicate inputs and parameter step, and what could not be made (``flags``)."""

    rng: random.Random
    sets: list[InputSet]
    near: list[tuple[InputSet, InputSet, int]]
    follows: frozenset[int]
    step_key: int
    step: str | None
    flags: list[str]


def prepare(session: EvaluationSession) -> Prepared:
    """The plain run's near-duplicates and parameter step, made by the reference process from fresh secrets. Where a
    plain run may follow (``kernelevo eval`` on a GPU host) the session asks for them as the guarded run starts, on a
    thread of its own: the reference makes them while the candidate's process is busy with its calls (they are
    reference work the candidate's processes never see, shared with checks as any reference request, never with
    timing)."""
    rng = random.Random(secrets.randbits(64))
    sets = [InputSet(int(i["case"]), int(i["seed"]), i["file"], session.distribution_of(int(i["seed"])))
            for i in session.plan["inputs"]]
    made: dict[str, Any] = {"flags": []}
    near, follows = _near_duplicates(session, sets, rng, made)
    step_key = secrets.randbits(62)
    step = _parameter_step(session, step_key, made)
    return Prepared(rng, sets, near, follows, step_key, step, list(made["flags"]))


def confirm(session: EvaluationSession, source: str, verdict: Verdict,
            worker: processes.Worker | None = None, loading: bool = False,
            prepared: Future[Prepared] | None = None) -> Verdict:
    """``verdict`` (an acceptance) kept, with the plain run's checks added to its evidence, or the rejection the
    plain run calls for; ``worker``: a plain process started earlier that has seen no candidate (else one is
    started here), or, with ``loading``, one that :func:`start_load` has asked to load this candidate;
    ``prepared``: its near-duplicates and step, asked for earlier (else made here)."""
    started = time.perf_counter()
    evidence = verdict.to_dict()
    for key in ("verdict", "reason", "detail"):
        evidence.pop(key)
    guarded_logs = evidence.pop("logs", "")  # a rejection below carries the plain process's own
    handoff = evidence["overhead"].get("output_handoff")  # the guarded run's, which judging below would overwrite
    timeout = session.options.timeout_s
    varied_file = session.plan.get("varied_init_file")
    guarded_calls = int(evidence["overhead"].get("checked_calls") or 0)
    if session.device == "cuda":  # and the timed calls
        guarded_calls += session.options.timing_trials * len(session.plan["cases"])
    phases: dict[str, float] = {}
    mark = _Stopwatch(phases)
    worker = worker or spawn_plain(session)
    try:  # a failure before the run must not leave the process running
        if not loading:
            start_load(session, worker, source)  # it loads while the reference makes the near-duplicates
        mark("stage_s")  # the candidate and its kept builds in the process's folder
        made = prepared.result() if prepared is not None else prepare(session)
    except BaseException:
        worker.kill()
        worker.remove_private()
        raise
    mark("near_duplicates_s")  # what is left of making them (asked for as the guarded run started, where it was)
    rng, sets, near, follows, step_key, step = made.rng, made.sets, made.near, made.follows, made.step_key, made.step
    if made.flags:
        evidence.setdefault("flags", []).extend(made.flags)
    # each, and a base call before all but the first of a base and those that follow the one before them
    added = 2 * len(near) - len({base for base, _duplicate, _key in near}) - len(follows)
    calls = plan_plain_calls(sets, rng, varied_init=bool(varied_file),
                             total=max(0, run_length(guarded_calls, rng) - added),
                             training_free=bool(session.plan.get("training_mode_free")))
    calls = with_near_duplicates(calls, near, rng, follows)
    if step is not None:
        calls = with_parameter_step(calls, sets, step, rng)
    files = sorted({c.inputs.file for c in calls} | {c.inputs.patch for c in calls if c.inputs.patch is not None}
                   | ({step} if step is not None else set()))
    index = {f: k for k, f in enumerate(files)}
    phase = PHASE
    # the run makes more calls than the guarded run checked: its limit grows with them (at most MAX_RUN_SCALE times)
    run_timeout = timeout * min(MAX_RUN_SCALE, max(1.0, len(calls) / max(1, guarded_calls)))
    try:
        ready = call_worker(worker, None, timeout, evidence)
        mark("ready_s")  # what is left of the wait for its start-up (it was started ahead where processes are)
        _add_figures(phases, "startup.", ready.get("startup_phases"))
        call_worker(worker, {"op": "load"}, timeout, evidence, already_sent=True)
        mark("load_s")  # what is left of its load (begun before the near-duplicates, or with the guarded run)
        with session.gpu.shared():  # other evaluations may check at the same time, none is timing
            ran = call_worker(worker, {"op": "run", "calls": [c.request(index) for c in calls]},
                              run_timeout, evidence, files=files)
        mark("calls_s")
        _add_figures(phases, "calls.", ran.get("phases"))  # the plain process's own account of calls_s
        reply_sent = ran.get("sent")
        sent: dict[str, Any] = reply_sent if isinstance(reply_sent, dict) else {}
        channel = OutputChannel(worker, secrets.randbits(62))
        refused = ran.get("varied_refused")
        if refused:  # ModelNew raised for other constructor arguments: loud, and the dispatcher pins the verified ones
            why = str(refused)[:200]
            evidence.setdefault("flags", []).append(f"ModelNew refuses other constructor arguments ({why}); "
                                                    "KernelEvo's dispatcher uses it only with the verified ones")
        for kind, phase in PHASES.items():
            judged = [Judged(c.name, c.inputs.case, c.inputs.seed, c.inputs.distribution,
                             {"file": str(worker.outbox / f"{c.name}.raw"), "raw": _described(sent, c.name)},
                             group=c.group, varied_init=c.varied_init, near=c.near,
                             stepped=step_key if c.stepped else None)
                      for c in calls if c.judged and c.kind == kind and not (refused and c.varied_init)]
            if judged:
                judge_outputs(session, channel, judged, evidence, phase)
        mark("judge_s")
    except StopEvaluation as stop:
        return _unobserved_failure(stop.verdict, phase, session.plan.get("varied_init_inputs"), len(calls), run_timeout)
    finally:
        worker.kill()
        worker.remove_private()
        evidence["overhead"]["output_handoff"] = handoff
    evidence["overhead"]["plain_run_s"] = round(time.perf_counter() - started, 3)
    evidence["overhead"]["plain_phases"] = phases
    evidence["overhead"]["plain_calls"] = len(calls)
    evidence["overhead"]["plain_judged_calls"] = sum(c.judged for c in calls)
    checks = [CHECK, *([VARIED_CHECK] if varied_file else [])]
    evidence["correctness"]["checks"] = [*evidence["correctness"]["checks"], *checks]
    if guarded_logs:
        evidence["logs"] = guarded_logs
    return Verdict.accept(verdict.detail + f"; the same outputs in a plain process ({len(calls)} calls)", **evidence)


class _Stopwatch:
    """``mark(name)`` records the seconds since the previous mark (or since it was made) under ``name``."""

    def __init__(self, into: dict[str, float]):
        self.into, self.last = into, time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.into[name] = round(now - self.last, 3)
        self.last = now


def _add_figures(phases: dict[str, float], prefix: str, reported: Any) -> None:
    """The plain process's own timings (its figures: reported for measuring only, no decision reads them)."""
    if isinstance(reported, dict):
        phases.update({f"{prefix}{key}": float(value) for key, value in reported.items()
                       if isinstance(value, (int, float)) and not isinstance(value, bool)})


def _described(sent: dict[str, Any], name: str) -> Any:
    item = sent.get(name)
    return item.get("raw") if isinstance(item, dict) else None


def _parameter_step(session: EvaluationSession, key: int, evidence: dict[str, Any]) -> str | None:
    """The file of a secret in-place step of the model's trainable parameters, made by the reference process from
    ``key`` (it answers the calls after it with a model stepped alike); None where nothing is trainable."""
    made = session.reference_request({"op": "step", "key": key}, max(session.options.timeout_s, 600))
    if not made.get("ok"):
        evidence.setdefault("flags", []).append(f"no parameter step: {str(made.get('message'))[:200]}")
        return None
    return str(made["file"]) if made.get("names") else None


def _near_duplicates(session: EvaluationSession, sets: list[InputSet], rng: random.Random,
                     evidence: dict[str, Any]) -> tuple[list[tuple[InputSet, InputSet, int]], frozenset[int]]:
    """Per case, near-duplicates of a random seed's input set, one of each kind the reference process makes
    (:func:`evaluator.sandboxed.near.kinds_for`), from a secret key; and the keys of those to call right after the
    one before them."""
    by_case: dict[int, list[InputSet]] = {}
    for inputs in sets:
        by_case.setdefault(inputs.case, []).append(inputs)
    near, follows = [], set()
    for case, candidates in sorted(by_case.items()):
        # not a set of magnitudes near 1e-3 where another exists: one value moved there changes an answer by less
        # than the tolerance sees, so a cache answering stale would pass
        base = rng.choice([c for c in candidates if c.distribution != "small"] or candidates)
        made = session.reference_request({"op": "near_duplicates", "case": case, "seed": base.seed,
                                          "key": secrets.randbits(62)}, max(session.options.timeout_s, 600))
        if not made.get("ok"):
            evidence.setdefault("flags", []).append(f"no near-duplicate inputs for case {case}: "
                                                    f"{str(made.get('error'))[:200]}")
            continue
        for item in made.get("near") or []:
            duplicate = dataclasses.replace(base, patch=str(item["patch"]))
            near.append((base, duplicate, int(item["key"])))
            if item.get("follows") is True:
                follows.add(int(item["key"]))
    return near, frozenset(follows)


def _unobserved_failure(rejected: Verdict, phase: str, varied_init: list[dict[str, Any]] | None, calls: int,
                        limit_s: float) -> Verdict:  # fmt: skip
    """The plain run's rejection, saying what it means: the guarded run accepted the same inputs (``phase``: where
    it failed; ``varied_init``: the other constructor arguments of the plain run's second model); running out of
    its time (``calls`` in ``limit_s``) is said as that, no accusation."""
    data = rejected.to_dict()
    reason, detail = Reason(data.pop("reason")), data.pop("detail")
    data.pop("verdict")
    if reason is Reason.TIMEOUT:
        why = (f"[plain process] its {calls} calls did not finish within {limit_s:.0f} s (the guarded run's limit, "
               f"scaled by how many more calls it makes): a kernel far slower where nothing observes it, or a run "
               f"too slow for this limit (the CPU interpreter on large cases); raise --timeout to tell them apart: "
               f"{detail}")
    elif phase == NEAR_PHASE:
        why = ("[plain process, near-duplicate inputs] wrong for an input set that differs from the one called "
               "just before it in some values (one, a block, two of a row exchanged, rows reordered or reversed, one "
               "input alone, every sign flipped, or rows masked with -inf): a cache keyed by part of the input, by a "
               f"summary of it or by where it lives answers it stale; compute every call from its inputs: {detail}")
    elif phase == STEPPED_PHASE:
        why = ("[plain process, parameters changed in place] wrong on inputs called before, once ModelNew's trainable "
               "parameters were changed in place as an optimizer step changes them: a cache that leaves the "
               f"parameters out of its key (or weights copied earlier); read them on every call: {detail}")
    elif phase == VARIED_PHASE and varied_init is not None:
        given = ", ".join(repr(v.get("value")) if "value" in v else "a tensor" for v in varied_init)
        why = (f"[plain process, other constructor arguments] ModelNew({given}) is wrong where Model({given}) is "
               "right: the kernel ignores a constructor argument (a baked-in constant?); use the arguments "
               f"__init__ receives: {detail}")
    else:
        why = ("[plain process] the candidate passed every call under the verifier's instrumentation but not when "
               "run as a user's program runs it (no instrumentation): a kernel that behaves differently when it is "
               f"observed, or one that is not repeatable: {detail}")
    if reason is Reason.OK:  # never: a stop carries a rejection
        reason = Reason.INCORRECT
    return Verdict.reject(reason, why, **data)
