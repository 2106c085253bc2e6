"""Walk-arounds of the static checker that a red team found, one mechanism per group and several
variants each (each written to slip past the rule that used to catch the mechanism alone): the rule
must fire on the line that does it, with a message that says what to do."""

from __future__ import annotations

import pytest
from test_static_check import ACTIONS, make, marked_line

from evaluator.static_check import check_source

# 1. Tensor methods and torch callables handed around as values (the call happens where no rule looks).
BOUND_METHODS = [
    ("torch-compute", dict(body="f = x.softmax  # HERE\nout = f(-1)")),
    ("torch-compute", dict(body="g = getattr(x, 'softmax', None)  # HERE\nout = g(-1)")),
    ("torch-compute", dict(body="fns = [x.exp]  # HERE\nout = fns[0]()")),
    ("torch-compute", dict(body="table = {'f': out.exp}  # HERE")),
    ("torch-compute", dict(init="self.op = torch.ones(2).softmax  # HERE")),
    ("torch-compute", dict(init="self.op = type(torch.empty(0)).softmax  # HERE", body="out = self.op(x, -1)")),
    ("torch-compute", dict(module="import functools\nP = functools.partial(torch.Tensor.sum, dim=0)  # HERE")),
    ("torch-compute", dict(body="out = sorted([x], key=torch.Tensor.sum)  # HERE")),
    ("torch-compute", dict(init="self.t = torch.Tensor", body="out = self.t.softmax(x, -1)  # HERE")),
    ("torch-compute", dict(body="out = type(x).exp(x)  # HERE")),
    ("torch-compute", dict(module="ACT = lambda t: t.exp()  # HERE", body="out = ACT(x)")),
    ("torch-compute", dict(module="class Ops:\n    act = staticmethod(lambda t: t.exp())  # HERE",
                           body="out = Ops.act(x)")),
    ("torch-compute", dict(init="def act(t):\n    return t.exp()  # HERE\n\nself.act = act", body="out = self.act(x)")),
    ("torch-compute", dict(init="class H:\n    def run(self, t):\n        return t.exp()  # HERE\n\nself.h = H()",
                           body="out = self.h.run(x)")),
    ("torch-compute", dict(module="def make():\n    return lambda t: t.exp()  # HERE", init="self.f = make()")),
    ("torch-compute", dict(module="def helper(t, f=torch.exp):  # HERE\n    return f(t)", body="out = helper(out)")),
    ("dangerous-builtin", dict(module="import functools\n"
                                      "MC = functools.partial(operator.methodcaller, 'exp')  # HERE")),
]

# 2. Aliases and indirect uses of lookup / evaluation builtins.
LOOKUP_BUILTINS = [
    ("dangerous-builtin", dict(body="g = getattr  # HERE\nout = g(torch, 'soft' + 'max')(x, -1)")),
    ("dangerous-builtin", dict(module="import functools", body="f = functools.partial(getattr, torch)  # HERE")),
    ("dangerous-builtin", dict(module="import functools",
                               body="f = functools.reduce(getattr, ['nn', 'functional'], torch)  # HERE")),
    ("dangerous-builtin", dict(body="tools = (getattr, len)  # HERE")),
    ("dangerous-builtin", dict(body="ag = [operator.attrgetter]  # HERE")),
    ("dangerous-builtin", dict(body="mc = {'m': operator.methodcaller}  # HERE")),
    ("dangerous-builtin", dict(module="import functools", body="e = functools.partial(eval, '1')  # HERE")),
    ("dangerous-builtin", dict(body="copy_kernel[lambda meta: eval('(1,)')](x, out, 1, BLOCK=16)  # HERE")),
    ("dangerous-builtin", dict(module="Lazy = type('Lazy', (torch.Tensor,), {})  # HERE")),
    ("dangerous-builtin", dict(module="make = type  # HERE")),
    ("dangerous-builtin", dict(body="out = getattr(torch, x.device.type)(x)  # HERE")),
    ("dangerous-builtin", dict(body="m = getattr(torch, x.device.type)  # HERE\nout = m.softmax(x, -1)")),
    ("dangerous-builtin", dict(body="m = getattr(torch, x.device.type and 'nn')  # HERE\nn = m.device_count()")),
    ("dangerous-builtin", dict(body="f = getattr(torch, ''.join(['so', 'ftmax']))  # HERE")),
    ("dangerous-builtin", dict(body="f = getattr(torch, bytes.fromhex('6578').decode())  # HERE")),
    ("dangerous-builtin", dict(body="f = getattr(x, chr(101) + 'xp')  # HERE")),
    ("dangerous-builtin", dict(body="f = getattr(torch, f'{\"ex\"}p')  # HERE")),
    ("dangerous-builtin", dict(body="f = getattr(torch, '{}{}'.format('ex', 'p'))  # HERE")),
    # annotations are evaluated by typing, dataclasses and torch.library's schema inference
    ("dangerous-builtin", dict(module="def helper(t: \"__import__('os')\"):  # HERE\n    pass")),
    ("dangerous-builtin", dict(module="def helper(t: print('x')):  # HERE\n    pass")),
    ("dangerous-builtin", dict(module="def helper(t) -> (lambda: int)():  # HERE\n    pass")),
    ("dangerous-builtin", dict(module="LIMIT: (lambda: int)() = 1  # HERE")),
    ("dangerous-builtin", dict(module="def helper(t: \"(lambda: torch.Tensor)()\"):  # HERE\n    pass")),
]

# 3. Attribute chains out of allowed modules, and modules handed around as values.
CHAINS = [
    ("banned-import", dict(module="import typing", body="m = typing.sys.modules  # HERE")),
    ("banned-import", dict(module="from typing import sys  # HERE")),
    ("banned-import", dict(module="import dataclasses", body="g = dataclasses.builtins.getattr  # HERE")),
    ("banned-import", dict(body="e = torch.os.environ  # HERE")),
    ("banned-import", dict(body="code = torch.sys.exit  # HERE")),
    ("banned-import", dict(body="b = tl.core.builtins  # HERE")),
    ("banned-import", dict(module="import kernelevo.cuda", body="p = kernelevo.cuda.os.getpid()  # HERE")),
    ("banned-import", dict(body="p = tl.extra.pkgutil  # HERE")),
    ("banned-import", dict(body="f = tl.extra.module_from_spec  # HERE")),
    ("banned-import", dict(module="import collections.abc", body="s = collections.abc.sys  # HERE")),
    ("banned-import", dict(body="f = F.torch.functools  # HERE")),
    ("banned-import", dict(module="import typing", body="m = getattr(typing, 'sys')  # HERE")),
    ("banned-import", dict(module="import typing", init="self.m = typing  # HERE")),
    ("banned-import", dict(module="import dataclasses\n\n\ndef helper(m=dataclasses):  # HERE\n    return m",
                           body="helper()")),
    ("banned-import", dict(module="import typing", body="m = operator.attrgetter('sys')(typing)  # HERE")),
    ("banned-import", dict(module="import typing", body="mods = [typing, torch]  # HERE")),
    ("banned-import", dict(body="copy_kernel[(1,)](x, out, 1, tl, BLOCK=16)  # HERE")),
    ("banned-import", dict(module="import importlib", body="m = importlib.import_module('os')  # HERE")),
    ("banned-import", dict(module="import importlib", body="m = importlib.reload(torch)  # HERE")),
    ("banned-import", dict(module="import importlib.util", body="spec = importlib.util.find_spec('gc')  # HERE\n"
                                                                   "loader = spec.loader")),
    ("banned-import", dict(module="import importlib.util\nNAME = 'g' + 'c'\n"
                                  "HAS = importlib.util.find_spec(NAME) is not None  # HERE")),
    ("banned-import", dict(module="import importlib.util\n"
                                  "S = importlib.util.spec_from_file_location('m', 'm.py')  # HERE")),
    ("banned-import", dict(module="import importlib.metadata\nE = importlib.metadata.entry_points()  # HERE")),
    ("banned-import", dict(module="import contextlib", body="with contextlib.chdir('/'):  # HERE\n    pass")),
    ("banned-import", dict(module="import contextlib",
                           body="with contextlib.redirect_stdout(None):  # HERE\n    pass")),
    ("banned-import", dict(module="import packaging.tags  # HERE")),
    ("banned-import", dict(module="import torch.distributed  # HERE")),
    ("banned-import", dict(module="from torch.distributed.tensor import distribute_tensor  # HERE")),
    ("banned-import", dict(module="from torch.distributed.tensor import DTensor",
                           body="d = DTensor.from_local(x)  # HERE")),
    ("banned-import", dict(module="from torch.distributed.tensor import DTensor", body="kinds = [DTensor]  # HERE")),
    ("banned-import", dict(module="import typing", body="h = typing.get_type_hints(self.forward)  # HERE")),
    ("banned-import", dict(module="import functools\n\n\n@functools.singledispatch  # HERE\ndef f(a):\n    pass")),
    ("banned-import", dict(module="import dataclasses\nL = dataclasses.make_dataclass('L', [])  # HERE")),
    ("banned-import", dict(module="from kernelevo import cuda\nK = cuda.Kernel  # HERE")),
    ("banned-import", dict(module="from triton.tools import disasm  # HERE")),
    ("banned-import", dict(module="from torch.utils.cpp_extension import load  # HERE")),
]

# 4. Registration APIs and names decoded at run time.
REGISTRATION = [
    ("private-api", dict(module="LIB = torch.library.Library('kelib', 'DEF')  # HERE")),
    ("private-api", dict(module="torch.library.define('kelib::f(Tensor x) -> Tensor')  # HERE")),
    ("private-api", dict(module="torch.library.impl('aten::softmax', 'CPU')  # HERE")),
    ("private-api", dict(module="@torch.library.custom_op('aten::kelib_copy', mutates_args=())  # HERE\n"
                                "def cp(t: torch.Tensor) -> torch.Tensor:\n    return torch.empty_like(t)")),
    ("private-api", dict(module="NAME = 'ke' + 'lib::cp'\n\n\n@torch.library.custom_op(NAME, mutates_args=())  # HERE\n"
                                "def cp(t: torch.Tensor) -> torch.Tensor:\n    return torch.empty_like(t)")),
    ("private-api", dict(module="torch.library.register_fake('aten::softmax')(lambda t, d, h: t)  # HERE")),
    ("private-api", dict(body="out = torch.ops.kelib.unknown(x)  # HERE")),
    ("private-api", dict(module="K = triton.compile('src')  # HERE")),
]

_BODY = 'extern \\"C\\" __global__ void k(float* p) { }'
CUDA_SOURCES = [
    ("cuda-source", dict(module=f'from kernelevo import cuda\nA = "cudaStreamCr"\n'
                                f'K = cuda.compile(A + "eate(0); {_BODY}", "k")  # HERE')),
    ("cuda-source", dict(module=f'from kernelevo import cuda\n'
                                f'K = cuda.compile("{_BODY}" + ")0(etaerCmaertSaduc"[::-1], '
                                '"k")  # HERE')),
    ("cuda-source", dict(module=f'from kernelevo import cuda\nK = cuda.compile("{{}}{{}}(0); {_BODY}".format('
                                '"cudaStream", "Create"), "k")  # HERE')),
    ("cuda-source", dict(module=f'from kernelevo import cuda\n'
                                f'K = cuda.compile("%s%s(0); {_BODY}" % ("cudaMal", "loc"), '
                                '"k")  # HERE')),
    ("cuda-source", dict(module='from kernelevo import cuda\nP = "cudaMal"\nK = cuda.compile(f"{P}loc(0); '
                                'extern \\"C\\" __global__ void k(float* p) {{ }}", "k")  # HERE')),
    ("cuda-source", dict(module='from kernelevo import cuda\n'
                                'K = cuda.compile(bytes.fromhex("41").decode(), "k")  # HERE')),
    ("cuda-source", dict(module='from kernelevo import cuda\n'
                                'K = cuda.compile("".join(chr(c) for c in [65]), "k")  # HERE')),
    ("cuda-source", dict(module='from torch.utils.cpp_extension import load_inline\nOPTS = {"name": "e"}\n'
                                'EXT = load_inline(**OPTS)  # HERE')),
    ("cuda-source", dict(module='import functools\nfrom torch.utils.cpp_extension import load_inline\n'
                                'LI = functools.partial(load_inline, cuda_sources="")  # HERE')),
]

# 5. Host-side work: tensor data handed to Python, where the math never reaches the dispatcher.
HOST = [
    ("torch-compute", dict(body="v = x.tolist()  # HERE")),
    ("torch-compute", dict(body="v = x.numpy  # HERE")),
    ("torch-compute", dict(body="v = x.detach().cpu().numpy()  # HERE")),
    ("torch-compute", dict(body="for i in range(4):\n    v = x[i].item()  # HERE")),
    ("torch-compute", dict(body="vals = [float(v) for v in x]  # HERE")),
    ("torch-compute", dict(body="for v in x.view(-1):\n    s = float(v)  # HERE")),
    ("torch-compute", dict(body="for i in range(4):\n    s = int(x[i])  # HERE")),
    ("torch-compute", dict(body="out.apply_(abs)  # HERE")),
    ("torch-compute", dict(body="out.map_(x, max)  # HERE")),
    ("torch-compute", dict(body="t = x.new_tensor([1.0])  # HERE")),
    ("torch-compute", dict(body="t = torch.tensor([1.0, 2.0])  # HERE")),
    ("torch-compute", dict(body="b = bytes(x.untyped_storage())  # HERE")),
    ("torch-compute", dict(body="s = x.storage()  # HERE")),
    ("torch-compute", dict(module="HOST = lambda t: t.tolist()  # HERE", body="v = HOST(x)")),
    ("dangerous-builtin", dict(body="m = memoryview(b'')  # HERE")),
    ("banned-import", dict(module="import array  # HERE")),
]

# 6. Launches that run no program.
GRIDS = [
    ("empty-grid", dict(body="copy_kernel[(0,)](x, out, 0, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[()](x, out, 0, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[lambda meta: (0,)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="g = (0,)\ncopy_kernel[g](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[(x.numel() * 0,)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[(triton.cdiv(0, 16),)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[(x.numel() - x.numel(),)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[(min(0, x.numel()),)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[(x.numel() & 0, 1)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(body="copy_kernel[(False,)](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(module="GRID = (0, 1)", body="copy_kernel[GRID](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(module="def grid(meta):\n    return (0,)",
                        body="copy_kernel[grid](x, out, 16, BLOCK=16)  # HERE")),
    ("empty-grid", dict(module="from kernelevo import cuda\n"
                               "K = cuda.compile('extern \"C\" __global__ void k() {}', 'k')",
                        body="K[(4,), (0,)]()  # HERE")),
]

# 7. try fallbacks dressed as probes, and probes' cousins that are fallbacks.
FALLBACKS = [
    ("try-fallback", dict(body="try:  # HERE\n    y = x.exp()\nexcept Exception:\n    ok = False")),
    ("try-fallback", dict(body="try:  # HERE\n    copy_kernel[(1,)](x, out, 1, BLOCK=16)\nexcept RuntimeError:\n"
                               "    ok = False")),
    ("try-fallback", dict(body="try:  # HERE\n    cap = torch.cuda.get_device_capability()\nexcept RuntimeError:\n"
                               "    out = x")),
    ("try-fallback", dict(body="try:  # HERE\n    cap = torch.cuda.get_device_capability()\nfinally:\n    pass")),
    ("try-fallback", dict(module="import contextlib", body="with contextlib.suppress(Exception):  # HERE\n"
                                                          "    out = out.view(-1)")),
    ("patching", dict(module="try:\n    from torch import softmax as sm\nexcept ImportError:\n"
                             "    sm = torch.exp  # HERE")),
    ("patching", dict(module="try:\n    import triton.language.extra.libdevice as ld\nexcept ImportError:\n"
                             "    class ld(torch.Tensor):  # HERE\n        pass")),
    ("patching", dict(module="def helper():\n    global F\n    F = None  # HERE")),
]

# 8. Scope and import tricks: the name the checker reads is not the object that runs.
SCOPES = [
    ("torch-compute", dict(module="def helper(t, tl=torch):\n    return tl.softmax(t, -1)  # HERE",
                           body="out = helper(out)")),
    ("torch-compute", dict(module="try:\n    from triton.language import exp as act\nexcept ImportError:\n"
                                  "    from torch import exp as act", body="out = act(x)  # HERE")),
    ("torch-compute", dict(module="def helper(t):\n    F = torch.nn.functional\n    return F.relu(t)  # HERE",
                           body="out = helper(out)")),
]

CASES = BOUND_METHODS + LOOKUP_BUILTINS + CHAINS + REGISTRATION + CUDA_SOURCES + HOST + GRIDS + FALLBACKS + SCOPES


@pytest.mark.parametrize(("rule", "parts"), CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_walkaround_is_refused_on_its_line(rule, parts):
    source = make(**parts)
    report = check_source(source, "cand.py")
    line = marked_line(source)
    hits = [v for v in report.violations if v.rule == rule]
    assert hits, (rule, report.violations)
    assert line in {v.line for v in hits}, (line, hits, report.violations)
    for v in hits:
        assert any(word in v.message for word in ACTIONS), v.message


def test_an_empty_launch_does_not_count_as_a_launch():
    report = check_source(make(body="copy_kernel[(0,)](x, out, 0, BLOCK=16)").replace(
        "        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n", ""))
    assert {"empty-grid", "kernel-not-launched"} <= {v.rule for v in report.violations}


def test_data_dependent_empty_grid_is_left_to_the_runtime_layer():
    assert check_source(make(body="copy_kernel[(x.numel() >> 40,)](x, out, 16, BLOCK=16)")).ok


def test_refused_module_messages_say_what_that_module_does():
    def message(module: str) -> str:
        report = check_source(make(module=module))
        return next(v.message for v in report.violations if v.rule == "banned-import")

    assert "network I/O" in message("import torch.distributed")
    assert "network I/O" not in message("import packaging.tags")
    assert "version checks" in message("import packaging.tags")
    assert "computed at run time" in message("from importlib import import_module")
    assert "threads" in message("import _thread")
    assert "start threads" in message("import threading\nT = threading.Thread")  # only its locks are allowed
    assert "file I/O" in message("import pathlib")
    assert "not on the candidate allowlist" in message("import yaml")


HELPER_READ = '''
import os

def _flag(name, default=""):
    return os.environ.get(name, default)

def _env(prefix, name="DEBUG"):
    return os.getenv(prefix + name)

A = _flag({first!r})
B = _env({second!r})
'''


@pytest.mark.parametrize("first,second,refused", [
    ("HOME", "TRITON_", True),  # the helper's parameter carries an identity variable's name
    ("TRITON_DEBUG", "XDG_", True),  # folded through the parameter and the other's default: XDG_DEBUG
    ("TRITON_DEBUG", "TRITON_", False),  # flags a library reads stay allowed
])
def test_an_environment_read_through_a_helpers_parameter_is_folded_at_its_calls(first, second, refused):
    report = check_source(HELPER_READ.format(first=first, second=second))
    found = [v for v in report.violations if v.rule == "introspection"]
    assert bool(found) is refused, found
