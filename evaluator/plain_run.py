"""An accepted candidate run once more in a plain process, judged as before (parent side).

The guarded process can be told from a user's program (:mod:`evaluator.sandboxed.plain` says how), so a kernel may
compute correctly only there. Here the candidate that passed is run in a fresh sandboxed process with no in-process
instrumentation, loaded as KernelEvo's dispatcher loads a stored kernel, on every input set of the session's plan
in a random order (some a second time, which must agree bitwise), each call in an autograd state a program uses;
the reference process judges every output. Any failure turns the acceptance into a rejection that says the kernel
behaved differently when it was not observed (or, for an honest kernel, that it is not repeatable).
"""

from __future__ import annotations

import os
import random
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaluator import processes
from evaluator.callplan import InputSet
from evaluator.calls import Judged, OutputChannel, StopEvaluation, call_worker, judge_outputs
from evaluator.verdict import Reason, Verdict

if TYPE_CHECKING:
    from evaluator.session import EvaluationSession

PHASE = "plain process"
CHECK = ("accepted candidates run once more in a plain process (no instrumentation, modules as a user's program "
         "loads them), every output judged")
AUTOGRAD_STATES = ("no_grad", "inference", "grad")
REPEATED_SHARE = 3  # about one input set in REPEATED_SHARE is called a second time


@dataclass(frozen=True)
class PlainCall:
    """One call of the plain run: its output's name, the input set, the autograd state, and the group of calls
    on identical inputs it belongs to (None: called once)."""

    name: str
    inputs: InputSet
    autograd: str
    group: str | None = None

    def request(self, index: int) -> dict[str, Any]:
        return {"name": self.name, "input": index, "autograd": self.autograd}


def plan_plain_calls(sets: list[InputSet], rng: random.Random) -> list[PlainCall]:
    """Every input set once in a random order, about a third of them once more at a random later position (pure)."""
    if not sets:
        return []
    repeated = set(rng.sample(range(len(sets)), max(1, len(sets) // REPEATED_SHARE)))
    order = [*range(len(sets)), *repeated]
    rng.shuffle(order)
    calls = []
    for k, index in enumerate(order):
        group = f"plain-{index}" if index in repeated else None
        calls.append(PlainCall(f"p{k}-{rng.getrandbits(32):08x}", sets[index], rng.choice(AUTOGRAD_STATES), group))
    return calls


def spawn_plain(session: EvaluationSession) -> processes.Worker:
    """A plain process for the session's candidates (it starts up while the caller goes on)."""
    return processes.spawn_worker("plain", session.device, session.procs, session.options.memory_mb,
                                  workspace=session.placement.repo)


def confirm(session: EvaluationSession, source: str, verdict: Verdict,
            worker: processes.Worker | None = None) -> Verdict:
    """``verdict`` (an acceptance) kept, with the plain run's checks added to its evidence, or the rejection the
    plain run calls for; ``worker``: a plain process started earlier that has seen no candidate (else one is
    started here)."""
    from evaluator.run_candidate import write_candidate

    started = time.perf_counter()
    evidence = verdict.to_dict()
    for key in ("verdict", "reason", "detail"):
        evidence.pop(key)
    handoff = evidence["overhead"].get("output_handoff")  # the guarded run's, which judging below would overwrite
    timeout = session.options.timeout_s
    rng = random.Random(secrets.randbits(64))
    sets = [InputSet(int(i["case"]), int(i["seed"]), i["file"], session.distribution_of(int(i["seed"])))
            for i in session.plan["inputs"]]
    calls = plan_plain_calls(sets, rng)
    files = sorted({c.inputs.file for c in calls})
    index = {f: k for k, f in enumerate(files)}
    worker = worker or spawn_plain(session)
    try:
        write_candidate(session, worker, source)
        session.stage_builds(worker, source)
        call_worker(worker, None, timeout, evidence)
        fd = os.open(session.plan["init_file"], os.O_RDONLY | os.O_CLOEXEC)
        try:
            worker.send({"op": "load", "module": session.placement.request(), "init_seed": session.init_seed}, [fd])
        finally:
            os.close(fd)
        call_worker(worker, {"op": "load"}, timeout, evidence, already_sent=True)
        ran = call_worker(worker, {"op": "run", "calls": [c.request(index[c.inputs.file]) for c in calls]}, timeout,
                          evidence, files=files)
        reply_sent = ran.get("sent")
        sent: dict[str, Any] = reply_sent if isinstance(reply_sent, dict) else {}
        judged = [Judged(c.name, c.inputs.case, c.inputs.seed, c.inputs.distribution,
                         {"file": str(worker.outbox / f"{c.name}.raw"), "raw": _described(sent, c.name)},
                         group=c.group) for c in calls]
        judge_outputs(session, OutputChannel(worker, secrets.randbits(62)), judged, evidence, PHASE)
    except StopEvaluation as stop:
        return _unobserved_failure(stop.verdict)
    finally:
        worker.kill()
        worker.remove_private()
        evidence["overhead"]["output_handoff"] = handoff
    evidence["overhead"]["plain_run_s"] = round(time.perf_counter() - started, 3)
    evidence["overhead"]["plain_calls"] = len(calls)
    evidence["correctness"]["checks"] = [*evidence["correctness"]["checks"], CHECK]
    return Verdict.accept(verdict.detail + f"; the same outputs in a plain process ({len(calls)} calls)", **evidence)


def _described(sent: dict[str, Any], name: str) -> Any:
    item = sent.get(name)
    return item.get("raw") if isinstance(item, dict) else None


def _unobserved_failure(rejected: Verdict) -> Verdict:
    """The plain run's rejection, saying what it means: the guarded run accepted the same inputs."""
    data = rejected.to_dict()
    reason, detail = Reason(data.pop("reason")), data.pop("detail")
    data.pop("verdict")
    why = ("[plain process] the candidate passed every call under the verifier's instrumentation but not when run as "
           "a user's program runs it (no instrumentation): a kernel that behaves differently when it is observed, "
           f"or one that is not repeatable: {detail}")
    if reason is Reason.OK:  # never: a stop carries a rejection
        reason = Reason.INCORRECT
    return Verdict.reject(reason, why, **data)
