"""The pure pieces behind the static checker: constant folding, module chains, uses, probes, the policy."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from evaluator import import_policy
from evaluator.static_chains import chain_finding, is_module, real_module_name
from evaluator.static_fold import MAX_LEN, fold, fold_strings
from evaluator.static_probes import is_probe_try
from evaluator.static_rules import classify_name, module_allowed, why_module
from evaluator.static_uses import Use, parent_map, use_of


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _fold(text: str, **names: str) -> list | None:
    env = {k: [_expr(v)] for k, v in names.items()}
    return fold(_expr(text), env.get, lambda n: "triton.cdiv" if ast.unparse(n) == "triton.cdiv" else None)


@pytest.mark.parametrize(
    ("text", "names", "values"),
    [
        ('"cudaMal" + "loc"', {}, ["cudaMalloc"]),
        ('"collaMaduc"[::-1]', {}, ["cudaMalloc"]),
        ('"{}{}".format("a", B)', {"B": '"b"'}, ["ab"]),
        ('"%s-%d" % ("n", 4)', {}, ["n-4"]),
        ('f"{A}:{N:>3}"', {"A": '"k"', "N": "7"}, ["k:  7"]),
        ('"".join(["x", "y"])', {}, ["xy"]),
        ('"ab".upper().replace("A", "c")', {}, ["cB"]),
        ("(N * 0, triton.cdiv(N, 4))", {"N": "10"}, [(0, 3)]),
        ('A if FLAG else "b"', {"A": '"a"', "FLAG": "unknown()"}, ["a", "b"]),
        ("min(3, 2) + len((1, 2))", {}, [4]),
    ],
)
def test_fold_computes_constant_expressions(text, names, values):
    assert _fold(text, **names) == values


@pytest.mark.parametrize(
    "text",
    ['bytes.fromhex("41").decode()', '"".join(chr(c) for c in [65])', "x.shape[0]", "unknown", '"a" * 10**9',
     '"%999999d" % 1', '"{:>99999}".format(1)', "2 ** 10000", '"a".encode()', "[*parts]"],
)
def test_fold_gives_up_on_what_it_cannot_know_or_would_be_huge(text):
    assert _fold(text) is None


def test_fold_strings_joins_source_lists_and_bounds_alternatives():
    assert fold_strings(_expr('["a", "b"]'), {}.get) == ["a\nb"]
    many = {f"V{i}": [_expr('"x"'), _expr('"y"')] for i in range(5)}
    assert fold(_expr(" + ".join(f"V{i}" for i in range(5))), many.get) is None  # 32 alternatives: too many
    assert len(fold_strings(_expr('"a" * 1000'), {}.get)[0]) == 1000 < MAX_LEN


@pytest.mark.parametrize(
    ("dotted", "refused"),
    [
        ("typing.sys.modules", True), ("dataclasses.builtins", True), ("torch.os.environ", True),
        ("triton.language.core.builtins", True), ("triton.language.extra.module_from_spec", True),
        ("kernelevo.cuda.os", True), ("torch.functools", True), ("collections.abc.sys", True),
        ("importlib.import_module", True), ("importlib.util.spec_from_file_location", True),
        ("contextlib.chdir", True), ("packaging.tags", True), ("typing._alias", True),
        ("kernelevo.cuda.Kernel", True), ("torch.library.Library", True),
        ("typing.Optional", False), ("torch.nn.functional.relu", False),
        ("triton.language.extra.libdevice.rsqrt", False),
        ("importlib.util.find_spec", False), ("importlib.metadata.version", False),
        ("packaging.version.Version", False),
        ("contextlib.nullcontext", False), ("collections.abc.Sequence", False), ("torch.library.custom_op", False),
        ("kernelevo.cuda.compile", False), ("math.sqrt", False), ("torch.distributed.tensor.DTensor", False),
    ],
)
def test_module_chains_may_not_leave_their_package(dotted, refused):
    assert (chain_finding(dotted) is not None) is refused, chain_finding(dotted)


def test_a_module_reached_through_a_re_export_is_judged_by_its_own_name():
    """triton.language.core imports triton.knobs: `tl.core.knobs.getenv` is `triton.knobs.getenv` (refused, private
    Triton configuration), not a kernel-language name (red team s28). Names that are what they say stay as they are."""
    assert real_module_name("triton.language.core.knobs.getenv") == "triton.knobs.getenv"
    assert real_module_name("typing.sys.modules") == "sys.modules"
    for same in ("triton.language.math.exp", "torch.nn.functional.relu", "triton.language.core.program_id",
                 "triton.knobs.getenv", "not_a_module.x"):
        assert real_module_name(same) == same
    found = classify_name("triton.language.core.knobs.getenv")
    assert found is not None and found[0] == "private-api" and "triton.knobs.getenv" in found[1]
    assert classify_name("triton.language.math.exp") is None
    assert classify_name("triton.language.core.program_id") is None


def test_is_module():
    assert is_module("triton.language") and is_module("torch.nn.functional") and is_module("typing")
    assert not is_module("torch.nn.functional.relu") and not is_module("torch.Tensor")
    assert not is_module("triton.language.program_id")


@pytest.mark.parametrize(
    ("source", "target", "use"),
    [
        ("f(x)", "f", Use.CALLED), ("x.y", "x", Use.ATTRIBUTE_BASE), ("getattr(m, 'a')", "m", Use.LOOKUP_OBJECT),
        ("v = m", "m", Use.ALIAS), ("self.v = m", "m", Use.VALUE), ("m is None", "m", Use.TRUTH),
        ("not m or y", "m", Use.TRUTH), ("z = m or y", "m", Use.VALUE),
        ("isinstance(x, (T, int))", "T", Use.TYPE_CHECK),
        ("g(m)", "m", Use.VALUE), ("[m]", "m", Use.VALUE),
    ],
)
def test_use_of(source, target, use):
    tree = ast.parse(source)
    parents = parent_map(tree)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == target)
    assert use_of(node, parents) is use


def test_annotation_and_decorator_uses():
    tree = ast.parse("@deco\ndef f(a: T) -> R:\n    pass")
    parents = parent_map(tree)
    names = {n.id: n for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert use_of(names["deco"], parents) is Use.DECORATOR
    assert use_of(names["T"], parents) is Use.ANNOTATION and use_of(names["R"], parents) is Use.ANNOTATION


def _resolve(node: ast.AST) -> str | None:
    text = ast.unparse(node)
    return text if text.startswith(("torch.", "importlib.", "packaging.")) else None


@pytest.mark.parametrize(
    ("source", "probe"),
    [
        ("try:\n    cap = torch.cuda.get_device_capability()\nexcept RuntimeError:\n    cap = (0, 0)", True),
        ("try:\n    import x\n    HAS = True\nexcept ImportError:\n    HAS = False", True),
        ("try:\n    v = importlib.metadata.version('t')\nexcept Exception:\n    v = None", True),
        ("try:\n    n = torch.cuda.get_device_properties(0).multi_processor_count\nexcept RuntimeError:\n"
         "    n = 1", True),
        ("try:\n    y = x.exp()\nexcept Exception:\n    ok = False", False),
        ("try:\n    kernel[grid](x)\nexcept Exception:\n    ok = False", False),
        ("try:\n    cap = torch.cuda.get_device_capability()\nexcept RuntimeError:\n    out = fallback(x)", False),
        ("try:\n    cap = torch.cuda.get_device_capability()\nfinally:\n    pass", False),
        ("try:\n    import x\nexcept ImportError:\n    import y as x", True),  # the other place it lives
    ],
)
def test_probe_try(source, probe):
    assert is_probe_try(ast.parse(source).body[0], _resolve) is probe


def test_import_policy_imports_nothing_heavy():
    code = ("import sys, evaluator.import_policy as p; assert 'torch' not in sys.modules; "
            "print(sorted(p.RUNTIME_IMPORT_ROOTS))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    roots = set(eval(done.stdout))  # noqa: S307 - our own subprocess printing a list literal
    assert {"torch", "triton", "contextlib", "packaging", "importlib", "kernelevo", "math"} <= roots
    assert not roots & {"gc", "numpy", "ctypes", "subprocess", "shutil", "pathlib", "_thread"}
    # threading only for its locks (a cache guarded against concurrent callers): no Thread, Timer or enumerate
    assert import_policy.POLICIES["threading"].members == {"Lock", "RLock"}
    # os/sys/logging/warnings/platform are importable for their read-only members (the checker judges each use), and
    # inspect for parameter names and registry keys only (evaluator/static_inspect.py)
    assert {"os", "sys", "warnings", "logging", "platform", "einops", "inspect"} <= roots
    assert import_policy.POLICIES["inspect"].members is not None
    assert not import_policy.POLICIES["inspect"].members & {"currentframe", "stack", "getmembers", "getclosurevars",
                                                             "getsource", "trace", "Signature", "Parameter"}


def test_every_policy_module_is_importable_by_candidates_and_summarised():
    for module in import_policy.POLICIES:
        assert module_allowed(module), module
        assert module.split(".")[0].lstrip("_") in import_policy.ALLOWED_SUMMARY or module == "__future__", module
    assert module_allowed("triton.language.extra.libdevice") and module_allowed("collections.abc")
    assert not module_allowed("torch.distributed") and not module_allowed("importlib.machinery")


def test_refusal_reasons_are_about_the_module():
    assert "network I/O" in why_module("torch.distributed")
    assert "version checks" in why_module("packaging.tags")
    assert "computed at run time" in why_module("importlib.machinery")
    assert why_module("yaml") == "it is not on the candidate allowlist"
    assert "only reads of environment flags" in why_module("os.path")
