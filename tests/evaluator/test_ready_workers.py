"""How many candidate processes a session keeps started (evaluator.options.ready_workers_for)."""

from evaluator.options import GPU_EXTRA_READY, ready_workers_for


def test_cpu_keeps_one_per_evaluation_in_flight():
    assert [ready_workers_for("cpu", n) for n in (0, 1, 3)] == [1, 1, 3]


def test_gpu_keeps_extra_processes_to_hide_its_longer_start_up():
    assert ready_workers_for("cuda", 1) == 1 + GPU_EXTRA_READY
    assert ready_workers_for("cuda", 3) == 3 + GPU_EXTRA_READY
    assert GPU_EXTRA_READY >= 1
