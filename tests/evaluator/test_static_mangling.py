"""Names as the interpreter looks them up (red team s10u). Class-private names (``__x`` inside a class body) are read
as the compiler mangles them (evaluator/static_mangling.py), and every name in an annotation must stand for a type,
since torch.library's schema inference and typing evaluate a string found there as code (static_annotations)."""

from __future__ import annotations

import ast

import pytest
from test_static_check import make

from evaluator.static_check import check_source
from evaluator.static_mangling import mangle, mangled


def _rules(source: str) -> list[tuple[str, str]]:
    return [(v.rule, v.message) for v in check_source(source, "cand.py").violations]


def test_mangled_follows_the_compilers_rule():
    assert mangled("__x", "ModelNew") == "_ModelNew__x"
    assert mangled("__x__", "ModelNew") == "__x__"  # dunders keep their name
    assert mangled("_x", "ModelNew") == "_x"
    assert mangled("__x", None) == "__x"  # outside a class, or a class named only with underscores
    assert mangled("__a.b", "M") == "__a.b"


SAMPLE = '''
class __Outer:
    def f(self, __p, *, __k=1):
        g(__kw=1)
        import __mod
        from m import __name2
        from m import __n3 as __n4
        self.__attr = lambda __q: __q
        try:
            pass
        except E as __e:
            pass
        return __glob, __p, [__i for __i in range(3)], self.__priv()

    class __Inner:
        def h(self):
            return __z

    def __priv(self):
        return __Outer


class ___:
    __kept = 1
'''


def _code_names(code, found: set[str]) -> set[str]:
    found |= {*code.co_names, *code.co_varnames, *code.co_cellvars, *code.co_freevars, code.co_name}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            _code_names(const, found)
    return found


def test_the_rewritten_tree_holds_the_names_the_compiler_stores():
    tree = mangle(ast.parse(SAMPLE))
    ours = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | \
        {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)} | \
        {d.name for d in ast.walk(tree) if isinstance(d, ast.FunctionDef | ast.ClassDef)} | \
        {a.asname or a.name for a in ast.walk(tree) if isinstance(a, ast.alias)}
    assert ours - {"E", "g", "range", "self", "m"} <= _code_names(compile(SAMPLE, "s", "exec"), set()) | {"___"}
    assert "_Outer__glob" in ours and "_Inner__z" in ours and "__kept" in ours  # ``___`` mangles nothing
    keywords = [k.arg for k in ast.walk(tree) if isinstance(k, ast.keyword)]
    assert keywords == ["__kw"]  # a call's keyword names are not mangled


ROWS = "def rows(t):\n    return torch.softmax(t, -1)\n\n_ModelNew__ROWS = {'r': rows}\n"

MANGLED_READS = {
    "a table read through a mangled name in forward": dict(module=ROWS, body="out = __ROWS['r'](x)"),
    "an op alias read through a mangled name": dict(module="_ModelNew__SM = torch.softmax\n",
                                                    body="out = __SM(x, -1)"),
    "a mangled global rebound in a method": dict(module="_ModelNew__F = None\n",
                                                 body="global __F\n__F = torch.softmax\nout = __F(x, -1)"),
}


@pytest.mark.parametrize("parts", list(MANGLED_READS.values()), ids=list(MANGLED_READS))
def test_torch_math_read_through_a_mangled_name_is_refused(parts):
    assert any(rule == "torch-compute" for rule, _ in _rules(make(**parts))), _rules(make(**parts))


def test_a_mangled_method_on_the_forward_path_is_followed():
    source = make(body="out = self.__rows(x)") + "\n    def __rows(self, t):\n        return torch.softmax(t, -1)\n"
    assert any(rule == "torch-compute" for rule, _ in _rules(source)), _rules(source)


def test_honest_private_attributes_pass():
    assert _rules(make(init="self.__block = 1024", body="n = self.__block")) == []


ANNOTATION_VALUES = {
    "a name bound to a built string": "SPEC = 'tor' + 'ch.Tensor'\ndef helper(t: SPEC):\n    return t\n",
    "a string annotation naming a string": "SPEC = 'torch.Tensor'\ndef helper(t: 'SPEC'):\n    return t\n",
    "an attribute of the file's own class": "class CFG:\n    spec = 'torch.Tensor'\n\n"
                                            "def helper(t: CFG.spec):\n    return t\n",
    "a name bound by a loop": "for SPEC in ['torch.Tensor']:\n    pass\n\ndef helper(t: SPEC):\n    return t\n",
    "a TypeVar bound to a string": "from typing import TypeVar\nT = TypeVar('T', bound='SPEC')\n"
                                   "def helper(t: T):\n    return t\n",
    "a subscript of a table of strings": "TYPES = {'t': 'torch.Tensor'}\ndef helper(t: TYPES['t']):\n    return t\n",
    "an alias of an alias of a string": "A = 'torch.Tensor'\nB = A\ndef helper(t: B):\n    return t\n",
    "a type alias a function rebinds through global": "Vec = torch.Tensor\ndef setup():\n    global Vec\n"
                                                      "    Vec = 'x'\n\ndef helper(t: Vec):\n    return t\n",
}


@pytest.mark.parametrize("module", list(ANNOTATION_VALUES.values()), ids=list(ANNOTATION_VALUES))
def test_an_annotation_name_that_may_hold_a_string_is_refused(module):
    assert any(rule == "dangerous-builtin" and "annotation" in message for rule, message in
               _rules(make(module=module))), _rules(make(module=module))


ANNOTATION_TYPES = {
    "an alias bound to a type": "Vec = torch.Tensor\ndef helper(t: Vec) -> Vec:\n    return t\n",
    "a union alias": "from typing import Optional\nMaybe = Optional[torch.Tensor]\nNum = int | float\n"
                     "def helper(t: Maybe, s: Num = 1):\n    return t\n",
    "a TypeVar bound to a type": "from typing import TypeVar\nT = TypeVar('T', bound=torch.Tensor)\n"
                                 "def helper(t: T) -> T:\n    return t\n",
    "a Literal of strings": "from typing import Literal\ndef helper(t, how: Literal['a', 'b'] = 'a'):\n"
                            "    return t\n",
    "the file's own class": "class Plan:\n    pass\n\ndef helper(t: 'Plan', p: Plan = None):\n    return t\n",
}


@pytest.mark.parametrize("module", list(ANNOTATION_TYPES.values()), ids=list(ANNOTATION_TYPES))
def test_an_annotation_of_types_passes(module):
    assert _rules(make(module=module)) == []


NAMESPACE_HANDLES = {
    "a generator's frame globals": "g = (lambda: (yield))()\nns = g.gi_frame.f_globals",
    "a Triton kernel's capture scope": "ns = copy_kernel.get_capture_scope()",
    "a Triton kernel's global values": "ns = copy_kernel.used_global_vals",
}


@pytest.mark.parametrize("body", list(NAMESPACE_HANDLES.values()), ids=list(NAMESPACE_HANDLES))
def test_attributes_that_hand_out_a_namespace_are_refused(body):
    """Red team s10u: a kernel's ``get_capture_scope()["ro" + "ws"]`` fetches a function no code names."""
    assert any(rule == "introspection" for rule, _ in _rules(make(body=body))), _rules(make(body=body))


def test_literal_strings_are_values_unless_they_name_the_files_own_bindings():
    """Red team s11: torch.library's schema inference evaluates every string under a generic, Literal's included."""
    honest = "from typing import Literal\ndef helper(t, how: Literal['sum', 'mean', 'masked'] = 'sum'):\n    return t\n"
    assert _rules(make(module=honest)) == []
    for payload in ("'__import__(\"os\")'", "'SPEC'", "'(lambda: 0)()'"):
        source = make(module=f"from typing import Literal\nSPEC = 'x' + 'y'\n"
                             f"def helper(t: Literal[{payload}]):\n    return t\n")
        assert any(rule == "dangerous-builtin" for rule, _ in _rules(source)), (payload, _rules(source))


def test_class_patterns_that_read_private_or_namespace_attributes_are_refused():
    """Red team s11: ``case object(__globals__=g)`` reads an attribute with no attribute node in the tree."""
    for attr in ("__globals__", "_python_dispatch", "gi_frame"):
        source = make(body=f"match x:\n    case object({attr}=g):\n        pass")
        assert any(rule == "introspection" for rule, _ in _rules(source)), (attr, _rules(source))
    assert _rules(make(body="match x:\n    case torch.Tensor(shape=s):\n        pass")) == []


def test_a_kernel_string_holding_a_def_line_is_refused():
    """Red team s11: the CPU interpreter compiles a kernel from the last line that begins with ``def ``."""
    kernel = ('@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    tl.static_assert(BLOCK > 0, """\n'
              'def k(x_ptr, BLOCK):\n    pass\n""")\n')
    assert any(rule == "cuda-source" for rule, _ in _rules(make(module=kernel))), _rules(make(module=kernel))
    documented = '@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    """Adds; see\n    defaults."""\n'
    assert not any(rule == "cuda-source" for rule, _ in _rules(make(module=documented)))


def test_lazy_annotations_keep_their_spelling():
    """Under ``from __future__ import annotations`` an annotation is its source text, evaluated later in the module's
    namespace: ``x: __S`` inside a class names the module-level ``__S`` there, not ``_C__S`` (red team s11)."""
    source = "from __future__ import annotations\nclass C:\n    def f(self, x: __S) -> __R:\n        y: __T = 1\n"
    tree = mangle(ast.parse(source))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert {"__S", "__R", "__T"} <= names and "_C__S" not in names
    eager = mangle(ast.parse(source.split("\n", 1)[1]))
    assert {"_C__S", "_C__R", "_C__T"} <= {n.id for n in ast.walk(eager) if isinstance(n, ast.Name)}


def test_kernel_source_lines_are_judged_as_the_interpreter_reads_them():
    """Red team s12: a backslash-newline puts a string's first line at the start of a source line, and a kernel
    bound as ``k = triton.jit(k)`` is device code too."""
    continued = ('@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    tl.static_assert(BLOCK > 0, """\\\n'
                 'def k(x_ptr, BLOCK):\n    pass\n""")\n')
    rebound = ('def k(x_ptr, BLOCK: tl.constexpr):\n    tl.static_assert(BLOCK > 0, """\ndef k(x_ptr, BLOCK):\n'
               '    pass\n""")\n\nk = triton.jit(k)\n')
    for module in (continued, rebound):
        assert any(rule == "cuda-source" for rule, _ in _rules(make(module=module))), _rules(make(module=module))
    torch_in_rebound = "def k(x_ptr, BLOCK: tl.constexpr):\n    torch.softmax(x_ptr, -1)\n\nk = triton.jit(k)\n"
    assert any(rule == "torch-compute" for rule, _ in _rules(make(module=torch_in_rebound)))


def test_a_kernel_made_inside_a_factory_has_its_source_lines_judged():
    factory = ('def make_kernel():\n    @triton.jit\n    def k(x_ptr, BLOCK: tl.constexpr):\n'
               '        tl.static_assert(BLOCK > 0, """\ndef k(x_ptr, BLOCK):\n    pass\n""")\n    return k\n\n'
               'KERNEL = make_kernel()\n')
    assert any(rule == "cuda-source" for rule, _ in _rules(make(module=factory))), _rules(make(module=factory))
