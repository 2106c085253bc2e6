"""The evaluation window: results absorbed in submission order, slots kept busy behind a slow candidate."""

import threading
import time

from kernelevo.search.window import EvaluationWindow


class Recorder:
    """Judges that sleep as told and log when they start and finish."""

    def __init__(self):
        self.events, self.lock = [], threading.Lock()

    def judge(self, name, sleep_s):
        def run():
            with self.lock:
                self.events.append(("start", name))
            time.sleep(sleep_s)
            with self.lock:
                self.events.append(("end", name))
            return {"id": name}
        return run


def test_results_are_absorbed_in_submission_order_whatever_finishes_first():
    absorbed, recorder = [], Recorder()
    window = EvaluationWindow(3, lambda record: absorbed.append(record["id"]))
    for i, sleep_s in enumerate([0.2, 0.0, 0.1, 0.0, 0.05, 0.0]):
        window.submit(recorder.judge(f"c{i}", sleep_s))
    window.drain()
    window.close()
    assert absorbed == [f"c{i}" for i in range(6)]


def slow_head_then_quick(size, slow_s, quick, after_each=None):
    """A window of ``size`` given one slow candidate, then ``quick`` fast ones; ``after_each`` runs after
    every quick submission. Returns the absorbed ids, the recorder and whether every submission returned
    before the slow one ended."""
    absorbed, recorder = [], Recorder()
    window = EvaluationWindow(size, lambda record: absorbed.append(record["id"]))
    window.submit(recorder.judge("slow", slow_s))
    for i in range(quick):
        window.submit(recorder.judge(f"quick{i}", 0.01))
        if after_each:
            after_each(window)
    returned_early = ("end", "slow") not in recorder.events
    window.drain()
    window.close()
    return absorbed, recorder, returned_early


def test_a_slow_candidate_at_the_head_does_not_keep_the_other_slots_empty():
    absorbed, recorder, returned_early = slow_head_then_quick(3, 1.0, 8)
    before_slow_ended = recorder.events[:recorder.events.index(("end", "slow"))]
    assert returned_early
    assert sum(kind == "start" for kind, _ in before_slow_ended) == 9, recorder.events
    assert absorbed == ["slow"] + [f"quick{i}" for i in range(8)]


def test_the_backlog_behind_a_slow_head_is_bounded():
    def bounded(window):
        assert window.pending <= 2 * 4  # size x BACKLOG

    absorbed, _, _ = slow_head_then_quick(2, 0.3, 20, after_each=bounded)
    assert absorbed[0] == "slow" and len(absorbed) == 21
