"""Ctrl-C does not wait for the offline proposer's call in flight: its process is killed and the call returns."""

from __future__ import annotations

import threading
from pathlib import Path

from evaluator import processes
from kernelevo.search.offline.sandboxed import SandboxedOfflineProposer
from kernelevo.search.proposer import abort_calls

TASK = (Path(__file__).resolve().parents[2] / "tests" / "tasks" / "rmsnorm.py").read_text()


def test_abort_ends_a_call_that_is_waiting_on_the_proposers_process():
    proposer = SandboxedOfflineProposer()
    try:
        assert proposer.strategies(TASK)  # the process is up
        worker = proposer._worker
        assert worker is not None
        ended: list[BaseException] = []

        def in_flight() -> None:  # a call whose reply has not come yet (the process is still working on it)
            try:
                worker.receive(600)
            except BaseException as exc:  # noqa: BLE001 - what the call sees is the point
                ended.append(exc)

        caller = threading.Thread(target=in_flight, daemon=True)
        caller.start()
        abort_calls(proposer)
        caller.join(120)
        assert not caller.is_alive() and isinstance(ended[0], processes.WorkerDied), ended
        assert proposer.strategies(TASK)  # the next call starts a fresh process
    finally:
        proposer.close()


def test_a_proposer_without_abort_is_left_alone():
    abort_calls(object())
