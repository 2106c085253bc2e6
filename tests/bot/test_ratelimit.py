"""The command rate limits are settings: a real ``kernelevo serve`` started with a lower limit enforces it.

Per commenter (every comment counts) and per PR (trusted commenters' commands), counted in Redis; over the
limit a commenter gets one ``-1`` reaction per window, then silence. The defaults are the documented ones.
"""

from __future__ import annotations

import pytest
from bot_harness import wait_for

from kernelevo.settings import Settings, SettingsError, load_settings, reset_settings_cache


def handled(scene, delivery: str) -> bool:
    return scene.state.client.get(scene.state.key("delivery", delivery)) == b"done"


def command(scene, pr: int, login: str, delivery: str) -> list[str]:
    """``login`` comments ``/kernelevo status``; returns the reactions it got once the delivery is handled."""
    payload = scene.comment(pr, login, "/kernelevo status")
    assert scene.send("issue_comment", payload, delivery=delivery).status_code == 202
    wait_for(lambda: handled(scene, delivery), f"delivery {delivery} to be handled")
    return scene.reactions(payload["comment"]["id"])


@pytest.fixture
def fresh_settings(monkeypatch):
    """Settings read again from this test's environment (and forgotten afterwards)."""
    for name in ("USER_COMMANDS_PER_WINDOW", "PR_COMMANDS_PER_WINDOW", "RATE_WINDOW_S"):
        monkeypatch.delenv(f"KERNELEVO_BOT_{name}", raising=False)
    reset_settings_cache()
    yield monkeypatch
    reset_settings_cache()


def test_the_defaults_are_the_documented_ones():
    fields = Settings.model_fields
    assert fields["bot_user_commands_per_window"].default == 10
    assert fields["bot_pr_commands_per_window"].default == 30
    assert fields["bot_rate_window_s"].default == 3600
    for name in ("bot_user_commands_per_window", "bot_pr_commands_per_window", "bot_rate_window_s"):
        assert fields[name].description, f"{name} has no description (docs/operations.md lists them)"


def test_a_context_takes_its_limits_from_the_settings(fresh_settings):
    from bot.context import BotContext

    fresh_settings.setenv("KERNELEVO_BOT_USER_COMMANDS_PER_WINDOW", "3")
    fresh_settings.setenv("KERNELEVO_BOT_PR_COMMANDS_PER_WINDOW", "4")
    fresh_settings.setenv("KERNELEVO_BOT_RATE_WINDOW_S", "600")
    ctx = BotContext(github=lambda inst: None, jobs=None, state=None, workspace=None)
    assert (ctx.user_commands_per_window, ctx.pr_commands_per_window, ctx.rate_window_s) == (3, 4, 600)
    given = BotContext(github=lambda inst: None, jobs=None, state=None, workspace=None,
                       user_commands_per_window=7)
    assert given.user_commands_per_window == 7


def test_a_limit_that_would_disable_the_check_is_refused(fresh_settings):
    fresh_settings.setenv("KERNELEVO_BOT_USER_COMMANDS_PER_WINDOW", "0")
    fresh_settings.setenv("KERNELEVO_BOT_RATE_WINDOW_S", "5")
    with pytest.raises(SettingsError) as caught:
        load_settings(None)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("KERNELEVO_BOT_USER_COMMANDS_PER_WINDOW: input should be greater than or equal to 1")
    assert lines[1].startswith("KERNELEVO_BOT_RATE_WINDOW_S: input should be greater than or equal to 60")


def test_the_per_user_limit_is_the_setting(fake, redis_server, start_bot, pr):
    from bot_harness import Scene

    scene = Scene(fake, redis_server, start_bot(KERNELEVO_BOT_USER_COMMANDS_PER_WINDOW="2"))
    reactions = [command(scene, pr, "alice", f"alice-{i}") for i in range(4)]
    assert reactions == [["+1"], ["+1"], ["-1"], []]  # two allowed, then told once, then silence
    assert command(scene, pr, "maya", "maya-0") == ["+1"]  # another commenter has an allowance of their own


def test_the_per_pr_limit_is_the_setting(fake, redis_server, start_bot, pr):
    from bot_harness import Scene

    scene = Scene(fake, redis_server, start_bot(KERNELEVO_BOT_PR_COMMANDS_PER_WINDOW="2"))
    assert command(scene, pr, "alice", "pr-alice-0") == ["+1"]
    assert command(scene, pr, "maya", "pr-maya-0") == ["+1"]
    assert command(scene, pr, "maya", "pr-maya-1") == ["-1"]  # the PR's allowance is spent, whoever asks
    assert command(scene, pr, "alice", "pr-alice-1") == ["-1"]
