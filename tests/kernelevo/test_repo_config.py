"""`.github/kernelevo.yml`: good files, bad files (every problem with its line), secrets refused, and
the published JSON Schema and docs table kept in step with the model."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from kernelevo.repo_config import (
    DOCS_PATH,
    SCHEMA_PATH,
    RepoConfig,
    RepoConfigError,
    docs_markdown,
    json_schema,
    json_schema_text,
    load_repo_config,
    load_repo_config_for,
    looks_like_secret,
)

GOOD = """\
paths:
  include: ["src/**"]
  exclude: ["src/legacy/**"]
backends: [triton]
budgets:
  tokens: 500000
  money_usd: 2.5
  minutes: 30
  candidates: 100
model: gpt-4.1
endpoint: team-vllm
sweep:
  schedule: "0 3 * * 1"
max_open_prs: 2
trigger:
  min_permission: maintain
auto_run:
  trusted_authors: [alice, bob]
"""


def test_good_file_loads_every_field():
    config = load_repo_config(GOOD)
    assert config.paths.include == ["src/**"] and config.paths.exclude == ["src/legacy/**"]
    assert config.backends == ["triton"]
    assert (config.budgets.tokens, config.budgets.money_usd, config.budgets.minutes, config.budgets.candidates) == (
        500000, 2.5, 30, 100)
    assert (config.model, config.endpoint, config.sweep.schedule) == ("gpt-4.1", "team-vllm", "0 3 * * 1")
    assert config.max_open_prs == 2 and config.trigger.min_permission == "maintain"
    assert config.auto_run.trusted_authors == ["alice", "bob"]


@pytest.mark.parametrize("text", ["", "# only a comment\n", "{}\n"])
def test_empty_file_means_defaults(text):
    config = load_repo_config(text)
    assert config == RepoConfig()
    assert config.trigger.min_permission == "write"
    assert config.auto_run.trusted_authors == []  # auto-run is off by default
    assert config.sweep.schedule is None and config.backends == ["triton", "cuda"]


def test_every_problem_is_listed_with_its_line():
    text = (
        "paths:\n"
        "  include: [src]\n"
        "  exlude: [x]\n"  # 3: unknown key
        "budgets:\n"
        "  tokens: lots\n"  # 5: wrong type
        "  minutes: -1\n"  # 6: out of range
        "sweep:\n"
        "  schedule: 'every day'\n"  # 8: bad cron
        "trigger:\n"
        "  min_permission: god\n"  # 10: not a permission
        "backends: [triton, rocm]\n"  # 11: unknown backend
        "colour: blue\n"  # 12: unknown key
    )
    with pytest.raises(RepoConfigError) as info:
        load_repo_config(text)
    problems = [(p.line, p.location) for p in info.value.problems]
    assert problems == [(3, "paths.exlude"), (5, "budgets.tokens"), (6, "budgets.minutes"),
                        (8, "sweep.schedule"), (10, "trigger.min_permission"), (11, "backends.1"),
                        (12, "colour")]
    message = str(info.value)
    assert message.startswith(".github/kernelevo.yml: 7 problems:")
    assert "line 8: sweep.schedule: 'every day' is not a valid cron expression" in message
    assert "line 3: paths.exlude: unknown key" in message


@pytest.mark.parametrize(
    "text, words",
    [
        ("paths: [\n", "not valid YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("max_open_prs: -1\n", "max_open_prs"),
        ("backends: []\n", "backends"),
        ("endpoint: https://api.example.com/v1\n", "endpoint NAME"),
    ],
)
def test_other_bad_files(text, words):
    with pytest.raises(RepoConfigError, match=words):
        load_repo_config(text)


@pytest.mark.parametrize(
    "key, value",
    [
        ("endpoint", "sk-proj-abcdefghijklmnopqrstuvwx"),
        ("model", "sk-abcdefghijklmnopqrstuvwx"),
        ("model", "ghp_abcdefghijklmnopqrstuvwxyz0123"),
        ("model", "Bearer abc"),
        ("model", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"),
    ],
)
def test_secrets_are_refused_and_never_echoed(key, value):
    with pytest.raises(RepoConfigError) as info:
        load_repo_config(f"{key}: {value!r}\n")
    assert "looks like a key or token" in str(info.value) or "endpoint NAME" in str(info.value)
    assert value not in str(info.value)


def test_names_are_not_mistaken_for_secrets():
    for name in ("gpt-4.1", "llama-3.1-70b-instruct", "team-vllm", "Qwen/Qwen2.5-Coder-32B-Instruct"):
        assert not looks_like_secret(name)


def test_load_from_path_and_repo(tmp_path):
    assert load_repo_config_for(tmp_path) == RepoConfig()
    (tmp_path / ".github").mkdir()
    path = tmp_path / ".github" / "kernelevo.yml"
    path.write_text("max_open_prs: x\n")
    with pytest.raises(RepoConfigError, match=str(path)):
        load_repo_config_for(tmp_path)
    path.write_text(GOOD)
    assert load_repo_config(path).max_open_prs == 2


def test_published_schema_and_docs_are_up_to_date():
    assert SCHEMA_PATH.read_text() == json_schema_text(), "run: python -m kernelevo.repo_config"
    assert DOCS_PATH.read_text() == docs_markdown(), "run: python -m kernelevo.repo_config"


def test_schema_agrees_with_the_model():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(yaml.safe_load(GOOD), schema)
    jsonschema.validate({}, schema)
    for bad in ({"colour": 1}, {"paths": {"exlude": []}}, {"trigger": {"min_permission": "god"}},
                {"endpoint": "https://x"}, {"budgets": {"candidates": 0}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises(RepoConfigError):
            load_repo_config(yaml.safe_dump(bad))
    assert json_schema()["$id"] == schema["$id"]
    assert "| `trigger.min_permission` | `\"write\"` |" in DOCS_PATH.read_text()


@pytest.mark.parametrize(("globs", "message"), [
    (["**/" * 5 + "x.py"], "has 5 `**`; the limit is 4"),
    ([f"d{i}/**" for i in range(65)], "has 65 globs; the limit is 64"),
    (["a" * 257], "is 257 characters; the limit is 256"),
])
def test_path_globs_are_bounded(globs, message):
    with pytest.raises(RepoConfigError) as refused:
        load_repo_config(json.dumps({"paths": {"exclude": globs}}))
    assert "paths.exclude" in str(refused.value) and message in str(refused.value)
