"""Lower a traced ATen graph to the offline generator's small IR.

The IR splits the forward pass in two: *host* work that the candidate's ``forward`` may do itself
(sizes, views of its inputs, allocation) and *lane* values computed by kernels. Lane values are
pointwise ops, reductions along the last dimension (or one other dimension, which analysis then
moves last, or several trailing ones, which it merges), argmax/argmin and cumsum along it, gathers along it,
concatenation/slicing of the last dimension, a matmul (batched or not), full reductions, iotas
(``arange``) and gathers of table rows (``indexing.py``). Anything else raises :class:`Unsupported`
naming the op, so the proposer can say why it produced nothing.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.conv import BATCH_NORM_OPS, CONV_OPS, lower_batch_norm, lower_convolution
from kernelevo.search.offline.group_norm import GROUP_NORM_OPS, lower_group_norm
from kernelevo.search.offline.indexing import INDEX_OPS, bag, iota_view, live_values, lower_arange, lower_gather
from kernelevo.search.offline.ir import (
    Operand,
    Program,
    Unsupported,
    Value,
    ValueAttrs,
    appends_ones,
    rows_free,
    size_product,
)
from kernelevo.search.offline.trace import TracedTask
from kernelevo.search.offline.views import host_view

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["HANDLED", "Lowering", "Program", "Unsupported", "Value", "dead", "lower", "op_name"]


POINTWISE = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "true_divide": "div", "neg": "neg",
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "abs": "abs", "sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu", "erf": "erf", "pow": "pow",
    "where": "where", "ne": "ne", "eq": "eq", "lt": "lt", "gt": "gt", "le": "le", "ge": "ge",
    "clamp": "clamp", "clamp_min": "clamp_min", "clamp_max": "clamp_max", "maximum": "maximum",
    "minimum": "minimum", "round": "round", "floor": "floor", "ceil": "ceil", "reciprocal": "reciprocal",
    "logical_not": "logical_not", "bitwise_not": "logical_not", "sin": "sin", "cos": "cos",
    "log1p": "log1p", "expm1": "expm1", "sign": "sign", "fma": "fma",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
}
REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min", "var": "var", "std": "std"}
VIEW_OPS = {"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "expand", "broadcast_in_dim",
            "alias", "detach", "clone", "slice", "permute", "t", "transpose", "select",
            "split_with_sizes", "split", "lift_fresh_copy", "contiguous"}


# every ATen op name ``Lowering.lower`` has a branch for (analysis.unsupported_ops reports the others)
OTHER_OPS = {"sym_size", "sym_float", "scalar_tensor", "full", "_to_copy", "to", "convert_element_type", "gelu",
             "amax", "amin", "gather", "cat", "addmm", "mm", "bmm", "getitem", "argmax", "argmin", "cumsum", "max",
             "min"}
INPLACE = {f"{n}_": n for n in POINTWISE}  # clamp_min_ on a computed tensor (decompositions use them)
HANDLED = (set(POINTWISE) | set(INPLACE) | set(REDUCTIONS) | VIEW_OPS | OTHER_OPS | INDEX_OPS | CONV_OPS
           | BATCH_NORM_OPS | GROUP_NORM_OPS)


def _opname(target: Any) -> str:
    name = getattr(target, "__name__", str(target))
    overload = getattr(target, "_overloadpacket", None)
    if overload is not None:
        name = overload.__name__
    return name.split(".")[0]


class Lowering:
    """Walks the fx graph once and builds a :class:`Program`."""

    def __init__(self, traced: TracedTask):
        self.traced = traced
        self.host_lines: list[str] = []
        self.symbols: dict[Any, str] = {}
        self.env: dict[str, Any] = {}
        self.values: dict[str, Value] = {}
        self.inputs: list[Value] = []
        self._seen: dict[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], Value] = {}
        self._n = 0

    # -- host expressions -------------------------------------------------------------------
    def sym(self, s: Any) -> str:
        """Render an int or SymInt as Python source over the forward's own variables."""
        import sympy
        import torch

        if isinstance(s, bool):
            raise Unsupported("boolean where a size was expected")
        if isinstance(s, int):
            return str(s)
        if isinstance(s, torch.SymInt):
            expr = s.node.expr
            mapping = {}
            for free in expr.free_symbols:
                if free not in self.symbols:
                    raise Unsupported(f"size {expr} is not derived from an input shape")
                mapping[free] = sympy.Symbol(self.symbols[free])
            return str(expr.xreplace(mapping))
        if isinstance(s, float):
            return repr(s)
        raise Unsupported(f"cannot express {s!r} on the host")

    def shape_of(self, node: Any) -> tuple[str, ...]:
        return tuple(self.sym(d) for d in node.meta["val"].shape)

    def _fresh(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def _new(self, node: Any, kind: str, args: tuple[Operand, ...] = (), **attrs: Unpack[ValueAttrs]) -> Value:
        val = node.meta["val"]
        v = Value(node.name, kind, args, val.dim(), self.shape_of(node), val.dtype, attrs)
        if kind in ("pw", "cast"):  # common subexpressions (the loss decompositions repeat `ne`)
            key = (kind, repr(attrs), v.shape, str(v.dtype),
                   tuple(a.name if isinstance(a, Value) else repr(a) for a in args))
            if key in self._seen:
                return self._seen[key]
            self._seen[key] = v
        self.values[v.name] = v
        return v

    def _input(self, name: str, host_expr: str, node: Any, fake: Any = None) -> Value:
        import torch

        fake = node.meta["val"] if fake is None else fake
        if fake.dtype == torch.bool:
            self.host_lines.append(f"{name} = {host_expr}.view(torch.uint8)")
        elif host_expr != name:
            self.host_lines.append(f"{name} = {host_expr}")
        v = Value(name, "input", (), fake.dim(), tuple(self.sym(d) for d in fake.shape), fake.dtype,
                  {"is_bool": fake.dtype == torch.bool})
        self.values[name] = v
        self.inputs.append(v)
        return v

    # -- main walk --------------------------------------------------------------------------
    def run(self) -> Program:
        traced = self.traced
        graph = traced.graph.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        n_params = len(traced.param_names)
        if len(placeholders) != n_params + len(traced.input_names):
            raise Unsupported("inputs that are not tensors (or nested containers) are not supported")
        for i, node in enumerate(placeholders):
            if i < n_params:
                pname = traced.param_names[i]
                host, local = f"self.{pname}", pname.replace(".", "_")
            else:
                host = local = traced.input_names[i - n_params]
            for d, size in enumerate(node.meta["val"].shape):
                import torch

                if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                    if size.node.expr not in self.symbols:
                        self.symbols[size.node.expr] = f"{local}_size{d}"
                        self.host_lines.append(f"{local}_size{d} = {host}.shape[{d}]")
            if not hasattr(node.meta.get("val"), "shape"):
                raise Unsupported(f"input {host} is not a tensor")
            self.env[node.name] = self._input(local, host, node)
        outputs: list[Value] = []
        views: dict[int, tuple[str, ...]] = {}
        for node in graph.nodes:
            if node.op == "call_function" and not dead(node):
                try:
                    self.env[node.name] = self.lower(node)
                except Unsupported as exc:  # the call it failed on, for a message with the user's source line
                    exc.node = exc.node or node
                    raise
            elif node.op == "output":
                for out in node.args[0]:
                    v = self.env[out.name]
                    if isinstance(v, Value) and v.kind == "outview":
                        views[len(outputs)] = v.shape
                        v = v.tensor_arg()
                    if not isinstance(v, Value) or v.kind in ("input", "const"):
                        raise Unsupported("an output that is an input or a constant")
                    outputs.append(v)
        return Program(self.host_lines, live_values(self.values, outputs), outputs, self.inputs,
                       traced.returns_tuple, output_views=views)

    def arg(self, a: Any) -> Any:
        from torch.fx import Node

        if isinstance(a, Node):
            return self.env[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(self.arg(x) for x in a)
        return a

    def lower(self, node: Any) -> Any:  # noqa: C901 - one dispatch table, read top to bottom

        target, name = node.target, _opname(node.target)
        args = [self.arg(a) for a in node.args]
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        if self.traced.scalar_attrs:  # constants that are the model's attributes (self.eps) stay runtime values
            args = [self._attribute(node, i, a) for i, a in enumerate(args)]
        val = node.meta.get("val")
        if target in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
                      operator.neg) or name == "sym_size":
            return val  # a SymInt: rendered from its expression where used
        if name in ("sym_float",):
            return self._new_host_float(node, f"float({self.sym(node.args[0].meta['val'])})")
        if target is operator.getitem:
            container, index = args
            if isinstance(container, list):
                return container[index]
            raise Unsupported("indexing a multi-output op other than split")
        if name in VIEW_OPS:
            return self.lower_view(node, name, args, kwargs)
        if name == "arange":
            return lower_arange(self, node, args)
        if name in ("index", "embedding"):
            return lower_gather(self, node, name, args)
        if name in CONV_OPS:
            return lower_convolution(self, node, args)
        if name in BATCH_NORM_OPS:
            return lower_batch_norm(self, node, name, args)
        if name in GROUP_NORM_OPS:
            return lower_group_norm(self, node, args)
        if name in ("scalar_tensor", "full"):
            value = args[0] if name == "scalar_tensor" else args[1]
            if isinstance(value, Value) and val.dim() == 0:  # a model attribute (self.eps): a runtime scalar
                return value
            return Value(node.name, "const", (value,), val.dim(), self.shape_of(node), val.dtype)
        if name in ("_to_copy", "to", "convert_element_type"):
            dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
            if isinstance(args[0], Value) and args[0].kind == "outview" and dtype not in (None, args[0].dtype):
                return self._through_view(node, "cast", args[:1], {})
            src = args[0] if isinstance(args[0], Value) and args[0].kind == "outview" else self._lane(args[0])
            if dtype is None or dtype == src.dtype:
                return src
            return self._new(node, "cast", (src,))
        if name in INPLACE:  # the mutated tensor is a computed one: later reads of it see the new value
            target_arg = args[0] if args else None
            if not isinstance(target_arg, Value) or target_arg.kind == "input":
                raise Unsupported(f"aten.{name} writes into an input of the op")
            result = self._new(node, "pw", tuple(self._operand(a) for a in args), op=POINTWISE[INPLACE[name]],
                               kwargs={k: v for k, v in kwargs.items() if k not in ("dtype",)})
            self.env[node.args[0].name] = result
            return result
        if name in POINTWISE:
            if name == "clamp":
                name, args, kwargs = _one_sided(args, kwargs)
            args = self._sizes_as_floats(node, args)
            attrs: ValueAttrs = {"op": POINTWISE[name], "kwargs": {k: v for k, v in kwargs.items() if k != "dtype"}}
            return self._through_view(node, "pw", args, attrs) or self._new(
                node, "pw", tuple(self._operand(a) for a in args), **attrs)
        if name in ("gelu",):
            attrs = {"op": "gelu", "kwargs": {"approximate": kwargs.get("approximate", "none")}}
            return self._through_view(node, "pw", args[:1], attrs) or self._new(node, "pw", (self._lane(args[0]),),
                                                                                **attrs)
        if name in REDUCTIONS or name in ("sum", "amax", "amin"):
            return self.lower_reduction(node, name, args, kwargs)
        if name in ("argmax", "argmin"):
            return self.lower_argmax(node, name, args, kwargs)
        if name in ("max", "min"):
            return self.lower_max(node, name, args, kwargs)
        if name == "cumsum":
            src = self._lane(args[0])
            _along_rows(name, src, args, kwargs)
            return self._new(node, "scan", (src,), op="sum")
        if name == "gather":
            src, dim, index = args
            if dim not in (-1, src.rank - 1) or index.rank != src.rank:
                raise Unsupported("gather along a dimension other than the last")
            return self._new(node, "pick", (self._lane(src), self._operand(index)))
        if name == "cat":
            parts, dim = args[0], (args[1] if len(args) > 1 else 0)
            rank = val.dim()
            if dim not in (-1, rank - 1):
                raise Unsupported("cat along a dimension other than the last")
            parts = [self._lane(p) for p in parts]
            return self._new(node, "cat", tuple(parts), widths=[p.shape[-1] for p in parts])
        if name in ("addmm", "mm", "bmm"):
            if name == "addmm":
                bias, a, b = args[:3]
                if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
                    raise Unsupported("addmm with alpha/beta other than 1")
            else:
                bias, (a, b) = None, args[:2]
            for operand in (a, b):
                if not isinstance(operand, Value) or operand.kind != "input":
                    raise Unsupported("a matmul operand that is computed (only input views are supported)")
            mm = self._new(node, "matmul", (a, b))
            if bias is None:
                return mm
            mm.name = f"{node.name}_mm"
            self.values[mm.name] = mm
            bias_v = self._operand(bias)
            return self._new(node, "pw", (bias_v, mm), op="add", kwargs={})
        raise Unsupported(f"op aten.{name} is not handled by the offline generator")

    def _through_view(self, node: Any, kind: str, args: list[Any], attrs: ValueAttrs) -> Value | None:
        """A pointwise op (or cast) of tensors held in another layout (``outview``: a group norm's grouped result)
        and scalars, computed in that layout and viewed the same way; None where no operand is such a view.
        Views of different layouts, or next to other tensors, stay unsupported."""
        tensors = [a for a in args if isinstance(a, Value) and a.rank > 0]
        views = [a for a in tensors if a.kind == "outview"]
        if not views:
            return None
        base = views[0].tensor_arg()
        if len(views) != len(tensors) or any(v.shape != views[0].shape or v.tensor_arg().shape != base.shape
                                             for v in views):
            raise Unsupported("a view that changes the last dimension of a computed tensor, used together with "
                              "other tensors")
        operands = tuple(a.tensor_arg() if isinstance(a, Value) and a.kind == "outview" else self._operand(a)
                         for a in args)
        val = node.meta["val"]
        inner = Value(self._fresh(f"{node.name}_grouped"), kind, operands, base.rank, base.shape, val.dtype, attrs)
        self.values[inner.name] = inner
        return self._new(node, "outview", (inner,))

    def _attribute(self, node: Any, index: int, a: Any) -> Any:
        expr = self.traced.scalar_attrs.get(f"{node.name}:{index}")
        if expr is None or type(a) is not float:
            return a
        return self._new_host_float(node, expr)

    def _new_host_float(self, node: Any, expr: str) -> Value:
        v = Value(self._fresh("host_float"), "hostfloat", (), 0, (), None, {"expr": expr})
        self.values[v.name] = v
        return v

    def _sizes_as_floats(self, node: Any, args: list[Any]) -> list[Any]:
        """A size (SymInt) operand of a pointwise op with a floating result, as the runtime float it is there
        (``scores / h`` with ``h = x.shape[1]``: PyTorch computes with the number in the tensor's float
        type). Kept as is where the result is an integer tensor (the operand stays unsupported there)."""
        import torch

        val = node.meta.get("val")
        if not (isinstance(val, torch.Tensor) and val.is_floating_point()):
            return args
        return [self._new_host_float(node, f"float({self.sym(a)})") if isinstance(a, torch.SymInt) else a
                for a in args]

    def _operand(self, a: Any) -> Operand:
        import torch

        if isinstance(a, Value):
            return self._lane(a)
        if isinstance(a, (int, float, bool)):
            return a
        if isinstance(a, torch.SymInt):
            raise Unsupported("a tensor op on a size (SymInt) operand")
        raise Unsupported(f"operand {a!r}")

    def _lane(self, a: Any) -> Value:
        if not isinstance(a, Value):
            raise Unsupported(f"expected a tensor, got {a!r}")
        if a.kind == "outview":
            raise Unsupported("a view that changes the last dimension of a computed tensor, read by more than the "
                              "return")
        return a

    def lower_reduction(self, node: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Value:
        src = self._lane(args[0])
        dims = args[1] if len(args) > 1 else kwargs.get("dim")
        if isinstance(dims, int):
            dims = [dims]
        keepdim = bool(args[2]) if len(args) > 2 and not isinstance(args[2], float) else kwargs.get(
            "keepdim", False)
        kind = REDUCTIONS.get(name, name)
        correction = 1
        if name in ("var", "std"):  # prims.var(x, dims, correction) or aten.var/std.correction
            correction = kwargs.get("correction", args[2] if len(args) > 2 else 1)
            correction = 1 if correction is None else correction
            keepdim = kwargs.get("keepdim", False)
        if dims is None or list(dims) == [] or sorted(d % max(src.rank, 1) for d in dims) == list(
                range(src.rank)):
            if kind in ("var", "std"):
                raise Unsupported(f"{name} over the whole tensor")
            return self._new(node, "global", (src,), op=kind)
        dims = [d % src.rank for d in dims]
        if src.kind == "gather" and (bagged := bag(self, node, src, kind, dims, keepdim)) is not None:
            return bagged
        merged = len(dims)
        if merged > 1 and sorted(dims) == list(range(src.rank - merged, src.rank)):
            # several trailing dims (x.mean(dim=(2, 3))): analysis merges them into one for the whole op
            if kind in ("var", "std"):
                return self._deviation(node, kind, src, keepdim, correction, merged)
            return self._new(node, "reduce", (src,), op=kind, keepdim=keepdim, correction=correction, merged=merged)
        if len(dims) == 1 and dims[0] != src.rank - 1 and kind in ("sum", "mean", "max", "min"):
            # another single dim: analysis moves it last for the whole op (see moves.py)
            return self._new(node, "reduce", (src,), op=kind, keepdim=keepdim, dim=dims[0])
        if dims != [src.rank - 1]:
            raise Unsupported(f"{name} over dims {dims}: only the last dimension is supported")
        if kind in ("var", "std"):
            return self._deviation(node, kind, src, keepdim, correction, 1)
        return self._new(node, "reduce", (src,), op=kind, keepdim=keepdim, correction=correction)

    def lower_max(self, node: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Value | list[Value]:
        """``x.max()`` (the whole tensor), ``torch.max(a, b)`` (elementwise) or ``x.max(dim)``: the values and
        their indices, a reduction and an argmax along the row."""
        src = self._lane(args[0])
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if isinstance(dim, Value):
            return self._new(node, "pw", (src, self._operand(dim)), op="maximum" if name == "max" else "minimum",
                             kwargs={})
        if dim is None:
            return self.lower_reduction(node, "amax" if name == "max" else "amin", [src], {})
        keepdim = _along_rows(name, src, args, kwargs)
        values, indices = node.meta["val"]
        kind = "max" if name == "max" else "min"
        pair = []
        for suffix, fake, op in (("", values, kind), ("_idx", indices, f"arg{kind}")):
            v = Value(node.name + suffix, "reduce", (src,), fake.dim(), tuple(self.sym(d) for d in fake.shape),
                      fake.dtype, {"op": op, "keepdim": keepdim})
            self.values[v.name] = v
            pair.append(v)
        return pair

    def lower_argmax(self, node: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Value:
        """The index of the first maximum (minimum) along the last dim; a NaN counts as the maximum (and the
        minimum), as in PyTorch."""
        src = self._lane(args[0])
        if (args[1] if len(args) > 1 else kwargs.get("dim")) is None:
            raise Unsupported(f"{name} over the whole tensor (give it a dim)")
        if src.dtype is not None and not src.dtype.is_floating_point and src.dtype.itemsize > 2:
            raise Unsupported(f"{name} of {src.dtype} values (compared as float32, large ones would tie)")
        return self._new(node, "reduce", (src,), op=name, keepdim=_along_rows(name, src, args, kwargs))

    def _deviation(self, node: Any, kind: str, src: Value, keepdim: bool, correction: Any, merged: int) -> Value:
        """var, or std as the square root of var."""
        var = self.moments(node, src, merged, correction, self.shape_of(node))[2]
        if kind == "var":
            return var
        std = Value(self._fresh(f"{node.name}_sqrt"), "pw", (var,), var.rank, var.shape, var.dtype,
                    {"op": "sqrt", "kwargs": {}})
        self.values[std.name] = std
        return std

    def moments(self, node: Any, src: Value, merged: int, correction: Any,
                var_shape: tuple[str, ...]) -> tuple[Value, Value, Value]:
        """(mean with the reduced dims kept, ``src - mean``, var of shape ``var_shape``) over the last ``merged``
        dims of ``src``: var = sum((x - mean)^2) / (n - correction), as two row reductions."""
        import torch

        f32 = torch.float32
        keep = src.shape[:-merged] + ("1",) * merged
        n = size_product(src.shape[-merged:]) if merged > 1 else src.shape[-1]

        def make(kind: str, args: tuple[Operand, ...], shape: tuple[str, ...], **attrs: Unpack[ValueAttrs]) -> Value:
            v = Value(self._fresh(f"{node.name}_{kind}"), kind, args, len(shape), shape, f32, attrs)
            self.values[v.name] = v
            return v

        def total_of(arg: Value, shape: tuple[str, ...]) -> Value:
            attrs: ValueAttrs = {"op": "sum", "keepdim": len(shape) == arg.rank}
            if merged > 1:
                attrs["merged"] = merged
            return make("reduce", (arg,), shape, **attrs)

        count = make("hostfloat", (), (), expr=f"float({n})")
        count.rank, count.shape = 0, ()
        mean = make("pw", (total_of(src, keep), count), keep, op="div", kwargs={})
        centred = make("pw", (src, mean), src.shape, op="sub", kwargs={})
        square = make("pw", (centred, centred), src.shape, op="mul", kwargs={})
        dof = make("hostfloat", (), (), expr=f"float({n}) - {float(correction)!r}")
        dof.rank, dof.shape = 0, ()
        return mean, centred, make("pw", (total_of(square, var_shape), dof), var_shape, op="div", kwargs={})

    def lower_view(self, node: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> Value | list[Value]:
        src = args[0]
        if not isinstance(src, Value):
            raise Unsupported(f"{name} of a non-tensor")
        val = node.meta["val"]
        if src.kind == "input":
            return self._host_view(node, name, src, args)
        if src.kind == "iota" and (view := iota_view(self, node, name, src, args)) is not None:
            return view
        if src.kind == "outview":  # a view of a returned view: returned only, as one view of the kernel's output
            if name not in _RESHAPES or not _only_returned(node):
                raise Unsupported(f"{name} of a view that changes the last dimension of a computed tensor")
            return self._new(node, "outview", (src.tensor_arg(),))
        if name in ("alias", "detach", "clone", "lift_fresh_copy", "contiguous", "expand"):
            return src if name != "expand" else self._reshape(node, src)
        if name in ("split_with_sizes", "split"):
            raise Unsupported("split of a computed tensor")
        if name == "slice":
            dim, start = args[1] % src.rank, args[2] if len(args) > 2 else 0
            end = args[3] if len(args) > 3 else None
            if start == 0 and (end is None or (isinstance(end, int) and end >= 2**62)) and (
                    len(args) < 5 or args[4] == 1):
                return src  # the whole dim (``x.mean(-1)[:, :, None]`` slices every dim whole first)
            if dim != src.rank - 1:
                raise Unsupported("slicing a computed tensor along a leading dimension")
            if len(args) > 4 and args[4] != 1:
                raise Unsupported("a strided slice of a computed tensor")
            return self._new(node, "shift", (src,), start=self.sym(start))
        shape = self.shape_of(node)
        same_last = shape[-1:] == src.shape[-1:] and (len(shape) == src.rank or rows_free(src))
        adds_last = appends_ones(shape, src.shape)
        drops_last = len(shape) == src.rank - 1 and src.shape[-1] == "1" and shape == src.shape[:-1]
        if same_last or adds_last or drops_last or val.dim() == 0:
            return self._reshape(node, src)
        if name in ("view", "_unsafe_view", "reshape") and _only_returned(node):
            # the kernel writes the tensor before the view; the forward returns the view of it
            return self._new(node, "outview", (src,))
        raise Unsupported(f"{name} that changes the last dimension of a computed tensor")

    def _reshape(self, node: Any, src: Value) -> Value:
        return self._new(node, "reshape", (src,))

    def _host_view(self, node: Any, name: str, src: Value, args: list[Any]) -> Value | list[Value]:
        return host_view(self, node, name, src, args)


def _along_rows(name: str, src: Value, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """``keepdim`` of ``op(src, dim, keepdim)`` (argmax, max(dim), cumsum ...); refuses a dim other than the last."""
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if not isinstance(dim, int) or dim % max(src.rank, 1) != src.rank - 1:
        raise Unsupported(f"{name} over dim {dim}: only the last dimension is supported")
    return bool(args[2]) if len(args) > 2 else bool(kwargs.get("keepdim", False))


def _only_returned(node: Any) -> bool:
    """Whether ``node`` is returned and read by nothing else (other than views that are returned only)."""
    return bool(node.users) and all(
        user.op == "output" or (user.op == "call_function" and _opname(user.target) in _RESHAPES
                                and _only_returned(user))
        for user in node.users)


_RESHAPES = ("view", "_unsafe_view", "reshape")


def _one_sided(args: list[Any], kwargs: dict[str, Any]) -> tuple[str, list[Any], dict[str, Any]]:
    """``clamp(x, lo)`` / ``clamp(x, None, hi)`` (decompositions of hardswish, relu6 ...) as ``clamp_min`` /
    ``clamp_max``, so no operand is ``None``; a clamp with both bounds stays one."""
    lo = args[1] if len(args) > 1 else kwargs.get("min")
    hi = args[2] if len(args) > 2 else kwargs.get("max")
    rest = {k: v for k, v in kwargs.items() if k not in ("min", "max")}
    if hi is None and lo is not None:
        return "clamp_min", [args[0], lo], rest
    if lo is None and hi is not None:
        return "clamp_max", [args[0], hi], rest
    return "clamp", [args[0], lo, hi], rest


def op_name(target: Any) -> str:
    """The ATen name of a graph node's target (``aten.add.Tensor`` -> ``add``)."""
    return _opname(target)


def dead(node: Any) -> bool:
    """A call whose result nothing reads and that writes nothing (an in-place op, ``name_``, writes its operand):
    batch norm's trace holds an unused ``empty``, which needs no lowering."""
    return not node.users and not _opname(node.target).endswith("_")


def lower(traced: TracedTask) -> Program:
    """Lower a traced task; raises :class:`Unsupported` for graphs outside the known patterns."""
    return Lowering(traced).run()
