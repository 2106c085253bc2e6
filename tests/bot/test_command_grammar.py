"""The /kernelevo grammar: pure functions, every malformed input gets an actionable message."""

from __future__ import annotations

import pytest

from bot.commands import Command, CommandError, help_text, parse_comment, resolve_ops, unknown_ops_message


def test_command_on_its_own_line_anywhere_in_the_comment():
    parsed = parse_comment("Nice work!\n\n  /kernelevo optimize ops/a.py::f g --backend=triton --budget 20_000\nbye")
    assert parsed == [Command("optimize", ["ops/a.py::f", "g"], "triton", 20000, None, line=3)]


def test_inline_mentions_quotes_and_code_blocks_are_not_commands():
    body = "please run /kernelevo optimize\n> /kernelevo optimize\n```\n/kernelevo optimize\n```\n"
    assert parse_comment(body) == []
    assert parse_comment(None) == []


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_lines_break_only_where_github_breaks_them(separator):
    from bot.commands import markdown_lines

    assert markdown_lines(f"a{separator}b\r\nc\rd\ne") == [f"a{separator}b", "c", "d", "e"]
    assert parse_comment(f"> quoted{separator}/kernelevo help\n") == []  # one quoted line on GitHub
    assert parse_comment(f"```\nlog{separator}```\n/kernelevo help\n```\n") == []  # still inside the fence
    assert [c.line for c in parse_comment(f"x{separator}y\r\n/kernelevo help")] == [2]


def test_several_commands_and_case_of_the_verb():
    parsed = parse_comment(f"/kernelevo APPROVE {'ab' * 20}\n/kernelevo status\n/kernelevo cancel f --\n")
    assert [c.name for c in parsed[:2]] == ["approve", "status"] and parsed[0].sha == "ab" * 20
    assert isinstance(parsed[2], CommandError)


@pytest.mark.parametrize(("line", "expected"), [
    ("/kernelevo", "no command given"),
    ("/kernelevo optimise", "did you mean `/kernelevo optimize`"),
    ("/kernelevo frobnicate", "known: optimize, status, cancel, approve, help"),
    ("/kernelevo optimize --backend metal", "--backend must be one of triton, cuda, any"),
    ("/kernelevo optimize --budget lots", "--budget is a token count"),
    ("/kernelevo optimize --budget 0", "--budget is a token count"),
    ("/kernelevo optimize --budget", "`--budget` needs a value"),
    ("/kernelevo optimize --model 'a b'", "--model takes a model name"),
    ("/kernelevo optimize --seed 3", "`--seed` is not a flag of `optimize`"),
    ("/kernelevo status now", "`status` takes no arguments"),
    ("/kernelevo optimize 'unterminated", "check the quotes"),
    ("/kernelevo optimize $(rm -rf ~)", "is not an op id"),
    ("/kernelevo optimize ops/a.py::f;echo", "is not an op id"),
    ("/kernelevo approve", "needs the commit you reviewed"),
    ("/kernelevo approve abcdef1", "is not a full commit SHA"),
])
def test_malformed_commands_explain_what_would_work(line, expected):
    (error,) = parse_comment(line)
    assert isinstance(error, CommandError)
    assert expected in error.message


def test_user_text_echoed_back_cannot_mention_or_break_markdown():
    (error,) = parse_comment("/kernelevo `@org/team` x")
    assert "@\u200b" in error.message and "`@" not in error.message


def test_help_is_generated_from_the_specs():
    text = help_text()
    for usage in ("/kernelevo optimize [OP ...] [--backend triton|cuda|any] [--budget TOKENS] [--model NAME]",
                  "/kernelevo status", "/kernelevo cancel [OP ...]", "/kernelevo approve SHA", "/kernelevo help"):
        assert usage in text


def test_resolve_ops_by_id_name_or_task_file():
    known = ["ops/norm.py::rms_norm", "ops/act.py::gelu", "tasks/softmax.py", "ops/b.py::gelu"]
    assert resolve_ops(["rms_norm", "tasks/softmax.py", "ops/act.py::gelu"], known) == (
        ["ops/norm.py::rms_norm", "tasks/softmax.py", "ops/act.py::gelu"], [])
    assert resolve_ops(["gelu", "nope"], known) == ([], ["gelu", "nope"])  # gelu is ambiguous
    message = unknown_ops_message(["rms_nrom"], known)
    assert "did you mean `rms_norm`" in message and "ops/norm.py::rms_norm" in message
