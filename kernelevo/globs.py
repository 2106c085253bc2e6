"""The config's path globs (gitignore-like), matched in time linear in the path, whatever the pattern.

``*`` is any run of characters within one path component, ``?`` one character other than ``/``, ``**/`` any
number of whole leading folders (none included), ``**`` elsewhere any run of characters (``/`` included); a
pattern ending in ``/`` is a folder and covers everything under it; a leading ``/`` is ignored. Every other
character (``[`` included) is literal.

A pattern is compiled to a small automaton whose set of live positions is simulated over the path one character
at a time as the bits of one integer (shift-and, see :class:`Glob`): no backtracking and no memo to outgrow, so
a pattern like ``**/**/**/.../x.py`` or ``*a???...?b`` costs O(len(path)) operations on integers of
len(pattern) bits, where a regular expression backtracks exponentially. The paths matched are repository file
names, at most a few hundred characters; a 1000-character path against a 256-character glob costs about a
millisecond.
"""

from __future__ import annotations

from functools import lru_cache

# token kinds
_LIT, _ONE, _STAR, _ANY, _ANY_DIRS = range(5)


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
    """One compiled pattern; :meth:`matches` is the whole-path match.

    The automaton's live positions are the bits of an integer (bit ``i``: token ``i`` is next; bit
    ``len(tokens)``: the whole pattern matched), stepped by the shift-and method: each character of the path costs
    a fixed handful of operations on integers of ``len(tokens) + 1`` bits, plus one per wildcard token in the
    longest run of adjacent wildcards (the positions reached by letting them match nothing). With the config's
    limits (256 characters, four ``**``) that is about a dozen operations on 257-bit integers per character: a
    path of a few hundred characters costs well under a millisecond against one glob, whatever the pattern.
    """

    def __init__(self, pattern: str) -> None:
        self.tokens = tokens(pattern)
        self.accept = 1 << len(self.tokens)
        self.literal: dict[str, int] = {}
        self.one = self.star = self.any = self.dirs = 0
        for index, (kind, char) in enumerate(self.tokens):
            bit = 1 << index
            if kind == _LIT:
                self.literal[char] = self.literal.get(char, 0) | bit
            elif kind == _ONE:
                self.one |= bit
            elif kind == _STAR:
                self.star |= bit
            elif kind == _ANY:
                self.any |= bit
            else:
                self.dirs |= bit
        self.wild = self.star | self.any | self.dirs
        self.start = self._closure(1)

    def _closure(self, states: int) -> int:
        """Add the positions reached by letting wildcards match nothing (they only move forward)."""
        while True:
            grown = states | ((states & self.wild) << 1)
            if grown == states:
                return states
            states = grown

    def matches(self, path: str) -> bool:
        states = self.start
        inside = 0  # the ``**/`` tokens within their ``(?:.*/)?``: any characters, done after each ``/``
        for char in path:
            inside |= states & self.dirs
            nxt = ((states & self.literal.get(char, 0)) << 1) | (states & self.any)
            if char == "/":
                nxt |= inside << 1
            else:
                nxt |= ((states & self.one) << 1) | (states & self.star)
            states = self._closure(nxt)
            if not states and not inside:
                return False
        return bool(states & self.accept)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    return Glob(pattern)


def glob_matches(pattern: str, path: str) -> bool:
    """Whether the relative path (forward slashes) matches the glob as a whole."""
    return compile_glob(pattern).matches(path)
