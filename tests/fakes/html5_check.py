"""HTML validity as browsers parse it (shared by the report and status-page tests)."""

from __future__ import annotations

import html5lib


def html5_valid(html: str) -> None:
    """Parse ``html`` by the HTML5 algorithm, strict: any parse error (a stray end tag, a duplicate attribute, a
    missing doctype, characters where none may be) fails the test with its position."""
    parser = html5lib.HTMLParser(strict=True)
    try:
        parser.parse(html)
    except html5lib.html5parser.ParseError as exc:
        raise AssertionError(f"not valid HTML5: {exc} ({parser.errors[:3]})") from None
