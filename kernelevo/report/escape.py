"""Escaping for text that lands in GitHub-flavoured Markdown (and the HTML GitHub allows inside it).

Every user-controlled string (op ids come from file paths a PR author chooses; details, config values and log
excerpts come from users or candidates) goes through exactly one of these before it reaches Markdown, so that it
renders as the text it is: no markup, no link, no image, no @-mention, no table cell or comment it could end.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

_MARKDOWN_SPECIALS = "\\`*_[]<>|!#~&"
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=\bwww)(?=\.)", re.IGNORECASE)  # where GitHub would start a link


def _one_line(text: str) -> str:
    return text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def escape_md(text: Any) -> str:
    """Neutralise Markdown/HTML, @-mentions and GitHub's autolinks (``https://...``, ``www.``, an e-mail address)
    in text that came from users or candidates (one line). A zero-width space after ``@``, between ``:`` and
    ``//`` and after ``www`` breaks a mention or a link without changing what a reader sees."""
    out = str(text)
    for ch in _MARKDOWN_SPECIALS:
        out = out.replace(ch, "\\" + ch)
    out = _AUTOLINK.sub("\u200b", out)
    return _one_line(out.replace("@", "@\u200b"))


def code(text: Any) -> str:
    """``text`` as a Markdown code span that stays one span (and one table cell) whatever it holds:
    op ids come from file paths, which a PR author chooses."""
    clean = _one_line(str(text).replace("`", "'").replace("|", "\\|"))
    return f"`{clean}`"


def marker_value(text: Any) -> str:
    """``text`` inside a hidden HTML comment (``<!-- ... -->``): percent-encoded, so it cannot end the comment."""
    return quote(str(text), safe="/:._")


def fenced(text: Any) -> str:
    """One line inside a fenced code block: no backticks (no closing fence) and no line breaks."""
    return _one_line(str(text).replace("`", "'"))


def clip(text: Any, limit: int = 300) -> str:
    """At most ``limit`` characters of ``text`` (an ellipsis says it was cut): keeps a hostile 60 KiB op id or
    detail from eating the size limits of a PR body. Clip before escaping, so no escape is cut in half."""
    value = str(text)
    return value if len(value) <= limit else value[: max(limit - 1, 0)] + "\u2026"
