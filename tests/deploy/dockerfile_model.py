"""The Dockerfile as data, for the deployment tests: its stages, their instructions and the build arguments.

A small reader for the subset of the Dockerfile syntax the project's Dockerfile uses (line continuations,
comments, ``<<'EOF'`` here-documents, global ``ARG`` defaults, ``FROM ... AS name``); hadolint, run by the
tests too, is what checks the file against the full grammar and the best practices.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_HEREDOC = re.compile(r"<<-?(['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)\1")
_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Instruction:
    """One instruction: its keyword (upper case), its arguments as written, its here-documents, its line."""

    keyword: str
    arguments: str
    line: int
    heredocs: tuple[str, ...] = ()

    def flags(self) -> dict[str, str]:
        """The leading ``--name=value`` flags (``COPY --from=x``, ``COPY --chmod=0755``)."""
        found = {}
        for word in self.arguments.split():
            if not word.startswith("--"):
                break
            name, _, value = word[2:].partition("=")
            found[name] = value
        return found

    def words(self) -> list[str]:
        """The arguments without leading flags: the exec form's JSON array, or the shell words."""
        rest = self.arguments
        while rest.startswith("--"):
            rest = rest.split(None, 1)[1] if " " in rest else ""
        if rest.startswith("["):
            return list(json.loads(rest))
        return shlex.split(rest, comments=False, posix=True) if "<<" not in rest else rest.split()


@dataclass
class Stage:
    """A ``FROM`` and the instructions up to the next one."""

    name: str
    base: str  # the image or stage it starts from, with global ARG defaults substituted
    line: int
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def copied_sources(self) -> list[str]:
        """Sources of the ``COPY``/``ADD`` instructions that read the build context (not another stage)."""
        sources = []
        for instruction in self.all("COPY") + self.all("ADD"):
            if "from" in instruction.flags() or instruction.heredocs:
                continue
            sources += instruction.words()[:-1]
        return sources


@dataclass
class Dockerfile:
    global_args: dict[str, str]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        matches = [s for s in self.stages if s.name == name]
        if not matches:
            raise KeyError(f"no stage {name!r} in the Dockerfile (stages: {', '.join(s.name for s in self.stages)})")
        return matches[0]

    def parents(self, stage: Stage) -> list[Stage]:
        """The stage and the stages it is built ``FROM``, nearest first."""
        chain, names = [stage], {s.name for s in self.stages}
        while chain[-1].base in names:
            chain.append(self.stage(chain[-1].base))
        return chain

    def final_stages(self) -> list[Stage]:
        """Stages no other stage builds on or copies from: the images the file is for."""
        used = {s.base for s in self.stages}
        for stage in self.stages:
            used |= {i.flags()["from"] for i in stage.all("COPY") if "from" in i.flags()}
        return [s for s in self.stages if s.name not in used]

    def inherited(self, stage: Stage, keyword: str) -> Instruction | None:
        """The instruction in force for ``stage`` (its own last one, else its parents')."""
        for link in self.parents(stage):
            found = link.last(keyword)
            if found is not None:
                return found
        return None


def substitute(text: str, values: dict[str, str]) -> str:
    """``${NAME}`` and ``$NAME`` replaced by ``values`` (unknown names are kept as written)."""
    def one(match: re.Match[str]) -> str:
        name = match["name"] or match["bare"]
        return values.get(name, match[0])

    return _VARIABLE.sub(one, text)


def _logical_lines(text: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(first line, instruction text, here-documents) for each instruction: comments and blank lines dropped,
    continuation lines joined, here-document bodies taken whole."""
    lines = text.splitlines()
    result: list[tuple[int, str, tuple[str, ...]]] = []
    index = 0
    while index < len(lines):
        start, raw = index + 1, lines[index]
        index += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = [raw]
        while parts[-1].rstrip().endswith("\\") and index < len(lines):
            nxt = lines[index]
            index += 1
            if nxt.lstrip().startswith("#"):
                continue
            parts.append(nxt)
        joined = " ".join(p.rstrip().removesuffix("\\").strip() for p in parts)
        heredocs = []
        for match in _HEREDOC.finditer(joined):
            body = []
            while index < len(lines) and lines[index].strip() != match["word"]:
                body.append(lines[index])
                index += 1
            index += 1  # the terminator
            heredocs.append("\n".join(body) + "\n")
        result.append((start, joined, tuple(heredocs)))
    return result


def parse(path: Path) -> Dockerfile:
    """Read ``path`` into stages; global ``ARG`` defaults (before the first ``FROM``) are substituted in bases."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line, text, heredocs in _logical_lines(path.read_text(encoding="utf-8")):
        keyword, _, arguments = text.partition(" ")
        keyword, arguments = keyword.upper(), arguments.strip()
        if keyword == "ARG" and not stages:
            name, _, default = arguments.partition("=")
            global_args[name] = default
            continue
        if keyword == "FROM":
            words = [w for w in arguments.split() if not w.startswith("--")]
            base = substitute(words[0], global_args)
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(name=name, base=base, line=line))
            continue
        if not stages:
            raise ValueError(f"{path}:{line}: {keyword} before the first FROM")
        stages[-1].instructions.append(Instruction(keyword, arguments, line, heredocs))
    return Dockerfile(global_args, stages)
