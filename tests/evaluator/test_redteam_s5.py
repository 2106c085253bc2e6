"""The fixes of red-team session 5 on their own (the candidates are in tests/candidates/redteam/s5_*.py): callables a
library calls back for the candidate, code the harness itself used to run after forward, kernels registered on
the candidate's own custom op, and the interpreter running a kernel other than the one checked. Guard cases that
install process-wide hooks run in a fresh interpreter (an audit hook cannot be removed once installed)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from test_audit_guard import ATTEMPT_EACH, LIBRARY_DRIVER_HEAD, guard_report

from evaluator.static_check import check_source

_LIBRARY = '''
import os
import subprocess


def call(callback, *args):  # a library calling back what it was handed (a grid, a hook, tree_map's function)
    return callback(*args)


def write_named(path):  # a compile cache writing a file of its own
    with open(path, "w") as handle:
        handle.write("cache")


def replace_named(source, target):
    os.replace(source, target)


def setenv_named(key, value):
    os.environ[key] = value


def run_named(program):
    return subprocess.run([program, "--version"], capture_output=True).returncode
'''

_ATTEMPTS = '''
import functools, operator, os, threading
def attempts(private, library, Target):
    cache, planted, link = str(private / "cache.bin"), str(private / "gcc"), str(private / "sh")
    flags = os.O_WRONLY | os.O_CREAT
    return {
        "partial_open_write": lambda: library.call(functools.partial(open, mode="w"), cache).close(),
        "partial_os_open_executable": lambda: library.call(functools.partial(os.open, flags=flags, mode=0o755),
                                                           planted),
        "partial_chmod": lambda: library.call(functools.partial(os.chmod, mode=0o755), cache),
        "partial_symlink": lambda: library.call(functools.partial(os.symlink, "/bin/sh"), link),
        "partial_setenv": lambda: library.call(functools.partial(operator.setitem, os.environ, "CC"), planted),
        "partial_unsetenv": lambda: library.call(functools.partial(operator.delitem, os.environ), "PATH"),
        "partial_set_code": lambda: library.call(functools.partial(setattr, Target.method, "__code__"),
                                                 (lambda self: 2).__code__),
        "thread_start": lambda: library.call(threading.Thread.start, threading.Thread(target=print)),
        "named_write_own_folder": lambda: library.write_named(cache),
        "named_write_candidate_file": lambda: library.write_named(str(private / "candidate.py")),
        "named_replace_onto_candidate_file": lambda: library.replace_named(cache, str(private / "candidate.py")),
        "named_write_outbox": lambda: library.write_named(str(private / "outbox" / "call_1.pt")),
        "named_setenv": lambda: library.setenv_named("CC", planted),
    }
'''

_CALLBACK_DRIVER = LIBRARY_DRIVER_HEAD + ATTEMPT_EACH + textwrap.dedent("""
    guard.install()

    class Target:
        def method(self):
            return 1

    source = (lib / "attempts.py").read_text()
    namespace = {}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    attempts = namespace["attempts"](private, library, Target)
    results = attempt_each(guard, attempts)
    state = {"planted": os.path.exists(private / "gcc"), "link": os.path.lexists(private / "sh"),
             "CC": os.environ.get("CC"), "PATH": "PATH" in os.environ, "Target.method": Target().method(),
             "candidate": (private / "candidate.py").read_text()}
    print(json.dumps({"results": results, "state": state}))
""")


def test_library_callbacks_may_not_write_files_change_the_environment_types_or_start_threads(tmp_path):
    """What a library's own code does by name stays allowed (a cache file in the candidate's folder); what it
    does only because it called back a callable the candidate handed it is the candidate's, and is refused; the
    environment, the candidate's own file and thread starts are never a library's business while the candidate
    runs."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    (private / "outbox").mkdir(parents=True)
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(_LIBRARY)
    (lib / "attempts.py").write_text(_ATTEMPTS)  # compiled as the candidate's file by the driver
    report = guard_report(_CALLBACK_DRIVER, private, lib)
    assert report["results"] == {
        "partial_open_write": "refused", "partial_os_open_executable": "refused", "partial_chmod": "refused",
        "partial_symlink": "refused", "partial_setenv": "refused", "partial_unsetenv": "refused",
        "partial_set_code": "refused", "thread_start": "refused", "named_write_own_folder": "allowed",
        "named_write_candidate_file": "refused", "named_replace_onto_candidate_file": "refused",
        "named_write_outbox": "refused", "named_setenv": "refused",
    }
    assert report["state"] == {"planted": False, "link": False, "CC": None, "PATH": True, "Target.method": 1,
                               "candidate": "# the candidate's file\n"}


_SPAWN_DRIVER = textwrap.dedent("""
    import json, os, shutil, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from evaluator.sandboxed.guards import AuditGuard

    private, lib, compiler = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    sys.path.insert(0, str(lib))
    import library

    planted = private / "gcc"
    shutil.copy(compiler, planted)  # set up before the guard: a working compiler, in the candidate's folder
    guard = AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}))
    guard.install()
    namespace = {}
    exec(compile("def build(library, program):\\n    return library.run_named(program)\\n",
                 str(private / "candidate.py"), "exec"), namespace)

    def attempt(program):
        guard.active = True
        try:
            namespace["build"](library, program)
            return "allowed"
        except PermissionError:
            return "refused"
        finally:
            guard.active = False

    results = {"system_compiler": attempt(compiler), "planted_compiler": attempt(str(planted)),
               "compiler_by_name": attempt(os.path.basename(compiler))}
    os.chdir(private)  # a bare name is looked up on PATH, never in the current (the candidate's) folder
    results["planted_by_relative_path"] = attempt("./gcc")
    os.environ._data[b"COMPILER_PATH"] = str(private).encode()  # what os.environ shows, with no putenv event
    results["system_compiler_changed_environment"] = attempt(compiler)
    print(json.dumps(results))
""")


def test_the_toolchain_runs_only_from_outside_the_candidates_folder_with_the_environment_unchanged(tmp_path):
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler on PATH")
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(_LIBRARY)
    assert guard_report(_SPAWN_DRIVER, private, lib, Path(compiler)) == {
        "system_compiler": "allowed", "planted_compiler": "refused", "compiler_by_name": "allowed",
        "planted_by_relative_path": "refused", "system_compiler_changed_environment": "refused"}


_SNAPSHOT_DRIVER = textwrap.dedent("""
    import json, math, os, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    from evaluator.sandboxed import guards

    calls = []
    before = guards.snapshot_attributes()

    class Loud(property):
        def __get__(self, obj, cls=None):
            calls.append("property")
            return self

    class LoudClass(type):
        pass

    def late_dir():
        calls.append("__dir__")
        return list(vars(math))

    math.__dir__ = late_dir
    torch.nn.Module.s5_probe = Loud()
    math.s5_value = Loud()
    getitem = torch.Tensor.__getitem__
    torch.Tensor.__getitem__ = lambda self, index: getitem(self, index)
    os.environ._data[b"S5_PROBE"] = b"1"
    after = guards.snapshot_attributes()
    print(json.dumps({"calls": calls, "changed": guards.changed_attributes(before, after)}))
""")


def test_the_attribute_snapshot_runs_none_of_the_candidates_code():
    """The snapshot runs after forward with every other guard off: it must call nothing a candidate can set (a
    module's ``__dir__``, a property's getter), and it sees a changed environment, a new module hook and a replaced
    tensor operator (Python 3.11 raises no audit event when a class attribute is set)."""
    report = guard_report(_SNAPSHOT_DRIVER)
    assert report["calls"] == []
    assert {"math.__dir__", "os.environ", "torch.Tensor.__getitem__"} <= set(report["changed"])


def test_the_recorder_restores_the_mode_stacks_forward_left_behind():
    import torch
    from torch.overrides import TorchFunctionMode

    from evaluator.sandboxed.guards import OpRecorder

    depths = (torch._C._len_torch_dispatch_stack(), torch._C._len_torch_function_stack())
    recorder = OpRecorder()
    with recorder:
        TorchFunctionMode().__enter__()  # left pushed, as a candidate's forward would
    assert (torch._C._len_torch_dispatch_stack(), torch._C._len_torch_function_stack()) == depths
    assert recorder.violations == ["a TorchFunctionMode left on the stack"]
    clean = OpRecorder()
    with clean:
        torch.empty(2)
    assert clean.violations == []


_OWN_OP_DRIVER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    from evaluator.sandboxed import guards

    bodies = guards.OwnOpBodies()
    bodies.install()

    @torch.library.custom_op("s5test::smx", mutates_args=())
    def smx(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @smx.register_kernel("cpu")
    def _smx_cpu(x):
        return torch.softmax(x, -1)

    @torch.library.custom_op("s5test::plain", mutates_args=(), device_types="cpu")
    def plain(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    x = torch.randn(4, 4)
    seen = {}
    for name, op in (("register_kernel", smx), ("device_types", plain)):
        recorder = guards.OpRecorder(own_ops=frozenset({"s5test::smx", "s5test::plain"}))
        bodies.active[0] = recorder
        with recorder:
            op(x)
        bodies.active[0] = None
        seen[name] = recorder.violations
    print(json.dumps(seen))
""")


def test_kernels_registered_on_the_candidates_own_op_run_under_the_recorder():
    """``@op.register_kernel("cpu")`` replaces the body handed to custom_op on that device and runs below the
    Python key, with the modes popped: it enters the recorder like the body (and a body reached both ways is
    recorded once: clone is allowed, and nothing else shows)."""
    assert guard_report(_OWN_OP_DRIVER) == {"register_kernel": ["aten.softmax"], "device_types": []}


_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def fill(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32) + 1.0, mask=offs < n)


def other(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32) + 2.0, mask=offs < n)
'''

_INTERPRETER_DRIVER = textwrap.dedent("""
    import json, linecache, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import torch
    from evaluator.sandboxed import guards

    guards.LaunchCounter().install(interpreted=True)
    folder = Path(sys.argv[2])
    sys.path.insert(0, str(folder))
    import kernels

    path = str(folder / "kernels.py")
    with open(path) as handle:
        lines = [line.replace("+ 1.0", "+ 3.0") for line in handle]
    linecache.cache[path] = (sum(map(len, lines)), None, lines, path)  # a planted source, no file written
    out = torch.zeros(8)
    kernels.fill[(1,)](out, 8, BLOCK=8)
    result = {"planted_linecache": out[0].item()}
    kernels.fill.fn = kernels.other
    kernels.fill.rewriter = type(kernels.fill.rewriter)(kernels.other)
    try:
        kernels.fill[(1,)](out, 8, BLOCK=8)
        result["swapped_function"] = out[0].item()
    except PermissionError:
        result["swapped_function"] = "refused"
    print(json.dumps(result))
""")


def test_the_interpreter_runs_each_kernel_as_written_in_its_file(tmp_path):
    (tmp_path / "kernels.py").write_text(_KERNEL)
    report = guard_report(_INTERPRETER_DRIVER, tmp_path, env={"TRITON_INTERPRET": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    assert report == {"planted_linecache": 1.0, "swapped_function": "refused"}


_REGISTERED = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


@torch.library.custom_op("mylib::copy", mutates_args=())
def copy(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


@copy.register_kernel("cuda")
def _copy_cuda(x):
    BODY


class ModelNew(nn.Module):
    def forward(self, x):
        return copy(x)
'''


@pytest.mark.parametrize("body,rules", [
    ("return torch.softmax(x, dim=-1)", {"torch-compute"}),
    ("out = torch.empty_like(x)\n    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n"
     "    return out", set()),
])
def test_functions_registered_as_an_ops_kernel_are_on_the_forward_path(body: str, rules: set[str]):
    report = check_source(_REGISTERED.replace("BODY", body))
    assert {v.rule for v in report.violations} == rules, report.violations


_HOST_READS_DRIVER = textwrap.dedent("""
    import functools, json, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    import triton
    import triton.language as tl
    from evaluator.sandboxed import guards

    @triton.jit
    def touch(ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(ptr + offs, tl.load(ptr + offs))

    def collect(values):
        def step(_acc, value):
            values.append(value)
            return (1,)
        return step

    buffer = torch.zeros(16)
    seen = {}
    for name, elements in (("few", 8), ("every_element", 1000)):
        values, x = [], torch.randn(elements)
        recorder = guards.OpRecorder()
        with recorder:  # the grid reads the elements; Triton evaluates it
            touch[functools.partial(functools.reduce, collect(values), map(float, x))](buffer, BLOCK=16)
        seen[name] = {"read": len(values), "violations": recorder.violations,
                      "counted": recorder.dispatches >= elements}
    print(json.dumps(seen))
""")


def test_host_reads_count_wherever_they_run():
    """A grid callable is evaluated by Triton, but what it does is the candidate's: its torch calls count towards
    the cap, and reading more than a few hundred elements on the host in one forward is refused."""
    report = guard_report(_HOST_READS_DRIVER, env={"TRITON_INTERPRET": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    assert report["few"] == {"read": 8, "violations": [], "counted": True}
    assert report["every_element"]["read"] == 1000 and report["every_element"]["counted"]
    assert report["every_element"]["violations"] == [
        "aten._local_scalar_dense (more than 256 tensor elements read on the host in one call)"]


@pytest.mark.parametrize("use,refused", [
    ("VERIFIED = __name__.startswith('_kernelevo')", True),
    ("NAME = __name__", True),
    ("LOG = logging.getLogger(__name__)", False),
    ("MAIN = __name__ == '__main__'", False),
])
def test_the_modules_own_name_is_read_only_where_it_cannot_tell_the_verifier_apart(use: str, refused: bool):
    header = f"import logging\nimport torch\n{use}\n"
    source = _REGISTERED.replace("BODY", "return x").replace("import torch\n", header, 1)
    rules = {v.rule for v in check_source(source).violations}
    assert ("introspection" in rules) == refused, rules


_SIGNAL_DRIVER = textwrap.dedent("""
    import json, signal, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from evaluator.sandboxed import guards

    private = Path(sys.argv[2])
    guard = guards.AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}))
    guard.install()
    before = guards.snapshot_attributes()
    namespace = {"signal": signal}
    exec(compile("def arm():\\n    signal.signal(signal.SIGALRM, print)\\n"
                 "def timer():\\n    signal.setitimer(signal.ITIMER_REAL, 100.0)\\n",
                 str(private / "candidate.py"), "exec"), namespace)
    results = {}
    for name in ("arm", "timer"):
        guard.active = True
        try:
            namespace[name]()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
        finally:
            guard.active = False
    results["unchanged"] = guards.changed_attributes(before, guards.snapshot_attributes())
    signal.signal(signal.SIGALRM, print)  # the harness itself (or a candidate that got past the wrapper)
    results["changed"] = guards.changed_attributes(before, guards.snapshot_attributes())
    print(json.dumps(results))
""")


def test_signal_handlers_and_timers_are_refused_and_watched(tmp_path):
    (tmp_path / "candidate.py").write_text("# the candidate's file\n")
    assert guard_report(_SIGNAL_DRIVER, tmp_path) == {"arm": "refused", "timer": "refused", "unchanged": [],
                                                    "changed": ["signal.handlers"]}
