"""Lower a traced ATen graph to the offline generator's small IR.

The IR splits the forward pass in two: *host* work that the candidate's ``forward`` may do itself
(sizes, views of its inputs, allocation) and *lane* values computed by kernels. Lane values are
pointwise ops, reductions along the last dimension (or one other dimension, which analysis then
moves last, or several trailing ones, which it merges), argmax/argmin and cumsum along it, gathers along it,
concatenation/slicing of the last dimension, a matmul (batched or not), full reductions, sliding windows
(pooling, ``window.py``), iotas (``arange``) and gathers of table rows (``indexing.py``; views and permutes of a
gather are gathers by a view of its index). A matmul with a vector side (M or N is 1) is a broadcast product
and a sum over K. Views of a computed tensor that keep its elements in order but not in a layout a kernel reads
(einsum's permute of unit dims) stay pending (``chain``) and are judged where the chain ends. Anything else
raises :class:`Unsupported` naming the op, so the proposer can say why it produced nothing.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from kernelevo.search.offline.conv import BATCH_NORM_OPS, CONV_OPS, lower_batch_norm, lower_convolution
from kernelevo.search.offline.group_norm import GROUP_NORM_OPS, lower_group_norm
from kernelevo.search.offline.indexing import (
    INDEX_OPS,
    bag,
    gather_view,
    iota_view,
    live_values,
    lower_arange,
    lower_gather,
)
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
from kernelevo.search.offline.trace import TracedTask, size_equalities
from kernelevo.search.offline.views import host_view
from kernelevo.search.offline.window import WINDOW_OPS, lower_pool

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
             "min", "copy_"}
INPLACE = {f"{n}_": n for n in POINTWISE}  # clamp_min_ on a computed tensor (decompositions use them)
HANDLED = (set(POINTWISE) | set(INPLACE) | set(REDUCTIONS) | VIEW_OPS | OTHER_OPS | INDEX_OPS | CONV_OPS
           | BATCH_NORM_OPS | GROUP_NORM_OPS | set(WINDOW_OPS))


# Python arithmetic in the graph (sizes, and floats computed from them and the model's attributes)
HOST_ARITHMETIC = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
                   operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.neg: "-"}


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
        self.equalities = size_equalities(traced.graph)  # sizes the op ties, rendered alike (trace.size_equalities)
        self.env: dict[str, Any] = {}
        self.values: dict[str, Value] = {}
        self.inputs: list[Value] = []
        self._seen: dict[tuple[str, str, tuple[str, ...], str, tuple[str, ...]], Value] = {}
        self._pending: dict[str, Any] = {}  # chain value name -> the graph call of that view (for messages)
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
            expr = s.node.expr.subs(self.equalities) if self.equalities else s.node.expr
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
        names = [(f"self.{traced.param_names[i]}", traced.param_names[i].replace(".", "_")) if i < n_params
                 else (traced.input_names[i - n_params],) * 2 for i in range(len(placeholders))]
        sizes: list[list[str]] = []  # per input, the host lines naming its sizes
        for node, (host, local) in zip(placeholders, names):
            if not hasattr(node.meta.get("val"), "shape"):
                raise Unsupported(f"input {host} is not a tensor")
            sizes.append([])
            for d, size in enumerate(node.meta["val"].shape):
                import torch

                if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
                    if size.node.expr not in self.symbols:
                        self.symbols[size.node.expr] = f"{local}_size{d}"
                        sizes[-1].append(f"{local}_size{d} = {host}.shape[{d}]")
        # every input's sizes are named before any input's shape is rendered (q's 4 * k.shape[1] heads)
        for node, (host, local), lines in zip(placeholders, names, sizes):
            self.host_lines.extend(lines)
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
                    if isinstance(v, Value) and v.kind in ("outview", "chain"):
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
        if target in HOST_ARITHMETIC:
            return self.host_arithmetic(node, args)
        if name == "sym_size":
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
        if name in WINDOW_OPS:
            return lower_pool(self, node, name, args)
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
        if name == "copy_":
            return self.lower_copy(node, args)
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
            if bias is None and (product := self.vector_product(node, a, b)) is not None:
                return product
            mm = self._new(node, "matmul", (a, b))
            if bias is None:
                return mm
            mm.name = f"{node.name}_mm"
            self.values[mm.name] = mm
            bias_v = self._operand(bias)
            return self._new(node, "pw", (bias_v, mm), op="add", kwargs={})
        raise Unsupported(f"op aten.{name} is not handled by the offline generator")

    def vector_product(self, node: Any, a: Value, b: Value) -> Value | None:
        """``mm``/``bmm`` where one side is a vector (M or N is 1: ``einsum('bk,bkd->bd')``, attention pooling's
        scores): a broadcast product and a sum over K, with no ``tl.dot`` tile mostly empty. N = 1 is a row
        reduction; M = 1 a reduction over the leading dim K, which analysis moves last; its result is the sum
        without the unit dim, viewed with it (a pending view: ``_keepdim_twin``). None for any other matmul."""
        m, n = a.shape[-2], b.shape[-1]
        if "1" not in (m, n):
            return None
        fa, fb = node.args[0].meta["val"], node.args[1].meta["val"]
        if n == "1":  # [.., M, K] * [.., 1, K], summed over the row
            lhs, rhs = a, self._input(self._fresh(f"{b.attrs.get('root', b.name)}_t"),
                                      f"{b.name}.transpose(-1, -2)", node, fb.transpose(-1, -2))
            rhs.attrs["root"] = b.attrs.get("root", b.name)
        else:  # [.., K, 1] * [.., K, N], summed over K
            lhs, rhs = self._input(self._fresh(f"{a.attrs.get('root', a.name)}_t"), f"{a.name}.transpose(-1, -2)",
                                   node, fa.transpose(-1, -2)), b
            lhs.attrs["root"] = a.attrs.get("root", a.name)
        shape = a.shape if n == "1" else b.shape
        dtype = node.meta["val"].dtype
        prod = Value(self._fresh(f"{node.name}_prod"), "pw", (lhs, rhs), len(shape), shape, dtype,
                     {"op": "mul", "kwargs": {}})
        self.values[prod.name] = prod
        if n == "1":
            return self._new(node, "reduce", (prod,), op="sum", keepdim=True, correction=1)
        dim = prod.rank - 2
        total = Value(f"{node.name}_sum", "reduce", (prod,), prod.rank - 1, shape[:dim] + shape[dim + 1:], dtype,
                      {"op": "sum", "keepdim": False, "dim": dim})
        self.values[total.name] = total
        self._pending[node.name] = node
        return self._new(node, "chain", (total,))

    def host_arithmetic(self, node: Any, args: list[Any]) -> Any:
        """Python arithmetic on sizes and numbers in the graph: an integer result is a SymInt (rendered from its
        expression where used); a float one (``smoothing / n_classes`` in a label-smoothed loss) is a host float
        computed by the forward from its operands' host expressions."""
        import torch

        val = node.meta.get("val")
        if isinstance(val, (int, torch.SymInt)) and not any(isinstance(a, Value) for a in args):
            return val
        terms = [f"({self._host_term(a)})" for a in args]
        expr = f"-{terms[0]}" if node.target is operator.neg else f" {HOST_ARITHMETIC[node.target]} ".join(terms)
        return self._new_host_float(node, f"float({expr})")

    def _host_term(self, a: Any) -> str:
        import torch

        if isinstance(a, Value):
            if a.kind != "hostfloat":
                raise Unsupported("Python arithmetic on a tensor")
            return a.attrs["expr"]
        if isinstance(a, (torch.SymInt, int)) and not isinstance(a, bool):
            return self.sym(a)
        if isinstance(a, float):
            return repr(a)
        raise Unsupported(f"Python arithmetic on {type(a).__name__} {a!r}")

    def lower_copy(self, node: Any, args: list[Any]) -> Value:
        """``dst.copy_(src)`` into a computed tensor (a loss decomposition's ``copy_(neg, where(...))``): later
        reads of ``dst`` see ``src`` in ``dst``'s dtype. A copy into an input, or one that broadcasts, is refused."""
        dst, src = args[0], args[1]
        if not isinstance(dst, Value) or dst.kind in ("input", "const"):
            raise Unsupported("aten.copy_ writes into an input of the op (copy into a new tensor instead)")
        src = self._lane(src)
        if src.shape != dst.shape:
            raise Unsupported("aten.copy_ that broadcasts its source")
        result = src if src.dtype == dst.dtype else self._new(node, "cast", (src,))
        self.env[node.args[0].name] = result
        return result

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
        if a.kind == "chain":
            twin = self._keepdim_twin(a)
            if twin is not None:
                return twin
            exc = Unsupported("a view that changes the last dimension of a computed tensor, read by an op")
            exc.node = self._pending.get(a.name)
            raise exc
        return a

    def _keepdim_twin(self, view: Value) -> Value | None:
        """A pending view that puts back the dim a reduction removed (``bmm`` of a row vector, lowered as a sum
        over K without keepdim) is that reduction with keepdim (None for any other view)."""
        root = view.tensor_arg()
        dim = root.attrs.get("dim")
        if root.kind != "reduce" or root.attrs.get("keepdim") or dim is None:
            return None
        if view.shape != root.shape[:dim] + ("1",) + root.shape[dim:]:
            return None
        name = f"{root.name}_keepdim"
        if name not in self.values:
            self.values[name] = Value(name, "reduce", root.args, view.rank, view.shape, root.dtype,
                                      {**root.attrs, "keepdim": True})
        return self.values[name]

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
        if len(dims) > 1:
            order = [d for d in range(src.rank) if d not in dims] + sorted(dims)
            raise Unsupported(f"{name} over dims {sorted(dims)}: several dims are reduced only where they are the "
                              f"trailing ones; permute them last in the op (x.permute({', '.join(map(str, order))})"
                              f".{name}(dim={tuple(range(src.rank - len(dims), src.rank))}), which the forward "
                              "copies once)")
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
        step = src  # the view's own operand; a pending chain is judged from the tensor it started at
        if src.kind == "chain":
            src = src.tensor_arg() if name != "slice" else self._lane(src)
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
        if name in ("permute", "transpose", "t", "select") and not keeps_order(name, args, step.shape):
            if step.kind == "gather" and (gathered := gather_view(self, node, name, step, args)) is not None:
                return gathered
            raise Unsupported(f"{name} that reorders the elements of a computed tensor (only its inputs are viewed "
                              "that way)")
        if keeps_order(name, args, step.shape) and (root := _order_root(step)) is not step and shape == root.shape:
            return root  # the views end where they started (einsum's view, permute of unit dims, view back)
        same_last = shape[-1:] == src.shape[-1:] and (len(shape) == src.rank or rows_free(src))
        adds_last = appends_ones(shape, src.shape)
        drops_last = len(shape) == src.rank - 1 and src.shape[-1] == "1" and shape == src.shape[:-1]
        if same_last or adds_last or drops_last or val.dim() == 0:
            return self._reshape(node, src)
        if name in ("view", "_unsafe_view", "reshape") and _only_returned(node):
            # the kernel writes the tensor before the view; the forward returns the view of it
            return self._new(node, "outview", (src,))
        if step.kind == "gather" and (gathered := gather_view(self, node, name, step, args)) is not None:
            return gathered
        if keeps_order(name, args, step.shape):
            # a view that keeps the elements in order (a reshape, a permute of unit dims) but not in a layout a
            # kernel reads: pending until the chain ends (more views, the return) or is read (``_lane``)
            self._pending[node.name] = node
            return self._new(node, "chain", (src,))
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


def keeps_order(name: str, args: list[Any], shape: tuple[str, ...]) -> bool:
    """Whether view op ``name`` of a tensor of ``shape`` keeps its elements in memory order: reshapes do, and a
    permute (transpose) that moves only dims of size one."""
    if name in ("view", "_unsafe_view", "reshape", "unsqueeze", "squeeze"):
        return True
    if name == "select":
        return bool(shape[args[1] % len(shape)] == "1")
    if name in ("permute", "transpose", "t"):
        rank = len(shape)
        if name == "permute":
            order = [d % rank for d in args[1]]
        else:
            i, j = (args[1] % rank, args[2] % rank) if name == "transpose" else (0, 1)
            order = list(range(rank))
            order[i], order[j] = order[j], order[i]
        moved = [d for d in order if shape[d] != "1"]
        return moved == sorted(moved)
    return False


def _order_root(v: Value) -> Value:
    """The computed tensor that ``v`` views with its elements in the same order: back through pending views and
    reshapes that keep the non-unit dims (not an ``expand``, which repeats elements)."""
    while v.kind in ("chain", "reshape") and _non_unit(v.shape) == _non_unit(v.tensor_arg().shape):
        v = v.tensor_arg()
    return v


def _non_unit(shape: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(d for d in shape if d != "1")


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
