"""An op that could not be searched, said in the user's terms: which op, which file and line of *their* code.

``kernelevo optimize`` on a repository goes on with the other ops when one op's task cannot be set up (a typo
in its ``small_inputs``, an import error), and reports each such op with the place to fix it. The evaluator's
message names the generated task module (``<run>/task.py``) and its line; for a decorated op those point into
code the user never wrote, so they are replaced by the last frame in the op's own file. Pure functions only.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
# How the evaluator names the generated task module (a hook of it, or its import) before the op's own message.
_GENERATED_PREFIX = re.compile(r"^\S*task\.py: (?:\w+\(\) raised|the task file raised) OpLoadError(?: on import)?: ")
_TRAILING_LINE = re.compile(r"\s*\(line (\d+)\)\s*$")  # the evaluator's pointer into the task module
_LEADING_LINE = re.compile(r"^\S+?\.py:(\d+): ")


@dataclass(frozen=True)
class OpFailure:
    """One op whose search could not start; ``file`` is relative to the repository, ``line`` 1-based."""

    op_id: str
    file: str
    line: int | None
    message: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def headline(self) -> str:
        first, _, _ = self.message.partition("\n")
        return f"{self.where}: {self.op_id} cannot be searched: {first}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe_setup_error(op_id: str, kind: str, rel_path: str, def_line: int, repo_root: Path,
                         message: str) -> OpFailure:
    """The failure of one op's task setup, located in the op's file: for a decorated op the deepest
    traceback frame in that file (else the line of its ``def``); for a task file the line the evaluator named."""
    text = message.strip()
    if kind == "task":
        found = _TRAILING_LINE.search(text) or _LEADING_LINE.match(text)
        return OpFailure(op_id, rel_path, int(found.group(1)) if found else None, text)
    text = _GENERATED_PREFIX.sub("", text)
    text = _TRAILING_LINE.sub("", text)
    if text.startswith(op_id + ": "):
        text = text[len(op_id) + 2:]
    op_file = (Path(repo_root) / rel_path).resolve()
    lines = [int(n) for file, n in _FRAME.findall(message) if _same_file(file, op_file)]
    return OpFailure(op_id, rel_path, lines[-1] if lines else def_line, _user_frames_only(text, op_file))


def _user_frames_only(text: str, op_file: Path) -> str:
    """The message with only the traceback frames in the op's own file (kernelevo's and importlib's dropped)."""
    kept: list[str] = []
    keep_frame = True
    for line in text.splitlines():
        frame = _FRAME.search(line) if line.startswith("  File ") else None
        if frame is not None:
            keep_frame = _same_file(frame.group(1), op_file)
        elif not line.startswith("    "):
            keep_frame = True  # not part of a frame
        if keep_frame:
            kept.append(line)
    return "\n".join(kept)


def _same_file(name: str, target: Path) -> bool:
    try:
        return Path(name).resolve() == target
    except (OSError, ValueError):
        return False


def closing_lines(failures: list[OpFailure], total: int, path: str | None) -> list[str]:
    """What the run ends with when some ops could not be searched: which, and the command to retry one."""
    if not failures:
        return []
    names = ", ".join(f.op_id for f in failures)
    lines = [f"{len(failures)} of {total} op(s) could not be searched (see above): {names}."]
    target = shlex.quote(path) if path else "PATH"
    retry = f"kernelevo optimize {target} --op {shlex.quote(failures[0].op_id)}"
    lines.append(f"Fix them and run again, e.g.: {retry}")
    return lines


# What a KernelBench task file must define at module level, and how to write each (the 3-line example).
_TASK_HOOKS = {
    "get_inputs": ("the inputs of one call of Model.forward",
                   "def get_inputs():\n    # one call's arguments of Model.forward, as a list\n"
                   "    return [torch.randn(16, 1024)]"),
    "get_init_inputs": ("the arguments of Model(...)",
                        "def get_init_inputs():\n    # the arguments of Model(...), as a list\n    return []"),
}


def task_file_problem(path: Path | str, source: str) -> str | None:
    """What a file that looks like a KernelBench task (a module-level ``class Model``) lacks, said the same way
    by ``optimize`` and ``eval``: the file, what is missing, what to add, and an example; None when nothing is
    missing or the file is not a task (a file with decorated ops, or one that does not parse). Static: the
    file is never imported."""
    import ast

    from kernelevo import pyast

    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    has_model = False
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            has_model = has_model or node.name == "Model"
            names.add(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    missing = [hook for hook in _TASK_HOOKS if hook not in names]
    if not has_model or not missing or _has_decorated_op(tree):
        return None
    lines = [f"{path}: this KernelBench task file (it defines class Model) has no "
             f"{' and no '.join(f'{m}()' for m in missing)}: add "
             + "; ".join(f"{m}() returning {_TASK_HOOKS[m][0]}" for m in missing) + ", e.g.:"]
    for m in missing:
        lines.append(_TASK_HOOKS[m][1])
    return "\n".join(lines)


def _has_decorated_op(tree) -> bool:
    """Whether a module-level def/class carries ``@kernelevo.optimize`` (then ``class Model`` is an op, not a task)."""
    import ast

    for node in tree.body:
        for decorator in getattr(node, "decorator_list", []):
            call = decorator.func if isinstance(decorator, ast.Call) else decorator
            if "optimize" in ast.unparse(call):
                return True
    return False
