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


def test_a_plain_process_started_ahead_waits_for_the_next_acceptance():
    """Started with the session; a rejected candidate leaves it unused (kept, never shown a candidate); the next
    acceptance's plain run uses it, and the one after that is started as soon as the guarded run accepts. Each
    evaluation asks for its plain run's near-duplicates as it starts (made on the session's preparing thread while
    the guarded run goes on); a rejection leaves them unused, and the acceptance's plain run judges its own."""
    honest = (HONEST / "softmax_rowwise.py").read_text()
    wrong = honest.replace("num / den", "num / (den * 0.99)")
    with EvaluationSession(TASK, options=EvalOptions(prefetch=True, seeds=1)) as session:
        ahead = session._plain
        assert ahead is not None and ahead.process.poll() is None
        rejected = session.evaluate_source(wrong, "wrong")
        assert not rejected.accepted and rejected.reason.value == "incorrect"
        assert session._plain is ahead and ahead.process.poll() is None
        assert session._preparing is not None  # asked for at the start of the rejected evaluation too
        accepted = session.evaluate_source(honest, "honest")
        assert accepted.accepted and "plain process" in accepted.detail
        assert ahead.process.poll() is not None  # used, then ended with its evaluation
        following = session._plain
        assert following is not None and following is not ahead and following.process.poll() is None
        phases = accepted.overhead.plain_phases
        assert {"near_duplicates_s", "calls_s", "judge_s"} <= set(phases)
        near = [c for case in accepted.correctness.cases for c in case.checks if "near-duplicate" in c.phase]
        assert near and all(c.ok for c in near)  # the prepared near-duplicates were judged
    assert following.process.poll() is not None  # closed with the session


def test_no_plain_process_is_started_ahead_without_a_plain_run_or_on_cpu_by_default():
    for options in (EvalOptions(prefetch=True, seeds=1, plain_run=False), EvalOptions(seeds=1)):
        with EvaluationSession(TASK, options=options) as session:
            assert session._plain is None


def test_a_long_loading_candidate_is_loaded_by_its_plain_process_beside_the_guarded_run(monkeypatch):
    """Where loading is long (a load_inline build, which depends on the folder it is made in and cannot be kept),
    the plain process is given the candidate with the guarded process: an acceptance finds it loaded, a rejection
    ends it (it has had a candidate) and the next plain process starts. load_inline needs a GPU: here the set of such
    backends is widened to Triton's, which runs the same path on CPU."""
    from evaluator import plain_run

    assert plain_run.loads_during_guarded_run("load_inline") and not plain_run.loads_during_guarded_run("triton")
    monkeypatch.setattr(plain_run, "LOADS_DURING_GUARDED_RUN", frozenset({"load_inline", "triton"}))
    honest = (HONEST / "softmax_rowwise.py").read_text()
    wrong = honest.replace("num / den", "num / (den * 0.99)")
    with EvaluationSession(TASK, options=EvalOptions(prefetch=True, seeds=1)) as session:
        ahead = session._plain
        assert ahead is not None
        rejected = session.evaluate_source(wrong, "wrong")
        assert not rejected.accepted and rejected.reason.value == "incorrect"
        assert ahead.process.poll() is not None and not ahead.private.exists()  # had the candidate: ended
        following = session._plain
        assert following is not None and following is not ahead and following.process.poll() is None
        accepted = session.evaluate_source(honest, "honest")
        assert accepted.accepted and "plain process" in accepted.detail, accepted.detail
        assert following.process.poll() is not None
        assert set(accepted.overhead.plain_phases) >= {"stage_s", "ready_s", "load_s", "calls_s", "judge_s"}
