"""Outputs handed from a candidate process to the reference: fingerprints, files, the fallback from VMM to files
(the VMM descriptors and their file descriptors: test_handoff_vmm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evaluator.sandboxed import handoff

KEY = 0x2F3A_1B4C_5D6E_7F80


def test_fingerprint_is_stable_and_sees_a_one_element_change():
    x = torch.randn(1000, 37)
    assert handoff.fingerprint(x, KEY) == handoff.fingerprint(x.clone(), KEY)
    changed = x.clone()
    changed[512, 3] = torch.nextafter(changed[512, 3], torch.tensor(1e9))
    assert handoff.fingerprint(changed, KEY) != handoff.fingerprint(x, KEY)
    assert handoff.fingerprint(x, KEY) != handoff.fingerprint(x, KEY + 1)


def test_fingerprint_sees_swapped_elements_and_follows_logical_order():
    x = torch.arange(64, dtype=torch.float16).reshape(8, 8)
    swapped = x.clone()
    swapped[0, 0], swapped[0, 1] = x[0, 1], x[0, 0]
    assert handoff.fingerprint(swapped, KEY) != handoff.fingerprint(x, KEY)
    assert handoff.fingerprint(x.t(), KEY) == handoff.fingerprint(x.t().contiguous(), KEY)


@pytest.mark.parametrize("tensor", [torch.ones(7, dtype=torch.uint8), torch.zeros(3, dtype=torch.bool),
                                    torch.empty(0), torch.randn(5, dtype=torch.bfloat16)])
def test_fingerprint_handles_any_byte_length(tensor):
    assert isinstance(handoff.fingerprint(tensor, KEY), int)


def test_outputs_go_through_a_file_on_cpu_even_when_vmm_is_asked(tmp_path: Path):
    outputs = [torch.randn(4, 5), torch.arange(3)]
    outbox = handoff.Outbox(KEY, "vmm")
    sent = outbox.send(outputs, tmp_path / "out.pt", "call 1")
    assert set(sent) == {"file"} and outbox.take_fds() == [] and outbox.export_failed is None
    received = handoff.receive(sent, "cpu", KEY)
    assert all(torch.equal(a, b) for a, b in zip(outputs, received))


def test_a_late_write_into_a_sent_output_is_noticed(tmp_path: Path):
    first, second = torch.randn(8, 8), torch.randn(3)
    outbox = handoff.Outbox(KEY, "file")
    outbox.send([first], tmp_path / "a.pt", "call 1")
    outbox.send([torch.ones(2), second], tmp_path / "b.pt", "call 2")
    assert outbox.changed_since_sent() is None
    second[1] += 1.0
    assert outbox.changed_since_sent() == "output 1 of call 2"


def test_an_unreadable_file_is_reported_not_raised(tmp_path: Path):
    (tmp_path / "out.pt").write_bytes(b"not a tensor file")
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.receive({"file": str(tmp_path / "out.pt")}, "cpu", KEY)
    assert caught.value.kind == "invalid"


def test_a_saved_view_holds_its_own_elements_only(tmp_path: Path):
    base = torch.arange(1000.0)
    sent = handoff.save_file([base[10:20], base.view(10, 100).t()], tmp_path / "out.pt")
    small, transposed = handoff.receive(sent, "cpu", KEY)
    assert torch.equal(small, base[10:20]) and torch.equal(transposed, base.view(10, 100).t())
    assert (tmp_path / "out.pt").stat().st_size < 3 * 1000 * 4  # the slice did not take its whole storage along


def _descriptor(**change) -> dict:
    good = {"fd": 0, "device": 0, "size_bytes": 1 << 21, "dtype": "float32", "shape": [4, 4], "stride": [4, 1],
            "storage_offset": 0, "fingerprint": 1}
    return {**good, **change}


def test_kept_outputs_can_be_written_as_a_file_afterwards(tmp_path: Path):
    outputs = [torch.randn(6, 2)]
    outbox = handoff.Outbox(KEY, "vmm")
    outbox.send(outputs, tmp_path / "first.pt", "call 1")
    sent = outbox.save_kept(0, tmp_path / "again.pt")
    assert torch.equal(handoff.receive(sent, "cpu", KEY)[0], outputs[0])


class ScriptedReference:
    """A session whose reference process cannot map VMM allocations (the first reply says so)."""

    def __init__(self):
        from evaluator.options import EvalOptions

        self.options, self.handoff_mode, self.requests = EvalOptions(), "vmm", []
        self.replies = [{"ok": True, "results": [], "handoff_unavailable": "CUDA VMM could not map: error 201"},
                        {"ok": True, "results": [{"name": "o-1", "ok": True, "outputs": []}]}]

    def reference_request(self, request, timeout):
        self.requests.append(request)
        return self.replies.pop(0)

    def note_file_handoff(self, why):
        self.noted = why


class KeptOutputsWorker:
    """The candidate process's side of the fallback: it writes the outputs it kept as files."""

    def __init__(self):
        self.requests = []

    def request(self, request, timeout, fds=()):
        self.requests.append(request)
        return {"ok": True}


def test_when_vmm_cannot_be_mapped_that_candidates_outputs_are_judged_from_files_and_the_session_keeps_its_mode():
    from evaluator.calls import Judged, OutputChannel, judge_outputs

    session, worker = ScriptedReference(), KeptOutputsWorker()
    sent = {"vmm": [_descriptor()], "fds": [-1], "kept": 0, "path": "out-1.pt"}
    item = Judged("o-1", case=0, seed=1, distribution="task", sent=sent)
    evidence = {"overhead": {}, "correctness": {"cases": [{"case": 0, "inputs": [], "checks": []}]}}
    judge_outputs(session, OutputChannel(worker, KEY), [item], evidence, "correctness")
    assert worker.requests == [{"op": "save_kept", "outputs": [sent]}]
    assert [r["outputs"][0]["sent"] for r in session.requests] == [sent, {"file": "out-1.pt"}]
    assert session.handoff_mode == "vmm" and "error 201" in session.noted  # a candidate's doing: noted, not obeyed
    assert evidence["overhead"]["output_handoff"].startswith("file (")
    assert evidence["correctness"]["cases"][0]["checks"][0]["ok"] is True
