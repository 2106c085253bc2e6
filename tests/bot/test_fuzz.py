"""Bounded Hypothesis fuzzing of the command parser and of the real webhook endpoint: no input crashes the
parser or a handler, the endpoint answers only 2xx/4xx, and one delivery causes a bounded number of GitHub
calls (the bound of :mod:`bot.on_comment`: one command per comment, MAX_OPS ops per command)."""

from __future__ import annotations

import json
import uuid

from bot_harness import REPO, SECRET, wait_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot import commands
from bot.signature import sign

WORDS = st.sampled_from(["/kernelevo", "optimize", "approve", "status", "cancel", "help", "--budget", "--model",
                         "--backend", "triton", "any", "²", "0", "1_000", "abcdef1", "ab" * 20,
                         "ops/norm.py::scale_shift", "'", '"', "`", "@team", "```", "> ", "\n", " ", "\t", "=",
                         "--budget=5"])
COMMENTS = st.one_of(st.text(max_size=400), st.lists(WORDS, max_size=60).map(" ".join),
                     st.lists(WORDS, max_size=60).map("".join))


@settings(max_examples=400, deadline=None)
@given(COMMENTS)
def test_the_command_parser_never_raises_and_echoes_nothing_that_mentions(body):
    parsed = commands.parse_comment(body)
    one = commands.one_command(body)
    assert all(isinstance(p, commands.Command | commands.CommandError) for p in parsed)
    assert (one is None) == (parsed == [])
    for item in parsed + ([one] if one is not None else []):
        if isinstance(item, commands.CommandError):
            assert "@" not in item.message.replace("@\u200b", "")
        else:
            assert len(item.ops) <= commands.MAX_OPS
            assert item.budget is None or 0 < item.budget <= commands.MAX_BUDGET
            assert item.sha is None or commands.SHA_RE.match(item.sha)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                max_size=4), max_leaves=20)
EVENTS = st.sampled_from(["issue_comment", "pull_request", "check_run", "installation", "installation_repositories",
                          "ping", "push", "star"])
LOGINS = st.sampled_from(["alice", "rita", "eve", "maya", "mallory"])
MAX_CALLS_PER_DELIVERY = 25  # an optimize of one changed op costs about 15; nothing may cost more


def test_the_webhook_endpoint_under_fuzzing(scene, pr):
    accepted: list[str] = []
    sent = [0]

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(kind=st.integers(0, 2), event=EVENTS, junk=st.dictionaries(st.text(max_size=10), JSON, max_size=4),
           body=COMMENTS, login=LOGINS, action=st.sampled_from(["created", "edited", "deleted", "opened", None]))
    def one(kind, event, junk, body, login, action):
        if kind == 0:  # a well-formed comment with a fuzzed body, from a fuzzed commenter
            payload, event = scene.comment(pr, login, body), "issue_comment"
        elif kind == 1:  # a comment payload with fuzzed fields on top
            payload, event = {**scene.comment(pr, login, body), **junk}, "issue_comment"
        else:  # anything at all under any event name
            payload = {**junk, "action": action} if action else junk
        raw = json.dumps(payload).encode()
        delivery = str(uuid.uuid4())
        response = scene.bot.http.post("/webhook", content=raw, headers={
            "X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sign(SECRET, raw)})
        assert 200 <= response.status_code < 500, (response.status_code, response.text, payload)
        sent[0] += 1
        if response.status_code in (200, 202):
            accepted.append(delivery)

    before = len(scene.fake.exchanges)
    one()
    key = scene.state.key
    wait_for(lambda: all(scene.state.client.get(key("delivery", d)) == b"done" for d in accepted),
             "every accepted delivery to be handled", timeout=300)
    calls = scene.calls_since(before)
    assert len(calls) <= MAX_CALLS_PER_DELIVERY * max(1, len(accepted))
    log = scene.bot.log()
    assert " failed\n" not in log and "Traceback" not in log, log[-6000:]
    assert scene.bot.http.get("/healthz").status_code == 200
    assert all(c["body"].count("\n") < 200 for c in scene.bot_comments(pr)), REPO
