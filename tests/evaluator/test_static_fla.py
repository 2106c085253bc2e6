"""Static rules relaxed for honest library glue found in fla-core (the public corpus), each with the attacks written
against exactly that relaxation next to it: they must stay refused.

Every honest case is the shape fla's utilities use, written anew (no library code is copied here)."""

from __future__ import annotations

import pytest
from test_static_check import make

from evaluator.static_check import check_source


def _rules(source: str) -> list[tuple[str, str]]:
    return [(v.rule, v.message) for v in check_source(source, "cand.py").violations]


# -- inspect for names only (evaluator/static_inspect.py): signature() read for parameter names, unwrap() as a key ----
# The candidate process's audit hook lets inspect.py read frames for a library only where the library's code names the
# inspect function and inspect's own frame names the read (tests/evaluator/test_audit_guard.py), and the harness keeps
# nothing in default arguments (tests/test_architecture.py). Every attack below must stay refused.

_DECORATOR = ("import functools\nimport inspect\n\n"
              "def guard(fn):\n    sig = inspect.signature(fn)\n    names = list(sig.parameters.keys())\n\n"
              "    @functools.wraps(fn)\n    def wrapper(*args):\n        return fn(*args)\n    wrapper.names = names\n"
              "    return wrapper\n")
INSPECT_HONEST = {
    "a feature probe of a library function": ("import inspect\nimport triton\n"
                                              "CACHE = 'cache_results' in "
                                              "inspect.signature(triton.autotune).parameters\n"),
    "a decorator mapping arguments to names": _DECORATOR,
    "names as a set, a count, a loop": ("import inspect\n\ndef helper(x, y):\n    return x\n\n"
                                        "SIG = inspect.signature(helper)\nNAMES = set(SIG.parameters.keys())\n"
                                        "COUNT = len(SIG.parameters)\nORDER = [n for n in SIG.parameters]\n"),
    "a registry keyed by the unwrapped function": ("from inspect import unwrap\n\nREGISTRY: dict = {}\n\n"
                                                   "def register(fn, impl):\n    REGISTRY[unwrap(fn)] = impl\n\n"
                                                   "def lookup(fn):\n    return REGISTRY[unwrap(fn)]\n"),
    "type tests": "import inspect\nIS_CLASS = inspect.isclass(int) and not inspect.isfunction(len)\n",
}


@pytest.mark.parametrize("module", list(INSPECT_HONEST.values()), ids=list(INSPECT_HONEST))
def test_inspect_for_names_is_accepted(module):
    assert _rules(make(module=module)) == []


INSPECT_NAMES_ATTACKS = {
    # against the names-only reading
    "names handed to a function that is not a builtin reader": "import inspect\n\ndef helper(x):\n    return x\n\n"
                                                               "P = map(str, inspect.signature(helper).parameters)\n",
    "keys() with an argument": "import inspect\n\ndef helper(x):\n    return x\n\n"
                               "P = list(inspect.signature(helper).parameters.keys(1))\n",
    "the signature kept by a walrus": "import inspect\n\ndef helper(x):\n    return x\n\n"
                                      "if (sig := inspect.signature(helper)):\n    P = sig.parameters['x']\n",
    "the signature kept in a class body": "import inspect\n\ndef helper(x):\n    return x\n\n"
                                          "class C:\n    sig = inspect.signature(helper)\n\nP = C.sig.parameters\n",
    "the name rebound by a nested global": ("import inspect\n\ndef helper(x, _k=1):\n    return x\n\n"
                                            "sig = inspect.signature(helper)\n\ndef swap():\n    global sig\n"
                                            "    sig = None\n\nN = list(sig.parameters)\n"),
    "an object made on the spot (its __signature__ is read)": ("import inspect\n\nclass S:\n    pass\n\n"
                                                               "N = list(inspect.signature(S()).parameters)\n"),
    "a subscripted argument": "import inspect\nFNS = [len]\nN = list(inspect.signature(FNS[0]).parameters)\n",
    # against unwrap as a key
    "unwrap's result subscripting another object": ("from inspect import unwrap\n\nclass R:\n"
                                                     "    def __getitem__(self, k):\n        return k\n\n"
                                                     "ORIG = R()[unwrap(len)]\n"),
    "a registry whose keys are read back": ("from inspect import unwrap\n\nREGISTRY: dict = {}\n"
                                            "REGISTRY[unwrap(len)] = 1\nORIGINALS = list(REGISTRY)\n"),
    "a registry handed on": ("from inspect import unwrap\n\nREGISTRY = {}\nREGISTRY[unwrap(len)] = 1\n"
                             "KEEP = [REGISTRY]\n"),
    "a registry bound twice": ("from inspect import unwrap\n\nREGISTRY = {}\nREGISTRY = {0: 1}\n"
                               "X = REGISTRY[unwrap(len)]\n"),
    "a registry that is not a dict": ("from inspect import unwrap\n\nclass D(dict):\n    pass\n\nREGISTRY = D()\n"
                                      "X = REGISTRY[unwrap(len)]\n"),
    "unwrap compared by equality (__eq__ receives it)": ("from inspect import unwrap\n\nclass Q:\n    pass\n\n"
                                                         "SAME = Q() == unwrap(len)\n"),
    "unwrap with a stop callback": "from inspect import unwrap\nT = {}\nX = T[unwrap(len, stop=print)]\n",
}


@pytest.mark.parametrize("module", list(INSPECT_NAMES_ATTACKS.values()), ids=list(INSPECT_NAMES_ATTACKS))
def test_inspect_beyond_names_and_keys_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule in ("banned-import", "dangerous-builtin", "introspection") for rule, _ in found), found


INSPECT_ATTACKS = {
    # the values behind the names: a default argument is how a harness function keeps its references
    "a parameter's default": "import inspect\n\ndef helper(x, _keep=1):\n    return x\n\n"
                             "GOT = inspect.signature(helper).parameters['_keep'].default",
    "values() through a bound signature": "import inspect\n\ndef helper(x, _keep=1):\n    return x\n\n"
                                          "SIG = inspect.signature(helper)\nGOT = list(SIG.parameters.values())",
    "items() of the mapping": "import inspect\n\ndef helper(x, _keep=1):\n    return x\n\n"
                              "GOT = [v for _, v in inspect.signature(helper).parameters.items()]",
    "the mapping kept in a name": "import inspect\n\ndef helper(x, _keep=1):\n    return x\n\n"
                                  "PARAMS = inspect.signature(helper).parameters\nGOT = PARAMS['_keep']",
    "a signature rebound to its own parameter": (
        "import inspect\n\ndef helper(x, _keep=1):\n    return x\n\n"
        "def grab():\n    sig = inspect.signature(helper)\n    sig = sig.parameters['_keep']\n    return sig.default\n"
        "\nGOT = grab()\n"),
    "a shadowed `list` receiving the mapping": (
        "import inspect\n\ndef list(p):\n    return p['_keep'].default\n\ndef helper(x, _keep=1):\n    return x\n\n"
        "GOT = list(inspect.signature(helper).parameters)\n"),
    "annotations evaluated as code": "import inspect\n\ndef helper(x):\n    return x\n\n"
                                     "HAS = 'x' in inspect.signature(helper, eval_str=True).parameters",
    "follow_wrapped off (the wrapper's own parameters)": (
        "import inspect\nimport triton\n"
        "HAS = 'fn' in inspect.signature(triton.autotune, follow_wrapped=False).parameters"),
    "return annotation": "import inspect\n\ndef helper(x) -> int:\n    return x\n\n"
                         "GOT = inspect.signature(helper).return_annotation",
    "bind() hands arguments back": "import inspect\n\ndef helper(x):\n    return x\n\n"
                                   "GOT = inspect.signature(helper).bind(1).arguments",
    # other members, reached directly or around the member check
    "frames": "import inspect\nFRAME = inspect.currentframe()",
    "unwrap (the wrapped original)": "from inspect import unwrap\nORIG = unwrap(len)",
    "closures and globals": "import inspect\n\ndef helper(x):\n    return x\n\nVARS = inspect.getclosurevars(helper)",
    "the module aliased": "import inspect\nINS = inspect\nFRAMES = INS.stack()",
    "the module looked into by getattr": "import inspect\nFRAME = getattr(inspect, 'currentframe')()",
    "the module handed to a function": "import functools\nimport inspect\nREADER = functools.partial(getattr, inspect)",
    "signature stored as a value": "import inspect\nSIG = inspect.signature\nGOT = SIG(len)",
    "signature imported and passed on": "import functools\nfrom inspect import signature\n"
                                        "SIG = functools.partial(signature)",
    "star arguments hide keywords": "import inspect\n\ndef helper(x):\n    return x\n\nKW = {'eval_str': True}\n"
                                    "HAS = 'x' in inspect.signature(helper, **KW).parameters",
    "a submodule-style import": "import inspect.getmembers",
}


@pytest.mark.parametrize("module", list(INSPECT_ATTACKS.values()), ids=list(INSPECT_ATTACKS))
def test_inspect_beyond_names_is_refused(module):
    found = _rules(make(module=module))
    assert found, "a use of inspect was accepted"
    assert any(rule in ("banned-import", "dangerous-builtin", "patching") for rule, _ in found), found


def test_inspect_refusal_says_why():
    found = _rules(make(module="import inspect\nFRAME = inspect.currentframe()"))
    assert any(rule == "banned-import" and "inspect" in message for rule, message in found), found


# -- triton.language._experimental_<name>: an older spelling of a public kernel-language function ------------------

EXPERIMENTAL_HONEST = {
    "version shim for tensor descriptors": (
        "if hasattr(triton.language, '_experimental_make_tensor_descriptor'):\n"
        "    make_desc = triton.language._experimental_make_tensor_descriptor\n"
        "else:\n"
        "    make_desc = triton.language.make_tensor_descriptor\n"),
    "through the tl alias": "make_desc = tl._experimental_make_tensor_descriptor",
}


@pytest.mark.parametrize("module", list(EXPERIMENTAL_HONEST.values()), ids=list(EXPERIMENTAL_HONEST))
def test_experimental_spelling_of_a_public_function_is_accepted(module):
    assert _rules(make(module=module)) == []


EXPERIMENTAL_ATTACKS = {
    "no public function of that name": "GOT = triton.language._experimental_no_such_function",
    "a private name behind the prefix": "GOT = triton.language._experimental__semantic",
    "a submodule behind the prefix (not a function)": "GOT = triton.language._experimental_core",
    "deeper in the package": "GOT = triton.language.core._experimental_make_tensor_descriptor",
    "outside the kernel language": "GOT = triton.runtime._experimental_driver",
    "another package": "GOT = torch._experimental_empty",
    "patching the public name through its old spelling": "triton.language._experimental_load = None",
}


@pytest.mark.parametrize("module", list(EXPERIMENTAL_ATTACKS.values()), ids=list(EXPERIMENTAL_ATTACKS))
def test_other_private_names_stay_private(module):
    found = _rules(make(module=module))
    assert any(rule in ("private-api", "patching") for rule, _ in found), found


# -- @torch.compile around helpers nothing calls (evaluator.static_liveness: a lazy wrapper makes nothing live) -----

_COMPILED = "@torch.compile\ndef gelu_ref(x):\n    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x))\n"

COMPILED_HONEST = {
    "compiled reference helper nobody calls": _COMPILED,
    "with options": "@torch.compile(mode='max-autotune', fullgraph=True)\ndef helper(x):\n    return torch.tanh(x)\n",
    "called only by another dead helper": _COMPILED + "\ndef gelu_check(x):\n    return gelu_ref(x)\n",
}


@pytest.mark.parametrize("module", list(COMPILED_HONEST.values()), ids=list(COMPILED_HONEST))
def test_compiled_helper_nothing_calls_is_accepted(module):
    assert _rules(make(module=module)) == []


COMPILED_ATTACKS = {
    # the relaxation is "nothing that runs refers to it": each attack refers to it some way the checker must see
    "called from forward": dict(module=_COMPILED, body="out = gelu_ref(x)"),
    "called through a live helper": dict(module=_COMPILED + "\ndef act(x):\n    return gelu_ref(x)\n",
                                         body="out = act(x)"),
    "referred to by a lambda on self": dict(module=_COMPILED, init="self.act = lambda t: gelu_ref(t)",
                                            body="out = self.act(x)"),
    "stored in a table (a stored reference may run from anywhere)": dict(
        module=_COMPILED + "TABLE = {'g': gelu_ref}\n"),
    "stored on a class": dict(module=_COMPILED + "class Holder:\n    act = gelu_ref\n"),
    "under a decorator that runs it": dict(
        module="def run_now(fn):\n    fn(torch.ones(2))\n    return fn\n\n@run_now\n" + _COMPILED),
    "torch.compile as a value in the decorator": dict(
        module="import functools\n\n@functools.partial(torch.compile, mode='reduce-overhead')\n"
               "def helper(x):\n    return torch.tanh(x)\n"),
    "compiled at module level, not decorated": dict(module="def helper(x):\n    return torch.tanh(x)\n\n"
                                                    "FAST = torch.compile(helper)\n"),
}


@pytest.mark.parametrize("case", list(COMPILED_ATTACKS.values()), ids=list(COMPILED_ATTACKS))
def test_compiled_code_that_runs_is_still_refused(case):
    found = _rules(make(**case))
    assert any(rule == "torch-compute" for rule, _ in found), found


# -- getattr(torch, device): a device module picked twice, and its amp decorators (evaluator.static_lookups) --------

_PICK = ("DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
         "DEVICE_LIB = getattr(torch, DEVICE)\n"
         "if torch.__version__ >= '2.4':\n"
         "    if DEVICE == 'cpu':\n"
         "        DEVICE = 'cuda'\n"
         "        DEVICE_LIB = getattr(torch, DEVICE)\n")

DEVICE_HONEST = {
    "device module picked twice, then queried": _PICK + "COUNT = DEVICE_LIB.device_count()\n\n"
                                                       "def current():\n    return DEVICE_LIB.current_device()\n",
    "amp decorators of the picked device": _PICK + "FWD = DEVICE_LIB.amp.custom_fwd\nBWD = DEVICE_LIB.amp.custom_bwd\n",
    "device context of the picked module": _PICK + "def ctx(index):\n    return DEVICE_LIB.device(index)\n",
}


@pytest.mark.parametrize("module", list(DEVICE_HONEST.values()), ids=list(DEVICE_HONEST))
def test_device_module_lookup_is_accepted(module):
    assert _rules(make(module=module)) == []


DEVICE_ATTACKS = {
    # "bound only by lookups": another binding sneaks a different object under the same name
    "a later binding that is no lookup": _PICK + "DEVICE_LIB = torch.cuda.memory\nN = DEVICE_LIB.device_count()\n",
    "rebound by a loop": _PICK + "for DEVICE_LIB in (torch.cuda,):\n    pass\nN = DEVICE_LIB.device_count()\n",
    "rebound by a walrus elsewhere": _PICK + "N = (DEVICE_LIB := torch.cuda.graphs).device_count()\n",
    "a parameter of the same name": _PICK + "def f(DEVICE_LIB):\n    return DEVICE_LIB.device_count()\n",
    # "amp decorators only": the rest of amp changes precision
    "autocast through the picked module": _PICK + "CTX = DEVICE_LIB.amp.autocast()\n",
    "the amp module handed on": _PICK + "AMP = DEVICE_LIB.amp\n",
    "a state change through the picked module": _PICK + "DEVICE_LIB.set_stream(None)\n",
    "the picked module handed on": _PICK + "LIBS = [DEVICE_LIB]\n",
}


@pytest.mark.parametrize("module", list(DEVICE_ATTACKS.values()), ids=list(DEVICE_ATTACKS))
def test_device_module_lookup_beyond_queries_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "dangerous-builtin" for rule, _ in found), found


# -- importlib.import_module of a package refused everywhere (evaluator.static_optional) ---------------------------
# ``fla_glue_pkg`` stands for a third-party package: not installed here, so refused everywhere just as an installed
# third-party package (which the candidate process's import wrappers refuse) is.

# Each loader is stored (``LOADERS``) so that it counts as code that may run: in a function nothing refers to,
# banned-import is not applied at all (evaluator.static_liveness).
_LOAD = "import importlib\n\ndef load(x):\n"
IMPORT_HONEST = {
    "submodule of a refused package, computed below it": _LOAD + "    importlib.import_module(f'fla_glue_pkg.{x}')\n",
    "a literal refused package": _LOAD + "    importlib.import_module('fla_glue_pkg.backends')\n",
    "through a local bound once": _LOAD + "    path = f'fla_glue_pkg.ops.{x}.backends'\n"
                                          "    importlib.import_module(path)\n",
}


@pytest.mark.parametrize("module", list(IMPORT_HONEST.values()), ids=list(IMPORT_HONEST))
def test_import_of_a_refused_package_is_accepted(module):
    assert _rules(make(module=module + "\nLOADERS = [load]\n")) == []


IMPORT_ATTACKS = {
    "fully computed name": _LOAD + "    return importlib.import_module(x)\n",
    "computed package": _LOAD + "    return importlib.import_module(f'{x}.backends')\n",
    "package name cut inside the literal": _LOAD + "    return importlib.import_module(f'g{x}')\n",
    "a local bound twice": _LOAD + "    path = f'fla_glue_pkg.{x}'\n    path = x\n"
                                   "    return importlib.import_module(path)\n",
    "a local bound once, to a computed name": _LOAD + "    path = x.strip()\n"
                                                      "    return importlib.import_module(path)\n",
    "a global the function rebinds": "import importlib\nPATH = 'fla_glue_pkg.x'\n\ndef load(x):\n    global PATH\n"
                                     "    PATH = x\n    return importlib.import_module(PATH)\n",
    "computed submodule of an allowed package": "import importlib\n\ndef load(x):\n"
                                                "    return importlib.import_module(f'torch.{x}')\n",
    "the standard library (not assumed refused)": "import importlib\n\ndef load(x):\n"
                                                  "    return importlib.import_module('gc')\n",
    "relative, with a package keyword": "import importlib\n\ndef load(x):\n"
                                        "    return importlib.import_module(f'.{x}', package='torch')\n",
    "assembled by concatenation": "import importlib\n\ndef load(x):\n"
                                  "    return importlib.import_module('fla_glue_pkg.' + x)\n",
    "import_module as a value": "import importlib\n\ndef load(x):\n    return importlib.import_module\n",
}


@pytest.mark.parametrize("module", list(IMPORT_ATTACKS.values()), ids=list(IMPORT_ATTACKS))
def test_import_module_that_may_succeed_is_refused(module):
    found = _rules(make(module=module + "\nLOADERS = [load]\n"))
    assert any(rule == "banned-import" for rule, _ in found), found


# -- a try that picks an Enum member by name, falling back to a default member (evaluator.static_probes) ---------

_TABLE = ("import enum\n\n"
          "class Table(enum.Enum):\n"
          "    ADA = 101376\n"
          "    HOPPER = 232448\n"
          "    DEFAULT = 102400\n\n"
          "    @classmethod\n"
          "    def size(cls, arch):\n"
          "        try:\n"
          "            return cls[arch.upper()].value\n"
          "        except KeyError:\n"
          "            return {handler}\n")

ENUM_HONEST = {
    "default member through cls": _TABLE.format(handler="cls.DEFAULT.value"),
    "default member through the class": _TABLE.format(handler="Table.DEFAULT.value"),
    "the member itself": _TABLE.format(handler="cls.DEFAULT"),
}


@pytest.mark.parametrize("module", list(ENUM_HONEST.values()), ids=list(ENUM_HONEST))
def test_enum_lookup_with_a_default_member_is_accepted(module):
    assert _rules(make(module=module, body="limit = Table.size('ada')")) == []


ENUM_ATTACKS = {
    # the relaxation is "the handler returns a constant member": each handler computes or reaches something else
    "handler computes": dict(module=_TABLE.format(handler="torch.ones(1).sum()")),
    "a member that is not a constant": dict(module=_TABLE.format(handler="cls.DEFAULT.value").replace(
        "DEFAULT = 102400", "DEFAULT = len('abc')")),
    "a property in the class body": dict(module=_TABLE.format(handler="cls.DEFAULT.value").replace(
        "    @classmethod\n", "    @property\n    def DEFAULT2(self):\n        return 1\n\n    @classmethod\n")),
    "not an Enum": dict(module=_TABLE.format(handler="cls.DEFAULT.value").replace("(enum.Enum)", "")),
    "an Enum with a metaclass keyword": dict(module=_TABLE.format(handler="cls.DEFAULT.value").replace(
        "(enum.Enum)", "(enum.Enum, metaclass=enum.EnumMeta)")),
    "an attribute that is no member": dict(module=_TABLE.format(handler="cls.size")),
    "`cls` of a staticmethod (any object)": dict(module=_TABLE.format(handler="cls.DEFAULT.value").replace(
        "@classmethod", "@staticmethod")),
}


@pytest.mark.parametrize("case", list(ENUM_ATTACKS.values()), ids=list(ENUM_ATTACKS))
def test_enum_fallback_beyond_constants_is_refused(case):
    found = _rules(make(**case, body="limit = Table.size('ada')"))
    assert any(rule in ("try-fallback", "torch-compute") for rule, _ in found), found


# -- loggers only log (evaluator.static_loggers): found while checking what fla's `logger.debug` may reach ---------

LOGGER_HONEST = {
    "module logger, message methods": "import logging\nlogger = logging.getLogger(__name__)\n"
                                      "logger.debug('x %d', 1)\nlogger.warning('w')\n\n"
                                      "def f():\n    if logger.isEnabledFor(10):\n"
                                      "        logger.info('i', exc_info=True)\n",
    "a logger called directly": "import logging\nlogging.getLogger('kern').info('loaded')\n",
}


@pytest.mark.parametrize("module", list(LOGGER_HONEST.values()), ids=list(LOGGER_HONEST))
def test_logging_through_a_logger_is_accepted(module):
    assert _rules(make(module=module)) == []


_HANDLER = "class Sink:\n    level = 0\n\n    def handle(self, record):\n        return True\n\n"
LOGGER_ATTACKS = {
    # a handler or filter of the candidate's runs whenever anything in the process logs, unseen
    "a handler installed": "import logging\nlogger = logging.getLogger(__name__)\n" + _HANDLER
                           + "logger.addHandler(Sink())\n",
    "on a logger never bound": "import logging\n" + _HANDLER + "logging.getLogger('torch').addHandler(Sink())\n",
    "a filter installed": "import logging\nlog = logging.getLogger()\n" + _HANDLER + "log.addFilter(Sink())\n",
    "the logger tree": "import logging\nlogger = logging.getLogger(__name__)\nALL = logger.manager.loggerDict\n",
    "handlers read": "import logging\nlogger = logging.getLogger(__name__)\nHS = logger.handlers\n",
    "an attribute written": "import logging\nlogger = logging.getLogger(__name__)\nlogger.disabled = True\n",
    "the logger handed on": "import logging\nlogger = logging.getLogger(__name__)\nKEEP = [logger]\n",
    "a message method as a value": "import logging\nlogger = logging.getLogger(__name__)\nSAY = logger.info\n",
}


@pytest.mark.parametrize("module", list(LOGGER_ATTACKS.values()), ids=list(LOGGER_ATTACKS))
def test_logger_beyond_logging_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "banned-import" and "logger" in message for rule, message in found), found


# -- red team on the relaxations above (session 7): each attack got past the static layer before its fix ----------

_GRAB = "SEEN = []\n\ndef grab(a, b):\n    SEEN.append(b)\n    return True\n\n"
_HELPER = "def helper(x, _keep=1):\n    return x\n\n"
REDTEAM_INSPECT = {
    # a chained comparison makes the mapping an operand of the next test too: its __eq__ gets the Parameters
    "mapping handed to a comparison in a chain": "import inspect\n\n" + _HELPER + _GRAB
                                                 + "class Q:\n    __eq__ = grab\n\n"
                                                 "HAS = 'x' in inspect.signature(helper).parameters == Q()\n",
    "mapping in a chained membership test": "import inspect\n\n" + _HELPER
                                            + "HAS = 'x' in inspect.signature(helper).parameters in [None]\n",
    # signature() reads these off the object it is given: candidate code or another function's signature
    "__signature__ as a property": "import inspect\n\nclass S:\n    __signature__ = property(lambda self: None)\n\n"
                                   "HAS = 'x' in inspect.signature(S()).parameters\n",
    "__wrapped__ pointing at another function": "import inspect\n\n" + _HELPER
                                                + "class S:\n    __wrapped__ = helper\n\n"
                                                "NAMES = list(inspect.signature(S()).parameters)\n",
}


@pytest.mark.parametrize("module", list(REDTEAM_INSPECT.values()), ids=list(REDTEAM_INSPECT))
def test_redteam_inspect_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule in ("banned-import", "introspection") for rule, _ in found), found


REDTEAM_DUNDER_BINDINGS = {
    "a comparison hook bound by assignment": _GRAB + "class Q:\n    __eq__ = grab\n",
    "a module __getattr__ (run by the harness's own lookups)": "def lookup(name):\n    raise AttributeError(name)\n\n"
                                                               "__getattr__ = lookup\n",
    "a module __getattr__ as a lambda": "__getattr__ = lambda name: None\n",
    "a hook bound by a loop": _GRAB + "class Q:\n    for __contains__ in [grab]:\n        pass\n",
}


@pytest.mark.parametrize("module", list(REDTEAM_DUNDER_BINDINGS.values()), ids=list(REDTEAM_DUNDER_BINDINGS))
def test_redteam_special_names_bound_by_assignment_are_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "introspection" and "binds" in message for rule, message in found), found


def test_plain_data_dunders_may_be_bound():
    module = "__all__ = ['ModelNew']\n__version__ = '1.0'\n\nclass P:\n    __slots__ = ('a',)\n"
    assert _rules(make(module=module)) == []


REDTEAM_DEVICE = {
    "a class of the same name": _PICK + "\nclass DEVICE_LIB:\n    device = staticmethod(lambda i: i)\n\n"
                                        "N = DEVICE_LIB.device(0)\n",
    "a function of the same name": _PICK + "\ndef DEVICE_LIB():\n    return 0\n\nN = DEVICE_LIB.device_count()\n",
    "an import under the same name": _PICK + "import torch.nn.functional as DEVICE_LIB\nN = DEVICE_LIB.device\n",
    "an exception under the same name": _PICK + "try:\n    pass\nexcept Exception as DEVICE_LIB:\n    pass\n"
                                                "N = DEVICE_LIB.device_count()\n",
    "a match capture under the same name": _PICK + "match torch.nn.functional:\n    case DEVICE_LIB:\n        pass\n"
                                                   "N = DEVICE_LIB.device(0)\n",
}


@pytest.mark.parametrize("module", list(REDTEAM_DEVICE.values()), ids=list(REDTEAM_DEVICE))
def test_redteam_device_module_rebound_by_no_assignment_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "dangerous-builtin" for rule, _ in found), found


def test_redteam_enum_cls_rebound_in_the_method_is_refused():
    module = ("class Evil:\n    DEFAULT = None\n\n"
              + _TABLE.format(handler="cls.DEFAULT.value").replace("        try:\n",
                                                                   "        cls = Evil()\n        try:\n"))
    found = _rules(make(module=module, body="limit = Table.size('ada')"))
    assert any(rule == "try-fallback" for rule, _ in found), found


REDTEAM_IMPORT = {
    # refused by the allowlist, yet loaded in every candidate process: import_module hands the loaded module back
    "the verifier's own package, f-string": _LOAD + "    return importlib.import_module(f'evaluator.{x}')\n",
    "the verifier's own package, literal": _LOAD + "    return importlib.import_module('evaluator.sandboxed.guards')\n",
    "the harness's script": _LOAD + "    return importlib.import_module('__main__')\n",
    "a private root": _LOAD + "    return importlib.import_module('_distutils_hack')\n",
    # the name the verifier (and the dispatcher) imports the candidate under: the run time lets `_kernelevo_` through
    "the candidate's own module": _LOAD + "    return importlib.import_module('_kernelevo_kernel_softmax_88c4a03b')\n",
    "a third-party package torch loads": _LOAD + "    return importlib.import_module(f'numpy.{x}')\n",
}


@pytest.mark.parametrize("module", list(REDTEAM_IMPORT.values()), ids=list(REDTEAM_IMPORT))
def test_redteam_import_module_of_a_loaded_package_is_refused(module):
    found = _rules(make(module=module + "\nLOADERS = [load]\n"))
    assert any(rule == "banned-import" for rule, _ in found), found


def test_redteam_optional_import_of_the_verifier_is_refused():
    module = "try:\n    import evaluator.sandboxed.guards as G\nexcept ImportError:\n    G = None\nX = G and G.active\n"
    found = _rules(make(module=module))
    assert any(rule == "banned-import" for rule, _ in found), found


@pytest.mark.parametrize("module", ["T = triton.language._experimental_tensor\n",
                                    "C = tl._experimental_constexpr\n"], ids=["a class", "a class through tl"])
def test_redteam_experimental_spelling_of_a_class_stays_private(module):
    found = _rules(make(module=module))
    assert any(rule == "private-api" for rule, _ in found), found


def test_redteam_logger_kept_as_a_class_attribute_is_refused():
    module = "import logging\n\nclass C:\n    lg = logging.getLogger()\n\nC.lg.addHandler(None)\n"
    found = _rules(make(module=module))
    assert any(rule == "banned-import" and "logger" in message for rule, message in found), found


REDTEAM_COMPILED = {
    # a decorator's arguments run at definition, whether or not the function ever does
    "an os call in the decorator's arguments": "import os\n\n@torch.compile(backend=os.system('true'))\n"
                                               "def helper(x):\n    return x\n",
    "warning filters changed in the decorator's arguments": "import warnings\n\n"
                                                            "@torch.compile(mode=warnings.simplefilter('ignore'))\n"
                                                            "def helper(x):\n    return x\n",
    "torch compute in the decorator's arguments": "@torch.compile(options={'k': torch.ones(3).sum().item()})\n"
                                                  "def helper(x):\n    return x\n",
    # a class decorator gets the class, and Enum calls its sunder hooks by name: their methods run unnamed
    "a class decorator that calls a compiled method": "def deco(c):\n    c.run(2)\n    return c\n\n@deco\nclass K:\n"
                                                      "    @staticmethod\n    @torch.compile\n    def run(x):\n"
                                                      "        import gc\n        return gc.get_objects()\n",
    "a class decorator that calls a static method": "def deco(c):\n    c.run(2)\n    return c\n\n@deco\nclass K:\n"
                                                    "    @staticmethod\n    def run(x):\n"
                                                    "        import gc\n        return gc.get_objects()\n",
    "an Enum's _generate_next_value_ (run by auto())": "import enum\n\nclass Table(enum.Enum):\n    @staticmethod\n"
                                                       "    def _generate_next_value_(name, start, count, last):\n"
                                                       "        import gc\n        return len(gc.get_objects())\n\n"
                                                       "    ADA = enum.auto()\n",
}


@pytest.mark.parametrize("module", list(REDTEAM_COMPILED.values()), ids=list(REDTEAM_COMPILED))
def test_redteam_code_that_runs_at_definition_is_not_exempt(module):
    found = _rules(make(module=module))
    assert any(rule in ("banned-import", "torch-compute") for rule, _ in found), found


CLASS_ATTRIBUTE_ESCAPES = {
    # a name bound in a class body is read back as `C.name` / `self.name`: no name lookup follows it
    "inspect imported into a class": "class C:\n    import inspect as ins\n\n    def f(self):\n"
                                     "        return self.ins.stack()\n\nG = [C]\n",
    "signature imported into a class": _HELPER + "class C:\n    from inspect import signature\n\n"
                                                 "D = C.signature(helper).parameters['_keep'].default\n",
    "a device module kept as a class attribute": "DEVICE = 'cpu'\n\nclass C:\n    LIB = getattr(torch, DEVICE)\n\n"
                                                 "C.LIB.set_stream(None)\n",
}


@pytest.mark.parametrize("module", list(CLASS_ATTRIBUTE_ESCAPES.values()), ids=list(CLASS_ATTRIBUTE_ESCAPES))
def test_redteam_class_attributes_do_not_escape_the_closed_sets(module):
    found = _rules(make(module=module))
    assert any(rule in ("banned-import", "dangerous-builtin") for rule, _ in found), found


def test_redteam_enum_name_shadowed_in_the_function_is_refused():
    module = ("class Box:\n    DEFAULT = None\n\n" + _TABLE.format(handler="Table.DEFAULT.value")
              + "\n\ndef pick(arch):\n    Table = Box()\n    try:\n        return Table[arch].value\n"
                "    except KeyError:\n        return Table.DEFAULT.value\n")
    found = _rules(make(module=module, body="limit = pick('ada')"))
    assert any(rule == "try-fallback" for rule, _ in found), found
