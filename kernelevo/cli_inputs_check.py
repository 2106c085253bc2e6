"""On the CPU a search judges a decorated op's ``small_inputs`` only, so an ``inputs`` that raises would go
unnoticed until the first GPU run. ``kernelevo optimize`` appends :data:`CHECK_INPUTS_TOO` to the task module it
generates for the op (``kernelevo.op_task``), so that the sandboxed reference process also calls ``inputs``
once, exactly as a GPU run does (on the CPU, then moved): a failure is an op setup error, reported with the op,
file and line and without stopping the other ops. The appended text is constant: nothing from the user's
repository reaches it.
"""

from __future__ import annotations

from pathlib import Path

CHECK_INPUTS_TOO = '''

# Appended by `kernelevo optimize` (kernelevo.cli_inputs_check): a CPU search judges small_inputs only, but a GPU
# run calls inputs, so inputs is called once here too, as a GPU run calls it.
if "get_small_cases" in globals():
    _kernelevo_small_cases = get_small_cases
    _kernelevo_inputs_checked = []

    def get_small_cases():
        if not _kernelevo_inputs_checked:
            get_cases()
            _kernelevo_inputs_checked.append(True)
        return _kernelevo_small_cases()
'''


def check_inputs_too(task_path: Path) -> None:
    """Append :data:`CHECK_INPUTS_TOO` to a generated task module (once)."""
    text = task_path.read_text(encoding="utf-8")
    if CHECK_INPUTS_TOO not in text:
        task_path.write_text(text + CHECK_INPUTS_TOO, encoding="utf-8")
