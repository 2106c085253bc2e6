"""The ``/kernelevo`` comment grammar, as pure functions with a generated help text.

A command is a line of its own that starts with ``/kernelevo`` (anywhere in the comment, as paragraph text
indented by at most 3 spaces: lines GitHub shows as code, quoted or list lines, and HTML comments are ignored).
Parsing never raises: each command line becomes either a :class:`Command` or a :class:`CommandError` whose
message says what was wrong and what would work.
Every value that later reaches a file name, a search request or a reply is checked against a strict
pattern here, so comment text can never smuggle shell or prompt syntax through.
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass, field

from bot.markdown_text import paragraph_line_starts

PREFIX = "/kernelevo"
BACKENDS = ("triton", "cuda", "any")
OP_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}(::[A-Za-z_][A-Za-z0-9_.]{0,200})?$")
MODEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$")
SHA_RE = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})$")  # full ids only: a short prefix can be collided
MAX_BUDGET = 100_000_000
MAX_OPS = 8  # ops one request queues (named, or found in the PR): bounds the work one comment can cause
MAX_LINE = 1000  # characters of a command line that are parsed


@dataclass(frozen=True)
class Spec:
    """One command: its argument synopsis, flags and a line of help."""

    args: str
    flags: tuple[str, ...]
    summary: str
    takes_ops: bool = False
    takes_sha: bool = False


SPECS: dict[str, Spec] = {
    "optimize": Spec("[OP ...] [--backend triton|cuda|any] [--budget TOKENS] [--model NAME]",
                     ("--backend", "--budget", "--model"),
                     "search faster kernels for the named ops (default: every op this PR adds or changes)",
                     takes_ops=True),
    "status": Spec("", (), "show the state of this PR's jobs"),
    "cancel": Spec("[OP ...]", (), "stop this PR's running jobs (or only those for the named ops)",
                   takes_ops=True),
    "approve": Spec("SHA", (), "maintainers: allow jobs on commit SHA (the PR's head you reviewed) of a fork or"
                               " untrusted PR; not the PR's author", takes_sha=True),
    "help": Spec("", (), "show this help"),
}


@dataclass
class Command:
    """A well-formed command. ``ops`` empty means "all relevant ops"."""

    name: str
    ops: list[str] = field(default_factory=list)
    backend: str | None = None
    budget: int | None = None
    model: str | None = None
    line: int = 0
    sha: str | None = None  # approve: the commit the approver reviewed


@dataclass
class CommandError:
    """A command line that could not be understood, with the fix to suggest."""

    line: int
    text: str
    message: str


def help_text() -> str:
    """Markdown help generated from :data:`SPECS` (the one source of truth for the grammar)."""
    rows = [f"- `{PREFIX} {name}{(' ' + spec.args) if spec.args else ''}`: {spec.summary}"
            for name, spec in SPECS.items()]
    return ("One command per comment, on a line of its own:\n\n" + "\n".join(rows)
            + f"\n\nOP is an op id (`path/to/file.py::Name`) or just its name, as listed in the check run"
            f" (at most {MAX_OPS} per command). SHA is a full commit id (40 hex digits).")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def markdown_lines(body: str) -> list[str]:
    """The lines of a comment as GitHub (CommonMark) shows them: broken only at ``\r\n``, ``\r`` and ``\n``.
    ``str.splitlines`` also breaks at U+2028, U+0085, ``\x0b``, ``\x0c``, ``\x1c``-``\x1e``..., which GitHub
    renders inside one line: a command hidden there (in a quote, or past a code fence) would run unseen."""
    return _LINE_BREAK.split(body)


def _command_lines(body: str) -> list[tuple[int, str]]:
    """The lines that carry a command: a line GitHub shows as paragraph text
    (:func:`bot.markdown_text.paragraph_line_starts`: never code or an HTML comment), indented by at most 3
    spaces (no tab) in the comment's own text, so no ``>`` or list marker before it, that starts with the
    prefix."""
    lines = markdown_lines(body)
    out = []
    for number in paragraph_line_starts(body):
        raw = lines[number - 1]
        indent = raw[:len(raw) - len(raw.lstrip(" \t"))]
        line = raw.strip()
        head = line.split(maxsplit=1)[0] if line else ""
        if "\t" not in indent and len(indent) <= 3 and head.lower() == PREFIX:
            out.append((number, line))
    return out


def _safe(text: str, limit: int = 80) -> str:
    """Echo user text back in a reply without letting it form markdown or mentions."""
    clipped = text if len(text) <= limit else text[:limit] + "…"
    return clipped.replace("`", "'").replace("@", "@\u200b")


def parse_line(number: int, line: str) -> Command | CommandError:
    """Parse one ``/kernelevo ...`` line."""
    if len(line) > MAX_LINE:
        return CommandError(number, _safe(line), f"the command line is longer than {MAX_LINE} characters")
    try:
        words = shlex.split(line)[1:]
    except ValueError as exc:
        return CommandError(number, _safe(line), f"could not split the line ({exc}); check the quotes")
    if not words:
        return CommandError(number, _safe(line), f"no command given; try `{PREFIX} help`")
    name, rest = words[0].lower(), words[1:]
    spec = SPECS.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, SPECS, n=1)
        hint = f"did you mean `{PREFIX} {close[0]}`? " if close else ""
        return CommandError(number, _safe(line),
                            f"unknown command `{_safe(name)}`; {hint}known: {', '.join(SPECS)}")
    command = Command(name, line=number)
    i = 0
    while i < len(rest):
        word = rest[i]
        flag, eq, inline = word.partition("=")
        if word.startswith("--"):
            if flag not in spec.flags:
                allowed = ", ".join(spec.flags) or "none"
                return CommandError(number, _safe(line),
                                    f"`{_safe(flag)}` is not a flag of `{name}` (flags: {allowed})")
            if eq:
                value = inline
            elif i + 1 < len(rest):
                i += 1
                value = rest[i]
            else:
                return CommandError(number, _safe(line), f"`{flag}` needs a value: {spec.args}")
            problem = _set_flag(command, flag, value)
            if problem:
                return CommandError(number, _safe(line), problem)
        elif spec.takes_ops:
            if not OP_RE.match(word):
                return CommandError(number, _safe(line),
                                    f"`{_safe(word)}` is not an op id; use `path/to/file.py::Name` or a name")
            command.ops.append(word)
            if len(command.ops) > MAX_OPS:
                return CommandError(number, _safe(line), f"at most {MAX_OPS} ops per command; send several"
                                                         " comments, or none to optimize every changed op")
        elif spec.takes_sha and command.sha is None:
            if not SHA_RE.match(word):
                return CommandError(number, _safe(line), f"`{_safe(word)}` is not a full commit SHA (40 lowercase"
                                                         " hex digits; a short one could be forged by a push)")
            command.sha = word
        else:
            return CommandError(number, _safe(line), f"`{name}` takes no arguments (got `{_safe(word)}`)")
        i += 1
    if spec.takes_sha and command.sha is None:
        return CommandError(number, _safe(line), f"`{name}` needs the commit you reviewed: `{PREFIX} {name} SHA`"
                                                 " (the PR's full head commit SHA, 40 hex digits)")
    return command


def _set_flag(command: Command, flag: str, value: str) -> str | None:
    if flag == "--backend":
        if value not in BACKENDS:
            return f"--backend must be one of {', '.join(BACKENDS)} (got `{_safe(value)}`)"
        command.backend = value
    elif flag == "--budget":
        digits = value.replace("_", "")
        if not re.fullmatch(r"[0-9]{1,12}", digits) or not 0 < int(digits) <= MAX_BUDGET:
            return f"--budget is a token count between 1 and {MAX_BUDGET:_} (got `{_safe(value)}`)"
        command.budget = int(digits)
    elif flag == "--model":
        if not MODEL_RE.match(value):
            return "--model takes a model name: letters, digits and . _ : / - (up to 100 characters)"
        command.model = value
    return None


def parse_comment(body: str | None) -> list[Command | CommandError]:
    """Every command in a comment body, in order (empty when the comment has none)."""
    return [parse_line(number, line) for number, line in _command_lines(body or "")]


def one_command(body: str | None) -> Command | CommandError | None:
    """The comment's one command (None: it has none). A second command line is an error: one comment
    causes at most one command's work."""
    lines = _command_lines(body or "")
    if not lines:
        return None
    if len(lines) > 1:
        number, line = lines[1]
        return CommandError(number, _safe(line), f"one command per comment (this one has {len(lines)});"
                                                 " nothing was run")
    return parse_line(*lines[0])


def resolve_ops(requested: list[str], known: list[str]) -> tuple[list[str], list[str]]:
    """Map requested names to known op ids: (resolved ids, requests that match nothing or many).

    A request matches an id exactly, or its ``Qualname`` part, or its file path (task files).
    """
    resolved, unknown = [], []
    for name in requested:
        matches = [op for op in known if op == name] or [
            op for op in known if op.partition("::")[2] == name or op.partition("::")[0] == name
        ]
        if len(matches) == 1:
            if matches[0] not in resolved:
                resolved.append(matches[0])
        else:
            unknown.append(name)
    return resolved, unknown


def unknown_ops_message(unknown: list[str], known: list[str]) -> str:
    """A reply for op names that match nothing: what was asked, and what exists."""
    from bot.report import code
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, known + [k.partition("::")[2] for k in known], n=1)
        parts.append(f"`{_safe(name)}`" + (f" (did you mean {code(close[0])}?)" if close else ""))
    listing = ", ".join(code(k) for k in known[:20]) or "none found in this PR"
    return f"unknown or ambiguous op {', '.join(parts)}; ops in this PR: {listing}"
