"""Values an op treats specially in an integer input, which a task's draw never holds.

Integer inputs keep the task's draw (their order and range are the op's: indices into a table, sorted offsets), so a
value the op gives a meaning of its own (cross entropy's ``ignore_index=-100``, a padding index) is never checked
unless the task draws it, and a kernel that skips its handling passes. Under every distribution but the task's own
the reference process therefore writes one such value at secret positions of each integer input of each case
(:func:`marked`; a share of them from a few to most, each share on some seed), chosen from :func:`candidates` where
the op accepts it (no error, answers still finite) and where it means something of its own: the op's answers change,
and they differ from what any in-range value that it could be an alias of gives (``weight[idx]`` counts -1 from the
end: a wrapped index, not a sentinel). The positions come from the seed, which no candidate sees.

Pure functions: the reference process runs the trials (:class:`evaluator.sandboxed.reference.ReferenceRunner`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import torch

from kernelevo import pyast

# (case, input, value, share): that integer input of that case holds the value at a share of its elements, at secret
# positions
Mark = tuple[int, int, int, float]

# of an integer input's elements, one of these shares (at least one element, never all) holds the sentinel; the seeds
# that hold one take them in turn, in an order of their own, so a kernel that handles it only while it is rare (or only
# while it is common) is wrong on some seed of every evaluation
SHARES = (0.03, 0.15, 0.4, 0.7)
WORDS = ("ignore", "pad", "blank", "mask", "invalid", "sentinel", "missing", "null", "unk", "eos", "bos")
LIMIT = 8  # candidates tried per input at most (each trial is a forward pass or two)


def candidates(source: str, model: torch.nn.Module | None, called: Sequence[int] = ()) -> tuple[int, ...]:
    """The values worth trying: ``called`` (integer arguments of the ATen ops the op ran whose names say what they
    are for: ``nll_loss_forward``'s ``ignore_index=-100``, ``embedding``'s ``padding_idx``; :func:`answers`),
    integer constants the task's source binds to such a name (``ignore_index=255``, ``PAD_ID = 0``, a default
    ``padding_idx=1``), and integer attributes of the model's modules named so (``nn.CrossEntropyLoss.ignore_index``).
    A value nothing names is never tried: an integer the op reads as data or as an offset keeps the task's draw."""
    found: list[int] = [*called, *_named_in_source(source)]
    if model is not None:
        for module in model.modules():
            found.extend(v for k, v in vars(module).items() if type(v) is int and _says_special(k))
    return tuple(dict.fromkeys(found))[:LIMIT]


@functools.lru_cache(maxsize=8)
def _named_in_source(source: str) -> tuple[int, ...]:
    """Integer constants ``source`` binds to a name that says what they are for (parsed once per task source: each
    marked seed asks again)."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    return tuple(value for name, node in _named_values(tree) if _says_special(name)
                 for value in [_int_literal(node)] if value is not None)


def answers(model: torch.nn.Module, inputs: list[Any],
            record: list[int] | None = None) -> list[torch.Tensor] | None:
    """``model``'s answers on copies of ``inputs`` (a forward that writes into its inputs changes none of the
    caller's), or None where it raises or answers something other than tensors. ``record``: gets the integer
    arguments, named as :func:`candidates` asks, of every ATen op the forward runs."""
    try:
        with torch.no_grad(), (_recording(record) if record is not None else contextlib.nullcontext()):
            out = model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs])
    except Exception:  # noqa: BLE001 - the op refuses these inputs
        return None
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    return [o.detach() for o in out] if all(isinstance(o, torch.Tensor) for o in out) else None


def _recording(into: list[int]) -> contextlib.AbstractContextManager[Any]:
    """A dispatch mode that adds to ``into`` the integer arguments of ATen ops whose schema names them as special
    values (``ignore_index``, ``padding_idx``). Imported here, in the reference process only: the module also
    serves candidate processes, whose import policy watches this one."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            schema = getattr(func, "_schema", None)
            if schema is not None:
                for argument, value in [*zip(schema.arguments, args),
                                        *((a, kwargs[a.name]) for a in schema.arguments if a.name in kwargs)]:
                    if type(value) is int and _says_special(argument.name) and value not in into:
                        into.append(value)
            return func(*args, **kwargs)

    return Recorder()


def _named_values(tree: ast.AST) -> list[tuple[str, ast.expr]]:
    """(name, value) for keyword arguments, parameter defaults and assignments to a name or an attribute."""
    pairs: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg:
            pairs.append((node.arg, node.value))
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            pairs.extend((a.arg, d) for a, d in zip(positional[len(positional) - len(node.defaults):], node.defaults))
            pairs.extend((a.arg, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = target.id if isinstance(target, ast.Name) else \
                    target.attr if isinstance(target, ast.Attribute) else None
                if name:
                    pairs.append((name, node.value))
    return pairs


def _says_special(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in WORDS)


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _int_literal(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def markable(value: Any) -> bool:
    """An integer input that can hold a sentinel: a contiguous tensor of at least two elements (a layout the
    draw gave it stays as drawn; booleans are masks, shuffled elsewhere)."""
    return (isinstance(value, torch.Tensor) and not value.is_floating_point() and not value.is_complex()
            and value.dtype != torch.bool and value.numel() >= 2 and value.is_contiguous())


def fits(value: torch.Tensor, sentinel: int) -> bool:
    """Whether ``value``'s dtype holds ``sentinel`` and the draw does not already (then it is checked anyway)."""
    info = torch.iinfo(value.dtype)
    return info.min <= sentinel <= info.max and not bool((value == sentinel).any())


def positions(numel: int, seed: int, case: int, index: int, share: float) -> torch.Tensor:
    """The flat positions that hold the sentinel: ``share`` of them, at least one, never all."""
    gen = torch.Generator().manual_seed((seed * 1_000_003 + case * 7919 + index * 104_729 + 65_537) % (1 << 62))
    count = min(max(1, int(numel * share)), numel - 1)
    return torch.randperm(numel, generator=gen)[:count]


def marked(value: torch.Tensor, sentinel: int, seed: int, case: int, index: int, share: float) -> torch.Tensor:
    """A copy of ``value`` (contiguous, as :func:`markable` asks) with ``sentinel`` at the secret positions."""
    out = value.clone()
    where = positions(value.numel(), seed, case, index, share).to(value.device)
    out.view(-1)[where] = sentinel
    return out


def aliases(sentinel: int, tensors: list[Any]) -> list[int]:
    """Values ``sentinel`` may stand for: it plus or minus each size of ``tensors`` (the case's inputs and the
    model's weights: a negative index counting from the end of some dimension), where that is a valid index
    of some size (the op says which by refusing the rest)."""
    sizes = sorted({int(n) for v in tensors if isinstance(v, torch.Tensor) for n in v.shape if n > 0})
    top = max(sizes, default=0)
    return sorted({a for n in sizes for a in (sentinel + n, sentinel - n) if 0 <= a < top and a != sentinel})
