"""Which lines of a comment GitHub shows as plain text, decided by a CommonMark parser (markdown-it-py).

A ``/kernelevo`` command must be visible as what it is: a line of paragraph text. Everything CommonMark
renders as code or hides is not such a line: fenced code (backticks or tildes, closed only by the same
character, at least as long, with no info string; also inside list items and quotes), indented code (4 spaces
or a tab), HTML blocks and comments (``<!-- ... -->``, also spanning lines inside a paragraph), code spans
that span lines, headings and tables. (A line that starts a command is also unindented in the comment's own
text, see :func:`bot.commands._command_lines`: no ``>`` or list marker before it.)
The parser of record decides; nothing here re-implements its rules.
"""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

_BREAKS = "kernelevo_line_breaks"


def _record_line_break(state: StateInline, silent: bool) -> bool:
    """An inline rule that records each newline the parser renders as a line break (soft or hard), and
    consumes nothing. Newlines inside a code span, an inline HTML comment or an autolink are consumed by
    their own rules and never reach this one."""
    src, pos = state.src, state.pos
    if not silent and (src[pos] == "\n" or src.startswith("\\\n", pos)):
        offset = pos if src[pos] == "\n" else pos + 1
        state.env.setdefault(_BREAKS, {}).setdefault(src, set()).add(offset)
    return False


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table")  # GitHub Flavored Markdown's tables are no paragraphs
    md.inline.ruler.before("newline", "kernelevo_line_break", _record_line_break)
    return md


_MD = _parser()


def paragraph_line_starts(body: str) -> list[int]:
    """The 1-based numbers of the lines (as :func:`bot.commands.markdown_lines` splits them) that begin a
    visible line of a paragraph (at any depth: a lazy continuation line after a quote is paragraph text of the
    quote, shown without ``>``): its first line, and each line after a rendered line break.

    A paragraph whose lines the parser trimmed away (a first or last line of Unicode spaces only) yields
    nothing: its line numbers cannot be matched, and a line not proven plain text carries no command.
    """
    env: dict[str, Any] = {}
    tokens = _MD.parse(body, env)
    breaks: dict[str, set[int]] = env.get(_BREAKS, {})
    starts: list[int] = []
    for index, token in enumerate(tokens):
        if token.type != "paragraph_open" or token.map is None:
            continue
        first, end = token.map
        content = tokens[index + 1].content
        newlines = [offset for offset, char in enumerate(content) if char == "\n"]
        if len(newlines) != end - first - 1:
            continue
        rendered = breaks.get(content, set())
        starts.append(first + 1)
        starts += [first + 2 + k for k, offset in enumerate(newlines) if offset in rendered]
    return starts
