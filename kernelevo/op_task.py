"""Turn a decorated op into a standalone KernelBench-format task module, so that a decorated op and a
KernelBench file go through one evaluation path.

:func:`write_task` only writes text: it never imports user code. The generated module calls
:func:`load_op` when *it* is imported, which happens only inside the evaluator's sandboxed worker; all
failures there (import error, ``inputs`` raising, wrong types, cases on the wrong device) raise
:class:`OpLoadError` naming the op, the file and what to fix. The candidate contract is the same as
for task files: a module with ``class ModelNew(nn.Module)`` whose ``forward`` has the op's signature.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import traceback
from pathlib import Path

from evaluator.verdict import EvalSetupError
from kernelevo.op import split_op_id

_SCALARS = (bool, int, float, str, type(None))


class OpLoadError(EvalSetupError):
    """The op could not be turned into a task (its module, its ``inputs``); the message says how."""


def _module_name(repo_root: Path, rel_path: str) -> tuple[Path, str]:
    """The sys.path entry and dotted module name for a file: walk up while ``__init__.py`` exists,
    like pytest's "prepend" import mode, so that the user's relative imports work."""
    file = (repo_root / rel_path).resolve()
    parts = [file.stem]
    directory = file.parent
    while (directory / "__init__.py").is_file() and directory != directory.parent:
        parts.append(directory.name)
        directory = directory.parent
    return directory, ".".join(reversed(parts))


def _resolve(module, qualname: str):
    obj = module
    for part in qualname.split("."):
        if part == "<locals>":
            raise OpLoadError(f"{qualname}: ops defined inside functions cannot be loaded; move it to module level")
        obj = getattr(obj, part)
    return obj


class LoadedOp:
    """A decorated op imported in the sandbox: its spec and a KernelBench ``Model`` class."""

    def __init__(self, op_id: str, obj, spec, model, kind: str):
        self.op_id, self.obj, self.spec, self.model, self.kind = op_id, obj, spec, model, kind

    def cases(self, device: str = "cpu", small: bool = False) -> list[list]:
        """``inputs(device)`` (or ``small_inputs``) validated: a non-empty list of argument tuples of
        tensors (on ``device``) and plain scalars."""
        name = "small_inputs" if small else "inputs"
        make = self.spec.small_inputs if small else self.spec.inputs
        try:
            value = make(device)
        except Exception as exc:
            raise OpLoadError(f"{self.op_id}: {name}({device!r}) raised {type(exc).__name__}: {exc}\n"
                              f"{_user_frames(exc)}") from None
        return validate_cases(self.op_id, name, value, device)

    def tolerance(self) -> dict:
        """``tolerance=`` as the evaluator's TOLERANCE dict (a number sets both atol and rtol)."""
        value = self.spec.tolerance
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return {"atol": float(value), "rtol": float(value)}
        if isinstance(value, dict) and set(value) <= {"atol", "rtol", "rel"}:
            return {k: float(v) for k, v in value.items()}
        raise OpLoadError(f"{self.op_id}: tolerance= must be a number or a dict with keys atol, rtol, rel; "
                          f"got {value!r}")

    def init_inputs(self) -> list:
        try:
            return self.spec.init_args()
        except Exception as exc:
            raise OpLoadError(f"{self.op_id}: init= raised {type(exc).__name__}: {exc}") from None


def _user_frames(exc: BaseException) -> str:
    return "".join(traceback.format_tb(exc.__traceback__)[-3:]).rstrip()


def validate_cases(op_id: str, name: str, value, device: str) -> list[list]:
    """Check what ``inputs``/``small_inputs`` returned; raise :class:`OpLoadError` saying what is wrong."""
    import torch

    if not isinstance(value, (list, tuple)) or len(value) == 0:
        raise OpLoadError(f"{op_id}: {name}(device) must return a non-empty list of argument tuples, "
                          f"e.g. [(x, w), (x2, w2)]; got {type(value).__name__}")
    want = torch.device(device).type
    cases = []
    for i, case in enumerate(value):
        if isinstance(case, torch.Tensor):
            raise OpLoadError(f"{op_id}: {name} case {i} is a tensor, not a tuple of arguments; "
                              f"write [(x,)] for an op with one argument")
        if not isinstance(case, (list, tuple)):
            raise OpLoadError(f"{op_id}: {name} case {i} is a {type(case).__name__}, expected a tuple of arguments")
        for j, arg in enumerate(case):
            if isinstance(arg, torch.Tensor):
                if type(arg) is not torch.Tensor:
                    raise OpLoadError(f"{op_id}: {name} case {i} argument {j} is a {type(arg).__name__}; "
                                      f"use plain torch.Tensor inputs")
                if arg.device.type != want:
                    raise OpLoadError(f"{op_id}: {name} case {i} argument {j} is on {arg.device}, expected "
                                      f"{want}: create tensors with device=device (the argument inputs "
                                      f"receives)")
            elif not isinstance(arg, _SCALARS):
                raise OpLoadError(f"{op_id}: {name} case {i} argument {j} is a {type(arg).__name__}; "
                                  f"arguments must be tensors or int/float/bool/str/None")
        cases.append(list(case))
    return cases


def load_op(repo_root: str | Path, op_id: str) -> LoadedOp:
    """Import the op's module (sandbox only) and wrap the op as a KernelBench ``Model``."""
    import torch

    from kernelevo.op import op_spec, original

    repo_root = Path(repo_root)
    rel_path, qualname = split_op_id(op_id)
    if not (repo_root / rel_path).is_file():
        raise OpLoadError(f"{op_id}: file {repo_root / rel_path} not found")
    path_entry, module_name = _module_name(repo_root, rel_path)
    if str(path_entry) not in sys.path:
        sys.path.insert(0, str(path_entry))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        where = ""
        if isinstance(exc, SyntaxError):
            where = f" (line {exc.lineno})"
        raise OpLoadError(f"{op_id}: importing {rel_path} as {module_name} failed{where}: "
                          f"{type(exc).__name__}: {exc}\n{_user_frames(exc)}") from None
    try:
        obj = _resolve(module, qualname)
    except AttributeError:
        raise OpLoadError(f"{op_id}: {module_name} has no {qualname} (renamed or removed?)") from None
    spec = op_spec(obj)
    if spec is None:
        raise OpLoadError(f"{op_id}: {qualname} is not decorated with @kernelevo.optimize")
    if isinstance(obj, type):
        return LoadedOp(op_id, obj, spec, original(obj), "module")
    if "." in qualname:
        raise OpLoadError(f"{op_id}: methods cannot be evaluated as tasks yet; decorate a module-level "
                          f"function or the nn.Module class instead")
    fn = original(obj)
    if not callable(fn):
        raise OpLoadError(f"{op_id}: {qualname} is neither a function nor an nn.Module subclass")

    class Model(torch.nn.Module):
        """The op as a KernelBench model (no parameters; forward calls the original function)."""

        def forward(self, *args, **kwargs):
            return fn(*args, **kwargs)

    # forward shows the op's own signature, so candidates are checked against (x, w, eps=...); a function's
    # attributes are its ``__dict__``, where inspect.signature finds ``__signature__``.
    signature = inspect.signature(fn)
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    vars(Model.forward)["__signature__"] = signature.replace(parameters=[this, *signature.parameters.values()])
    Model.__qualname__ = Model.__name__ = "Model"
    return LoadedOp(op_id, obj, spec, Model, "function")


_TEMPLATE = '''"""KernelBench-format task generated by kernelevo.op_task for {op_id}.

Importing this module imports the user's code: only the evaluator's sandboxed worker does that.
"""

from kernelevo.op_task import load_op

_op = load_op({repo_root!r}, {op_id!r})
Model = _op.model


def get_init_inputs():
    return _op.init_inputs()


def get_cases():
    return _op.cases("cpu")


def get_inputs():
    return get_cases()[0]


if _op.spec.small_inputs is not None:
    _inputs_called = []

    def get_small_cases():
        # A GPU run calls `inputs`; a CPU run judges `small_inputs` only, so it calls `inputs` once too: one that
        # raises is then an op setup error (op, file, line) wherever the search runs.
        if not _inputs_called:
            get_cases()
            _inputs_called.append(True)
        return _op.cases("cpu", small=True)


if _op.spec.tolerance is not None:
    TOLERANCE = _op.tolerance()

ALLOW_TORCH_OPS = tuple(_op.spec.allow)
'''


def task_source(repo_root: str | Path, op_id: str) -> str:
    """The text of the task module for ``op_id`` (pure: no import of user code)."""
    split_op_id(op_id)
    return _TEMPLATE.format(repo_root=str(Path(repo_root).resolve()), op_id=op_id)


def write_task(repo_root: str | Path, op_id: str, dest: str | Path) -> Path:
    """Write the task module for ``op_id`` to ``dest`` (a file path) and return it."""
    from kernelevo.sandbox.policy import vouch_for_task_root

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(task_source(repo_root, op_id), encoding="utf-8")
    vouch_for_task_root(repo_root)  # its sandboxes may read this repository (evaluator.roles.task_source_roots)
    return dest
