"""The Jinja2 environments of the report templates and the filters that format figures.

One Markdown environment (no autoescape: every user-controlled value goes through ``md``/``code``/``fenced``)
and one HTML environment (autoescape on). A missing figure formats as "not measured", never as a number.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import jinja2

from kernelevo.report.escape import clip, code, escape_md, fenced, marker_value

NOT_MEASURED = "not measured"


def ms(value: float | None) -> str:
    """A time in ms, 4 significant digits."""
    return NOT_MEASURED if value is None else f"{value:.4g}"


def times(value: float | None) -> str:
    """A speedup: ``1.23x``."""
    return NOT_MEASURED if value is None else f"{value:.2f}x"


def pct(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{value * 100:.0f}%"


def sci(value: float | None) -> str:
    """An error or tolerance: ``1.23e-05``."""
    return NOT_MEASURED if value is None else f"{value:.2e}"


def num(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return NOT_MEASURED
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    return f"{value:.{digits}g}" if math.isfinite(value) else str(value)


def usd(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"${value:.2f}"


def _filters(env: jinja2.Environment, markdown: bool) -> jinja2.Environment:
    env.filters.update(ms=ms, x=times, pct=pct, sci=sci, num=num, usd=usd, clip=clip)
    if markdown:
        env.filters.update(md=lambda v, limit=300: escape_md(clip(v, limit)),
                           code=lambda v, limit=300: code(clip(v, limit)), fenced=fenced, marker=marker_value)
    return env


@lru_cache(maxsize=1)
def markdown_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("kernelevo.report", "templates"), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    return _filters(env, markdown=True)


@lru_cache(maxsize=1)
def html_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("kernelevo.report", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return _filters(env, markdown=False)


def render_template(env: jinja2.Environment, name: str, **context: Any) -> str:
    return env.get_template(name).render(**context)
