"""Red team s13's mechanisms, each with the honest form that must still pass: a backward reached through the graph
node (``ctx.apply``, ``y.grad_fn.apply``), registries kept by a decorator (``typing.overload``), ``hasattr`` owners
rebound by a second import, and ways to hand Triton's interpreter another function's source (``__wrapped__``, a
decorator under ``@triton.jit``, ``triton.jit`` applied to something other than a def's name)."""

from __future__ import annotations

import ast

import pytest
from test_static_check import make

from evaluator.static_absent import single_import_names
from evaluator.static_check import check_source
from evaluator.static_uses import binding_counts


def _rules(source: str) -> set[str]:
    return {v.rule for v in check_source(source, "cand.py").violations}


FUNCTION = '''
class _Rows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
{forward}
        return out

    @staticmethod
    def backward(ctx, grad):
        return torch._C._nn.gelu(grad)
'''


def _with_function(forward: str, body: str = "") -> str:
    module = FUNCTION.format(forward="\n".join("        " + line for line in forward.splitlines()))
    return make(module=module, body=body or "out = _Rows.apply(x)")


def _decorated_forward(module: str, decorator: str, after: str = "") -> str:
    """The Function with ``decorator`` under forward's @staticmethod, ``module`` before it and ``after`` after."""
    source = make(module=module + FUNCTION.format(forward="") + after, body="out = _Rows.apply(x)")
    return source.replace("    @staticmethod\n    def forward(",
                          f"    @staticmethod\n    {decorator}\n    def forward(")


@pytest.mark.parametrize("forward", [
    "ctx.save_for_backward(x, out)",
    "ctx.mark_non_differentiable(out)\nctx.scale = 2.0\nctx.rows = x.shape[0]",
    "ctx.n = x.numel()\nif ctx.needs_input_grad[0]:\n    ctx.keep = ctx.n",
    "",
])
def test_a_forward_that_keeps_things_for_its_backward_leaves_it_dead(forward):
    assert _rules(_with_function(forward)) == set()  # a private API in a backward that never runs


@pytest.mark.parametrize("forward", [
    "ctx.apply(out)",  # the graph node's apply runs the backward right there
    "ctx.apply_jvp(out)",
    "helper = ctx",  # handed on: anything may call its apply
    "print(ctx)",
    "f = lambda: ctx",
])
def test_a_forward_that_does_more_with_ctx_makes_the_backward_live(forward):
    assert "private-api" in _rules(_with_function(forward))


def test_a_graph_node_reached_from_an_output_makes_the_backward_live():
    source = _with_function("", body="y = _Rows.apply(x)\nout = y.grad_fn.apply(y)")
    assert "private-api" in _rules(source)
    assert "private-api" in _rules(_with_function("", body="n = x.grad_fn.next_functions\nout = _Rows.apply(x)"))


def test_an_overload_is_live_its_registry_hands_it_back():
    module = '''
import typing


@typing.overload
def finish(x):
    return torch._C._nn.gelu(x)
'''
    assert "private-api" in _rules(make(module=module))


ABSENT = '''
{imports}


def _pick(x):
{rebind}
    if hasattr(E, "zeros"):
        return torch.softmax(x, dim=-1)
    return x
'''


@pytest.mark.parametrize("rebind", ["    global E\n    import triton.language as E", "    E = tl"])
def test_an_owner_rebound_anywhere_in_the_file_is_no_absent_test(rebind):
    module = ABSENT.format(imports="import triton.language.extra as E", rebind=rebind)
    assert "torch-compute" in _rules(make(module=module, body="out = _pick(out)"))


def test_an_owner_imported_again_from_the_same_module_still_is():  # pasted library modules import alike
    module = ABSENT.format(imports="import triton.language.extra as E\nimport triton.language.extra as E", rebind="")
    assert "torch-compute" not in _rules(make(module=module, body="out = _pick(out)"))


def test_single_import_names_reads_every_scope():
    tree = ast.parse("import a.b as E\nimport c\nfrom d import e\nclass K:\n    import x as E\n"
                     "def f():\n    from d import e\n    c = 1\n")
    assert single_import_names(tree, binding_counts(tree)) == {"e"}  # E: two modules; c: rebound by an assignment


@pytest.mark.parametrize("module", [
    # functools.update_wrapper on a kernel's function: the interpreter reads the wrapped one's source
    "import functools\n\ndef layout(x):\n    return x\n\nfunctools.update_wrapper(copy_kernel.fn, layout, (), ())",
    # wraps applied other than as a def's decorator
    "import functools\n\ndef layout(x):\n    return x\n\nW = functools.wraps(layout)(lambda x: x)",
])
def test_wrapped_set_on_anything_but_the_files_own_wrappers_is_refused(module):
    assert "patching" in _rules(make(module=module))


def test_an_honest_wrapper_decorator_passes():
    module = '''
import functools


def contiguous(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*[a.contiguous() for a in args])

    def other(*args):
        return fn(*args)

    functools.update_wrapper(other, fn)
    return wrapper


@contiguous
def launch(x, out):
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
'''
    assert _rules(make(module=module, body="launch(x, out)")) == set()


KERNEL = '''
def body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


{bind}
'''


@pytest.mark.parametrize("bind", ["K = triton.jit(body)", "K = triton.jit(fn=body)",
                                  "K = triton.jit(debug=False)(body)"])
def test_triton_jit_of_a_defs_name_is_a_kernel(bind):
    assert _rules(make(module=KERNEL.format(bind=bind), body="K[(1,)](x, out, x.numel(), BLOCK=1024)")) == set()


@pytest.mark.parametrize("bind", ["K = triton.jit(*[body])", "FNS = [body]\nK = triton.jit(FNS[0])",
                                  "K = triton.jit(**{'fn': body})"])
def test_triton_jit_of_anything_else_is_refused(bind):
    source = make(module=KERNEL.format(bind=bind), body="K[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert "cuda-source" in _rules(source)


def test_nothing_may_stand_under_triton_jit():
    module = '''
import functools


def layout(x_ptr, out_ptr, n, BLOCK):
    pass


@triton.jit
@functools.wraps(layout, assigned=(), updated=())
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
'''
    assert "cuda-source" in _rules(make(module=module, body="rows[(1,)](x, out, x.numel(), BLOCK=1024)"))


# -- red team s14: the same mechanisms, reached around the first fixes ---------------------------------------------


@pytest.mark.parametrize("body", [
    "y = _Rows.apply(x)\nmatch y:\n    case torch.Tensor(grad_fn=node):\n        out = node.apply(y)",
    "y = _Rows.apply(x)\nout = operator.attrgetter('grad_fn')(y).apply(y)",
])
def test_a_graph_node_named_by_a_pattern_or_a_string_makes_the_backward_live(body):
    assert "private-api" in _rules(_with_function("", body=body))


def test_forward_is_judged_as_taking_ctx_even_beside_a_setup_context():
    module = FUNCTION.format(forward="        ctx.apply(out)") + '''
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.n = 1

    del setup_context
'''
    assert "private-api" in _rules(make(module=module, body="out = _Rows.apply(x)"))


def test_a_classmethod_forward_keeps_the_backward_live():
    source = _with_function("").replace("    @staticmethod\n    def forward(ctx, x):",
                                        "    @classmethod\n    def forward(cls, ctx, x):")
    assert "private-api" in _rules(source)


def test_a_wrapper_that_hands_ctx_straight_on_leaves_the_backward_dead():
    wrapper = '''
import functools


def contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        return fn(ctx, *[a.contiguous() for a in args])
    return wrapper
'''
    source = _decorated_forward(wrapper, "@contiguous")
    assert _rules(source) == set()
    assert "private-api" in _rules(source.replace("return fn(ctx, *[", "ctx.apply(args[0])\n        return fn(ctx, *["))


def test_triton_jit_of_a_name_bound_otherwise_too_is_refused():
    bind = "def other(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\nbody = other\nK = triton.jit(body)"
    source = make(module=KERNEL.format(bind=bind), body="K[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert "cuda-source" in _rules(source)
    rebound = make(module=KERNEL.format(bind="body = triton.jit(body)"),
                   body="body[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert _rules(rebound) == set()  # k = triton.jit(k): its own binding


HEURISTICS = "body = triton.heuristics({'EVEN': lambda args: args['n'] % 1024 == 0})(body)"
AUTOTUNE = "body = triton.autotune(configs=[triton.Config({}, num_warps=4)], key=['n'])(body)"


@pytest.mark.parametrize("wraps", [[HEURISTICS], [HEURISTICS, AUTOTUNE]])
def test_triton_wrappers_applied_by_call_after_the_jit_rebind_pass(wraps):
    """unsloth's way of stacking Triton's decorators: ``k = triton.jit(k)`` then ``k = triton.heuristics(...)(k)``."""
    source = make(module=KERNEL.format(bind="\n".join(["body = triton.jit(body)", *wraps])),
                  body="body[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert _rules(source) == set()
    judged = source.replace("tl.store(out_ptr", "v = float(n)\n    tl.store(out_ptr")
    assert "cuda-source" in _rules(judged)  # the wrapped kernel's body is still judged


@pytest.mark.parametrize("bind", [
    f"{HEURISTICS}\nbody = triton.jit(body)",  # wrapped before jit: triton.jit is handed the wrapper
    "body = triton.jit(body)\nbody = swap(body)",  # another rebind: the launched object may be anything
    f"body = triton.jit(body)\n\n\ndef later():\n    global body\n    {HEURISTICS}",  # not module-level
])
def test_other_rebinds_of_a_jit_kernel_are_refused(bind):
    source = make(module="def swap(f):\n    return f\n\n" + KERNEL.format(bind=bind),
                  body="body[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert "cuda-source" in _rules(source)


@pytest.mark.parametrize("module", ["from triton.language.random import jit as kernel_maker\n",
                                    "kernel_maker = None\n"])
def test_triton_jit_is_known_by_its_public_name_only(module):
    """``triton.language.random.jit`` and ``tl.standard.jit`` are ``triton.jit`` itself: under those names a kernel
    would not be judged as one."""
    decorated = "@tl.standard.jit" if module.startswith("kernel_maker = None") else "@kernel_maker"
    source = make(module=module + KERNEL.format(bind="").replace("def body(", f"{decorated}\ndef body("),
                  body="body[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert "cuda-source" in _rules(source)


def test_a_kernel_may_use_only_names_the_file_defines():
    module = '''
@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = np.exp(tl.load(x_ptr + offs))
    tl.store(out_ptr + offs, v)
'''
    source = make(module=module, body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert any(v.rule == "cuda-source" and "np" in v.message for v in check_source(source, "cand.py").violations)


@pytest.mark.parametrize(("pair", "dead"), [
    ("(functools.partial(torch.amp.custom_fwd, device_type='cuda'), torch.amp.custom_bwd)", True),  # Liger's
    ("(torch.amp.custom_fwd, peek)", True),  # forward takes the first: the AMP one
    ("(peek, torch.amp.custom_bwd)", False),  # a wrapper that may use ctx
])
def test_amp_decorators_made_by_a_function_of_the_file_hand_ctx_on(pair, dead):
    module = f'''
import functools


def peek(fn):
    return fn


def get_amp():
    return {pair}


amp_fwd, amp_bwd = get_amp()
'''
    source = _decorated_forward(module, "@amp_fwd")
    assert ("private-api" not in _rules(source)) is dead


# -- red team s15 ------------------------------------------------------------------------------------------------


def test_a_wrapper_that_rebinds_the_wrapped_name_keeps_the_backward_live():
    wrapper = '''
import functools


def other(ctx, *args):
    return args[0]


def contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args, fn=other):
        return fn(ctx, *args)
    return wrapper
'''
    source = _decorated_forward(wrapper, "@contiguous")
    assert "private-api" in _rules(source)


def test_a_generator_is_no_amp_maker():
    module = '''
def get_amp():
    yield torch.amp.custom_fwd
    return (torch.amp.custom_fwd, torch.amp.custom_bwd)


amp_fwd, amp_bwd = get_amp()
'''
    source = _decorated_forward(module, "@amp_fwd")
    assert "private-api" in _rules(source)


def test_a_kernel_name_bound_only_inside_another_function_is_free():
    module = '''
def scale(t, np=1.0):
    return t


@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, np.exp(tl.load(x_ptr + offs)))
'''
    source = make(module=module, body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert any(v.rule == "cuda-source" and "np" in v.message for v in check_source(source, "cand.py").violations)


def test_a_decorated_def_handed_to_triton_jit_is_refused():
    bind = ("def swap(fn):\n    return fn\n\n\n@swap\ndef inner(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
            "    pass\n\n\nK = triton.jit(inner)")
    source = make(module=KERNEL.format(bind=bind), body="K[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert "cuda-source" in _rules(source)


# -- red team s16 ------------------------------------------------------------------------------------------------


def test_a_wrapper_factory_defined_twice_keeps_the_backward_live():
    wrapper = '''
import functools


def contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        return fn(ctx, *args)
    return wrapper
'''
    source = _decorated_forward(wrapper, "@contiguous", after=wrapper.split("\n\n\n", 1)[1])
    assert "private-api" in _rules(source)


@pytest.mark.parametrize(("decorator", "dead"), [
    ("@torch.amp.custom_fwd(device_type='cuda')", True),
    ("@torch.amp.custom_fwd", True),
    ("@torch.amp.custom_fwd(print, device_type='cuda')", False),  # wraps print, returns that
])
def test_an_amp_decorator_hands_ctx_on_only_applied_plainly(decorator, dead):
    source = _decorated_forward("", decorator)
    assert ("private-api" not in _rules(source)) is dead


@pytest.mark.parametrize("binding", ["for np in ():\n    pass", "if FLAG:\n    np = 1", "np = 1\ndel np",
                                     "def g():\n    global np\n    np = 1"])
def test_a_kernel_name_the_module_may_leave_unbound_is_free(binding):
    module = f'''
FLAG = False
{binding}


@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, np.exp(tl.load(x_ptr + offs)))
'''
    source = make(module=module, body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert any(v.rule == "cuda-source" and "np" in v.message for v in check_source(source, "cand.py").violations)


def test_a_kernel_name_bound_on_every_path_is_the_files():
    module = '''
FLAG = False
if FLAG:
    SCALE = 2.0
else:
    SCALE = 1.0


@triton.jit
def rows(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * SCALE)
'''
    source = make(module=module, body="rows[(1,)](x, out, x.numel(), BLOCK=1024)")
    assert not [v for v in check_source(source, "cand.py").violations if "SCALE" in v.message]
