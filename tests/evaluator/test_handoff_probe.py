"""The session's output hand-off is decided by a harness-only probe, before any candidate exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator import handoff_probe, processes
from evaluator.handoff_probe import HandoffDecision, decide

ROOT = Path(__file__).resolve().parents[2]
VMM_SENT = {"vmm": [{"fd": 0}], "fds": [7], "kept": 0, "path": "probe.pt"}


def test_vmm_is_chosen_only_when_the_reference_read_the_probes_bytes_back():
    assert decide({"ok": True}, VMM_SENT, {"ok": True, "works": True}) == HandoffDecision(mode="vmm")


@pytest.mark.parametrize("reply,sent,answer,why", [
    ({"ok": True, "export_failed": "VmmError: cuMemCreate failed: 801"}, {"file": "probe.pt"}, None, "801"),
    ({"ok": False, "message": "unknown request 'handoff_probe'"}, {"file": "probe.pt"}, None, "unknown request"),
    ({"ok": True}, VMM_SENT, {"ok": True, "works": False, "problem": "unavailable: error 201"}, "error 201"),
    ({"ok": True}, VMM_SENT, {"ok": True, "works": False, "problem": "the probe's bytes arrived changed"},
     "arrived changed"),
    ({"ok": True}, VMM_SENT, None, "no answer"),
])
def test_anything_short_of_the_bytes_coming_back_means_files_with_the_reason(reply, sent, answer, why):
    decision = decide(reply, sent, answer)
    assert decision.mode == "file" and why in decision.why
    assert decision.describe().startswith("file (")


def test_a_real_candidate_process_answers_the_probe_and_is_killed_after_it(tmp_path: Path):
    """On CPU nothing is exported (the probe tensor is not on a GPU): the answer is files, from the harness's own
    code path (the request exists in the runner, the reply's descriptors are read, the process is not reused)."""
    pool = processes.WorkerPool("candidate", "cpu", tmp_path, 2048, ready=1)
    taken: list[processes.Worker] = []

    def take() -> processes.Worker:
        taken.append(pool.take())
        return taken[-1]

    def reference_request(request, timeout):  # pragma: no cover - reached only when something was exported
        raise AssertionError(f"the reference was asked although nothing was exported: {request}")

    try:
        decision = handoff_probe.probe(take, reference_request, timeout=120)
    finally:
        pool.close()
    assert decision.mode == "file" and "did not export" in decision.why
    assert len(taken) == 1 and taken[0].process.poll() is not None


def test_a_process_that_has_seen_a_candidate_refuses_the_probe(tmp_path: Path):
    from evaluator.placement import CandidatePlace

    place = CandidatePlace(repo="project", op="axpy")
    worker = processes.spawn_worker("candidate", "cpu", tmp_path, 2048, workspace=place.repo)
    try:
        path = place.host_path(worker.private)
        path.parent.mkdir(parents=True)
        path.write_text((ROOT / "tests/candidates/honest/axpy_launcher.py").read_text())
        worker.wait_ready(120)
        assert worker.request({"op": "compile", "module": place.request()}, 120)["compiled"] is True
        reply = worker.request(handoff_probe.probe_request(1, 2), 120)
    finally:
        worker.kill()
    assert reply["ok"] is False and reply["kind"] == "protocol" and "after a candidate" in reply["message"]


def test_both_sides_draw_the_same_probe_bytes_from_the_seed():
    from evaluator.sandboxed.handoff import probe_tensor

    first, again, other = probe_tensor(5, 4099, "cpu"), probe_tensor(5, 4099, "cpu"), probe_tensor(6, 4099, "cpu")
    assert first.shape == (4099,) and first.equal(again) and not first.equal(other)


@pytest.mark.gpu
def test_a_cuda_session_decides_its_hand_off_before_any_candidate():
    from evaluator.session import EvaluationSession

    with EvaluationSession(ROOT / "tests" / "tasks" / "axpy.py", "cuda") as session:
        assert session.handoff_mode == "vmm", session.environment.get("output_handoff")
        assert session.environment["output_handoff"] == "vmm"
