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
        module=_COMPILED + "TABLE = {'g': gelu_ref}\nSTORED = len(TABLE)\n"),
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

# Each loader is stored (``LOADERS``, read by running code: a table nothing reads keeps nothing alive,
# evaluator.static_unread) so that it counts as code that may run: in a function nothing refers to, banned-import is
# not applied at all (evaluator.static_liveness).
_STORED = "\nLOADERS = [load]\nSTORED = len(LOADERS)\n"
_LOAD = "import importlib\n\ndef load(x):\n"
IMPORT_HONEST = {
    "submodule of a refused package, computed below it": _LOAD + "    importlib.import_module(f'fla_glue_pkg.{x}')\n",
    "a literal refused package": _LOAD + "    importlib.import_module('fla_glue_pkg.backends')\n",
    "through a local bound once": _LOAD + "    path = f'fla_glue_pkg.ops.{x}.backends'\n"
                                          "    importlib.import_module(path)\n",
}


@pytest.mark.parametrize("module", list(IMPORT_HONEST.values()), ids=list(IMPORT_HONEST))
def test_import_of_a_refused_package_is_accepted(module):
    assert _rules(make(module=module + _STORED)) == []


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
    found = _rules(make(module=module + _STORED))
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
    found = _rules(make(module=module + _STORED))
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


# -- a backend registry whose backend classes nothing running instantiates (evaluator/static_liveness.py) -----------
# fla's registry names its backend classes only in annotations and base lists, and makes one only in `register`,
# which nothing calls: their methods (a getattr with a computed name, a try around a registered verifier, find_spec of
# a computed package) never run. The same methods on a class that running code can instantiate stay refused.

_REGISTRY = ("import importlib.util\nimport os\n\n"
             "def probe(name):\n    try:\n        return importlib.util.find_spec(name)\n"
             "    except ModuleNotFoundError:\n        return None\n\n"
             "class Plan:\n    package = None\n    checker = None\n\n"
             "    def pick(self, op: str):\n        return getattr(self, op, None)\n\n"
             "    def check(self, op: str, *args):\n        fn = self.checker or getattr(self, f'{op}_check', None)\n"
             "        if fn is None:\n            return True, None\n        try:\n            return fn(*args)\n"
             "        except Exception as err:\n            return False, str(err)\n\n"
             "    @classmethod\n    def ready(cls) -> bool:\n"
             "        return cls.package is None or probe(cls.package) is not None\n\n"
             "class TilePlan(Plan):\n    package = 'tilelib'\n\n"
             "class Table:\n    def __init__(self):\n        self.plans: dict[str, Plan] = {}\n\n"
             "    def add(self, plan: Plan) -> None:\n        self.plans[type(plan).__name__] = plan\n\n"
             "    def route(self, fn):\n        def wrapper(*args):\n"
             "            for plan in self.plans.values():\n                if plan.ready():\n"
             "                    return plan.pick(fn.__name__)(*args)\n            return fn(*args)\n"
             "        return wrapper\n\n"
             "def add_plan(op, plan: type[Plan] | None = None):\n    def deco(impl):\n"
             "        made = plan() if plan is not None else Plan()\n        TABLE.add(made)\n        return impl\n"
             "    return deco\n\n"
             "TABLE = Table()\n\n@TABLE.route\ndef norm(x):\n    return x\n")

REGISTRY_HONEST = {
    "backend classes named only in annotations and bases": _REGISTRY,
}


@pytest.mark.parametrize("module", list(REGISTRY_HONEST.values()), ids=list(REGISTRY_HONEST))
def test_backend_classes_nothing_running_makes_are_accepted(module):
    assert _rules(make(module=module, body="y = norm(x)")) == []


REGISTRY_ATTACKS = {
    # the relaxation is "no running code can make an instance": each attack makes one some way the checker must see
    "the registration called at module level": _REGISTRY + "\n@add_plan('norm')\ndef other(x):\n    return x\n",
    "a backend instantiated at module level": _REGISTRY + "\nTABLE.add(TilePlan())\n",
    "a backend class stored in a table": _REGISTRY + "\nPLANS = [TilePlan]\nSTORED = len(PLANS)\n",
    "a backend class called in forward": dict(body="p = Plan().pick('norm')"),
    "a subclass instantiated (its base's methods run)": _REGISTRY + "\nONE = TilePlan()\n",
    "the class handed to a function as a value": _REGISTRY + "\nprint(Plan)\n",
}


@pytest.mark.parametrize("case", list(REGISTRY_ATTACKS.values()), ids=list(REGISTRY_ATTACKS))
def test_backend_methods_that_can_run_are_still_refused(case):
    parts = case if isinstance(case, dict) else dict(module=case)
    if "module" not in parts:
        parts = dict(parts, module=_REGISTRY)
    found = _rules(make(**parts))
    assert any(rule in ("dangerous-builtin", "try-fallback", "banned-import") for rule, _ in found), found


REGISTRY_DEAD_CODE_ATTACKS = {
    # a computed lookup in code that never runs is lifted only as a plain call: getattr handed on stays refused
    "getattr handed on as a value": "def unused(obj, name):\n    g = getattr\n    return g(obj, name)\n",
    "getattr in a dead function's default (runs at definition)": "def unused(obj, v=getattr(torch, 'x' + 'y')):\n"
                                                                 "    return v\n",
    "getattr in a dead function's decorator (runs at definition)": "import functools\n\n"
                                                                  "@functools.lru_cache(getattr(torch, 'a' + 'b'))\n"
                                                                  "def unused(x):\n    return x\n",
}


@pytest.mark.parametrize("module", list(REGISTRY_DEAD_CODE_ATTACKS.values()), ids=list(REGISTRY_DEAD_CODE_ATTACKS))
def test_redteam_lookups_around_dead_code_are_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "dangerous-builtin" for rule, _ in found), found


def test_redteam_an_inherited_method_runs_on_the_forward_path():
    """A method inherited from one of the module's classes is on the forward path of a subclass's instance (the
    forward path once followed the subclass's own methods only)."""
    module = "class Base:\n    def m(self, x):\n        return torch.tanh(x)\n\nclass Helper(Base):\n    pass\n"
    found = _rules(make(module=module, body="y = Helper().m(x)"))
    assert any(rule == "torch-compute" and "tanh" in message for rule, message in found), found


def test_redteam_an_autograd_apply_in_a_function_that_runs_is_followed():
    """``Cls.apply(...)`` inside a function is a call, followed when that function runs (a module-level or a
    lambda's is still a stored reference)."""
    module = ("class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
              "        return torch.tanh(x)\n\ndef run(x):\n    return Fn.apply(x)\n")
    for body, extra in (("y = run(x)", ""), ("", "\nRUN = lambda t: Fn.apply(t)\n"),
                        ("", "\nAPPLY = Fn.apply\nSTORED = len([APPLY])\n")):
        found = _rules(make(module=module + extra, body=body))
        assert any(rule == "torch-compute" and "tanh" in message for rule, message in found), (body, extra, found)


# -- a private API in a function nothing running calls (evaluator/static_visitor.py NEVER_RUN_EXEMPT) ----------------

_NPU_KWARGS = ("IS_NPU = False\n\n"
               "def npu_kwargs() -> dict:\n    if not IS_NPU:\n        return {}\n    kwargs = {'multibuffer': False}\n"
               "    try:\n        from triton.backends.ascend.compiler import NPUOptions\n"
               "        fields = getattr(NPUOptions, '__dataclass_fields__', {})\n"
               "    except ImportError:\n        return kwargs\n"
               "    if 'workspace' in fields:\n        kwargs['workspace'] = 1\n    return kwargs\n")


def test_private_backend_options_nothing_calls_are_accepted():
    assert _rules(make(module=_NPU_KWARGS)) == []


PRIVATE_ATTACKS = {
    "called from forward": dict(module=_NPU_KWARGS, body="k = npu_kwargs()"),
    "called at module level": dict(module=_NPU_KWARGS + "K = npu_kwargs()\n"),
    "stored in a table": dict(module=_NPU_KWARGS + "HOOKS = [npu_kwargs]\nSTORED = len(HOOKS)\n"),
    "a private API at module level": dict(module="from triton.backends.nvidia.compiler import CUDAOptions\n"
                                                 "FIELDS = CUDAOptions.__dataclass_fields__\n"),
}


@pytest.mark.parametrize("case", list(PRIVATE_ATTACKS.values()), ids=list(PRIVATE_ATTACKS))
def test_redteam_private_api_that_runs_is_refused(case):
    found = _rules(make(**case))
    assert any(rule in ("private-api", "dangerous-builtin") for rule, _ in found), found


# -- module-level imports only code that never runs reads (evaluator/static_dormant.py) ------------------------------
# fla imports shutil and pathlib for a toolchain probe only its (dead) TileLang backend calls, and torch.distributed
# for a tensor-parallel plan class nobody builds. The run time lets shutil and pathlib be imported (guards.py; what
# they would change is refused by the audit hook: tests/evaluator/test_audit_guard.py).

_NVCC = ("import shutil\nfrom pathlib import Path\n\n"
         "def has_nvcc() -> bool:\n    if shutil.which('nvcc') is not None:\n        return True\n"
         "    return (Path('/usr/local/cuda') / 'bin' / 'nvcc').exists()\n\n"
         "class TileBackend:\n    def available(self) -> bool:\n        return has_nvcc()\n\n"
         "def backend_for(kind: TileBackend | None = None):\n    return None\n")
_PARALLEL = ("from torch.distributed import DeviceMesh\n"
             "from torch.distributed.tensor import Replicate, Shard, distribute_module\n"
             "from torch.distributed.tensor.parallel import ParallelStyle\n\n"
             "class NormPlan(ParallelStyle):\n    def __init__(self, dim: int = 1):\n        super().__init__()\n"
             "        self.layout = (Shard(dim),)\n\n"
             "    def _apply(self, module: nn.Module, mesh: DeviceMesh) -> nn.Module:\n"
             "        return distribute_module(module, mesh, None, None, None)\n\n"
             "    def keep(self, mesh: DeviceMesh):\n        return [Replicate()]\n")

DORMANT_HONEST = {
    "shutil and pathlib for a probe only a dead backend calls": _NVCC,
    "torch.distributed for a plan class nobody builds": _PARALLEL,
    "both, with the future import": "from __future__ import annotations\n" + _NVCC + _PARALLEL,
}


@pytest.mark.parametrize("module", list(DORMANT_HONEST.values()), ids=list(DORMANT_HONEST))
def test_imports_only_dead_code_reads_are_accepted(module):
    source = make(module=module)
    if module.startswith("from __future__"):
        source = "from __future__ import annotations\n" + make(module=module[len("from __future__ import "
                                                                              "annotations\n"):])
    assert _rules(source) == []


DORMANT_ATTACKS = {
    # the relaxation is "every read is where nothing runs": each attack reads a name where code runs
    "read at module level": _NVCC + "WHERE = shutil.which('python3')\n",
    "read in forward": dict(module=_NVCC, body="ok = Path('/etc/hosts').exists()"),
    "the probe called from forward": dict(module=_NVCC, body="ok = has_nvcc()"),
    "the dead backend instantiated": _NVCC + "BACKENDS = [TileBackend()]\n",
    "read in a dead function's default (runs at definition)": "import shutil\n\n"
                                                              "def unused(p=shutil.which('gcc')):\n    return p\n",
    "read in a dead function's decorator (runs at definition)": "import shutil\nimport functools\n\n"
                                                                "@functools.lru_cache(shutil.disk_usage('/')[0])\n"
                                                                "def unused(x):\n    return shutil.which(x)\n",
    "read in a class body (runs at definition)": "import shutil\n\nclass Probe:\n    WHERE = shutil.which('gcc')\n",
    "the name rebound": _NVCC + "def swap():\n    global shutil\n    shutil = None\n",
    "named in a string annotation": _NVCC + "def op(x: 'shutil') -> None:\n    return None\n\nOPS = [op]\n",
    "imported and never read": "import shutil\n",
    "a module that acts when imported": "import antigravity\n\ndef unused():\n    return antigravity\n",
    "a third-party module": "import numpy\n\ndef unused():\n    return numpy.ones(3)\n",
    "a plan class that is built": _PARALLEL + "PLAN = NormPlan()\n",
    "a plan class with a metaclass keyword": _PARALLEL.replace("class NormPlan(ParallelStyle):",
                                                              "class NormPlan(ParallelStyle, metaclass=type):"),
    "a plan class under a decorator": _PARALLEL.replace("class NormPlan(", "@print\nclass NormPlan("),
    "a collective in running code": "import torch.distributed as dist\n\ndef sync(t):\n    dist.all_reduce(t)\n"
                                    "    return t\n\nSYNC = [sync]\nSTORED = len(SYNC)\n",
}


@pytest.mark.parametrize("case", list(DORMANT_ATTACKS.values()), ids=list(DORMANT_ATTACKS))
def test_redteam_imports_read_where_code_runs_are_refused(case):
    found = _rules(make(**(case if isinstance(case, dict) else dict(module=case))))
    assert any(rule in ("banned-import", "dangerous-builtin") for rule, _ in found), found


# -- os.environ["TRITON_F32_DEFAULT"] = "ieee" at module level (evaluator/static_environ.py) -------------------------

_PIN = "import os\n\nOLD_GPU = False\nif OLD_GPU:\n    os.environ[{key}] = {value}\n"
ENVIRON_HONEST = {
    "pinned under a flag": _PIN.format(key="'TRITON_F32_DEFAULT'", value="'ieee'"),
    "pinned unconditionally": "import os\nos.environ['TRITON_F32_DEFAULT'] = 'ieee'\n",
}


@pytest.mark.parametrize("module", list(ENVIRON_HONEST.values()), ids=list(ENVIRON_HONEST))
def test_fp32_dot_pinned_to_ieee_is_accepted(module):
    assert _rules(make(module=module)) == []


ENVIRON_ATTACKS = {
    "a lower precision": _PIN.format(key="'TRITON_F32_DEFAULT'", value="'tf32'"),
    "another Triton variable": _PIN.format(key="'TRITON_INTERPRET'", value="'ieee'"),
    "the compiler": _PIN.format(key="'CC'", value="'ieee'"),
    "a computed key": _PIN.format(key="'TRITON_F32_' + 'DEFAULT'", value="'ieee'"),
    "a key held in a name": "import os\nKEY = 'TRITON_F32_DEFAULT'\nos.environ[KEY] = 'ieee'\n",
    "a computed value": _PIN.format(key="'TRITON_F32_DEFAULT'", value="'ie' + 'ee'"),
    "a value read back": _PIN.format(key="'TRITON_F32_DEFAULT'", value="os.environ.get('X', 'ieee')"),
    "inside a function": "import os\n\ndef pin():\n    os.environ['TRITON_F32_DEFAULT'] = 'ieee'\n\nPINS = [pin]\n"
                   "STORED = len(PINS)\n",
    "chained with another target": "import os\nKEEP = os.environ['TRITON_F32_DEFAULT'] = 'ieee'\n",
    "an augmented write": "import os\nos.environ['TRITON_F32_DEFAULT'] += 'ieee'\n",
    "a deletion": "import os\ndel os.environ['TRITON_F32_DEFAULT']\n",
    "update": "import os\nos.environ.update(TRITON_F32_DEFAULT='ieee')\n",
    "setdefault": "import os\nos.environ.setdefault('TRITON_F32_DEFAULT', 'ieee')\n",
    "the environment through an alias": "import os\nENV = os.environ\nENV['TRITON_F32_DEFAULT'] = 'ieee'\n",
}


@pytest.mark.parametrize("module", list(ENVIRON_ATTACKS.values()), ids=list(ENVIRON_ATTACKS))
def test_redteam_other_environment_writes_are_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "banned-import" for rule, _ in found), found


# -- a branch that needs an attribute the installed Triton lacks (evaluator/static_absent.py) -------------------------

_ALIAS = ("import sys\n\ntry:\n    import triton.language as tl\n"
          "    if not hasattr(tl.extra, 'ascend') and hasattr(tl.extra, {name}):\n"
          "        tl.extra.ascend = sys.modules['triton.language.extra.ascend'] = tl.extra.{attr}\n"
          "except (ImportError, AttributeError):\n    pass\n")


def test_alias_for_a_fork_the_installation_lacks_is_accepted():
    assert _rules(make(module=_ALIAS.format(name="'cann'", attr="cann"))) == []


ABSENT_ATTACKS = {
    "an attribute the installation has": _ALIAS.format(name="'cuda'", attr="cuda"),
    "a test joined by or": _ALIAS.format(name="'cann'", attr="cann").replace(") and hasattr", ") or hasattr"),
    "the patch in the else branch": ("import sys\nimport triton.language as tl\n\nif hasattr(tl.extra, 'cann'):\n"
                                     "    pass\nelse:\n    tl.extra.ascend = sys.modules['x'] = tl.extra.cuda\n"),
    "a negated test": "import triton.language as tl\n\nif not hasattr(tl.extra, 'cann'):\n    tl.extra.cann = tl\n",
    "a computed name": _ALIAS.format(name="'ca' + 'nn'", attr="cuda"),
    "hasattr rebound": "def hasattr(o, n):\n    return True\n\n" + _ALIAS.format(name="'cann'", attr="cuda"),
    "a module outside torch and triton": "import sys\nimport os\n\nif hasattr(os, 'no_such_thing'):\n"
                                         "    sys.modules['x'] = os\n",
}


@pytest.mark.parametrize("module", list(ABSENT_ATTACKS.values()), ids=list(ABSENT_ATTACKS))
def test_redteam_patches_that_can_run_are_refused(module):
    found = _rules(make(module=module))
    assert any(rule in ("patching", "banned-import") for rule, _ in found), found


# -- if TYPE_CHECKING: imports for annotations only (evaluator/static_liveness.py, static_dormant.py) ----------------
# fla's cross entropy imports ProcessGroup for type checkers only and names it in `process_group: ProcessGroup | None`
# annotations, which `from __future__ import annotations` leaves unevaluated (and unbound at run time).

_TYPED = ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from torch.distributed import ProcessGroup\n\n"
          "def reduce(t, group: ProcessGroup | None = None) -> torch.Tensor:\n    return t\n")


def _future(source: str) -> str:
    return "from __future__ import annotations\n" + source


def test_names_for_type_checkers_only_are_accepted():
    assert _rules(_future(make(module=_TYPED, body="y = reduce(x)"))) == []


TYPED_ATTACKS = {
    "without the future import (annotations evaluated)": make(module=_TYPED, body="y = reduce(x)"),
    "the name read outside an annotation": _future(make(module=_TYPED + "KIND = ProcessGroup\n")),
    "an import in the else branch": _future(make(module="from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                                        "    pass\nelse:\n    from torch.distributed import all_reduce"
                                                        "\n\nOPS = [all_reduce]\n")),
    "a negated test": _future(make(module="from typing import TYPE_CHECKING\n\nif not TYPE_CHECKING:\n"
                                          "    import gc\n    N = len(gc.get_objects())\n")),
    "a test joined by or": _future(make(module="from typing import TYPE_CHECKING\nFLAG = True\n\n"
                                               "if TYPE_CHECKING or FLAG:\n    import gc\n"
                                               "    N = len(gc.get_objects())\n")),
    "a local named TYPE_CHECKING": _future(make(module="def probe():\n    TYPE_CHECKING = True\n"
                                                       "    if TYPE_CHECKING:\n        import gc\n"
                                                       "        return gc.get_objects()\n\nPROBES = [probe]\n"
                                                       "STORED = len(PROBES)\n")),
    "the flag rebound": _future(make(module="import typing\ntyping.TYPE_CHECKING = True\n\nif typing.TYPE_CHECKING:\n"
                                            "    import gc\n    N = len(gc.get_objects())\n")),
}


@pytest.mark.parametrize("source", list(TYPED_ATTACKS.values()), ids=list(TYPED_ATTACKS))
def test_redteam_type_checking_names_that_run_are_refused(source):
    found = _rules(source)
    assert any(rule in ("banned-import", "patching") for rule, _ in found), found


# -- sys.modules.get of a package that is never loaded here (evaluator/static_optional.py) ---------------------------
# fla's tensor_cache asks sys.modules.get('fla.utils') for a flag, with a default: the run time refuses fla's import and
# nothing of the verifier imports it, so the lookup always answers None.

_CACHE_FLAG = ("import sys\n\nDISABLED = False\n\n"
               "def cache_disabled() -> bool:\n    utils = sys.modules.get({name})\n"
               "    return getattr(utils, 'DISABLED', DISABLED)\n")


def test_lookup_of_a_package_never_loaded_is_accepted():
    assert _rules(make(module=_CACHE_FLAG.format(name="'fla_glue_pkg.utils'"), body="off = cache_disabled()")) == []


MODULES_ATTACKS = {
    "the verifier's own module": "'evaluator.sandboxed.guards'",
    "torch": "'torch'",
    "a third-party package torch loads": "'numpy'",
    "the harness's script": "'__main__'",
    "the candidate's own module": "'_kernelevo_kernel_softmax_88c4a03b'",
    "the standard library (not assumed refused)": "'gc'",
    "an allowed package": "'einops'",
    "a computed name": "'fla_glue_pkg.' + 'utils'",
    "an f-string": "f'fla_glue_pkg.{DISABLED}'",
    "a name held in a variable": "NAME",
    "a default that is not a constant": "'fla_glue_pkg.utils', torch",
}


@pytest.mark.parametrize("name", list(MODULES_ATTACKS.values()), ids=list(MODULES_ATTACKS))
def test_redteam_module_table_lookups_that_can_hand_over_a_module_are_refused(name):
    module = "NAME = 'torch'\n" + _CACHE_FLAG.format(name=name)
    found = _rules(make(module=module, body="off = cache_disabled()"))
    assert any(rule == "banned-import" and "sys.modules" in message for rule, message in found), found


@pytest.mark.parametrize("module", ["import sys\nM = sys.modules\n", "import sys\nU = sys.modules['fla_glue_pkg']\n",
                                   "import sys\nGET = sys.modules.get\n", "import sys\nK = list(sys.modules)\n"],
                         ids=["the table", "a subscript", "the method as a value", "its keys"])
def test_redteam_module_table_used_otherwise_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "banned-import" for rule, _ in found), found


# -- a probe whose handler asks again and logs (evaluator/static_probes.py) ------------------------------------------
# fla's get_multiprocessor_count: the device's SM count, else (maybe an NPU) its vector cores, else 1, logging why.

_SM_COUNT = ("import functools\nimport logging\n\nlogger = logging.getLogger(__name__)\n\n"
             "@functools.cache\ndef sm_count(idx: int = 0) -> int:\n    try:\n"
             "        return triton.runtime.driver.active.utils.get_device_properties(idx)['multiprocessor_count']\n"
             "    except Exception:\n        try:\n"
             "            if triton.runtime.driver.active.get_current_target().backend == 'npu':\n"
             "                props = triton.runtime.driver.active.utils.get_device_properties(idx)\n"
             "                return {inner}\n"
             "        except Exception:\n            {log}\n"
             "        return 1\n")


def test_probe_that_asks_again_and_logs_is_accepted():
    module = _SM_COUNT.format(inner="props['num_vectorcore']", log="logger.debug('no NPU count', exc_info=True)")
    assert _rules(make(module=module, body="n = sm_count()")) == []


PROBE_ATTACKS = {
    "the inner try computes": dict(inner="torch.tanh(props)", log="logger.debug('x')"),
    "the handler logs a computation": dict(inner="props['num_vectorcore']", log="logger.debug(torch.tanh(idx))"),
    "the handler calls a logger method that configures": dict(inner="props['num_vectorcore']",
                                                             log="logger.addHandler(idx)"),
}


@pytest.mark.parametrize("parts", list(PROBE_ATTACKS.values()), ids=list(PROBE_ATTACKS))
def test_redteam_probe_handlers_that_do_more_are_refused(parts):
    found = _rules(make(module=_SM_COUNT.format(**parts), body="n = sm_count()"))
    assert any(rule in ("try-fallback", "torch-compute", "banned-import") for rule, _ in found), found


def test_redteam_probe_handler_logging_through_another_object_is_refused():
    module = (_SM_COUNT.format(inner="props['num_vectorcore']", log="logger.debug('no NPU count')")
              + "\nclass Sink:\n    def debug(self, *a):\n        return torch.tanh(a[0])\n\n"
                "def swap():\n    global logger\n    logger = Sink()\n")
    found = _rules(make(module=module, body="n = sm_count()"))
    assert any(rule in ("try-fallback", "banned-import", "patching") for rule, _ in found), found


def test_redteam_probe_handler_returning_an_input_is_refused():
    module = ("import logging\n\nlogger = logging.getLogger(__name__)\n\ndef pick(x):\n    try:\n"
              "        return torch.cuda.get_device_capability()\n    except Exception:\n"
              "        try:\n            return torch.cuda.get_device_name()\n        except Exception:\n"
              "            logger.debug('none')\n        return x\n")
    found = _rules(make(module=module, body="out = pick(x)"))
    assert any(rule == "try-fallback" for rule, _ in found), found


NARROW_LIFTS = {
    # private APIs and computed lookups are lifted only in the bodies of functions nothing running refers to, module
    # attribute writes only under a hasattr the installation answers False: a main block, a DTensor branch or an
    # always-None branch runs where the file is used otherwise (a script, a distributed job)
    "a private API in a main block": ("private-api", "if __name__ == '__main__':\n"
                                                     "    from triton.backends.nvidia.compiler import CUDAOptions\n"),
    "a computed getattr in a main block": ("dangerous-builtin", "if __name__ == '__main__':\n"
                                                                "    G = getattr(torch, 'ex' + 'p')\n"),
    "a private API on an always-None branch": ("private-api", "def helper(x, extra=None):\n"
                                                              "    if extra is not None:\n"
                                                              "        return torch._C._get_tracing_state()\n"
                                                              "    return x\n\nY = helper(1)\n"),
    "a module attribute written in a dead function": ("patching", "def unused():\n    torch.exp = abs\n"),
    "a module attribute written in a main block": ("patching", "if __name__ == '__main__':\n    triton.cdiv = abs\n"),
}


@pytest.mark.parametrize("case", list(NARROW_LIFTS.values()), ids=list(NARROW_LIFTS))
def test_redteam_lifts_stay_where_nothing_runs_anywhere(case):
    rule, module = case
    found = _rules(make(module=module))
    assert any(r == rule for r, _ in found), found


def test_redteam_absent_attribute_check_imports_nothing_on_the_candidates_say():
    """The checker runs in the verifier's process: asking whether a module lacks a name must not import it (a module's
    import can change process state), and a private module is never asked."""
    import sys

    module = ("import torch.utils.bottleneck\n\nif hasattr(torch.utils.bottleneck, 'no_such_name'):\n"
              "    torch.utils.bottleneck.main = abs\n")
    was_loaded = "torch.utils.bottleneck" in sys.modules
    found = _rules(make(module=module))
    assert ("torch.utils.bottleneck" in sys.modules) == was_loaded
    assert any(rule == "patching" for rule, _ in found), found
    found = _rules(make(module="if hasattr(torch._dynamo, 'no_such_name'):\n    torch._dynamo.config = None\n"))
    assert any(rule in ("patching", "private-api") for rule, _ in found), found


# -- red team s9f (tests/candidates/manifest.d/redteam_s9f.yaml): the relaxations above, each defeated once --------

_FIELD_BACKEND = ("import dataclasses\nimport typing\n\nclass Backend:\n    def rows(self, x):\n"
                  "        with torch.utils._python_dispatch._disable_current_modes():\n"
                  "            return torch.softmax(x, dim=-1)\n\n")
CLASS_BODY_ANNOTATION_ATTACKS = {
    # a class-body annotation is a run-time value (Field.type, NamedTuple/TypedDict annotations): the class is named
    "a dataclass field's type": dict(module=_FIELD_BACKEND + "@dataclasses.dataclass\nclass Config:\n"
                                                             "    backend: Backend = None\n",
                                     body="y = dataclasses.fields(Config)[0].type().rows(x)"),
    "a NamedTuple field's type": dict(module=_FIELD_BACKEND + "class Config(typing.NamedTuple):\n"
                                                              "    backend: Backend\n",
                                      body="y = typing.get_args(list[Config])[0]"),
    "a module-level variable annotation": dict(module=_FIELD_BACKEND + "KIND: Backend = None\n"),
}


@pytest.mark.parametrize("case", list(CLASS_BODY_ANNOTATION_ATTACKS.values()), ids=list(CLASS_BODY_ANNOTATION_ATTACKS))
def test_redteam_a_class_named_in_a_class_body_annotation_is_referred_to(case):
    found = _rules(make(**case))
    assert any(rule in ("private-api", "torch-compute") for rule, _ in found), found


_ENUM_MEMBER = ("import enum\n\nBACKENDS = []\n\nclass Precision({base}):\n    IEEE = 'ieee'\n\n"
                "    def __init__(self, value):\n        BACKENDS.append(self)\n\n"
                "    def rows(self, x):\n        return {work}\n")
MADE_AT_DEFINITION_ATTACKS = {
    # an enum's class statement makes its members (calling __init__); a metaclass may call anything
    "an Enum member's private API": dict(module=_ENUM_MEMBER.format(
        base="enum.Enum", work="torch.utils._python_dispatch._disable_current_modes()")),
    "an Enum member's torch compute from forward": dict(module=_ENUM_MEMBER.format(
        base="enum.Enum", work="torch.softmax(x, dim=-1)"), body="y = BACKENDS[0].rows(x)"),
    "through the module's own enum base": dict(module="import enum\n\nclass Base(enum.IntEnum):\n    pass\n\n"
                                               + _ENUM_MEMBER.format(base="Base", work="torch._C._get_tracing_state()")
                                               .replace("'ieee'", "1").replace("import enum\n\n", "")),
    "a class with a metaclass keyword": dict(module="class Probe(metaclass=type):\n    def rows(self, x):\n"
                                                    "        return torch._C._get_tracing_state()\n"),
}


@pytest.mark.parametrize("case", list(MADE_AT_DEFINITION_ATTACKS.values()), ids=list(MADE_AT_DEFINITION_ATTACKS))
def test_redteam_methods_of_classes_made_at_definition_are_live(case):
    found = _rules(make(**case))
    assert any(rule in ("private-api", "torch-compute") for rule, _ in found), found


BASE_LIST_ATTACKS = {
    # base expressions run when the class statement does: only a plain dotted name reads nothing
    "a walrus in a conditional base": "from pathlib import Path\n\n"
                                      "class _Probe(object if (SEEN := Path.home() == Path('/x')) else object):\n"
                                      "    pass\n",
    "a call in the base list": "import shutil\n\nclass _Probe(type(shutil.which('gcc'))):\n    pass\n",
    "a subscript in the base list": "import shutil\n\nBASES = {}\n\nclass _Probe(BASES.get(shutil, object)):\n"
                                    "    pass\n",
}


@pytest.mark.parametrize("module", list(BASE_LIST_ATTACKS.values()), ids=list(BASE_LIST_ATTACKS))
def test_redteam_a_base_list_that_runs_code_reads_the_import(module):
    found = _rules(make(module=module))
    assert any(rule in ("banned-import", "dangerous-builtin") for rule, _ in found), found


ANNOTATION_MODULE_ATTACKS = {
    # an evaluated annotation hands a module it subscripts into to that object (a defaultdict keeps it as a key)
    "a dormant import as a dead function's annotation key": ("import collections\nimport shutil\n\n"
                                                             "SEEN = collections.defaultdict(int)\n\n"
                                                             "def probe(path: SEEN[shutil]) -> bool:\n"
                                                             "    return shutil.which(path) is not None\n"),
    "an allowed module as a live function's annotation key": ("import collections\nimport typing\n\n"
                                                              "SEEN = collections.defaultdict(int)\n\n"
                                                              "def probe(path: SEEN[typing]) -> bool:\n"
                                                              "    return path is not None\n\nPROBES = [probe]\n"),
    "in a string annotation": ("import collections\nimport typing\n\nSEEN = collections.defaultdict(int)\n\n"
                               "def probe(path: 'SEEN[typing]') -> bool:\n    return path is not None\n\n"
                               "PROBES = [probe]\n"),
    "a module in a dataclass field's type": ("import dataclasses\nimport typing\n\n@dataclasses.dataclass\n"
                                             "class Config:\n    lib: list[typing] = None\n"),
    "a module as a dataclass field's type": ("import dataclasses\nimport typing\n\n@dataclasses.dataclass\n"
                                             "class Config:\n    lib: typing = None\n"),
    "a module as an operand of another object's |": ("import collections\nimport typing\n\n"
                                                      "SEEN = collections.defaultdict(int)\n\n"
                                                      "def probe(path: SEEN | typing) -> bool:\n"
                                                      "    return path is not None\n\nPROBES = [probe]\n"),
    "a dormant import in a typing subscript (evaluated at definition)": ("import shutil\nimport typing\n\n"
                                                                         "def unused(p: typing.Optional[shutil]):\n"
                                                                         "    return shutil.which(p)\n"),
}


@pytest.mark.parametrize("module", list(ANNOTATION_MODULE_ATTACKS.values()), ids=list(ANNOTATION_MODULE_ATTACKS))
def test_redteam_a_module_handed_over_by_an_annotation_is_refused(module):
    found = _rules(make(module=module))
    assert any(rule == "banned-import" for rule, _ in found), found


def test_modules_in_plain_type_annotations_are_accepted():
    """fla's dispatch helpers: ``F`` is a TypeVar and, later in the pasted file, ``torch.nn.functional``; a module
    standing in a parameter annotation's union or typing subscript reaches nothing that keeps it."""
    module = ("import typing\nfrom collections.abc import Callable\n\nF = typing.TypeVar('F', bound=Callable)\n\n"
              "def wrap(fn: F | str, keep: Callable[[F], F] | None = None) -> typing.Optional[F]:\n    return None\n\n"
              "WRAPS = [wrap]\n\nimport torch.nn.functional as F\n")
    assert _rules(make(module=module)) == []


def test_redteam_a_module_type_subclass_is_never_judged_to_lack_a_name():
    """torch.backends.cudnn is a ModuleType subclass whose names live on its class; torch.classes raises TypeError from
    find_spec: both fail closed (the branch is live)."""
    from evaluator.static_absent import module_lacks

    assert not module_lacks("torch.backends.cudnn", "is_available")
    assert not module_lacks("torch.backends.cudnn", "no_such_name")
    assert not module_lacks("torch.classes", "no_such_name")
    module = ("def rows(x):\n    if hasattr(torch.backends.cudnn, 'is_available'):\n"
              "        with torch.utils._python_dispatch._disable_current_modes():\n"
              "            return torch.softmax(x, dim=-1)\n    return x\n")
    found = _rules(make(module=module, body="y = rows(x)"))
    assert any(rule in ("private-api", "torch-compute") for rule, _ in found), found


def test_redteam_a_classmethod_factory_called_in_a_function_keeps_the_class_a_root():
    """Only ``Fn.apply(...)`` of the module's autograd Functions inside a def is no stored reference: a classmethod
    factory hands out an instance whose methods forward may call through a list."""
    module = ("KEEP = []\n\nclass Backend:\n    @classmethod\n    def make(cls):\n        return cls()\n\n"
              "    def rows(self, x):\n        return torch.softmax(x, dim=-1)\n\n"
              "def _register():\n    KEEP.append(Backend.make())\n\n_register()\n")
    found = _rules(make(module=module, body="y = KEEP[0].rows(x)"))
    assert any(rule == "torch-compute" and "softmax" in message for rule, message in found), found


# -- what acts only on a process group (static_rules.GROUP_ONLY) ------------------------------------------------------
# fla's fused cross entropy asks the world size and gathers partial losses only when its caller passes a process group.
# Nothing a candidate may name makes one, so each of these raises without one (the premise, checked below).

_GROUP_ONLY = ("def reduce(t, group=None):\n"
               "    n = 1 if group is None else torch.distributed.get_world_size(group=group)\n"
               "    rank = 0 if group is None else torch.distributed.get_rank(group=group)\n"
               "    if n > 1:\n"
               "        gathered = t.new_empty(n, *t.shape)\n"
               "        torch.distributed.all_gather_into_tensor(output_tensor=gathered, input_tensor=t, group=group)\n"
               "        torch.distributed.all_reduce(t, group=group)\n"
               "    return t, rank\n")


def test_process_group_queries_and_collectives_are_accepted():
    assert _rules(make(module=_GROUP_ONLY, body="y, _ = reduce(x)")) == []


GROUP_ATTACKS = {
    "making the default group": "torch.distributed.init_process_group('gloo', rank=0, world_size=1)",
    "a store": "store = torch.distributed.HashStore()",
    "a new group": "group = torch.distributed.new_group([0])",
    "a device mesh": "mesh = torch.distributed.device_mesh.init_device_mesh('cpu', (1,))",
    "a pickling collective": "torch.distributed.all_gather_object([None], x)",
    "the world group object": "torch.distributed.all_reduce(x, group=torch.distributed.group.WORLD)",
    "a process group class": "group = torch.distributed.ProcessGroup",
}


@pytest.mark.parametrize("body", list(GROUP_ATTACKS.values()), ids=list(GROUP_ATTACKS))
def test_anything_that_makes_a_process_group_stays_refused(body):
    assert ("banned-import" in {rule for rule, _ in _rules(make(body=body + "\ny = x"))}), body


@pytest.mark.parametrize("module", ["from torch.distributed import all_reduce\n",
                                    "import torch.distributed as dist\n"])
def test_importing_torch_distributed_stays_refused(module):
    assert "banned-import" in {rule for rule, _ in _rules(make(module=module, body="y = x"))}


def test_without_a_process_group_each_group_only_function_raises():
    import torch
    import torch.distributed as dist

    from evaluator.static_rules import GROUP_ONLY

    if not dist.is_available():
        pytest.skip("this torch build has no torch.distributed")
    assert not dist.is_initialized()
    t = torch.ones(4)
    arguments = {"all_gather": ([t.clone()], t), "all_gather_into_tensor": (t.clone(), t),
                 "reduce_scatter_tensor": (t.clone(), t), "broadcast": (t, 0), "all_reduce": (t,)}
    for name in sorted(GROUP_ONLY):
        fn = getattr(dist, name.rsplit(".", 1)[1])
        with pytest.raises((RuntimeError, ValueError)):
            fn(*arguments.get(name.rsplit(".", 1)[1], ()))
    assert torch.equal(t, torch.ones(4))
