"""Every shell command in the docs runs, or the test says why it does not.

The commands are read from the Markdown at test time (README.md, CONTRIBUTING.md, docs/*.md), so a doc that
drifts from the CLI fails here instead of failing a reader. A command that cannot run in a test (it needs a GPU,
GitHub, a Redis and workers the test does not start, installs system packages, or searches for minutes) is
skipped with its reason, by one of two reviewed rules, never silently:

* a pattern in ``SKIP_RULES`` below (the reason is shown in pytest's summary of skips), or
* a marker in the Markdown just before the code block: ``<!-- doc-test: skip REASON -->``.

Other markers (an HTML comment, invisible on GitHub):

* ``<!-- doc-test: file PATH -->`` before a code block: the block is the file PATH of the reader's project; the
  test writes it there when the reader reaches it (e.g. the op module that the next commands optimize).
* ``<!-- doc-test: workspace project -->`` anywhere in a file: its commands run in an empty git repository (the
  reader's own project) instead of a copy of this repository.

The commands of one Markdown file run in document order, in one workspace, as a reader types them into one
terminal: ``export`` and ``cd`` carry over to the next command. A test selected alone first runs the runnable
commands before it. Commands that start the verifier are marked ``slow`` (CI's fast job leaves them out).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePosixPath

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT_S = 600
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})


def doc_files() -> list[Path]:
    """The Markdown files whose commands are tested."""
    return [p for p in (ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")))
            if p.is_file()]


@dataclass(frozen=True)
class SkipRule:
    """Commands matching ``pattern`` (searched in the command without its comments) are not run: ``reason``."""

    pattern: str
    reason: str

    def matches(self, command: str) -> bool:
        return re.search(self.pattern, command) is not None


# Reviewed: each rule must match at least one command of the docs (test_every_rule_is_still_used).
SKIP_RULES: tuple[SkipRule, ...] = (
    SkipRule(r"deploy/system-packages\.sh|\bapt-get\b|\bdnf\b",
             "installs system packages (CI's setup step and .ci/run do this)"),
    SkipRule(r"\bpip3? install\b|-m pip install\b",
             "installs Python packages from an index (CI's setup step installs them; tests use no network)"),
    SkipRule(r"\bpytest\b", "runs tests (CI's test jobs run them; a doc-test running them would run itself)"),
    SkipRule(r"\bmypy\b|\blint-imports\b", "already run by tests/test_architecture.py and CI's type-check job"),
    SkipRule(r"\bruff check\b", "CI's lint job runs it (the test suite does not gate on lint)"),
    SkipRule(r"\bpre-commit\b", "fetches the hook repositories from GitHub (no network in tests)"),
    SkipRule(r"\bkernelevo (serve|bot-worker)\b",
             "the GitHub App: needs a registered App (key, webhook secret) and Redis, and serves until stopped"),
    SkipRule(r"\bkernelevo worker\b", "a worker serves until stopped and needs Redis (the test starts none)"),
    SkipRule(r"\bkernelevo jobs\b", "needs Redis and running workers (the test starts none)"),
    SkipRule(r"\bredis-server\b", "starts a Redis that runs until stopped, on the default port"),
    SkipRule(r"--gpu\b|--device cuda\b|\bnvidia-smi\b|\bcompute-sanitizer\b|-m gpu\b", "needs a CUDA GPU"),
    SkipRule(r"--proposer llm\b", "needs an LLM endpoint and its key (network)"),
    SkipRule(r"\bcurl\b.*\bgithub\.com\b", "talks to GitHub (network, and a one-time code or a credential)"),
    SkipRule(r"\bkernelevo optimize\b(?!.*--budget-)",
             "a search with the default budget takes minutes on CPU (documented forms with --budget-* run)"),
)

# Commands that start the verifier's sandboxes (seconds to tens of seconds each): CI's fast job skips them.
SLOW_COMMAND = re.compile(r"\bkernelevo (eval|optimize|verify)\b")


class FenceKind(Enum):
    SHELL = "shell"
    OTHER = "other"


@dataclass(frozen=True)
class UnlabelledFence:
    """A code block without a language in a file this test does not own: what it is, reviewed by hand."""

    path: str
    first_line: str
    kind: FenceKind
    why: str


# Reviewed: a fence without a language is an error unless it is listed here (label new ones: ```bash, ```text).
UNLABELLED_FENCES: tuple[UnlabelledFence, ...] = (
    UnlabelledFence("docs/github-app.md", "curl -sS -X POST", FenceKind.SHELL,
                    "exchanging the App manifest's code for its credentials"),
    UnlabelledFence("docs/github-app.md", "pip install 'kernelevo[bot,worker,triton]'", FenceKind.SHELL,
                    "the deployment commands"),
    UnlabelledFence("docs/github-app.md", "histogram_quantile(", FenceKind.OTHER,
                    "Prometheus queries, not shell"),
    UnlabelledFence("docs/github-app.md", "/kernelevo optimize [OP ...]", FenceKind.OTHER,
                    "PR-comment commands, not shell"),
)

MARKER = re.compile(r"<!--\s*doc-test:\s*(?P<directive>[\w-]+)\s*(?P<argument>.*?)\s*-->", re.DOTALL)


@dataclass(frozen=True)
class Command:
    """One logical command line of a shell block (continuation lines joined)."""

    doc: str  # path relative to the repository
    line: int  # 1-based line of its first physical line
    text: str
    skip_reasons: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def slow(self) -> bool:
        return SLOW_COMMAND.search(words(self.text)) is not None


@dataclass(frozen=True)
class WriteFile:
    """A code block that is a file of the reader's project (``<!-- doc-test: file PATH -->``)."""

    doc: str
    line: int
    path: str
    content: str


@dataclass
class Doc:
    """What one Markdown file asks of the test: its steps in document order, its workspace, its problems."""

    path: str
    workspace: str = "repo"
    steps: list[Command | WriteFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    used_fences: set[UnlabelledFence] = field(default_factory=set)

    @property
    def commands(self) -> list[Command]:
        return [s for s in self.steps if isinstance(s, Command)]


def words(command: str) -> str:
    """The command without its comments (``# ...``), for matching rules; the raw text if it does not tokenise."""
    joined = command.replace("\\\n", " ")
    try:
        return " ".join(shlex.split(joined, comments=True))
    except ValueError:
        return joined


def skip_reasons(command: str) -> tuple[str, ...]:
    plain = words(command)
    return tuple(rule.reason for rule in SKIP_RULES if rule.matches(plain))


def split_commands(body: str, first_line: int, console: bool) -> list[tuple[int, str]]:
    """(line, command) for each logical line of a shell block: blank and comment lines dropped, lines ending
    in a backslash joined to the next; in a ``console`` block only the lines after a ``$`` prompt."""
    found: list[tuple[int, str]] = []
    pending: list[str] = []
    start = first_line
    for offset, raw in enumerate(body.splitlines()):
        line = raw.rstrip()
        if not pending:
            if console:
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = first_line + offset
        pending.append(line)
        if not line.endswith("\\"):
            found.append((start, "\n".join(pending)))
            pending = []
    if pending:
        found.append((start, "\n".join(pending)))
    return found


def _unlabelled_fence(doc: str, body: str) -> UnlabelledFence | None:
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return next((f for f in UNLABELLED_FENCES if f.path == doc and first.startswith(f.first_line)), None)


def _safe_relative(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not PurePosixPath(path).is_absolute() and ".." not in parts


def parse_doc(file: Path) -> Doc:
    """Read one Markdown file into its steps (markers applied), collecting what it does wrong as problems."""
    rel = file.relative_to(ROOT).as_posix()
    doc = Doc(rel)
    pending: tuple[int, str, str] | None = None  # (line, directive, argument) waiting for the next code block
    for token in MarkdownIt("commonmark").parse(file.read_text(encoding="utf-8")):
        if token.map is None or token.nesting == -1:
            continue
        line = token.map[0] + 1
        if token.type == "html_block" and "doc-test" in token.content:
            for match in MARKER.finditer(token.content):
                directive, argument = match["directive"], match["argument"]
                if directive == "workspace":
                    if argument not in ("repo", "project"):
                        doc.problems.append(f"{rel}:{line}: workspace must be 'repo' or 'project', not {argument!r}")
                    doc.workspace = argument
                elif directive in ("skip", "file"):
                    if not argument:
                        doc.problems.append(f"{rel}:{line}: doc-test: {directive} needs "
                                            f"{'a reason' if directive == 'skip' else 'a path'}")
                    if pending is not None:
                        doc.problems.append(f"{rel}:{pending[0]}: a doc-test marker with no code block after it")
                    pending = (line, directive, argument)
                else:
                    doc.problems.append(f"{rel}:{line}: unknown doc-test directive {directive!r} "
                                        "(skip, file or workspace)")
            continue
        if token.type != "fence":
            if pending is not None:
                doc.problems.append(f"{rel}:{pending[0]}: a doc-test marker must come right before a code block")
                pending = None
            continue
        marker, pending = pending, None
        language = token.info.strip().split(" ")[0].lower()
        body_line = line + 1
        if marker is not None and marker[1] == "file":
            if not _safe_relative(marker[2]):
                doc.problems.append(f"{rel}:{marker[0]}: doc-test: file needs a relative path inside the project")
            else:
                doc.steps.append(WriteFile(rel, line, marker[2], token.content))
            continue
        if language:
            shell = language in SHELL_LANGUAGES
        else:
            entry = _unlabelled_fence(rel, token.content)
            if entry is None:
                doc.problems.append(f"{rel}:{line}: a code block without a language: label it (```bash for "
                                    "commands, ```text otherwise) or list it in UNLABELLED_FENCES")
                continue
            doc.used_fences.add(entry)
            shell = entry.kind is FenceKind.SHELL
        if not shell:
            continue
        for cmd_line, text in split_commands(token.content, body_line, console=language == "console"):
            reasons = (f"marked in the doc: {marker[2]}",) if marker is not None else skip_reasons(text)
            doc.steps.append(Command(rel, cmd_line, text, reasons))
    if pending is not None:
        doc.problems.append(f"{rel}:{pending[0]}: a doc-test marker with no code block after it")
    return doc


DOCS: dict[str, Doc] = {d.path: d for d in map(parse_doc, doc_files())}


def _params() -> list:
    """One test per command. A command after a slow one in the same file is slow too: it runs that one first."""
    params = []
    for doc in DOCS.values():
        after_slow = False
        for command in doc.commands:
            marks = []
            if command.skip_reasons:
                marks.append(pytest.mark.skip(reason=f"{command.id}: {'; '.join(command.skip_reasons)}"))
            else:
                after_slow |= command.slow
            if after_slow:
                marks.append(pytest.mark.slow)
            params.append(pytest.param(command, id=command.id, marks=marks))
    return params


# ---------------------------------------------------------------------------------------------- workspaces

_NEVER_COPIED = shutil.ignore_patterns(".git", ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__",
                                       "*.egg-info", ".venv", "venv", "runs", "kernels", ".whl", ".sysdeb")


def copy_repository(target: Path) -> None:
    """The repository as a fresh clone has it (the files git tracks or would track: no caches, run directories
    or local downloads), or, outside a git checkout, the tree without caches and outputs."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode != 0:
        shutil.copytree(ROOT, target, ignore=_NEVER_COPIED, symlinks=True)
        return
    target.mkdir(parents=True, exist_ok=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_dir() and not (ROOT / name).is_symlink():
            continue  # a submodule: not part of this repository's files
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):  # listed, but deleted in the work tree since
            shutil.copy2(ROOT / name, target / name, follow_symlinks=False)


def command_env() -> dict[str, str]:
    """The environment a reader's terminal would have here: this interpreter's scripts first on PATH, plain
    output, and none of this machine's endpoints (an LLM key, a Redis URL, a runs folder) leaking in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KERNELEVO_LLM_", "KERNELEVO_REDIS", "KERNELEVO_RUNS_DIR", "PYTEST_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(TERM="dumb", NO_COLOR="1", COLUMNS="160", PYTHONDONTWRITEBYTECODE="1")
    return env


@dataclass
class Run:
    """How one command ended."""

    returncode: int | None  # None: killed at the time limit
    output: str


class Terminal:
    """One reader's terminal for one Markdown file: a workspace, and the environment and folder that each
    command leaves to the next (saved after every command, restored before the next)."""

    def __init__(self, doc: Doc, base: Path):
        self.doc = doc
        self.base = base
        self.workspace = base / "work"
        self.state = base / "state"
        self.state.mkdir(parents=True)
        if doc.workspace == "project":
            self.workspace.mkdir()
            subprocess.run(["git", "init", "-q", str(self.workspace)], check=True)
        else:
            copy_repository(self.workspace)
        (self.state / "env").write_text("", encoding="utf-8")
        (self.state / "cwd").write_text(str(self.workspace), encoding="utf-8")
        self.done = 0  # steps already taken
        self.failed: str | None = None  # the first command that failed: later ones cannot be trusted

    def upto(self, command: Command) -> Run:
        """Take every step before ``command`` that has not been taken (skipped commands are not run), then run
        it."""
        index = self.doc.steps.index(command)
        while self.done < index:
            step = self.doc.steps[self.done]
            self.done += 1
            if self.failed is not None:
                break
            if isinstance(step, WriteFile):
                target = self.workspace / step.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(step.content, encoding="utf-8")
            elif not step.skip_reasons:
                run = self.run(step.text)
                if run.returncode != 0:
                    self.failed = step.id
        if self.failed is not None:
            pytest.fail(f"{self.failed} failed earlier, and {command.id} depends on what it does")
        self.done = max(self.done, index + 1)
        run = self.run(command.text)
        if run.returncode != 0:
            self.failed = command.id
        return run

    def run(self, text: str) -> Run:
        env_file, cwd_file = self.state / "env", self.state / "cwd"
        script = (f"cd \"$(cat {shlex.quote(str(cwd_file))})\" || exit 97\n"
                  f". {shlex.quote(str(env_file))}\n"
                  f"{text}\n"
                  f"status=$?\n"
                  f"export -p > {shlex.quote(str(env_file))}\n"
                  f"pwd > {shlex.quote(str(cwd_file))}\n"
                  f"exit $status\n")
        process = subprocess.Popen(["bash", "-c", script], env=command_env(), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        try:
            output, _ = process.communicate(timeout=COMMAND_TIMEOUT_S)
            return Run(process.returncode, output)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            output, _ = process.communicate()
            return Run(None, output)
        finally:
            if process.poll() is None:  # interrupted: leave nothing running
                _kill_group(process)
                process.wait()


def _kill_group(process: subprocess.Popen) -> None:
    """End the command and everything it started (it leads its own session, so its group is its pid)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def terminals(tmp_path_factory):
    opened: dict[str, Terminal] = {}

    def terminal_for(doc: Doc) -> Terminal:
        if doc.path not in opened:
            opened[doc.path] = Terminal(doc, tmp_path_factory.mktemp(re.sub(r"\W+", "-", doc.path)))
        return opened[doc.path]

    return terminal_for


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("command", _params())
def test_doc_command_runs(command: Command, terminals):
    run = terminals(DOCS[command.doc]).upto(command)
    how = f"was killed after {COMMAND_TIMEOUT_S} s" if run.returncode is None else f"exited {run.returncode}"
    assert run.returncode == 0, (f"{command.id}: `{command.text}` {how}. Fix the doc or the command (or, if it "
                                 f"cannot run in a test, add a skip rule or marker with the reason).\n"
                                 f"{run.output[-6000:]}")


def test_the_docs_markers_and_code_blocks_are_understood():
    problems = [p for doc in DOCS.values() for p in doc.problems]
    assert not problems, "\n".join(problems)


def test_every_rule_is_still_used():
    """A rule that no longer matches anything is dead weight that hides nothing: delete it."""
    commands = [c for doc in DOCS.values() for c in doc.commands]
    unused = [rule.pattern for rule in SKIP_RULES if not any(rule.matches(words(c.text)) for c in commands)]
    used_fences = set().union(*(doc.used_fences for doc in DOCS.values()))
    unused += [f"{f.path}: {f.first_line}" for f in UNLABELLED_FENCES if f not in used_fences]
    assert not unused, f"no longer used (delete them): {unused}"


def test_the_docs_commands_are_found():
    """The extraction works: the README's commands are seen, and cheap commands do run."""
    readme = [c.text for c in DOCS["README.md"].commands]
    assert any("kernelevo optimize --device cpu" in c for c in readme), readme
    assert any("pytest" in c for c in readme), readme
    runnable = [c for doc in DOCS.values() for c in doc.commands if not c.skip_reasons]
    assert any(words(c.text).startswith("kernelevo --help") for c in runnable), [c.id for c in runnable]
    assert any(c.slow for c in runnable), "no documented search or verification runs for real"


def test_the_parser_follows_markers_continuations_and_prompts(tmp_path, monkeypatch):
    """The rules above, on a small Markdown file: a reviewed skip, a file step, a continued line, a prompt."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "guide.md").write_text(
        "<!-- doc-test: workspace project -->\n\n"
        "<!-- doc-test: file ops/x.py -->\n```python\nX = 1\n```\n\n"
        "```bash\n# a comment\nkernelevo discover . \\\n  --json   # all ops\n\nkernelevo jobs list\n```\n\n"
        "<!-- doc-test: skip needs the moon -->\n```sh\necho moon\n```\n\n"
        "```console\n$ kernelevo --help\nUsage: ...\n```\n\n"
        "```\nunlabelled\n```\n\n<!-- doc-test: skip dangling -->\n\ntext\n", encoding="utf-8")
    doc = parse_doc(tmp_path / "guide.md")
    assert doc.workspace == "project"
    assert doc.steps[0] == WriteFile("guide.md", 4, "ops/x.py", "X = 1\n")
    assert [(c.line, c.text) for c in doc.commands] == [
        (10, "kernelevo discover . \\\n  --json   # all ops"), (13, "kernelevo jobs list"), (18, "echo moon"),
        (22, "kernelevo --help")]
    assert [bool(c.skip_reasons) for c in doc.commands] == [False, True, True, False]
    assert doc.commands[2].skip_reasons == ("marked in the doc: needs the moon",)
    assert len(doc.problems) == 2, doc.problems
    assert "without a language" in doc.problems[0] and "right before a code block" in doc.problems[1]


def test_a_terminal_carries_exports_and_folders_and_stops_after_a_failure(tmp_path):
    """Commands run in document order as in one terminal; after a failure, later commands are not trusted."""
    steps: list[Command | WriteFile] = [
        WriteFile("x.md", 1, "sub/f.txt", "hi\n"),
        Command("x.md", 2, "export GREETING=hello && cd sub", ()),
        Command("x.md", 3, 'test "$GREETING" = hello && cat f.txt', ()),
        Command("x.md", 4, "false", ()),
        Command("x.md", 5, "true", ()),
    ]
    terminal = Terminal(Doc("x.md", workspace="project", steps=steps), tmp_path)
    run = terminal.upto(steps[2])  # runs steps 0 and 1 first
    assert (run.returncode, run.output) == (0, "hi\n")
    assert terminal.upto(steps[3]).returncode == 1
    with pytest.raises(pytest.fail.Exception, match="x.md:4 failed earlier"):
        terminal.upto(steps[4])
