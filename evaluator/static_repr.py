"""``"{eps}".format(**self.__dict__)`` in a module's own ``extra_repr``/``__repr__``/``__str__``: the one reading
of ``__dict__`` the static checker lets through, and only where every field named is a plain setting of the
class's ``__init__`` (pure functions over the parsed file)."""

from __future__ import annotations

import ast
import string

from evaluator.static_model import ModuleModel
from evaluator.static_uses import enclosing_scope


def formats_own_fields(node: ast.Attribute, parents: dict[int, ast.AST], model: ModuleModel, cls: str | None,
                       tree: ast.Module) -> bool:
    """``"{normalized_shape}, eps={eps}".format(**self.__dict__)``, as PyTorch's own layers write ``extra_repr``:
    a string of the instance's public plain attributes, named as fields of a literal format string (no ``{a.b}``,
    ``{a[0]}`` or ``{_private}``, which would reach further)."""
    keyword, call = parents.get(id(node)), None
    if isinstance(keyword, ast.keyword) and keyword.arg is None:
        call = parents.get(id(keyword))
    method = enclosing_scope(node, parents)
    if node.attr != "__dict__" or not isinstance(node.ctx, ast.Load) or not (
            isinstance(node.value, ast.Name) and node.value.id == "self") or not isinstance(call, ast.Call):
        return False
    if not (isinstance(method, ast.FunctionDef) and method.name in ("extra_repr", "__repr__", "__str__")
            and not method.decorator_list and method.args.args and method.args.args[0].arg == "self"
            and model.functions.get(f"{cls}.{method.name}") is method):  # fmt: skip
        return False  # only a module's own text, in the method that makes it
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)) or call.args or len(call.keywords) != 1:
        return False
    try:
        parsed = [p for p in string.Formatter().parse(func.value.value) if p[1] is not None or p[2]]
    except ValueError:
        return False
    return all(field is not None and field.isidentifier() and not field.startswith("_") and conversion is None
               and "{" not in (spec or "") and _plain_setting(field, parents, model, cls, tree)
               for _, field, spec, conversion in parsed)  # fmt: skip

def _plain_setting(field: str, parents: dict[int, ast.AST], model: ModuleModel, cls: str | None,
                   tree: ast.Module) -> bool:
    """``self.field`` is set only in the class's ``__init__``, to constants, ``__init__``'s own parameters (with
    constant defaults, rebound there only to such values) or tuples and casts of them: a number, a string, a
    tuple of sizes, whose text reaches no code of the candidate's (red team s32: a stored input or a list of
    modules would print through their reprs). An autograd Function's ``ctx.field`` is another object."""
    init = model.functions.get(f"{cls}.__init__")
    if not isinstance(init, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = init.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    defaults = [*([None] * (len(args.posonlyargs) + len(args.args) - len(args.defaults))), *args.defaults,
                *args.kw_defaults]
    plain = {p.arg for p, d in zip(params, defaults, strict=True) if d is None or isinstance(d, ast.Constant)}
    local: dict[str, list[ast.AST]] = {}
    for n in ast.walk(init):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            local.setdefault(n.targets[0].id, []).append(n.value)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in plain:
            local.setdefault(n.id, []).append(n)  # bound some other way: never settled
    ctx = {id(f.args.args[0]) for key, f in model.functions.items()
           if key.split(".")[0] in model.autograd_functions and isinstance(f, ast.FunctionDef)
           and f.args.args}  # fmt: skip

    def settled(value: ast.AST, seen: frozenset[str] = frozenset()) -> bool:
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.Name):
            return value.id in plain and (value.id in seen or all(
                settled(v, seen | {value.id}) for v in local.get(value.id, [])))
        if isinstance(value, ast.Tuple | ast.List):
            return all(settled(e, seen) for e in value.elts)
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
            value.func.id in ("tuple", "int", "float", "bool", "str") and not value.keywords and \
            all(settled(a, seen) for a in value.args)

    inside = {id(n) for n in ast.walk(init)}
    stores = 0
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Attribute) and n.attr == field and not isinstance(n.ctx, ast.Load)):
            continue
        if isinstance(n.value, ast.Name) and any(id(a) in ctx for a in _ctx_params(n.value, parents)):
            continue  # ctx.field = ... in an autograd Function
        assign = parents.get(id(n))
        value = assign.value if isinstance(assign, ast.Assign | ast.AnnAssign) else None
        if id(n) not in inside or value is None or not settled(value):
            return False
        stores += 1
    return stores > 0

def _ctx_params(name: ast.Name, parents: dict[int, ast.AST]) -> list[ast.arg]:
    """The parameters named like ``name`` of the def around it (its ``ctx``, where it is one)."""
    scope = enclosing_scope(name, parents)
    return [a for a in getattr(getattr(scope, "args", None), "args", []) if a.arg == name.id]
