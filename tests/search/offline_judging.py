"""How the offline proposer's tests judge the kernels it writes when one op gets several.

As a search judges its candidates: the guarded evaluation (``EvalOptions(plain_run=False)``), with the plain run (an
accepted kernel run once more as a user's program runs it, its constructor arguments varied; evaluator/plain_run.py)
for the op's first kernel only. The generated ``ModelNew`` is built the same way whatever the strategy, and on a
2-core CPU the plain run costs about as much as the evaluation itself; the plain run's own tests and the candidate
suite test it.
"""

from __future__ import annotations

from evaluator import EvalOptions, EvaluationSession, Verdict

GUARDED = EvalOptions(plain_run=False)


def session_for(task: str) -> EvaluationSession:
    return EvaluationSession(task, device="cpu", options=GUARDED)


def judge(session: EvaluationSession, source: str, name: str, plain: bool) -> Verdict:
    """``source``'s verdict; an accepted one confirmed by the plain run where ``plain``."""
    verdict = session.evaluate_source(source, name=name)
    if plain and verdict.accepted:
        verdict = session.confirm_plain(source, verdict)
    return verdict
