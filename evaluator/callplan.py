"""Which calls a candidate gets, in which order (parent side, pure).

A candidate must not be able to tell a judged call from any other, nor a call of the verifier from a
call in a user's program: every call below is judged, their number and order are secret (drawn from the
parent's random source), inputs arrive sometimes inside sentinel guard regions and sometimes as the plain
contiguous tensors a user passes, sometimes into the storage of the previous call of the same case (a
cache keyed by pointer returns stale answers) and sometimes fresh, sometimes with NaN-poisoned
allocations. A kernel right only for its first N calls is caught by any later call; one that behaves only
inside guard regions, only under poisoning or only on fresh storage, by the calls without them.

Guard regions (a view at a storage offset, NaN around it) and poisoning (``torch.empty`` returns NaN) are
things no user's program does, so a kernel can latch on the first one it sees ("this process is the
verifier") and be right from then on, wrong in every program it is installed into. So the process's first
calls, a secret number of them (at least one), are plain: fresh or reused storage, no guard, no poison, as a
user's program makes them; a kernel that has to decide before it has seen a tell decides wrong there and is
judged for it. Each case still gets a guarded, poisoned call after them (the first one of that case there).

What a kernel can ask torch about the call is varied the same way, since a user's program is in any of these
states: the autograd mode (gradients off, on, or ``inference_mode``), for a candidate that supports autograd
whether the floating-point inputs require grad and come out of an autograd graph (a training loop's
activations: a non-leaf view, ``requires_grad`` and ``grad_fn`` set; with gradients on only for a candidate that
defines a backward: KernelEvo's dispatcher never hands a forward-only kernel such inputs, and an inference-only
kernel may refuse them, loudly, which is no silent wrong answer), for every candidate whether they require grad
under ``no_grad`` and ``inference_mode`` (what an evaluation loop passes when a parameter, or a tensor a training
step made, goes into the op: no graph is recorded there, so a forward-only kernel is unaffected, and the
dispatcher does hand it those), under ``inference_mode`` whether the inputs were made inside it (inference
tensors, as in a program serving a model there), whether the module's parameters require grad (a frozen or served
model; the dispatcher runs a module's kernel with gradients on only when they do not) and, when the reference
gives the same answer in both (the reference process checks), the module's training flag. The candidate process's
harness applies each call's states. Every state is planned at least once; calls of one repeat group share theirs
(runs on identical inputs must agree).
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class InputSet:
    """One (case, seed) input list the reference wrote, and the distribution it was drawn from."""

    case: int
    seed: int
    file: str
    distribution: str = "task"
    patch: str | None = None  # a near-duplicate of ``file``'s set: the file of the values it replaces there


@dataclass(frozen=True)
class Call:
    """One call of ``forward``; ``name`` is the candidate's only handle on it (its output file)."""

    name: str
    inputs: InputSet
    storage: str  # "fresh" | "reuse"
    guarded: bool
    poison: bool
    group: str | None = None  # calls of one group run on identical inputs: outputs must agree bitwise
    autograd: str = "no_grad"  # one of AUTOGRAD_MODES: forward runs under no_grad, enable_grad or inference_mode
    training: bool = False  # ModelNew.train(training) before the call (eval, as the reference, unless both agree)
    input_grad: bool = False  # floating inputs passed as views requiring grad (non-leaf, with a grad_fn, under "grad")
    inference_inputs: bool = False  # inputs made inside inference_mode (inference tensors; autograd "inference" only)
    frozen: bool = False  # ModelNew's parameters do not require grad on this call (a frozen or served model)

    def request(self, index: int) -> dict:
        return {"name": self.name, "input": index, "case": self.inputs.case, "storage": self.storage,
                "guarded": self.guarded, "poison": self.poison, "autograd": self.autograd,
                "training": self.training, "input_grad": self.input_grad,
                "inference_inputs": self.inference_inputs, "frozen": self.frozen}


AUTOGRAD_MODES = ("no_grad", "grad", "inference")


def plan_checks(inputs: list[InputSet], rng: random.Random, *, repeats: int = 3,
                extra: tuple[float, float] = (1.0, 2.0), vary_training: bool = False,
                vary_input_grad: bool = False) -> list[Call]:
    """The correctness calls: each input set once, the first seed's ``repeats`` times (bitwise agreement), and
    ``extra`` (a range, as a multiple of those) more calls on input sets drawn at random, all shuffled; each in an
    autograd mode, (``vary_training``: the reference's answer does not depend on it) a training flag and inputs
    requiring grad or not (with gradients on only where ``vary_input_grad``: the candidate defines a backward),
    drawn for it (see the module docstring)."""
    if not inputs:
        return []
    seeds = sorted({i.seed for i in inputs}, key=[i.seed for i in inputs].index)
    base: list[tuple[InputSet, str | None]] = []
    for item in inputs:
        group = f"g{item.case}-{item.seed}" if item.seed == seeds[0] else None
        base += [(item, group)] * (repeats if group else 1)
    more = round(len(base) * rng.uniform(*extra))
    calls = base + [(rng.choice(inputs), None) for _ in range(more)]
    rng.shuffle(calls)
    plain = plain_prefix([item.case for item, _ in calls], rng)
    keys = [group or f"call-{k}" for k, (_, group) in enumerate(calls)]  # one draw of states per group
    autograd = states_for(keys, AUTOGRAD_MODES, rng)
    training = states_for(keys, (False, True), rng) if vary_training else dict.fromkeys(keys, False)
    input_grad = dict.fromkeys(keys, False)
    for mode in AUTOGRAD_MODES:  # each mode its own draw: every mode meets both input kinds
        if mode != "grad" or vary_input_grad:
            input_grad.update(states_for([k for k in keys if autograd[k] == mode], (True, False), rng))
    inference_inputs = dict.fromkeys(keys, False)
    inference_inputs.update(states_for([k for k in keys if autograd[k] == "inference" and not input_grad[k]],
                                       (True, False), rng))
    frozen = states_for(keys, (False, True), rng)
    planned, stored, checked = [], set(), set()
    for k, (item, group) in enumerate(calls):
        if k < plain:  # what a user's program does: nothing the kernel could latch on
            storage = "fresh" if item.case not in stored or rng.random() < 0.3 else "reuse"
            guarded = poison = False
        else:
            first = item.case not in checked  # a case's first call after the plain ones: guarded and poisoned,
            checked.add(item.case)  # on fresh storage (storage reused from a plain call has no guard regions)
            storage = "fresh" if first or rng.random() < 0.3 else "reuse"
            guarded = first or rng.random() < 0.5  # checks out-of-bounds stores
            poison = first or rng.random() < 0.5  # finds NaN where the kernel reads memory it did not write
        stored.add(item.case)
        planned.append(Call(name=f"o-{secrets.token_hex(6)}", inputs=item, storage=storage, guarded=guarded,
                            poison=poison, group=group, autograd=autograd[keys[k]], training=training[keys[k]],
                            input_grad=input_grad[keys[k]], inference_inputs=inference_inputs[keys[k]],
                            frozen=frozen[keys[k]]))
    return planned


def states_for(keys: list[str], states: tuple[T, ...], rng: random.Random) -> dict[str, T]:
    """A state for each distinct key, every state used at least once when there are keys enough, the rest drawn."""
    distinct = list(dict.fromkeys(keys))
    pool = list(states)
    rng.shuffle(pool)  # with fewer keys than states, which states are left out is drawn too
    drawn = [*pool[:len(distinct)], *(rng.choice(states) for _ in range(len(distinct) - len(states)))]
    rng.shuffle(drawn)
    return dict(zip(distinct, drawn))


def plain_prefix(cases: list[int], rng: random.Random) -> int:
    """How many calls open the plan plain (see the module docstring): a secret number from 1 to half the plan,
    but never so many that a case has no call left after them (each case keeps its guarded, poisoned call)."""
    if len(cases) < 2:
        return 0
    last = {case: k for k, case in enumerate(cases)}  # each case's last position
    return min(rng.randint(1, max(1, len(cases) // 2)), min(last.values()))


def plan_sample(trials: int, cases: int, rng: random.Random, per_case: int = 3) -> list[dict]:
    """Timed calls re-validated against the reference: ``per_case`` secret trial numbers per case."""
    sample = []
    for case in range(cases):
        chosen = sorted(rng.sample(range(trials), k=min(per_case, trials)))
        sample.append({"case": case, "trials": chosen, "names": [f"t-{secrets.token_hex(6)}" for _ in chosen]})
    return sample


def case_elements(cases: list[dict]) -> dict[int, int]:
    """Input elements per case of a plan (``plan["cases"]``: each with its inputs' shapes; non-tensors count 0)."""
    return {int(case["case"]): sum(_numel(v.get("shape")) for v in case["inputs"]) for case in cases}


def _numel(shape: list[int] | None) -> int:
    if shape is None:
        return 0
    total = 1
    for n in shape:
        total *= int(n)
    return total
