"""Prefetching: the next candidate's process loads it while the current one runs, with the same verdict."""

from pathlib import Path

from evaluator import EvalOptions, EvaluationSession

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tasks" / "softmax.py"
HONEST = ROOT / "candidates" / "honest"


def test_prefetched_candidate_is_evaluated_by_the_prepared_process():
    first = (HONEST / "softmax_rowwise.py").read_text()
    second = (HONEST / "softmax_online.py").read_text()
    with EvaluationSession(TASK, options=EvalOptions(prefetch=True, seeds=2)) as session:
        session.prefetch(second, "second")
        v1 = session.evaluate_source(first, "first")
        v2 = session.evaluate_source(second, "second")
    assert v1.accepted and not v1.overhead.prefetched
    assert v2.accepted and v2.overhead.prefetched


def test_unused_prefetches_are_killed():
    source = (HONEST / "softmax_rowwise.py").read_text()
    with EvaluationSession(TASK, options=EvalOptions(prefetch=True, seeds=1)) as session:
        for i in range(3):  # three distinct sources, never evaluated: at most two are kept
            session.prefetch(source + f"\n# variant {i}\n", f"v{i}")
        held = list(session._prefetched.values())
        assert len(held) == 2
    for worker in held:
        assert worker.process.poll() is not None  # closed with the session


def test_prefetch_is_off_on_cpu_by_default():
    source = (HONEST / "softmax_rowwise.py").read_text()
    with EvaluationSession(TASK, options=EvalOptions(seeds=1)) as session:
        session.prefetch(source, "x")
        assert not session._prefetched
