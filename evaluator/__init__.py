"""The verifier: evaluate a candidate kernel against its op, and refuse to be fooled.

Public API::

    from evaluator import evaluate, EvaluationSession, EvalOptions, Verdict, Reason, EvalSetupError

    verdict = evaluate("task.py", "candidate.py", device="cpu")          # one candidate
    with EvaluationSession("task.py", device="cuda") as session:        # many candidates, one task:
        v1 = session.evaluate("cand1.py")                               # references and baselines
        v2 = session.evaluate_source(source_text, name="gen3-7")        # are computed once
"""

__all__ = ["EvalOptions", "EvalSetupError", "EvaluationSession", "NeedsGPU", "Reason", "Verdict", "evaluate"]


def __getattr__(name: str):
    # Lazy: importing ``evaluator`` for its data types must not pull in torch.
    if name in ("evaluate", "EvaluationSession"):
        from evaluator import session

        return getattr(session, name)
    if name == "EvalOptions":
        from evaluator.options import EvalOptions

        return EvalOptions
    if name in ("EvalSetupError", "NeedsGPU", "Reason", "Verdict"):
        from evaluator import verdict  # lazy too: sandboxed processes import this package and need no pydantic

        return getattr(verdict, name)
    raise AttributeError(name)
