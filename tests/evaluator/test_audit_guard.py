"""The candidate process's audit hook, on its own: what a library may do while the candidate's code is on the
stack (it called the library, or handed it a callback). Each case runs in a fresh interpreter, since an audit
hook cannot be removed once installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def guard_report(driver: str, *paths: Path, env: dict[str, str] | None = None) -> Any:
    """Run ``driver`` in a fresh interpreter (an audit hook cannot be removed once installed) with the checkout and
    ``paths`` as its arguments (``env``: variables added to this process's); what it printed last, as JSON."""
    done = subprocess.run([sys.executable, "-c", driver, str(ROOT), *map(str, paths)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])

# The common start of the drivers that judge a library's calls: the guard is made for a candidate in ``private``
# (argv 2) and a library module ``library`` in ``lib`` (argv 3); each driver configures and installs it.
LIBRARY_DRIVER_HEAD = textwrap.dedent("""
    import functools, json, operator, os, platform, subprocess, sys, threading
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from evaluator.sandboxed.guards import AuditGuard

    private, lib = Path(sys.argv[2]), Path(sys.argv[3])
    sys.path.insert(0, str(lib))
    import library

    guard = AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}))
""")

# Driver code: run each attempt with the guard active and say which it let through.
ATTEMPT_EACH = textwrap.dedent("""
    def attempt_each(guard, attempts):
        results = {}
        for name, attempt in attempts.items():
            guard.active = True
            try:
                attempt()
                results[name] = "allowed"
            except PermissionError:
                results[name] = "refused"
            finally:
                guard.active = False
        return results
""")


_DRIVER = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from evaluator.sandboxed.guards import AuditGuard

    private = Path(sys.argv[2])
    sys.path.insert(0, str(private.parent / "lib"))
    import library  # a library: not the standard library, not the candidate

    scratch = Path(sys.argv[3]) if len(sys.argv) > 3 else None  # stands for the sandbox's own /tmp
    guard = AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}), scratch=scratch)
    guard.install()
    code = compile("def forward(target):\\n    return library.write_to(target)\\n", str(private / "candidate.py"),
                   "exec")
    namespace = {"library": library}
    exec(code, namespace)
    guard.active = True
    results = {}
    for name, target in [("devnull", os.devnull), ("own_folder", str(private / "cache.bin")),
                         ("outside", str(private.parent / "outside.txt")),
                         ("scratch", str(private.parent / "scratch" / "cuda_utils.c")),
                         ("scratch_temp", str(private.parent / "scratch"))]:
        try:
            namespace["forward"](target)
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
    guard.active = False
    print(json.dumps({"results": results, "violations": guard.violations}))
""")


def test_a_library_may_write_to_dev_null_and_the_candidates_folder_only(tmp_path):
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text("def write_to(path):\n    with open(path, 'w') as f:\n        f.write('x')\n")
    (tmp_path / "scratch").mkdir()
    report = guard_report(_DRIVER, private)
    # Triton builds its launcher with stdout=DEVNULL; compile caches live in the candidate's own folder.
    assert report["results"] == {"devnull": "allowed", "own_folder": "allowed", "outside": "refused",
                                 "scratch": "refused", "scratch_temp": "refused"}
    assert len(report["violations"]) == 3 and "outside.txt" in report["violations"][0]
    # the refusal names the candidate's line and the library code that raised the event on its behalf
    assert "from candidate.py:2 (in " in report["violations"][0]
    assert report["violations"][0].endswith("/lib/library.py:2)")
    assert not (tmp_path / "outside.txt").exists()


def test_in_a_sandbox_a_library_may_write_its_scratch_files_to_the_sandboxs_own_tmp(tmp_path):
    """Triton writes its launcher's C source to a temporary folder on a GPU's first launch: in a sandbox /tmp is a
    tmpfs of that process alone (the parent names it in the first message); without one it is the host's."""
    private, lib, scratch = tmp_path / "private", tmp_path / "lib", tmp_path / "scratch"
    for folder in (private, lib, scratch):
        folder.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(textwrap.dedent("""
        import os, tempfile
        def write_to(path):
            if os.path.isdir(path):  # a named temporary file in it: io.open(folder, "w", opener=...)
                with tempfile.NamedTemporaryFile("w", dir=path, delete=False) as f:
                    f.write("y")
                return
            with open(path, "w") as f:
                f.write("x")
    """))
    report = guard_report(_DRIVER, private, scratch)
    assert report["results"] == {"devnull": "allowed", "own_folder": "allowed", "outside": "refused",
                                 "scratch": "allowed", "scratch_temp": "allowed"}
    assert sorted(f.read_text() for f in scratch.iterdir()) == ["x", "y"]


_EXEC_DRIVER = LIBRARY_DRIVER_HEAD + textwrap.dedent("""
    guard._code_generators = {(str(lib / "library.py"), "generate"): None}  # stands for Triton's binder
    guard.install()
    source = ("import functools\\n"
              "def annotation():\\n    return library.evaluate(\\"__import__('_json')\\")\\n"
              "def generated():\\n    return library.generate()()\\n"
              "def own_eval():\\n    return eval(\\"__import__('_json')\\")\\n"
              "def callback():\\n    return library.call(functools.partial(eval, \\"__import__('_json')\\"))\\n")
    namespace = {"library": library}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    guard.active = True
    results = {}
    for name in ("generated", "own_eval", "callback", "annotation"):
        sys.modules.pop("_json", None)
        try:
            namespace[name]()
            results[name] = "allowed"
        except (ImportError, PermissionError):  # the import, or already the eval's compile
            results[name] = "refused"
    guard.active = False
    print(json.dumps(results))
""")

_LIBRARY = '''
def generate():
    namespace = {}
    exec("def binder():\\n    import _json\\n    return _json\\n", namespace)
    return namespace["binder"]


def call(callback):
    return callback()


def evaluate(text):  # like torch.library.custom_op evaluating a string annotation: the text is the caller's
    return eval(text)
'''


def test_code_a_library_generates_for_itself_is_not_the_candidates(tmp_path):
    """Triton's argument binder is generated with exec (filename ``<string>``) and imports private modules; the
    candidate's own eval, an eval it hands a library as a callback, and a string a library evaluates for it (an
    annotation) stay the candidate's."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(_LIBRARY)
    assert guard_report(_EXEC_DRIVER, private, lib) == {
        "generated": "allowed", "own_eval": "refused", "callback": "refused", "annotation": "refused"}


_FRAMES_DRIVER = LIBRARY_DRIVER_HEAD + textwrap.dedent("""
    guard._library_dirs = (str(lib) + "/",)
    guard.install()
    source = ("import operator\\n"
              "def filtered():\\n    return library.filter_traceback()\\n"
              "def handed():\\n    return library.read_with(operator.attrgetter('tb_frame'))\\n"
              "def own():\\n    try:\\n        raise ValueError\\n    except ValueError as e:\\n"
              "        return e.__traceback__.tb_frame\\n")
    namespace = {"library": library}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    guard.active = True
    results = {}
    for name in ("filtered", "handed", "own"):
        try:
            namespace[name]()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
    guard.active = False
    print(json.dumps(results))
""")

_FRAME_LIBRARY = '''
def _error():
    try:
        raise ValueError("compile error")
    except ValueError as e:
        return e


def filter_traceback():
    tb = _error().__traceback__
    files = []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return files


def read_with(getter):
    return getter(_error().__traceback__)
'''


def test_a_library_may_read_frames_itself_but_not_through_a_callable_the_candidate_handed_it(tmp_path):
    """Triton walks ``tb.tb_frame`` of a compile error to shorten its traceback (its own code names the attribute);
    an ``attrgetter('tb_frame')`` handed to a library, and the candidate's own read, are refused."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(_FRAME_LIBRARY)
    assert guard_report(_FRAMES_DRIVER, private, lib) == {
        "filtered": "allowed", "handed": "refused", "own": "refused"}


_INSPECT_DRIVER = LIBRARY_DRIVER_HEAD + textwrap.dedent("""
    import inspect
    guard._library_dirs = (str(lib) + "/",)
    guard.install()
    source = ("import functools, inspect\\n"
              "class Planted:\\n"
              "    def __call__(self, x):\\n        return x\\n"
              "    __signature__ = property(functools.partial(dict.fromkeys, map(inspect.stack, [0])))\\n"
              "def named():\\n    return library.where_am_i()\\n"
              "def handed():\\n    return library.call(inspect.currentframe)\\n"
              "def handed_stack():\\n    got = []\\n"
              "    library.call(functools.partial(got.extend, map(inspect.stack, [0])))\\n    return got\\n"
              "def planted():\\n    return list(library.parameter_names(Planted()))\\n"
              "def own():\\n    return inspect.currentframe()\\n")
    namespace = {"library": library}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    results = {}
    for name in ("named", "handed", "handed_stack", "planted", "own"):
        guard.active = True
        try:
            namespace[name]()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
        except TypeError:  # stack() ran for the planted property (its frames are unhashable keys)
            results[name] = "allowed"
        finally:
            guard.active = False
    print(json.dumps(results))
""")

_INSPECT_LIBRARY = '''
import inspect


def where_am_i():
    return inspect.currentframe().f_back.f_code.co_name


def call(callback):
    return callback()


def parameter_names(fn):
    return inspect.signature(fn).parameters
'''


def test_a_library_may_ask_inspect_for_frames_by_name_but_no_callable_may_hop_into_it(tmp_path):
    """inspect.py reads frames for a library only when every frame from the read up to the library was called by name
    (torch's ``inspect.currentframe()``): not ``inspect.currentframe`` handed over as a callback, not
    ``map(inspect.stack, ...)`` under a ``partial``, not a ``__signature__`` property that inspect reads for a library
    and that runs ``inspect.stack`` through C callables (a hop no frame names)."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(_INSPECT_LIBRARY)
    assert guard_report(_INSPECT_DRIVER, private, lib) == {
        "named": "allowed", "handed": "refused", "handed_stack": "refused", "planted": "refused", "own": "refused"}


_PROBE_DRIVER = LIBRARY_DRIVER_HEAD + textwrap.dedent("""
    guard.install()
    source = ("import functools\\n"
              "def through_platform():\\n    return library.describe_host()\\n"
              "def own_spawn():\\n    return subprocess.run(['file', '-b', sys.executable], capture_output=True)\\n"
              "def handed_spawn():\\n"
              "    return library.call(functools.partial(subprocess.run, ['file', '-b', sys.executable]))\\n"
              "def other_program():\\n    return library.run(['sh', '-c', 'true'])\\n")
    namespace = {"library": library, "subprocess": subprocess, "sys": sys}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    guard.active = True
    results = {}
    for name in ("through_platform", "own_spawn", "handed_spawn", "other_program"):
        try:
            namespace[name]()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
        except (OSError, subprocess.SubprocessError) as exc:  # `file` may be missing: the hook allowed the spawn
            results[name] = "allowed" if not isinstance(exc, PermissionError) else "refused"
    guard.active = False
    print(json.dumps({"results": results, "violations": guard.violations}))
""")


def test_a_library_may_have_platform_describe_the_host_but_the_candidate_may_not_spawn(tmp_path):
    """Triton's launcher build asks ``platform.architecture()``, which runs ``file -b`` on the interpreter while
    the candidate's launch is on the stack: the standard library's own probe is allowed; the same program started
    by the candidate, or by a callable it handed a library, and any other program a library starts, are not."""
    private, lib = tmp_path / "private", tmp_path / "lib"
    private.mkdir()
    lib.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    (lib / "library.py").write_text(
        "import platform, subprocess\n"
        "def describe_host():\n    return platform.architecture()\n"
        "def call(f):\n    return f()\n"
        "def run(argv):\n    return subprocess.run(argv)\n")
    report = guard_report(_PROBE_DRIVER, private, lib)
    assert report["results"] == {"through_platform": "allowed", "own_spawn": "refused", "handed_spawn": "refused",
                                 "other_program": "refused"}
    assert len(report["violations"]) == 3  # platform swallows a refusal (OSError): the count proves none was its


_IDENTITY_DRIVER = textwrap.dedent("""
    import _signal, _thread, inspect, json, signal, sys, threading
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import torch
    import triton
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction
    from evaluator.sandboxed import guards

    guards.warm_up_guards()
    owners = {"torch.Tensor": torch.Tensor, "torch.library": torch.library, "torch.library.Library":
              torch.library.Library, "JITFunction": JITFunction, "Autotuner": Autotuner, "_thread": _thread,
              "threading": threading, "signal": signal, "_signal": _signal, "torch": torch}

    def table():
        found = {}
        for o, owner in owners.items():
            for n in dir(owner):
                v = inspect.getattr_static(owner, n, None)
                if callable(v):
                    found[f"{o}.{n}"] = v
        return found

    def identity(fn):
        try:
            sig = str(inspect.signature(fn))
        except (TypeError, ValueError) as exc:
            sig = type(exc).__name__
        return [getattr(fn, a, None) for a in ("__module__", "__name__", "__qualname__", "__doc__")] + [sig]

    before = table()
    private = Path(sys.argv[2])
    launches = guards.LaunchCounter()
    launches.install(None, interpreted=True)
    audit = guards.AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}))
    audit.install()
    guards.HostConversionGuard(audit).install()
    guards.OwnOpBodies().install()
    after = table()
    replaced = sorted(k for k in before if after.get(k) is not before[k])
    differ = [k for k in replaced if identity(before[k]) != identity(after[k])]
    print(json.dumps({"replaced": replaced,
                      "python": {k: repr([identity(before[k]), identity(after[k])])[:300] for k in differ
                                 if inspect.isfunction(before[k])},
                      "builtin": sorted(k for k in differ if not inspect.isfunction(before[k]))}))
""")


def test_the_guards_wrappers_answer_as_the_functions_they_replace(tmp_path):
    """What a candidate can read of a library function (name, qualified name, module, docstring, the parameters
    inspect.signature gives) is the same whether or not the guards wrapped it: a wrapper named after the guards
    would tell a verified process from a user's program (red team s8: ``torch.library.custom_op.__module__`` and
    ``kernel.run.__qualname__``). Builtins without a text signature cannot be imitated: a kernel that reads that tell
    is caught by the plain run, which has no wrappers (redteam/s9_wrapper_type_tell_softmax, docs/verifier.md)."""
    (tmp_path / "candidate.py").write_text("# the candidate's file\n")
    report = guard_report(_IDENTITY_DRIVER, tmp_path)
    assert "JITFunction.run" in report["replaced"] and "torch.library.custom_op" in report["replaced"]
    assert "torch.Tensor.tolist" in report["replaced"]
    assert report["python"] == {}
    # Functions written in C (a tensor's host conversions, the thread and signal primitives) cannot be worn by a
    # Python wrapper: no __module__ or text signature to copy (the plain run covers them); a new one shows up here.
    assert set(report["builtin"]) <= BUILTIN_WRAPPER_TELLS, set(report["builtin"]) - BUILTIN_WRAPPER_TELLS


BUILTIN_WRAPPER_TELLS = {
    "torch.Tensor.__str__", "torch.Tensor.apply_", "torch.Tensor.map2_", "torch.Tensor.map_", "torch.Tensor.numpy",
    "torch.Tensor.tolist", "torch.Tensor.__dlpack__", "torch.Tensor.__reduce_ex__", "torch.to_dlpack",
    "_thread.start_new_thread", "_thread.start_new", "threading._start_new_thread", "signal.set_wakeup_fd",
    "_signal.set_wakeup_fd", "signal.signal", "_signal.signal", "signal.alarm", "_signal.alarm", "signal.setitimer",
    "_signal.setitimer", "signal.siginterrupt", "_signal.siginterrupt"}


_IMPORT_ONLY_DRIVER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from evaluator.sandboxed.guards import AuditGuard

    private, outside = Path(sys.argv[2]), Path(sys.argv[3])
    guard = AuditGuard(private / "candidate.py", frozenset({"torch", "triton"}))
    guard.install()
    source = ("def imports():\\n    import shutil\\n    from pathlib import Path\\n    return shutil, Path\\n"
              "def refused_import():\\n    import gc\\n"
              "def attempts(shutil, Path, outside):\\n"
              "    return {'rmtree': lambda: shutil.rmtree(outside.parent / 'tree'),\\n"
              "            'copyfile': lambda: shutil.copyfile(outside, outside.parent / 'copy.txt'),\\n"
              "            'move': lambda: shutil.move(str(outside), str(outside.parent / 'moved.txt')),\\n"
              "            'write_text': lambda: Path(outside).write_text('changed'),\\n"
              "            'unlink': lambda: Path(outside).unlink()}\\n")
    namespace = {}
    exec(compile(source, str(private / "candidate.py"), "exec"), namespace)
    guard.active = True
    results = {}
    shutil, path_type = namespace["imports"]()
    results["import shutil, pathlib"] = "allowed"
    try:
        namespace["refused_import"]()
        results["import gc"] = "allowed"
    except ModuleNotFoundError:
        results["import gc"] = "refused"
    for name, attempt in namespace["attempts"](shutil, path_type, outside).items():
        try:
            attempt()
            results[name] = "allowed"
        except PermissionError:
            results[name] = "refused"
    guard.active = False
    print(json.dumps(results))
""")


def test_shutil_and_pathlib_import_for_code_that_never_runs_but_do_nothing(tmp_path):
    """fla imports ``shutil`` and ``pathlib`` at module level for its nvcc probe, which never runs in the verifier
    (the static checks accept the import only so: evaluator/static_dormant.py). The import must not fail the
    candidate; anything either module would change is still refused by the audit hook, and other refused modules
    stay refused."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("kept")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "leaf.txt").write_text("kept")
    report = guard_report(_IMPORT_ONLY_DRIVER, private, outside)
    assert report == {"import shutil, pathlib": "allowed", "import gc": "refused", "rmtree": "refused",
                      "copyfile": "refused", "move": "refused", "write_text": "refused", "unlink": "refused"}
    assert outside.read_text() == "kept" and (tmp_path / "tree" / "leaf.txt").read_text() == "kept"
    assert not (tmp_path / "copy.txt").exists() and not (tmp_path / "moved.txt").exists()


_INDUCTOR_DRIVER = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import torch
    from evaluator.sandboxed.guards import AuditGuard

    private = Path(sys.argv[2])
    os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    # TMPDIR stands for the sandbox's own /tmp (where torch's default cache folder lies)
    guard = AuditGuard(private / "candidate.py", frozenset({"torch", "triton", "os", "functools"}),
                       scratch=Path(os.environ["TMPDIR"]))
    guard.install()
    sources = {
        # a helper nothing calls, decorated as libraries do: the decoration imports torch._inductor, which records
        # its cache folder in the environment and compiles its kernel templates with Jinja, from torch's own code
        "decorated": "    @torch.compile\\n    def helper(x):\\n        return torch.tanh(x)\\n",
        "own_write": "    os.environ['TORCHINDUCTOR_CACHE_DIR'] = '/elsewhere'\\n",
        "handed_write": ("    torch.utils._pytree.tree_map(functools.partial(os.environ.__setitem__,"
                         " 'TORCHINDUCTOR_CACHE_DIR'), ['/elsewhere'])\\n"),
        "own_template": "    torch._inductor.codegen.common.jinja2_env().from_string('{{ 1 + 1 }}')\\n",
    }
    results = {}
    for name, body in sources.items():
        namespace = {}
        exec(compile("import functools, os, torch\\ndef run():\\n" + body, str(private / "candidate.py"), "exec"),
             namespace)
        guard.active = True
        try:
            namespace["run"]()
            results[name] = "allowed"
        except (PermissionError, ModuleNotFoundError):
            results[name] = "refused"
        finally:
            guard.active = False
    print(json.dumps({"results": results, "cache_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR")}))
""")


def test_a_dormant_torch_compile_decoration_imports_inductor_but_its_records_stay_torchs(tmp_path):
    """``@torch.compile`` on a helper nothing calls (fla's GELU helpers) imports torch._inductor as the candidate
    is imported: torch's own code writes TORCHINDUCTOR_CACHE_DIR and runs the Jinja templates it compiled. The
    candidate writing that variable itself, or having a library call a setter it handed over, stays refused, and a
    Jinja template the candidate compiles is its own code (it cannot import Jinja's runtime)."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "candidate.py").write_text("# the candidate's file\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    report = guard_report(_INDUCTOR_DRIVER, private, env={"TMPDIR": str(scratch)})
    assert report["results"] == {"decorated": "allowed", "own_write": "refused", "handed_write": "refused",
                                 "own_template": "refused"}
    assert report["cache_dir"].startswith(str(scratch) + os.sep)  # torch's own record, in the sandbox's /tmp


def test_the_warm_up_imports_filelock_before_any_guard():
    """On Python >= 3.12 the ``filelock`` package (a torch requirement) adds an audit hook of its own when first
    imported, which the guard refuses a candidate's import to do; a library's dormant ``@torch.compile`` (fla's)
    imports ``torch._inductor`` and with it filelock. The warm-up takes that first import out of the candidate's
    hands."""
    driver = ("import sys\nsys.path.insert(0, sys.argv[1])\nassert 'filelock' not in sys.modules\n"
              "from evaluator.sandboxed import guards\nguards.warm_up_guards()\nprint('filelock' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", driver, str(ROOT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"
