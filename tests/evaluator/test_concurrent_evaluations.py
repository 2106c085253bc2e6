"""One session judging several candidates at once (the search's parallel evaluations), and the GPU
phase lock that keeps timing exclusive while the others' checks overlap."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evaluator.gpu_phases import GpuPhases

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "tests" / "candidates"


def test_one_session_gives_each_concurrent_candidate_its_own_right_verdict():
    from evaluator import EvaluationSession

    expected = {"honest/axpy_launcher.py": ("accepted", "ok"), "honest/axpy_autotune.py": ("accepted", "ok"),
                "adversarial/input_mutation_zero.py": ("rejected", "incorrect"),
                "adversarial/wrong_mask_odd.py": ("rejected", "incorrect")}
    with EvaluationSession(ROOT / "tests" / "tasks" / "axpy.py", device="cpu") as session:
        with ThreadPoolExecutor(max_workers=len(expected)) as pool:
            verdicts = dict(zip(expected, pool.map(lambda f: session.evaluate(CANDIDATES / f), expected)))
    got = {f: (v.verdict, v.reason) for f, v in verdicts.items()}
    for name, (verdict, reason) in expected.items():
        assert got[name][0] == verdict, f"{name}: {verdicts[name].detail}"
        if verdict == "accepted":
            assert got[name][1] == reason
    assert len({v.candidate for v in verdicts.values()}) == len(expected)


def test_timing_waits_for_checks_in_flight_and_holds_the_gpu_alone():
    phases, events, lock = GpuPhases(), [], threading.Lock()
    checking, timed = threading.Event(), threading.Event()

    def log(what):
        with lock:
            events.append(what)

    def check(name, hold_s):
        with phases.shared():
            log(f"{name} start")
            checking.set()
            time.sleep(hold_s)
            log(f"{name} end")

    def time_candidate():
        checking.wait()
        with phases.exclusive():
            log("timing start")
            timed.set()
            time.sleep(0.05)
            log("timing end")

    threads = [threading.Thread(target=check, args=("check-a", 0.1)), threading.Thread(target=time_candidate)]
    for t in threads:
        t.start()
    time.sleep(0.03)  # the timing run is now waiting for check-a
    late = threading.Thread(target=check, args=("check-b", 0.0))  # arrives while timing waits: must not jump in
    late.start()
    for t in [*threads, late]:
        t.join(5)
    assert events.index("timing start") > events.index("check-a end")
    assert events.index("check-b start") > events.index("timing end")
