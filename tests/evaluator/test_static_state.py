"""Rule ``call-state`` (evaluator/static_state.py): state a forward keeps across calls and updates from its own
earlier value (a count of calls, a growing list) is refused, in every disguise a red team would try; caches written
from the call's arguments, warn-once flags and fla's bounded tensor cache are not."""

# ruff: noqa: E501 (the red team's cases are kept as they were written, one per line)
from __future__ import annotations

from pathlib import Path

import pytest
from test_static_check import ACTIONS, make, marked_line

from evaluator.static_check import check_source

RULE = "call-state"
CANDIDATES = Path(__file__).resolve().parents[1] / "candidates"

COUNTING = [
    dict(init="self.calls = 0", body="self.calls += 1  # HERE\nif self.calls > 5000:\n    out = x"),
    dict(init="self.calls = 0", body="self.calls = self.calls + 1  # HERE"),
    dict(init="self.calls = 0", body="n = self.calls\nn = n + 1\nself.calls = n  # HERE"),
    dict(init="self.calls = 0", body="m = self\nm.calls += 1  # HERE"),
    dict(init="self.calls = 0", body="self.calls = -~self.calls  # HERE"),
    dict(init="self.calls = 0", body="self.calls = sum([self.calls, 1])  # HERE"),
    dict(init="self.calls = 0", body="self.calls = getattr(self, 'calls') + 1  # HERE"),
    dict(init="self.a = 0\nself.b = 0", body="self.a = self.b + 1  # HERE\nself.b = self.a"),
    dict(module="def bump(m):\n    return m.calls + 1", init="self.calls = 0", body="self.calls = bump(self)  # HERE"),
    dict(module="def bump(m):\n    m.calls += 1  # HERE", init="self.calls = 0", body="bump(self)"),
    dict(module="CALLS = [0]", body="CALLS[0] += 1  # HERE"),
    dict(module="CALLS = [0]", body="CALLS[0] = CALLS[0] + 1  # HERE"),
    dict(module="SEEN = []", body="SEEN.append(1)  # HERE\nif len(SEEN) > 5000:\n    out = x"),
    dict(module="SEEN = {}", body="SEEN[len(SEEN)] = 1  # HERE"),
    dict(module="N = 0", body="global N\nN += 1  # HERE"),
    dict(init="self.log = []", body="log = self.log\nlog.append(0)  # HERE"),
    dict(init="self.log = []", body="log = self.log or []\nlog.extend([0])  # HERE"),
    dict(init="self.live = set()", body="self.live.add(x)  # HERE\nif len(self.live) > 5000:\n    out = x"),
    dict(init="self.live = set()", body="self.live.add(out)  # HERE\nif len(self.live) > 5000:\n    out = x"),
    dict(init="self.counts = {}", body="k = x.shape\nself.counts[k] = self.counts.get(k, 0) + 1  # HERE"),
    dict(module="import itertools", init="self.it = itertools.count()", body="n = next(self.it)  # HERE"),
    dict(module="import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef cfg(n):\n    return n",
         body="cfg(x.numel())\nhits = cfg.cache_info().hits  # HERE"),
    dict(init="self.calls = [0]", body="def tick():\n    self.calls[0] += 1  # HERE\n\ntick()"),
    dict(module="import collections", init="self.q = collections.deque()", body="self.q.append(1)  # HERE"),
    dict(module="import collections", init="self.q = collections.deque(maxlen=100000)",
         body="self.q.append(1)  # HERE"),
    # keys no earlier call made: the container grows at every call, and len() reads the count
    dict(init="self.seen = set()", body="self.seen.add(object())  # HERE\nif len(self.seen) > 5000:\n    out = x"),
    dict(init="self.seen = {}", body="self.seen[object()] = 1  # HERE"),
    dict(module="class Token:\n    pass", init="self.seen = {}", body="t = Token()\nself.seen.setdefault(t, 0)  # HERE"),
    dict(init="self.seen = set()", body="self.seen.update([lambda: 0])  # HERE"),
]


@pytest.mark.parametrize("parts", COUNTING, ids=[str(i) for i in range(len(COUNTING))])
def test_state_updated_from_itself_is_refused_on_its_line(parts):
    source = make(**parts)
    report = check_source(source, "cand.py")
    hits = [v for v in report.violations if v.rule == RULE]
    assert marked_line(source) in {v.line for v in hits}, (hits, report.violations)
    for v in hits:
        assert any(word in v.message for word in ACTIONS), v.message


KEPT = [
    dict(init="self.buf = None", body="if self.buf is None or self.buf.shape != x.shape:\n"
                                      "    self.buf = torch.empty_like(x)"),
    dict(init="self.bufs = {}", body="key = tuple(x.shape)\nbuf = self.bufs.get(key)\nif buf is None:\n"
                                     "    buf = torch.empty_like(x)\n    self.bufs[key] = buf"),
    dict(init="self.warned = False", body="if not self.warned:\n    self.warned = True"),
    dict(init="self.block = 128", body="block = self.block\nblock *= 2\nshape = list(x.shape)\nshape[-1] += 1"),
    dict(init="self.cfg = {}", body="self.cfg[x.numel()] = triton.next_power_of_2(x.numel())"),
    dict(body="parts = []\nparts.append(out)\nsizes = [0]\nsizes[0] += 1"),
    dict(module="import collections\nFLA_CACHE = 4", init="self.q = collections.deque(maxlen=FLA_CACHE)",
         body="q = collections.deque(maxlen=8)\nq.append(out)"),
    dict(init="self.n = 0\nself.last = None", body="self.n = x.shape[0]\nself.last = self.n"),
    # a third helper's realistic honest state (the Triton tutorial's warmup cache, cast copies, swaps, LRUs)
    dict(module="KERNELS = {}", body="key = (x.shape[-1], 4)\nkernel, n = KERNELS.get(key, (None, 0))\n"
                                     "if kernel is None:\n    kernel = copy_kernel\n    regs = kernel.n_regs\n"
                                     "    n = 65536 // (regs * 32)\n    KERNELS[key] = (kernel, n)\nn = min(n, x.shape[0])"),
    dict(init="self.half = None", body="if self.half is None:\n    b = out.detach().to(torch.float16)\n"
                                       "    self.half = b"),
    dict(init="self.cos = torch.zeros(4)", body="self.cos = self.cos.to(device=x.device, dtype=x.dtype)"),
    dict(init="self.front = []\nself.back = []", body="self.front, self.back = self.back, self.front"),
    dict(module="import collections\nMAX = 8", init="self.cache = collections.OrderedDict()",
         body="k = tuple(x.shape)\nif k not in self.cache:\n    if len(self.cache) >= MAX:\n"
              "        self.cache.pop(next(iter(self.cache)))\n    self.cache[k] = out\nself.cache.move_to_end(k)"),
    dict(module="def tensor_cache(fn):\n    entries = []\n    size = 4\n\n    def wrapper(*args):\n"
                "        nonlocal entries\n        for i, entry in enumerate(entries):\n            a, r = entry\n"
                "            if a is args[0]:\n                entries = entries[:i] + entries[i + 1:] + [(a, r)]\n"
                "                return r\n        r = fn(*args)\n        if len(entries) >= size:\n"
                "            entries = entries[1:]\n        entries.append((args[0], r))\n        return r\n\n"
                "    return wrapper\n\n\n@tensor_cache\ndef alloc(t):\n    return torch.empty_like(t)",
         body="alloc(x)"),
]


@pytest.mark.parametrize("parts", KEPT, ids=[str(i) for i in range(len(KEPT))])
def test_caches_and_flags_written_from_the_call_pass(parts):
    report = check_source(make(**parts), "cand.py")
    assert not [v for v in report.violations if v.rule == RULE], report.violations


def test_a_bounded_deque_closure_passes_and_an_unbounded_one_does_not():
    cache = ("import collections\nimport os\nSIZE = int(os.getenv('CACHE_SIZE', '{n}'))\n\n\n"
             "def cached(fn):\n    kept = collections.deque(maxlen=SIZE)\n\n    def wrapper(t):\n"
             "        for a, kept_r in kept:\n            if a is t:\n                return kept_r\n"
             "        r = fn(t)\n        kept.append((t, r))  # HERE\n        return r\n\n    return wrapper\n\n\n"
             "@cached\ndef alloc(t):\n    return torch.empty_like(t)")
    for n, refused in (("4", False), ("100000", True)):
        source = make(module=cache.format(n=n), body="alloc(x)")
        hits = [v.line for v in check_source(source, "cand.py").violations if v.rule == RULE]
        assert (marked_line(source) in hits) is refused, (n, hits)


@pytest.mark.parametrize("name", ["redteam/s9r_call_count_latch_rmsnorm.py", "adversarial/call_count_garbage.py",
                                  "redteam/s9_unobserved_latch_softmax.py", "adversarial/checks_then_skip.py"])
def test_the_suites_call_count_latches_are_refused_statically(name):
    report = check_source((CANDIDATES / name).read_text(), name)
    assert RULE in {v.rule for v in report.violations}, report.violations


def test_no_honest_candidate_keeps_counting_state():
    honest = sorted((CANDIDATES / "honest").rglob("*.py")) + sorted((CANDIDATES / "honest_static").rglob("*.py"))
    assert honest
    flagged = [p.name for p in honest if RULE in {v.rule for v in check_source(p.read_text(), p.name).violations}]
    assert not flagged


ITERATORS = [
    dict(module="import itertools", init="self.it = itertools.count()",
         body="for n in self.it:  # HERE\n    break"),
    dict(init="self.it = iter(range(1 << 30))", body="n = max(0, *zip(self.it, [0]))[0]  # HERE"),
    dict(module="def gen():\n    n = 0\n    while True:\n        n += 1\n        yield n", init="self.g = gen()",
         body="n = [v for v, _ in zip(self.g, [0])]  # HERE"),
    dict(module="TICKS = (n for n in range(1 << 30))", body="n = list(zip(TICKS, [0]))  # HERE"),
]


@pytest.mark.parametrize("parts", ITERATORS, ids=[str(i) for i in range(len(ITERATORS))])
def test_an_iterator_kept_across_calls_is_refused_where_forward_uses_it(parts):
    source = make(**parts)
    hits = [v.line for v in check_source(source, "cand.py").violations if v.rule == RULE]
    assert marked_line(source) in hits, hits


# A red team's attempts (2026-12-06) at counting calls past the first version of the rule: each must be refused. The
# bodies end with `if n > 5000: out = x`, the flip a latch makes.
RED_TEAM_COUNTS = [
    ('aug-local-then-store', dict(init='self.calls = 0', body='n = self.calls\nn += 1\nself.calls = n\nif n > 5000:\n    out = x')),
    ('alias-subscript', dict(init='self.calls = [0]', body='c = self.calls\nc[0] = c[0] + 1\nn = c[0]\nif n > 5000:\n    out = x')),
    ('alias-global-dict', dict(module='STATE = {}', body="s = STATE\ns['n'] = s.get('n', 0) + 1\nn = s['n']\nif n > 5000:\n    out = x")),
    ('init-alias', dict(init='self.state = [0]\nself.view = self.state', body='self.view[0] = self.state[0] + 1\nn = self.state[0]\nif n > 5000:\n    out = x')),
    ('list-iadd-alias', dict(init='self.log = []', body='log = self.log\nlog += [0]\nn = len(log)\nif n > 5000:\n    out = x')),
    ('list-imul? n/a; dict-ior-alias', dict(init='self.seen = {}', body='s = self.seen\ns |= {object(): 0}\nn = len(s)\nif n > 5000:\n    out = x')),
    ('slice-append', dict(init='self.log = []', body='self.log[1 << 30:] = [0]\nn = len(self.log)\nif n > 5000:\n    out = x')),
    ('slice-prepend', dict(init='self.log = []', body='self.log[:0] = [0]\nn = len(self.log)\nif n > 5000:\n    out = x')),
    ('pop-budget', dict(init='self.budget = list(range(5000))', body='n = 0 if self.budget else 6000\nif self.budget:\n    self.budget.pop()\nif n > 5000:\n    out = x')),
    ('del-budget', dict(init='self.budget = [0] * 5000', body='n = 0 if self.budget else 6000\ndel self.budget[:1]\nif n > 5000:\n    out = x')),
    ('popleft', dict(module='import collections', init='self.q = collections.deque(range(5000))', body='n = 0 if self.q else 6000\nif self.q:\n    self.q.popleft()\nif n > 5000:\n    out = x')),
    ('rotate', dict(module='import collections', init='self.q = collections.deque([1] + [0] * 5000)', body='self.q.rotate(1)\nn = 6000 * self.q[0]\nif n > 5000:\n    out = x')),
    ('counter-update', dict(module='import collections', init='self.stats = collections.Counter()', body="self.stats.update(['calls'])\nn = self.stats['calls']\nif n > 5000:\n    out = x")),
    ('counter-update-kw', dict(module='import collections', init='self.stats = collections.Counter()', body="self.stats.update(calls=1)\nn = self.stats['calls']\nif n > 5000:\n    out = x")),
    ('map-append', dict(init='self.log = []', body='list(map(self.log.append, [0]))\nn = len(self.log)\nif n > 5000:\n    out = x')),
    ('method-value', dict(init='self.log = []', body='push = self.log.append\npush(0)\nn = len(self.log)\nif n > 5000:\n    out = x')),
    ('init-method-value', dict(init='self.log = []\nself.push = self.log.append', body='self.push(0)\nn = len(self.log)\nif n > 5000:\n    out = x')),
    ('sorted-alias', dict(init='self.log = []', body='log = sorted([self.log])[0]\nlog.append(0)\nn = len(log)\nif n > 5000:\n    out = x')),
    ('binop-alias', dict(init='self.log = []', body='log = ([self.log] * 1)[0]\nlog.append(0)\nn = len(log)\nif n > 5000:\n    out = x')),
    ('operator-iadd', dict(init='self.log = []', body='operator.iadd(self.log, [0])\nn = len(self.log)\nif n > 5000:\n    out = x')),
    ('operator-setitem', dict(init='self.box = [0]', body='operator.setitem(self.box, 0, self.box[0] + 1)\nn = self.box[0]\nif n > 5000:\n    out = x')),
    ('match-capture', dict(init='self.calls = 0', body='match self.calls:\n    case c:\n        self.calls = c + 1\nn = self.calls\nif n > 5000:\n    out = x')),
    ('nested-def-closure', dict(init='self.calls = 0', body='cur = self.calls\ndef step():\n    return cur + 1\nself.calls = step()\nn = self.calls\nif n > 5000:\n    out = x')),
    ('nested-def-default', dict(init='self.calls = 0', body='def step(c=self.calls):\n    return c + 1\nself.calls = step()\nn = self.calls\nif n > 5000:\n    out = x')),
    ('default-arg-list', dict(module='def tick(_seen=[]):\n    _seen += [0]\n    return len(_seen)\n', body='n = tick()\nif n > 5000:\n    out = x')),
    ('default-arg-list-append', dict(module='def tick(_seen=[]):\n    _seen.append(0)\n    return len(_seen)\n', body='n = tick()\nif n > 5000:\n    out = x')),
    ('iter-helper', dict(module='import itertools\n\ndef counter():\n    return itertools.count()\n', init='self.it = counter()', body='for n in self.it:\n    break\nif n > 5000:\n    out = x')),
    ('iter-genexp-helper', dict(module='def counter():\n    return (i for i in range(1 << 30))\n', init='self.it = counter()', body='n = next(self.it)\nif n > 5000:\n    out = x')),
    ('iter-in-list', dict(module='import itertools', init='self.its = [itertools.count()]', body='for n in self.its[0]:\n    break\nif n > 5000:\n    out = x')),
    ('iter-for-target', dict(module='import itertools', init='for self.it in [itertools.count()]:\n    pass', body='for n in self.it:\n    break\nif n > 5000:\n    out = x')),
    ('partial-next', dict(module='import functools\nimport itertools', init='self.tick = functools.partial(next, itertools.count())', body='n = self.tick()\nif n > 5000:\n    out = x')),
    ('global-deque-rebind', dict(module='import collections\nQ = collections.deque(maxlen=4)', init='global Q\nQ = collections.deque(maxlen=1 << 20)', body='Q.append(0)\nn = len(Q)\nif n > 5000:\n    out = x')),
    ('map-bump', dict(module='def bump(m):\n    m.calls += 1\n', init='self.calls = 0', body='list(map(bump, [self]))\nn = self.calls\nif n > 5000:\n    out = x')),
    ('closure-cell', dict(module='def make_counter():\n    box = [0]\n\n    def tick():\n        box[0] = box[0] + 1\n        return box[0]\n\n    return tick\n\n\nTICK = make_counter()\n', body='n = TICK()\nif n > 5000:\n    out = x')),
    ('string-growth-alias', dict(init="self.s = ['']", body="s = self.s\ns[0] = s[0] + 'x'\nn = len(s[0])\nif n > 5000:\n    out = x")),
    ('walrus', dict(init='self.calls = 0', body='self.calls = (c := self.calls) + 1\nn = c\nif n > 5000:\n    out = x')),
    ('dict-setdefault-list', dict(init='self.d = {}', body="self.d.setdefault('k', []).append(0)\nn = len(self.d['k'])\nif n > 5000:\n    out = x")),
    ('dict-get-alias', dict(init='self.d = {"k": []}', body="lst = self.d.get('k')\nlst.append(0)\nn = len(lst)\nif n > 5000:\n    out = x")),
    ('next-alias-local', dict(module='import itertools', init='self.its = [itertools.count()]', body='it = self.its[0]\nn = next(it)\nif n > 5000:\n    out = x')),
    ('dataclass', dict(module='import dataclasses\n\n@dataclasses.dataclass\nclass St:\n    n: int = 0\n', init='self.st = St()', body='st = self.st\nself.st = dataclasses.replace(st, n=st.n + 1)\nn = self.st.n\nif n > 5000:\n    out = x')),
    ('super-ish class attr', dict(module='class Box:\n    n = 0\n', body='b = [Box]\nb[0].n = b[0].n + 1\nn = Box.n\nif n > 5000:\n    out = x')),
    ('decorated-helper', dict(module='import functools\n\ndef counted(fn):\n    box = [0]\n\n    @functools.wraps(fn)\n    def wrapper(*a):\n        box[0] += 1\n        return fn(*a) if box[0] < 5000 else a[0]\n\n    return wrapper\n\n\n@counted\ndef pick(t):\n    return t\n', body='out = pick(out)')),
    ('getter-chain-call', dict(init='self.d = {}', body="self.d.get('k', []).append(0)")),
    # a second red team, against the version that refused the first
    ('enumerate-alias', dict(init="self.stats = [{'calls': 0}]", body="for i, s in enumerate(self.stats):\n    s['calls'] += 1\nn = self.stats[0]['calls']\nif n > 5000:\n    out = x")),
    ('values-alias', dict(init="self.stats = {'fwd': {'calls': 0}}", body="for s in self.stats.values():\n    s['calls'] = s['calls'] + 1\nn = self.stats['fwd']['calls']\nif n > 5000:\n    out = x")),
    ('reversed-alias', dict(init='self.slots = [[0]]', body='for s in reversed(self.slots):\n    s[0] += 1\nn = self.slots[0][0]\nif n > 5000:\n    out = x')),
    ('lru-cache-factory', dict(module="import functools\n\n@functools.lru_cache(maxsize=None)\ndef _workspace(device):\n    return {'calls': 0}\n", body="ws = _workspace(str(x.device))\nws['calls'] += 1\nn = ws['calls']\nif n > 5000:\n    out = x")),
    ('operator-getitem', dict(init='self.calls = 0', body='m = operator.getitem([self], 0)\nm.calls = m.calls + 1\nn = self.calls\nif n > 5000:\n    out = x')),
    ('for-if-search', dict(init='self.calls = 0', body='for k in range(1 << 30):\n    if k > self.calls:\n        break\nself.calls = k\nn = k\nif n > 5000:\n    out = x')),
    ('genexp-if-next', dict(init='self.calls = 0', body='self.calls = next(k for k in range(1 << 30) if k > self.calls)\nn = self.calls\nif n > 5000:\n    out = x')),
    ('float-mod-1', dict(init='self.phase = 0.0', body='self.phase = (self.phase + 1e-4) % 1\nn = self.phase * 10000 + 1\nif n > 5000:\n    out = x')),
    ('two-digit-mod', dict(init='self.lo = 0\nself.hi = 0', body='self.lo = (self.lo + 1) % 64\nif self.lo == 0:\n    self.hi = (self.hi + 1) % 64\nn = (self.hi * 64 + self.lo) * 2\nif n > 5000:\n    out = x')),
    ('one-minus-neg', dict(init='self.calls = 0', body='self.calls = 1 - (-self.calls)\nn = self.calls\nif n > 5000:\n    out = x')),
    ('xor-one', dict(init='self.calls = 0', body='self.calls = (self.calls + 2) ^ 1\nn = self.calls // 2\nif n > 5000:\n    out = x')),
    ('saturating-fake', dict(init='self.calls = 0', body='if self.calls - (1 << 40) < 0:\n    self.calls = max(0, self.calls + 1)\nn = self.calls\nif n > 5000:\n    out = x')),
    ('pop-len-gt-0', dict(init='self.budget = list(range(5001))', body='if len(self.budget) > 0:\n    self.budget.pop()\nn = 5001 - len(self.budget)\nif n > 5000:\n    out = x')),
    ('remove-last', dict(init='self.budget = list(range(5001))', body='if self.budget:\n    self.budget.remove(self.budget[-1])\nn = 5001 - len(self.budget)\nif n > 5000:\n    out = x')),
    ('not-in-object', dict(init='self.seen = []', body='tok = object()\nif tok not in self.seen:\n    self.seen.append(tok)\nn = len(self.seen)\nif n > 5000:\n    out = x')),
    ('method-param-attr', dict(module='class Tracker:\n    def step(self, st):\n        st.calls = st.calls + 1\n        return st.calls\n', init='self.calls = 0\nself.tracker = Tracker()', body='n = self.tracker.step(self)\nif n > 5000:\n    out = x')),
    ('ctx-alias', dict(module='class _Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, t, box):\n        ctx.box = box\n        ctx.box[0] = ctx.box[0] + 1\n        return t\n\n    @staticmethod\n    def backward(ctx, g):\n        return g, None\n', init='self.box = [0]', body='_Fn.apply(x, self.box)\nn = self.box[0]\nif n > 5000:\n    out = x')),
    ('itertools-chain', dict(module='import itertools', init='self.it = itertools.chain(range(1 << 30))', body='for n in self.it:\n    break\nif n > 5000:\n    out = x')),
    ('generator-method', dict(module='class Clock:\n    def ticks(self):\n        n = 0\n        while True:\n            n += 1\n            yield n\n', init='self.ticks = Clock().ticks()', body='for n in self.ticks:\n    break\nif n > 5000:\n    out = x')),
    ('max-two-attr', dict(init='self.calls = 0\nself.nxt = 0', body='self.calls = max(self.calls, self.nxt)\nself.nxt = self.calls + 1\nn = self.calls\nif n > 5000:\n    out = x')),
    ('defaultdict-read', dict(module='import collections', init='self.seen = collections.defaultdict(int)', body='_ = self.seen[object()]\nn = len(self.seen)\nif n > 5000:\n    out = x')),
    ('attrgetter-read', dict(init='self.calls = 0', body="self.calls = operator.attrgetter('calls')(self) + 1\nn = self.calls\nif n > 5000:\n    out = x")),
    # a third red team: values read from the data or the address of tensors are new at every call
    ('data-ptr-key', dict(init='self.plans = {}', body='self.plans[x.data_ptr()] = x.shape[-1]\nn = len(self.plans)\nif n > 5000:\n    out = x')),
    ('digest-key', dict(init='self.plans = {}', body='d = torch.empty(1, dtype=torch.int32)\ncopy_kernel[(1,)](x, d, 1, BLOCK=1)\nself.plans[int(d)] = 1\nn = len(self.plans)\nif n > 5000:\n    out = x')),
    ('item-key-not-in', dict(init='self.seen = set()', body='v = x.sum().item()\nif v not in self.seen:\n    self.seen.add(v)\nn = len(self.seen)\nif n > 5000:\n    out = x')),
    ('digest-memo', dict(init='self.memo = {}', body='d = torch.empty(2, dtype=torch.int32)\ncopy_kernel[(1,)](x, d, 2, BLOCK=2)\nkey = (x.shape[0], int(d[0]), int(d[1]))\nhit = self.memo.get(key)\nif hit is None:\n    self.memo[key] = out')),
    ('max-of-digest', dict(init='self.peak = 0', body='d = torch.empty(1, dtype=torch.int32)\ncopy_kernel[(1,)](x, d, 1, BLOCK=1)\nself.peak = max(self.peak, int(d))\nif self.peak > 5000:\n    out = x')),
    ('coprime-cycles', dict(init='self.a = 0\nself.b = 0\nself.c = 0', body='self.a = (self.a + 1) % 61\nself.b = (self.b + 1) % 62\nself.c = (self.c + 1) % 63\nn = self.a * 3906 + self.b * 63 + self.c\nif n > 5000:\n    out = x')),
    ('toggle-and-cycle', dict(init='self.a = 0\nself.t = 0', body='self.a = (self.a + 1) % 61\nself.t ^= 1\nn = self.a * 2 + self.t\nif n > 100:\n    out = x')),
    # properties: reading runs the getter, assigning runs the setter (a getter that adds one to what the setter stores)
    ('property-getter-setter', dict(module='class Box:\n    def __init__(self):\n        self._k = 0\n\n    @property\n    def k(self):\n        return self._k + 1\n\n    @k.setter\n    def k(self, v):\n        self._k = v\n', init='self.box = Box()', body='b = self.box\nb.k = b.k\nn = b._k\nif n > 5000:\n    out = x')),
    ('property-call-form', dict(module='class Box:\n    def __init__(self):\n        self._k = 0\n\n    def _get(self):\n        return self._k + 1\n\n    def _set(self, v):\n        self._k = v\n\n    k = property(_get, _set)\n', init='self.box = Box()', body='self.box.k = self.box.k\nn = self.box._k\nif n > 5000:\n    out = x')),
    ('property-read-into-backing', dict(module='class Box:\n    def __init__(self):\n        self._k = 0\n\n    @property\n    def k(self):\n        return self._k + 1\n\n    @k.setter\n    def k(self, v):\n        self._k = v\n', init='self.box = Box()', body='self.box._k = self.box.k\nn = self.box._k\nif n > 5000:\n    out = x')),
    ('property-getter-counts', dict(module='class Box:\n    def __init__(self):\n        self._k = 0\n\n    @property\n    def tick(self):\n        self._k += 1\n        return self._k\n', init='self.box = Box()', body='n = self.box.tick\nif n > 5000:\n    out = x')),
]


@pytest.mark.parametrize(("name", "parts"), RED_TEAM_COUNTS, ids=[n for n, _ in RED_TEAM_COUNTS])
def test_red_team_counts_are_refused(name, parts):
    assert RULE in {v.rule for v in check_source(make(**parts), "cand.py").violations}


# Honest state the same red team wrote, the way kernel libraries keep it: none is a count.
RED_TEAM_HONEST = [
    ('two-small-rings', dict(init='self.i = 0\nself.j = 0', body='self.i = (self.i + 1) % 2\nself.j = (self.j + 1) % 4\nslot = self.i * 4 + self.j')),
    ('max-seq-of-shape', dict(init='self.longest = 0', body='self.longest = max(self.longest, int(x.shape[0]))')),
    ('property-setter-from-shape', dict(module='class Cfg:\n    def __init__(self):\n        self._block = 16\n\n    @property\n    def block(self):\n        return self._block\n\n    @block.setter\n    def block(self, v):\n        self._block = max(16, triton.next_power_of_2(v))\n\n    @property\n    def warps(self):\n        return 4 if self._block <= 1024 else 8\n', init='self.cfg = Cfg()', body='self.cfg.block = x.shape[-1]\nb = self.cfg.block\nw = self.cfg.warps')),
    ('property-lazy-table', dict(module='class Lazy:\n    def __init__(self):\n        self._t = None\n\n    @property\n    def table(self):\n        if self._t is None:\n            self._t = torch.zeros(8)\n        return self._t\n', init='self.lz = Lazy()', body='t = self.lz.table')),
    ('cfg-cache-per-shape', dict(init='self.cfg = {}', body='key = (tuple(x.shape), x.dtype)\ncfg = self.cfg.get(key)\nif cfg is None:\n    cfg = (triton.next_power_of_2(x.shape[-1]), 4)\n    self.cfg[key] = cfg\nblock, warps = cfg')),
    ('lazy-buffer', dict(init='self.buf = None', body='if self.buf is None:\n    self.buf = torch.empty_like(x)')),
    ('grow-only-workspace', dict(init='self.ws = None', body='need = x.numel()\nif self.ws is None or self.ws.numel() < need:\n    self.ws = torch.empty(need, device=x.device, dtype=x.dtype)\nws = self.ws[:need]')),
    ('capacity-doubling', dict(init='self.cap = 0\nself.ws = None', body='need = x.numel()\nif need > self.cap:\n    self.cap = max(need, 2 * self.cap)\n    self.ws = torch.empty(self.cap, device=x.device)')),
    ('max-seq-cached', dict(init='self.max_len = 0', body='self.max_len = max(self.max_len, x.shape[0])')),
    ('rotary-style', dict(init='self.max_len = 0\nself.cos = None', body='n = x.shape[0]\nif n > self.max_len:\n    self.max_len = n\n    self.cos = torch.empty(n, device=x.device)')),
    ('warn-once-per-key', dict(module='import warnings', init='self.warned = set()', body="key = x.dtype\nif key not in self.warned:\n    warnings.warn(f'slow path for {key}')\n    self.warned.add(key)")),
    ('log-once', dict(module='import logging\nlogger = logging.getLogger(__name__)', init='self.logged = set()', body="key = tuple(x.shape)\nif key not in self.logged:\n    self.logged.add(key)\n    logger.info('new shape %s', key)")),
    ('seen-shapes-list', dict(init='self.shapes = []', body='shape = tuple(x.shape)\nif shape not in self.shapes:\n    self.shapes.append(shape)')),
    ('ordered-lru', dict(module='import collections', init='self.cache = collections.OrderedDict()', body='key = tuple(x.shape)\nbuf = self.cache.get(key)\nif buf is None:\n    buf = torch.empty_like(x)\n    self.cache[key] = buf\nself.cache.move_to_end(key)\nif len(self.cache) > 8:\n    self.cache.popitem(last=False)')),
    ('lru_cache-helper', dict(module='import functools\n\n@functools.lru_cache(maxsize=64)\ndef pick_block(n):\n    return min(triton.next_power_of_2(n), 4096)\n', body='block = pick_block(x.shape[-1])')),
    ('last-shape', dict(init='self.last_shape = None', body='if self.last_shape != tuple(x.shape):\n    self.last_shape = tuple(x.shape)')),
    ('autotune-dict', dict(module='CONFIGS = [32, 64, 128]', init='self.best = {}', body='key = x.shape[-1]\nif key not in self.best:\n    scores = {}\n    for b in CONFIGS:\n        scores[b] = abs(b - key)\n    self.best[key] = min(scores, key=scores.get)\nblock = self.best[key]')),
    ('lazy-fill-configs', dict(module='CONFIGS = [32, 64, 128]', init='self.configs = []', body='if not self.configs:\n    self.configs.extend(CONFIGS)')),
    ('bounded-pool-append', dict(init='self.pool = []', body='if len(self.pool) < 2:\n    self.pool.append(torch.empty_like(x))')),
    ('ping-pong', dict(init='self.idx = 0\nself.bufs = [None, None]', body='self.idx = 1 - self.idx')),
    ('setdefault-kernel-cache', dict(init='self.bufs = {}', body='buf = self.bufs.setdefault(x.dtype, torch.empty_like(x))')),
    ('cache-clear-when-full', dict(init='self.cache = {}', body='if len(self.cache) > 64:\n    self.cache.clear()\nself.cache[tuple(x.shape)] = triton.next_power_of_2(x.shape[-1])')),
    ('dict-get-or', dict(init='self.cache = {}', body='key = x.shape[-1]\nblk = self.cache.get(key) or triton.next_power_of_2(key)\nself.cache[key] = blk')),
    ('cache-keyed-and-value-from-cache', dict(init='self.cfg = {}\nself.default = 128', body='key = x.shape[-1]\nself.cfg[key] = self.cfg.get(key, self.default)')),
    ('weight-prep-cache', dict(init='self.prepped = None\nself.prep_key = None', body='key = (x.dtype, x.device)\nif self.prep_key != key:\n    self.prep_key = key\n    self.prepped = torch.empty_like(x)')),
    ('cache dict entry update', dict(init='self.meta = {}', body="m = self.meta.setdefault(x.shape[-1], {})\nm['block'] = triton.next_power_of_2(x.shape[-1])")),
    ('fla-style-setdefault-then-use', dict(init='self.cache = {}', body='key = x.shape\nif key not in self.cache:\n    self.cache[key] = torch.empty_like(x)\nself.last = self.cache[key]')),
    ('min-block-seen', dict(init='self.block = 4096', body='self.block = min(self.block, triton.next_power_of_2(x.shape[-1]))')),
    ('name-collision-numel', dict(init='self.numel = 0', body='self.numel = x.numel()')),
    ('name-collision-size', dict(init='self.size = None', body='self.size = x.size(0)')),
    ('name-collision-stride', dict(init='self.stride = None', body='self.stride = x.stride(0) * 2')),
    ('name-collision-block', dict(module='class Cfg:\n    block = 64\n', init='self.block = 0\nself.cfgs = {}', body='cfg = Cfg()\nself.block = cfg.block * 2')),
    ('name-collision-shape-elem', dict(init='self.shape = None', body='self.shape = (x.shape[0] + 1, x.shape[1])')),
    ('cache-keyed-by-len', dict(init='self.cfg = {}', body='n = x.shape[-1]\nself.cfg[n] = self.cfg.get(n, 0) or triton.next_power_of_2(n)')),
    ('buffer-per-dtype-list', dict(init='self.bufs = {}', body='self.bufs[x.dtype] = self.bufs.get(x.dtype) if x.dtype in self.bufs else torch.empty_like(x)')),
    ('grow-buffer-max', dict(init='self.ws = None', body='need = x.numel()\nif self.ws is None or self.ws.numel() < need:\n    self.ws = torch.empty(max(need, 2 * (0 if self.ws is None else self.ws.numel())), device=x.device)')),
    # the second red team's: __init__ building, registries, helpers filling a caller's list, cycles, LRU eviction
    ('fla-tensor-cache-last', dict(module='import functools\n\ndef tensor_cache(fn):\n    last_args = None\n    last_result = None\n\n    @functools.wraps(fn)\n    def wrapper(*args):\n        nonlocal last_args, last_result\n        if last_args is not None and len(args) == len(last_args) and all(a is b for a, b in zip(args, last_args)):\n            return last_result\n        result = fn(*args)\n        last_args, last_result = args, result\n        return result\n    return wrapper\n\n\n@tensor_cache\ndef prepare_lens(t):\n    return torch.empty_like(t)\n', body='lens = prepare_lens(x)')),
    ('init-modulelist-append', dict(module='class Blk(nn.Module):\n    pass\n', init='self.blocks = nn.ModuleList()\nfor _ in range(4):\n    self.blocks.append(Blk())')),
    ('init-accumulate-attr', dict(init='self.total = 0\nfor d in (64, 128):\n    self.total += d')),
    ('init-configs-extend', dict(init='self.configs = []\nfor bs in (32, 64):\n    self.configs.extend([bs, bs * 2])')),
    ('registry-decorator-append', dict(module='KERNELS = []\n\ndef register(fn):\n    KERNELS.append(fn)\n    return fn\n\n\n@register\ndef _cfg_small(n):\n    return n <= 1024\n', body='ok = [k(x.numel()) for k in KERNELS]')),
    ('helper-append-to-caller-list', dict(module='def _collect(ptrs, t):\n    ptrs.append(t.data_ptr())\n', body='ptrs = []\n_collect(ptrs, x)\n_collect(ptrs, out)')),
    ('method-append-param', dict(module='class Packer:\n    def push(self, group, n):\n        group.append(n)\n', body='group = []\nPacker().push(group, x.numel())')),
    ('double-until-fits', dict(init='self.cap = 1024\nself.ws = None', body='need = x.numel()\nif self.ws is None or need > self.cap:\n    while self.cap < need:\n        self.cap *= 2\n    self.ws = torch.empty(self.cap, device=x.device)')),
    ('ping-pong-xor-aug', dict(init='self.idx = 0\nself.bufs = [None, None]', body='self.idx ^= 1')),
    ('ring-mod-const-name', dict(module='NUM_BUFS = 2', init='self.idx = 0', body='self.idx = (self.idx + 1) % NUM_BUFS')),
    ('fifo-evict-next-iter', dict(init='self.cache = {}', body='key = tuple(x.shape)\nif key not in self.cache:\n    if len(self.cache) >= 8:\n        self.cache.pop(next(iter(self.cache)))\n    self.cache[key] = torch.empty_like(x)')),
    ('fifo-evict-del', dict(init='self.cache = {}', body='key = tuple(x.shape)\nif key not in self.cache:\n    if len(self.cache) >= 8:\n        del self.cache[next(iter(self.cache))]\n    self.cache[key] = torch.empty_like(x)')),
    ('buf-helper-method', dict(module='def get_buf(m, t):\n    if m.buf is None or m.buf.shape != t.shape:\n        return torch.empty_like(t)\n    return m.buf\n', init='self.buf = None', body='self.buf = get_buf(self, x)')),
    ('warn-n-times', dict(module='import warnings', init='self.warned = 0', body="if self.warned < 3:\n    warnings.warn('slow path')\n    self.warned += 1")),
    ('child-attr-from-attr', dict(module='class Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = 1.0\n', init='self.scale = 0.125\nself.head = Head()\nself.head.scale = self.scale * 2.0')),
    ('liger-chunk-closure', dict(module='class _ChunkedLoss(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, t):\n        grads = []\n\n        def accumulate(chunk):\n            grads.append(torch.empty_like(chunk))\n\n        for chunk in torch.chunk(t, 4):\n            accumulate(chunk)\n        ctx.n = len(grads)\n        return t\n\n    @staticmethod\n    def backward(ctx, g):\n        return g\n', body='y = _ChunkedLoss.apply(x)')),
    ('max-with-local-rmw', dict(init='self.block = 0', body='b = self.block\nb = max(b, triton.next_power_of_2(x.shape[-1]))\nself.block = b')),
    ('grow-workspace-2x', dict(init='self.cap = 0\nself.ws = None', body='need = x.numel()\nif need > self.cap:\n    self.cap = 2 * need\n    self.ws = torch.empty(self.cap, device=x.device)')),
    ('grow-cap-2x-self', dict(init='self.cap = 1\nself.ws = None', body='need = x.numel()\nif need > self.cap:\n    self.cap = triton.next_power_of_2(max(need, self.cap * 2))\n    self.ws = torch.empty(self.cap, device=x.device)')),
]


@pytest.mark.parametrize(("name", "parts"), RED_TEAM_HONEST, ids=[n for n, _ in RED_TEAM_HONEST])
def test_red_team_honest_state_passes(name, parts):
    assert RULE not in {v.rule for v in check_source(make(**parts), "cand.py").violations}
