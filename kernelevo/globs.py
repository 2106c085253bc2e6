"""The config's path globs (gitignore-like), matched in time linear in the path, whatever the pattern.

``*`` is any run of characters within one path component, ``?`` one character other than ``/``, ``**/`` any
number of whole leading folders (none included), ``**`` elsewhere any run of characters (``/`` included); a
pattern ending in ``/`` is a folder and covers everything under it; a leading ``/`` is ignored. Every other
character (``[`` included) is literal.

A pattern is compiled to a small automaton that is simulated over the path one character at a time, the set of
live positions memoised per (set, character): no backtracking, so a pattern like ``**/**/**/.../x.py`` costs
O(len(path) x len(pattern)) at worst, where a regular expression backtracks exponentially.
"""

from __future__ import annotations

from functools import lru_cache

# token kinds
_LIT, _ONE, _STAR, _ANY, _ANY_DIRS = range(5)
_INSIDE = 1  # the second half of a state: within the ``.*/`` of a ``**/`` token
_MEMO_LIMIT = 4096

State = frozenset[tuple[int, int]]


def tokens(pattern: str) -> tuple[tuple[int, str], ...]:
    """The pattern's tokens after normalising it (stripped, no leading ``/``, a trailing ``/`` meaning ``/**``)."""
    pattern = pattern.strip().lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append((_ANY_DIRS, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((_ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((_STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((_ONE, ""))
            i += 1
        else:
            out.append((_LIT, pattern[i]))
            i += 1
    return tuple(out)


class Glob:
    """One compiled pattern; :meth:`matches` is the whole-path match."""

    def __init__(self, pattern: str) -> None:
        self.tokens = tokens(pattern)
        self.literals = frozenset(char for kind, char in self.tokens if kind == _LIT) | {"/"}
        self.start = self._closure({(0, 0)})
        self._memo: dict[tuple[State, str], State] = {}

    def _closure(self, states: set[tuple[int, int]]) -> State:
        """Add the positions reached by letting wildcards match nothing (they only move forward)."""
        pending = sorted(states)
        done = set(states)
        while pending:
            index, inside = pending.pop()
            if not inside and index < len(self.tokens) and self.tokens[index][0] in (_STAR, _ANY, _ANY_DIRS):
                nxt = (index + 1, 0)
                if nxt not in done:
                    done.add(nxt)
                    pending.append(nxt)
        return frozenset(done)

    def _step(self, states: State, char: str | None) -> State:
        """The positions after one character (``None``: any character the pattern does not name)."""
        out: set[tuple[int, int]] = set()
        for index, inside in states:
            if index == len(self.tokens):
                continue
            kind, literal = self.tokens[index]
            if inside or kind == _ANY_DIRS:  # ``(?:.*/)?``: any characters, done after a ``/``
                out.add((index, _INSIDE))
                if char == "/":
                    out.add((index + 1, 0))
            elif kind == _LIT:
                if char == literal:
                    out.add((index + 1, 0))
            elif kind == _ONE:
                if char != "/":
                    out.add((index + 1, 0))
            elif kind == _STAR:
                if char != "/":
                    out.add((index, 0))
            else:  # _ANY
                out.add((index, 0))
        return self._closure(out)

    def matches(self, path: str) -> bool:
        states = self.start
        for char in path:
            named = char if char in self.literals else None  # all other characters behave alike
            key = (states, named or "")
            nxt = self._memo.get(key)
            if nxt is None:
                nxt = self._step(states, named)
                if len(self._memo) >= _MEMO_LIMIT:
                    self._memo.clear()
                self._memo[key] = nxt
            states = nxt
            if not states:
                return False
        return (len(self.tokens), 0) in states


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    return Glob(pattern)


def glob_matches(pattern: str, path: str) -> bool:
    """Whether the relative path (forward slashes) matches the glob as a whole."""
    return compile_glob(pattern).matches(path)
