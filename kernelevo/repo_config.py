"""The repository's ``.github/kernelevo.yml``: schema, loading, and every problem reported at once.

The pydantic model below is the one place where defaults are written down: its field descriptions
generate the published JSON Schema (``kernelevo/schema/kernelevo.schema.json``, for editors) and the
table in ``docs/repo-config.md``. Regenerate both with ``python -m kernelevo.repo_config``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

CONFIG_PATH = ".github/kernelevo.yml"
SCHEMA_PATH = Path(__file__).parent / "schema" / "kernelevo.schema.json"
DOCS_PATH = Path(__file__).resolve().parents[1] / "docs" / "repo-config.md"
SCHEMA_ID = "urn:kernelevo:schema:repo-config:1"  # a name, not a location: no site is implied
MAX_CONFIG_BYTES = 64 * 1024  # a config is a few hundred bytes; anything this big is a mistake or an attack
MAX_DEPTH = 16  # nesting of mappings and lists (the schema needs 3)
MAX_GLOBS = 64  # per paths.include / paths.exclude
MAX_GLOB_CHARS = 256
MAX_GLOB_DOUBLE_STARS = 4  # `**` per glob (kernelevo/globs.py matches in linear time; this keeps configs sane)

Permission = Literal["read", "triage", "write", "maintain", "admin"]
Backend = Literal["triton", "cuda"]

# Values that look like credentials rather than names (OpenAI/Anthropic/GitHub/Slack/AWS/HF tokens,
# bearer headers, URLs with user:password, long random strings).
_SECRET_PATTERNS = [
    re.compile(r"^(sk|pk|rk)-[A-Za-z0-9_-]{8,}"),
    re.compile(r"^(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}"),
    re.compile(r"^github_pat_"),
    re.compile(r"^xox[abprs]-"),
    re.compile(r"^AKIA[0-9A-Z]{16}$"),
    re.compile(r"^hf_[A-Za-z0-9]{16,}"),
    re.compile(r"(?i)^bearer\s"),
    re.compile(r"://[^/@\s]+:[^/@\s]+@"),
    re.compile(r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9+/=_-]{32,}$"),
]


def looks_like_secret(value: str) -> bool:
    """Whether a config value looks like an API key or token (those belong in the worker's env)."""
    return any(p.search(value.strip()) for p in _SECRET_PATTERNS)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Paths(_Section):
    include: list[str] = Field(default=["**/*.py"], description=(
        f"globs of files scanned for ops (at most {MAX_GLOBS}, each at most {MAX_GLOB_CHARS} characters with at "
        f"most {MAX_GLOB_DOUBLE_STARS} `**`)"))
    exclude: list[str] = Field(
        default=[".venv/**", "venv/**", "build/**", "dist/**", "**/site-packages/**", "third_party/**"],
        description="globs never scanned (checked after include; .git and caches are always skipped; same limits)",
    )

    @field_validator("include", "exclude")
    @classmethod
    def _bounded_globs(cls, globs: list[str]) -> list[str]:
        if len(globs) > MAX_GLOBS:
            raise ValueError(f"has {len(globs)} globs; the limit is {MAX_GLOBS}")
        for glob in globs:
            if len(glob) > MAX_GLOB_CHARS:
                raise ValueError(f"glob {glob[:40]!r}... is {len(glob)} characters; the limit is {MAX_GLOB_CHARS}")
            if glob.count("**") > MAX_GLOB_DOUBLE_STARS:
                raise ValueError(f"glob {glob!r} has {glob.count('**')} `**`; the limit is {MAX_GLOB_DOUBLE_STARS}"
                                 " (one `**/` already spans any number of folders)")
        return globs


class Budgets(_Section):
    tokens: int | None = Field(
        default=2_000_000, ge=0, description="LLM tokens per search job (null: no limit)"
    )
    money_usd: float | None = Field(default=10.0, ge=0, description="LLM spend per search job in USD")
    minutes: float = Field(default=60.0, gt=0, description="wall-clock minutes per search job")
    candidates: int = Field(default=200, ge=1, description="candidate kernels evaluated per search job")


class Sweep(_Section):
    schedule: str | None = Field(
        default=None,
        description="cron expression (UTC) for repo-wide sweeps of missing/stale kernels; null: none",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not _valid_cron(value):
            raise ValueError(f"{value!r} is not a valid cron expression (e.g. '0 3 * * 1' = Mondays 03:00)")
        return value


def _valid_cron(value: str) -> bool:
    try:
        from croniter import croniter
    except ImportError:  # the bot extra brings croniter; without it, check the shape only
        fields = value.split()
        return len(fields) in (5, 6) and all(re.fullmatch(r"[0-9A-Za-z*/,?LW#-]+", f) for f in fields)
    return croniter.is_valid(value)


class Trigger(_Section):
    min_permission: Permission = Field(
        default="write", description="lowest repository permission allowed to run /kernelevo commands"
    )
    maintainer_permission: Permission = Field(
        default="maintain", description="lowest permission whose command options may raise this file's budgets or "
                                        "choose another model or backend (others can only lower them)"
    )


class AutoRun(_Section):
    trusted_authors: list[str] = Field(
        default=[], description="logins whose PRs are optimized when opened, without a command (empty: off)"
    )


def _no_secret(field: str, value: str | None) -> str | None:
    if value is not None and looks_like_secret(value):
        raise ValueError(
            f"looks like a key or token, not the {field}'s name; never commit keys: configure them on the "
            f"worker (KERNELEVO_LLM_API_KEY) and rotate this one"
        )
    return value


class RepoConfig(_Section):
    """``.github/kernelevo.yml``. Every key is optional; an empty file means all defaults."""

    model_config = ConfigDict(extra="forbid", title="KernelEvo repository configuration")

    paths: Paths = Field(default_factory=Paths, description="where to look for ops")
    backends: list[Backend] = Field(
        default=["triton", "cuda"], min_length=1, description="kernel languages searched"
    )
    budgets: Budgets = Field(default_factory=Budgets, description="limits per search job")
    model: str | None = Field(default=None, description="LLM model name; null: the offline proposer")
    endpoint: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="NAME of an LLM endpoint configured on the workers (never a URL with a key, never a key)",
    )
    sweep: Sweep = Field(default_factory=Sweep, description="scheduled repo-wide sweeps")
    max_open_prs: int = Field(default=3, ge=0, description="open kernel PRs at most (0: never open PRs)")
    trigger: Trigger = Field(default_factory=Trigger, description="who may trigger jobs")
    auto_run: AutoRun = Field(default_factory=AutoRun, description="jobs started without a command")

    @field_validator("model", "endpoint", mode="before")
    @classmethod
    def _not_secret(cls, value, info):
        return _no_secret(info.field_name, value) if isinstance(value, str) else value


class Problem(BaseModel):
    location: str  # dotted yaml path, "" for the whole file
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.location or '(file)'}: {self.message}"


class RepoConfigError(ValueError):
    """A bad ``.github/kernelevo.yml``; the message lists every problem with its location."""

    def __init__(self, source: str, problems: list[Problem]):
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"{source}: {count}:\n{lines}")


def _line_map(node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map each yaml path (keys and list indices) to its 1-based line, from the composed node tree."""
    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = path + (key.value,)
            out[sub] = key.start_mark.line + 1
            _line_map(value, sub, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[path + (i,)] = item.start_mark.line + 1
            _line_map(item, path + (i,), out)
    return out


def _plain_message(message: str) -> str:
    """pydantic's ``Input should be ...`` as the rest of the CLI says it: ``must be ...``."""
    return "must be" + message[len("Input should be"):] if message.startswith("Input should be") else message


def _problems(exc: ValidationError, lines: dict[tuple, int]) -> list[Problem]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        line = next((lines[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in lines), None)
        message = _plain_message(err["msg"].removeprefix("Value error, "))
        if err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            # pydantic names the model class here ("instance of Budgets"): say what the file must hold instead
            message = "must be a mapping of keys, one per line under it (see docs/repo-config.md for the keys)"
        elif err["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; see docs/repo-config.md for the keys)"
        elif err["type"] == "string_pattern_mismatch" and loc and loc[-1] == "endpoint":
            message = "must be an endpoint NAME (letters, digits, '_', '.', '-'), not a URL or key"
        elif "input" in err and "key or token" not in message:  # never echo a secret
            message += f" (got {err['input']!r})" if not isinstance(err["input"], dict) else ""
        problems.append(Problem(location=".".join(str(p) for p in loc), line=line, message=message))
    return sorted(problems, key=lambda p: (p.line or 0, p.location))


def _bounded(source: str, text: str) -> None:
    """Refuse what would make parsing expensive before PyYAML builds anything: an oversized file, anchors
    and aliases (a few hundred bytes of nested aliases expand to gigabytes) and deep nesting. The events are
    scanned lazily, so the cost is linear in the (capped) file size."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONFIG_BYTES:
        raise RepoConfigError(source, [Problem(location="", line=None, message=(
            f"is {size} bytes; the limit is {MAX_CONFIG_BYTES} (a config needs a few hundred)"))])
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = event.start_mark.line + 1 if event.start_mark else None
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise RepoConfigError(source, [Problem(location="", line=line, message=(
                    "YAML anchors and aliases (&name, *name) are not allowed; write the values out"))])
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise RepoConfigError(source, [Problem(location="", line=line, message=(
                        f"nested more than {MAX_DEPTH} levels deep"))])
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return  # reported with its line by the full parse below


def load_repo_config(text_or_path: str | Path) -> RepoConfig:
    """Parse and validate a config given as YAML text or a path; raises :class:`RepoConfigError`."""
    if isinstance(text_or_path, Path):
        source = str(text_or_path)
        with text_or_path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        text = raw.decode("utf-8", errors="replace")
    else:
        source, text = CONFIG_PATH, text_or_path
    _bounded(source, text)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise RepoConfigError(source, [Problem(location="", line=mark.line + 1 if mark else None,
                                               message=f"not valid YAML: {problem}")]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RepoConfigError(source, [Problem(location="", line=1, message=(
            f"must be a mapping of keys (paths:, budgets:, ...), got a {type(data).__name__}"))])
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as exc:
        raise RepoConfigError(source, _problems(exc, _line_map(node))) from None


def load_repo_config_for(root: Path | str) -> RepoConfig:
    """The config of the repository at ``root`` (defaults when it has no ``.github/kernelevo.yml``)."""
    path = Path(root) / CONFIG_PATH
    return load_repo_config(path) if path.is_file() else RepoConfig()


# ------------------------------------------------------------------------ published schema and docs


def json_schema() -> dict:
    """The JSON Schema of ``.github/kernelevo.yml``, generated from :class:`RepoConfig`."""
    schema = RepoConfig.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def docs_markdown() -> str:
    """The key/default/description table of ``docs/repo-config.md``, generated from the model."""
    rows = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            annotation = info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                walk(annotation, f"{prefix}{name}.")
                continue
            default = info.get_default(call_default_factory=True)
            rows.append(f"| `{prefix}{name}` | `{json.dumps(default)}` | {info.description or ''} |")

    walk(RepoConfig, "")
    return (
        "# `.github/kernelevo.yml`\n\n"
        "<!-- generated by `python -m kernelevo.repo_config`; edit the field descriptions in "
        "kernelevo/repo_config.py, not this file -->\n\n"
        "Every key is optional; a missing file means every default below. Unknown keys, wrong types and "
        "invalid cron expressions are errors (each listed with its line). Editors can validate the file "
        "with the JSON Schema shipped in the package, `kernelevo/schema/kernelevo.schema.json` (for the YAML "
        "language server: a first line `# yaml-language-server: $schema=<path or URL of that file>`). "
        "Never put API keys here: `endpoint` is the name of an endpoint configured on the workers.\n\n"
        "| key | default | meaning |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "## How the bot reads this file and uses the keys\n\n"
        "- The bot reads the file from the repository's default branch, never from a PR's head, so a PR cannot "
        "change the rules it is judged by.\n"
        f"- The file is at most {MAX_CONFIG_BYTES // 1024} KiB, nested at most {MAX_DEPTH} levels, and may not use "
        "YAML anchors or aliases (`&name`, `*name`); a file that breaks one of these rules is invalid. An invalid "
        "file stops every job of the repository until it is fixed; the bot says so on the PR.\n"
        "- `trigger.min_permission`: commenters with this permission may run every command. A PR's author below "
        "it may still ask `optimize` on their own PR, but the jobs wait for an approval. Any other commenter below "
        "it gets one reaction on their comment and nothing else.\n"
        "- Approvals: PRs from forks and PRs whose author is below `trigger.min_permission` run only on a head "
        "commit that was approved with `/kernelevo approve SHA`, SHA being the full 40-digit id of the head commit. "
        "The approver needs "
        "`trigger.min_permission` and at least `write`, and must not be the PR's author. The approval holds only "
        "while SHA is the PR's head: a push voids it, and an approval that names an older commit is refused.\n"
        "- `trigger.maintainer_permission`: only commenters with it may raise `budgets.tokens` with `--budget`, "
        "or choose another `--model` or a `--backend` outside `backends`. Other commenters' options can only "
        "lower or narrow this file's values; the bot notes what it did not apply.\n"
        "- `auto_run.trusted_authors`: PRs that these logins open from a branch of this repository are optimized "
        "without a command. Their PRs from forks are not.\n\n"
        "Example:\n\n```yaml\npaths:\n  include: [\"src/**\"]\n  exclude: [\"src/legacy/**\"]\n"
        "backends: [triton]\nbudgets:\n  minutes: 30\n  candidates: 100\n"
        "model: gpt-4.1\nendpoint: team-vllm\n"
        "sweep:\n  schedule: \"0 3 * * 1\"\nmax_open_prs: 2\ntrigger:\n  min_permission: maintain\n```\n"
    )


def write_generated_files() -> None:
    """Rewrite the JSON Schema and the docs table from the model."""
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(json_schema_text(), encoding="utf-8")
    DOCS_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOCS_PATH.write_text(docs_markdown(), encoding="utf-8")


if __name__ == "__main__":
    write_generated_files()
