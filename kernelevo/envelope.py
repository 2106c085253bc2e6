"""The verified envelope of an accepted kernel, compiled into a fast per-call check.

An envelope (in the kernel's manifest) lists what the verifier checked: device type and capability,
and per argument the dtypes, rank and dimension ranges of tensors and the values of everything else.
:class:`EnvelopeCheck` turns it into generated code, so a call inside the envelope costs under a
microsecond on the CPU (bench/dispatch_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_capabilities: dict[int, tuple[int, int]] = {}


def clear_capabilities() -> None:
    """Forget the device capabilities read so far (tests change what a device reports)."""
    _capabilities.clear()


def _capability(index: int) -> tuple[int, int]:
    cap = _capabilities.get(index)
    if cap is None:
        import torch

        major, minor = torch.cuda.get_device_capability(index)
        cap = _capabilities[index] = (major, minor)
    return cap


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument the verifier checked: its dtypes, rank and per-dimension ``(min, max)`` (max None: open)."""

    index: int
    dtypes: frozenset[torch.dtype]
    rank: int
    dims: tuple[tuple[int, int | None], ...]
    contiguous: bool = False  # only contiguous tensors (every checked one was)


@dataclass(frozen=True)
class ValueSpec:
    """A non-tensor argument: its type's name and, when the verifier saw only some, the values it saw."""

    index: int
    type_name: str
    values: list[Any] | None


class EnvelopeCheck:
    """A compiled envelope: ``check(args)`` returns None when inside, else why not (a sentence)."""

    def __init__(self, envelope: dict[str, Any]):
        import torch

        self._torch = torch
        self.device_type: str = envelope.get("device_type", "cuda")
        caps = envelope.get("capabilities")
        self.capabilities: set[tuple[int, ...]] | None = None if caps is None else {tuple(c) for c in caps}
        self.specs: list[TensorSpec | ValueSpec] = []
        for i, arg in enumerate(envelope.get("args", [])):
            if arg["kind"] == "tensor":
                dtypes = frozenset(getattr(torch, name) for name in arg["dtypes"])
                if not all(isinstance(t, torch.dtype) for t in dtypes):
                    raise ValueError(f"envelope argument {i}: unknown dtype in {arg['dtypes']}")
                dims = tuple((int(d.get("min", 0)), None if d.get("max") is None else int(d["max"]))
                             for d in arg["dims"])
                self.specs.append(TensorSpec(i, dtypes, int(arg["rank"]), dims, bool(arg.get("contiguous", False))))
            else:
                values = arg.get("values")
                self.specs.append(ValueSpec(i, arg["type"], None if values is None else list(values)))
        self.n_args = len(self.specs)
        # The verified cases' shapes together (envelopes written before they were recorded: the ranges alone).
        shapes = envelope.get("shapes")
        self.shapes: frozenset[tuple[tuple[int, ...] | None, ...]] | None = None if shapes is None else frozenset(
            tuple(None if shape is None else tuple(int(n) for n in shape) for shape in case) for case in shapes)
        self.inside = self._compile()

    def _compile(self) -> Callable[[tuple[Any, ...]], bool]:
        """Generate a straight-line ``inside(args) -> bool`` for this envelope (the hot path of every
        dispatched call: no loops, no descriptive strings; ``x.is_cpu`` instead of ``x.device.type``,
        which costs ~0.3 us). :meth:`explain` says why a call is outside."""
        names: dict[str, Any] = {"grad": self._torch.is_grad_enabled, "cap": _capability, "CAPS": self.capabilities}
        lines = ["def inside(args):", f"    if len(args) != {self.n_args}:", "        return False"]
        if self.n_args:
            lines.append(f"    {', '.join(f'a{i}' for i in range(self.n_args))}, = args")
        tensors = []
        for spec in self.specs:
            i = spec.index
            if isinstance(spec, TensorSpec):
                rank, dims = spec.rank, spec.dims
                tensors.append(f"a{i}")
                names[f"D{i}"] = spec.dtypes
                lines += [f"    if a{i}.dtype not in D{i}:", "        return False",
                          f"    s = a{i}.shape", f"    if len(s) != {rank}:", "        return False"]
                for d, (lo, hi) in enumerate(dims):
                    test = f"s[{d}] != {lo}" if lo == hi else (
                        f"s[{d}] < {lo}" if hi is None else f"not {lo} <= s[{d}] <= {hi}")
                    lines += [f"    if {test}:", "        return False"]
                if spec.contiguous:
                    lines += [f"    if not a{i}.is_contiguous():", "        return False"]
                if self.device_type in ("cuda", "cpu"):
                    lines += [f"    if not a{i}.is_{self.device_type}:", "        return False"]
                else:
                    lines += [f"    if a{i}.device.type != {self.device_type!r}:", "        return False"]
                if self.device_type == "cuda" and self.capabilities is not None:
                    lines += [f"    if cap(a{i}.get_device()) not in CAPS:", "        return False"]
            else:
                names[f"T{i}"] = spec.type_name
                lines += [f"    if type(a{i}).__name__ != T{i}:", "        return False"]
                if spec.values is not None:
                    names[f"V{i}"] = spec.values
                    lines += [f"    if a{i} not in V{i}:", "        return False"]
        if tensors:
            lines += [f"    if grad() and ({' or '.join(t + '.requires_grad' for t in tensors)}):",
                      "        return False"]
        if self.shapes is not None:
            names["SHAPES"] = self.shapes
            key = ", ".join(f"tuple(a{s.index}.shape)" if isinstance(s, TensorSpec) else "None" for s in self.specs)
            lines += [f"    if ({key},) not in SHAPES:", "        return False"]
        lines.append("    return True")
        exec("\n".join(lines), names)  # built from ints, dtypes and a repr'd device name only
        return names["inside"]

    def check(self, args: tuple[Any, ...]) -> str | None:
        """None when ``args`` are inside the envelope, else the reason (a sentence)."""
        try:
            if self.inside(args):
                return None
        except (AttributeError, TypeError):  # e.g. a list where a tensor was verified
            pass
        try:
            return self.explain(args) or "an argument differs from the verified cases"
        except (AttributeError, TypeError):
            return "an argument's type differs from the verified cases"

    def explain(self, args: tuple[Any, ...]) -> str | None:
        """Why ``args`` are outside the envelope (slow path, messages for the warning)."""
        if len(args) != self.n_args:
            return f"called with {len(args)} arguments, verified with {self.n_args}"
        device_type = self.device_type
        grad = self._torch.is_grad_enabled()
        for spec in self.specs:
            i = spec.index
            x = args[i]
            if isinstance(spec, TensorSpec):
                if x.dtype not in spec.dtypes:
                    return f"argument {i} has dtype {x.dtype}, verified {sorted(map(str, spec.dtypes))}"
                shape = x.shape
                if len(shape) != spec.rank:
                    return f"argument {i} has rank {len(shape)}, verified rank {spec.rank}"
                for d, (lo, hi) in enumerate(spec.dims):
                    n = shape[d]
                    if n < lo or (hi is not None and n > hi):
                        return f"argument {i} dim {d} is {n}, verified {lo}..{hi}"
                if spec.contiguous and not x.is_contiguous():
                    return f"argument {i} is not contiguous (strides {tuple(x.stride())}), verified contiguous only"
                if device_type == "cuda":
                    if not x.is_cuda:
                        return f"argument {i} is on {x.device.type}, verified on cuda"
                    if self.capabilities is not None and _capability(x.get_device()) not in self.capabilities:
                        return f"device capability {_capability(x.get_device())} was not verified"
                elif device_type == "cpu":
                    if not x.is_cpu:
                        return f"argument {i} is on {x.device.type}, verified on cpu"
                elif x.device.type != device_type:
                    return f"argument {i} is on {x.device.type}, verified on {device_type}"
                if grad and x.requires_grad:
                    return "autograd is recording and the kernel is forward-only"
            else:
                if type(x).__name__ != spec.type_name:
                    return f"argument {i} is a {type(x).__name__}, verified {spec.type_name}"
                if spec.values is not None and x not in spec.values:
                    return f"argument {i} = {x!r}, verified only {spec.values}"
        if self.shapes is not None:
            given = tuple(tuple(args[s.index].shape) if isinstance(s, TensorSpec) else None for s in self.specs)
            if given not in self.shapes:
                return (f"the shapes {shapes_text(given)} were not verified together (verified: "
                        f"{'; '.join(shapes_text(c) for c in sorted(self.shapes, key=repr))})")
        return None


def shapes_text(case: Sequence[Sequence[int] | None]) -> str:
    """One verified case's tensor shapes as text: ``[16, 128] & [128]`` (pure)."""
    return " & ".join("[" + ", ".join(map(str, shape)) + "]" for shape in case if shape is not None)


class InitCheck:
    """The constructor arguments a module's kernel was verified with (the envelope's ``init``): ``check(values)``
    returns None when a module was built with the same non-tensor values, else why not. Runs once per module, when
    its kernel would be built, so a plain comparison is fast enough."""

    def __init__(self, init: list[dict[str, Any]]):
        self.values: list[Any] = []  # per position: the verified value, or TENSOR (not pinned)
        for i, arg in enumerate(init):
            if arg["kind"] == "tensor":
                self.values.append(TENSOR)
            elif arg.get("values") is None or len(arg["values"]) != 1:
                raise ValueError(f"envelope init argument {i}: expected the one value it was verified with")
            else:
                self.values.append(arg["values"][0])

    def check(self, init: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """None when a module built by ``init(self, *args, **kwargs)`` got the values it was verified with, each
        parameter compared after defaults are applied on both sides (``Norm(64)`` and ``Norm(64, eps=1e-5)`` are the
        same module when the default is 1e-5)."""
        import inspect

        try:
            signature = inspect.signature(init)
            given = signature.bind(None, *args, **kwargs)
            verified = signature.bind(None, *(None if v is TENSOR else v for v in self.values))
        except (TypeError, ValueError):
            return "the module's constructor arguments could not be matched with the verified ones"
        given.apply_defaults()
        verified.apply_defaults()
        tensors = {name for name, value in zip(list(signature.parameters)[1:], self.values) if value is TENSOR}
        for name in list(signature.parameters)[1:]:
            if name in tensors:
                continue
            value, expected = given.arguments.get(name), verified.arguments.get(name)
            if type(value) is not type(expected) or value != expected:
                return f"constructor argument {name} = {value!r}, verified only {expected!r}"
        return None


TENSOR = object()  # a tensor constructor argument: not pinned (its values are the module's own state)


# ------------------------------------------------------------------------------------- locating


# ------------------------------------------------------------------------------------- what was verified

# Float literals every kernel is full of (masks, identities, halves): not constants of the op.
_TRIVIAL_FLOATS = frozenset({0.0, 1.0, -1.0, 0.5, 2.0, -0.5})


def hard_coded_floats(kernel_source: str) -> list[float]:
    """The non-trivial float literals of a kernel's source, in order of first use (``1e-06``, ``0.7``): values
    the kernel fixes that the op may have read from an argument, a default or a module constant. A parameter's
    default (``def __init__(self, dim, eps=1e-05)``) is not one: the caller's value replaces it. Static (AST
    only): the kernel is never imported here."""
    import ast

    from kernelevo import pyast

    try:
        tree = pyast.parse(kernel_source)
    except (SyntaxError, ValueError):
        return []
    defaults = {id(d) for node in ast.walk(tree) if isinstance(node, ast.arguments)
                for d in (*node.defaults, *node.kw_defaults) if d is not None}  # a caller's value replaces these
    constants = sorted((node.lineno, node.col_offset, node.value) for node in ast.walk(tree)
                       if isinstance(node, ast.Constant) and type(node.value) is float
                       and node.value not in _TRIVIAL_FLOATS and id(node) not in defaults)
    found: list[float] = []
    for _, _, value in constants:
        if value not in found:
            found.append(value)
    return found


def _fmt_dims(dims: list[dict[str, Any]]) -> str:
    parts = []
    for d in dims:
        lo, hi = d.get("min", 0), d.get("max")
        parts.append(str(lo) if lo == hi else f"{lo}..{'' if hi is None else hi}")
    return "[" + ", ".join(parts) + "]"


def verified_scope_lines(envelope: dict[str, Any], cases: list[list[str]], kernel_source: str,
                         small_only: bool) -> list[str]:
    """What the summary says about where the kernel was verified and where dispatch will use it (pure).

    ``cases``: each verified case's arguments as text (``float32[5, 123]``, ``eps=1e-06``); ``small_only``: the
    cases were the op's ``small_inputs`` only (a CPU run: the interpreter is too slow for ``inputs``)."""
    device = envelope.get("device_type", "cuda")
    lines = [f"Verified on {device} for exactly {len(cases)} case(s): "
             + "; ".join("(" + ", ".join(c) + ")" for c in cases) + "."]
    ranges, shapes = [], envelope.get("shapes")
    for i, arg in enumerate(envelope.get("args", [])):
        if arg.get("kind") == "tensor":
            dims = "" if shapes else _fmt_dims(arg.get("dims", []))  # with shapes: said once, below
            ranges.append(f"arg {i}: {'/'.join(arg.get('dtypes', []))}{dims}")
        elif arg.get("values") is not None:
            ranges.append(f"arg {i}: {arg.get('type')} in {arg['values']}")
        else:
            ranges.append(f"arg {i}: any {arg.get('type')}")
    if ranges:
        exact = f"; shapes exactly those of one verified case ({' or '.join(map(shapes_text, shapes))})" \
            if shapes else ""
        lines.append(f"Dispatch uses it only for calls on {device} inside: {'; '.join(ranges)}{exact}; every other "
                     "call runs the original code.")
    if small_only:
        lines.append("On the CPU only the op's small_inputs were checked (the interpreter is too slow for its "
                     "inputs): full-size shapes and other dtypes run the original code until a search with --device "
                     "cuda on a GPU verifies them. Sizes are not widened by rescaling the inputs: they are the op's "
                     "own code, and which dims may change is not known.")
    constants = hard_coded_floats(kernel_source)
    if constants:
        values = ", ".join(repr(c) for c in constants)
        lines.append(f"The kernel hard-codes {values}: right only while the op uses the same value(s). A change "
                     "inside the op's own code makes the kernel stale (it is not used), but a value it reads "
                     "from elsewhere (a module constant, a config) is not tracked: re-run the search after "
                     "changing one.")
        floats = [i for i, arg in enumerate(envelope.get("args", []))
                  if arg.get("kind") == "value" and arg.get("type") == "float" and arg.get("values") is None]
        if floats:
            lines.append(f"Float argument(s) {', '.join(map(str, floats))} were verified only at the values above, "
                         "and this older manifest's envelope does not pin them: call the op with those values only, "
                         "or write the kernel again (--resume RUN --write-kernel --force) to pin them.")
    return lines
