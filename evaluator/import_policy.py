"""The one list of modules a candidate may import, and how much of each it may use.

Pure data, importing nothing heavy: the static checker (``evaluator.static_rules``) reads it to judge
``import`` statements and every ``module.member`` chain, and the runtime import guard inside the
candidate process reads :data:`RUNTIME_IMPORT_ROOTS`. Keeping both on this one table means a module
the checker allows is never refused at run time, and the other way round.

A module is either usable in full (``members=None``: its public API, i.e. ``__all__`` when the module
defines it, otherwise its public non-module names; for torch and triton, ``by_tables``, whatever the
name tables of ``evaluator.static_rules`` allow), or only through the members listed, or only for
types (``type_only``: names used in ``isinstance``/``issubclass`` checks and annotations, never
called). ``excluded`` members of an otherwise open module are refused with ``why`` as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModulePolicy:
    """How a candidate may use one module (see the module docstring)."""

    members: frozenset[str] | None = None  # None: the whole public API
    excluded: dict[str, str] = field(default_factory=dict)  # member -> why it is refused
    type_only: bool = False  # members only as types (isinstance/issubclass/annotations)
    literal_calls: frozenset[str] = frozenset()  # members that may be called with literal arguments only
    # member -> the only methods it may be used through (``os.environ`` -> {"get"}: ``os.environ.get(...)`` called,
    # or ``"X" in os.environ``; never stored, subscripted or written)
    read_through: dict[str, frozenset[str]] = field(default_factory=dict)
    why_limited: str = ""  # why only ``members`` (shown when another member is used)
    by_tables: bool = False  # members judged by the torch/triton name tables, not by ``__all__``
    rule: str = "banned-import"  # the static rule id a refused member is reported under


_TABLES = ModulePolicy(by_tables=True)
_EVALUATES = "evaluates strings as code (annotations are code to it)"

POLICIES: dict[str, ModulePolicy] = {
    "__future__": ModulePolicy(),
    "math": ModulePolicy(),
    "itertools": ModulePolicy(),
    "enum": ModulePolicy(),
    "collections": ModulePolicy(),
    "collections.abc": ModulePolicy(),
    # abstract base classes of the candidate's own (``class Norm(ABC)`` with ``@abstractmethod``): nothing else of abc
    # (``ABCMeta(name, bases, ns)`` builds classes at run time, ``update_abstractmethods`` edits a class)
    "abc": ModulePolicy(members=frozenset({"ABC", "abstractmethod"}), why_limited="only abc.ABC and "
                        "abc.abstractmethod (abstract classes of your own) are allowed"),
    # the abstract number types, for isinstance checks (``isinstance(shape, numbers.Integral)``, as PyTorch's own
    # LayerNorm writes): never registering a class as one (``Integral.register(cls)`` changes what library code sees)
    "numbers": ModulePolicy(members=frozenset({"Number", "Complex", "Real", "Rational", "Integral"}), type_only=True,
                            why_limited="the abstract number types are for isinstance checks and annotations"),
    "operator": ModulePolicy(),  # methodcaller/attrgetter: literal names only (evaluator.static_rules)
    "typing": ModulePolicy(excluded={"get_type_hints": _EVALUATES, "ForwardRef": _EVALUATES,
                                     "evaluate_forward_ref": _EVALUATES}),
    "dataclasses": ModulePolicy(excluded={"make_dataclass": "builds classes (with any base) at run time"}),
    "functools": ModulePolicy(excluded={"singledispatch": _EVALUATES, "singledispatchmethod": _EVALUATES}),
    "contextlib": ModulePolicy(excluded={
        "chdir": "changes the process's working directory",
        "redirect_stdout": "redirects the harness's output streams",
        "redirect_stderr": "redirects the harness's output streams",
    }),
    # Read-only facts about the process, for feature flags and version probes (fla, Liger): nothing that reaches
    # the file system, other processes, the interpreter's state or the harness.
    "os": ModulePolicy(members=frozenset({"environ", "getenv"}), read_through={"environ": frozenset({"get"})},
                       why_limited="os reaches the process, its environment and the file system; only reads of "
                       "environment flags (`os.environ.get(...)`, `os.getenv(...)`, `\"X\" in os.environ`) are "
                       "allowed"),
    "sys": ModulePolicy(members=frozenset({"version_info", "version", "hexversion", "platform", "byteorder",
                                           "maxsize", "float_info", "int_info"}),
                        why_limited="sys introspects the interpreter (sys.modules, frames, hooks); only its constants "
                        "(sys.version_info, sys.platform, sys.maxsize...) are allowed"),
    "platform": ModulePolicy(members=frozenset({"machine", "system", "python_version"}),
                             why_limited="platform runs shell commands and reads the host; only machine(), system() "
                             "and python_version() (read from the interpreter and uname) are allowed"),
    "warnings": ModulePolicy(members=frozenset({"warn"}), why_limited="warnings' other members change the "
                             "interpreter's warning filters; only warnings.warn is allowed"),
    "logging": ModulePolicy(members=frozenset({"getLogger"}), why_limited="logging's handlers write to files and "
                            "streams; only logging.getLogger (then logger.debug/info/warning) is allowed"),
    "einops": ModulePolicy(members=frozenset({"rearrange", "repeat"}), why_limited="only einops.rearrange and "
                           "einops.repeat (permutes, reshapes and expansions, which PyTorch runs as views and copies) "
                           "are allowed; einops.reduce/einsum compute"),
    # Parameter names, registry keys and type tests (fla: ``"cache_results" in
    # inspect.signature(triton.autotune).parameters``, a decorator mapping arguments to names, ``registry[unwrap(f)]``);
    # evaluator.static_inspect allows nothing more of signature's and unwrap's results, and the harness keeps nothing
    # in default arguments (tests/test_architecture.py). The rest of inspect hands out frames (currentframe, stack,
    # trace), closures (getclosurevars), every attribute (getmembers) or sources; the candidate process's audit hook
    # lets inspect read frames for a library only where the library's own code names the function it called.
    "inspect": ModulePolicy(members=frozenset({"signature", "unwrap", "isclass", "isfunction", "ismethod",
                                              "isroutine", "isbuiltin", "iscoroutinefunction", "isgeneratorfunction",
                                              "isabstract"}),
                            why_limited="inspect's other members hand out frames (currentframe, stack), closures "
                            "(getclosurevars), every attribute of an object (getmembers) or source code; only "
                            "signature() (parameter names), unwrap() and the is*() type tests are allowed"),
    "packaging": ModulePolicy(members=frozenset({"version"}), why_limited="only packaging.version is needed "
                              "for version checks"),
    "packaging.version": ModulePolicy(),
    "importlib": ModulePolicy(members=frozenset({"util", "metadata"}), why_limited="importlib's other members "
                              "import or reload modules by a name computed at run time; only importlib.util.find_spec "
                              "and importlib.metadata.version (capability and version probes) are allowed"),
    "importlib.util": ModulePolicy(members=frozenset({"find_spec"}), literal_calls=frozenset({"find_spec"}),
                                   why_limited="importlib.util's other members load "
                                   "modules from files or build modules; only find_spec (is a package installed?) "
                                   "is allowed"),
    "importlib.metadata": ModulePolicy(members=frozenset({"version", "metadata", "PackageNotFoundError"}),
                                       literal_calls=frozenset({"version", "metadata"}),
                                       why_limited="importlib.metadata's other members hand out package files "
                                       "and load entry points (code by name); only version(), metadata() and "
                                       "PackageNotFoundError are allowed"),
    "torch": _TABLES,
    "torch.nn": _TABLES,
    "torch.nn.functional": _TABLES,
    "torch.autograd": _TABLES,
    "torch.autograd.function": ModulePolicy(members=frozenset({"Function", "FunctionCtx", "once_differentiable"}),
                                            why_limited="only Function, FunctionCtx and once_differentiable (a "
                                            "backward decorator) are allowed from torch.autograd.function"),
    "torch.cuda": _TABLES,
    "torch.xpu": _TABLES,
    "torch.mps": _TABLES,
    "torch.backends": _TABLES,
    "torch.version": _TABLES,
    "torch.types": _TABLES,
    "threading": ModulePolicy(members=frozenset({"Lock", "RLock"}),
                              why_limited="only Lock and RLock (a cache guarded against concurrent callers); "
                              "threading's other members start threads that keep working after the timer stops"),
    "torch.library": ModulePolicy(members=frozenset({"custom_op", "triton_op", "wrap_triton", "register_fake",
                                                     "register_autograd", "CustomOpDef", "get_ctx"}),
                                  rule="private-api",
                                  why_limited="Library, impl, define and register_kernel can replace the "
                                  "kernels of existing (aten) operators; define your own op with "
                                  "torch.library.custom_op or triton_op"),
    "torch.utils": ModulePolicy(members=frozenset({"cpp_extension"}), why_limited="candidates may use only "
                                "torch.utils.cpp_extension.load_inline"),
    "torch.utils.cpp_extension": ModulePolicy(members=frozenset({"load_inline"}), why_limited="the other "
                                              "builders compile files or directories the checker cannot read; use "
                                              "load_inline with source strings"),
    "torch.distributed.tensor": ModulePolicy(
        members=frozenset({"DTensor", "Shard", "Replicate", "Partial", "Placement"}), type_only=True,
        why_limited="torch.distributed starts processes and does network I/O (collectives); its tensor types "
        "may be used only in isinstance/issubclass checks and type annotations"),
    "torch.distributed.tensor.placement_types": ModulePolicy(
        members=frozenset({"Shard", "Replicate", "Partial", "Placement"}), type_only=True,
        why_limited="torch.distributed starts processes and does network I/O (collectives); its placement "
        "types may be used only in isinstance/issubclass checks and type annotations"),
    "triton": _TABLES,
    "triton.language": _TABLES,
    "triton.tools": ModulePolicy(members=frozenset({"tensor_descriptor"}), why_limited="the rest of "
                                 "triton.tools is offline tooling, not kernel code; only "
                                 "triton.tools.tensor_descriptor is allowed"),
    "triton.tools.tensor_descriptor": ModulePolicy(members=frozenset({"TensorDescriptor"})),
    "kernelevo": ModulePolicy(members=frozenset({"cuda"}), why_limited="candidates may use only kernelevo.cuda"),
    "kernelevo.cuda": ModulePolicy(members=frozenset({"compile", "CudaCompileError", "CudaLaunchError"}),
                                   why_limited="only compile(SOURCE, name) and its errors are for candidates (a "
                                   "Kernel built from a binary would hide its source from the checker)"),
}

# Every submodule of these is allowed as far as the parent's policy goes (triton.language.extra.libdevice).
OPEN_PACKAGES = ("triton.language", "collections", "torch.backends")

# Standard-library modules a candidate may import at run time but use nowhere that runs: a library imports them at
# module level for code paths that never run in the verifier (fla's ``has_usable_nvcc``, ``shutil.which("nvcc")`` and
# ``Path(...).exists()``, only its TileLang backend calls), and the static checks accept such an import only where
# every read of its names is in code that never runs (evaluator.static_dormant). At run time they reach nothing
# ``os`` (importable for ``os.environ.get``) does not: every write, copy, move, link, chmod or removal they make
# raises an audit event the hook judges (``open``, ``os.rename``, ``shutil.rmtree``...), and reads are harmless.
# The candidate process's audit guard adds them to the roots it is given (evaluator/sandboxed/guards.py); they are no
# policy module, so every use the static checks can see is refused.
RUNTIME_ONLY_IMPORTS = frozenset({"shutil", "pathlib"})

# The roots a candidate's own ``import`` statements may name at run time (the runtime guard's list; the guard adds
# RUNTIME_ONLY_IMPORTS).
RUNTIME_IMPORT_ROOTS = frozenset(name.split(".")[0] for name in POLICIES)

# Short list for messages (what a refused import is told to use instead).
ALLOWED_SUMMARY = (
    "torch (nn, nn.functional, cuda/xpu/mps probes, library.custom_op/triton_op, utils.cpp_extension.load_inline), "
    "triton, triton.language (incl. extra.libdevice), triton.tools.tensor_descriptor, math, typing, dataclasses, "
    "functools, itertools, collections, enum, abc.ABC / abstractmethod, numbers (types), operator, contextlib, "
    "packaging.version, inspect.signature / unwrap / is*(), "
    "importlib.util.find_spec / importlib.metadata.version (literal names), kernelevo.cuda, and for flags and "
    "messages only os.environ.get / os.getenv, sys.version_info / sys.platform, platform.machine, warnings.warn, "
    "logging.getLogger, einops.rearrange / repeat, threading.Lock / RLock"
)

# Top-level module -> why a candidate may not import it (anything else unlisted: "is not on the allowlist").
REFUSED_WHY: dict[str, str] = {
    "_thread": "starts threads that keep working after the timer stops",
    "multiprocessing": "starts processes",
    "concurrent": "starts threads or processes",
    "asyncio": "runs background tasks",
    "subprocess": "starts processes",
    "signal": "installs signal handlers",
    "os": "reaches the process, its environment and the file system",
    "posix": "reaches the process, its environment and the file system",
    "platform": "runs shell commands and reads the host",
    "sys": "introspects the interpreter (sys.modules, frames)",
    "gc": "introspects the heap (gc.get_objects can find the reference outputs)",
    "traceback": "introspects the call stack",
    "linecache": "reads source files",
    "builtins": "can patch builtins",
    "types": "builds functions and modules dynamically",
    "weakref": "tracks objects behind the harness's back",
    "ctypes": "calls native code and reads raw memory",
    "cffi": "calls native code and reads raw memory",
    "mmap": "maps raw memory and files",
    "socket": "does network I/O",
    "urllib": "does network I/O",
    "http": "does network I/O",
    "requests": "does network I/O",
    "ssl": "does network I/O",
    "io": "does file I/O",
    "pathlib": "does file I/O",
    "shutil": "does file I/O (copies, moves and deletes files)",
    "tempfile": "does file I/O",
    "glob": "does file I/O",
    "logging": "writes to files and handlers",
    "warnings": "changes the interpreter's warning filters",
    "pickle": "deserialises arbitrary objects",
    "marshal": "loads code objects",
    "shelve": "does file I/O and deserialises objects",
    "code": "runs code built at run time",
    "codeop": "compiles code built at run time",
    "runpy": "runs other modules",
    "pkgutil": "imports modules by name",
    "codecs": "decodes strings at run time (names and code hidden from the checker)",
    "base64": "decodes strings at run time (names and code hidden from the checker)",
    "binascii": "decodes strings at run time (names and code hidden from the checker)",
    "string": "formats strings from templates (names hidden from the checker)",
    "array": "copies tensor data into Python buffers (host-side compute)",
    "struct": "unpacks raw bytes (host-side compute on tensor data)",
    "time": "reads or patches the clocks the timer uses",
    "timeit": "reads or patches the clocks the timer uses",
    "numpy": "computes on the CPU instead of in your kernel",
    "scipy": "computes on the CPU instead of in your kernel",
    "random": "changes or reads random state",
}
