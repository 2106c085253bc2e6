"""Trust decisions, webhook signatures, rate-limit decisions, token caching: pure parts."""

from __future__ import annotations

import pytest

from bot import ratelimit, signature, trust
from bot.auth import InstallationTokens, app_jwt
from bot.publish import branch_name, count_open_kernel_prs


def test_signature_matches_githubs_published_test_vector():
    # https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature.sign("It's a Secret to Everybody", b"Hello, World!") == expected
    assert signature.verify("It's a Secret to Everybody", b"Hello, World!", expected)


@pytest.mark.parametrize("header", [None, "", "sha1=abc", "sha256=", "sha256=" + "0" * 64])
def test_bad_signatures_fail_closed(header):
    assert not signature.verify("secret", b"{}", header)
    assert not signature.verify("", b"{}", signature.sign("", b"{}"))  # no secret: never valid


def test_permission_levels():
    assert trust.meets("admin", "write") and trust.meets("maintain", "write") and trust.meets("write", "write")
    assert not trust.meets("triage", "write") and not trust.meets("read", "write")
    assert not trust.meets("none", "read") and not trust.meets(None, "read") and not trust.meets("bogus", "read")
    assert trust.meets("triage", "triage")


def test_bots_are_recognised():
    assert trust.is_bot({"login": "dependabot[bot]", "type": "Bot"}, "kernelevo[bot]")
    assert trust.is_bot({"login": "kernelevo[bot]", "type": "User"}, "kernelevo[bot]")
    assert not trust.is_bot({"login": "alice", "type": "User"}, "kernelevo[bot]")


def _decide(**kw):
    args = {"fork": False, "author_permission": "write", "commenter_permission": "write",
            "commenter_is_author": True, "minimum": "write", "approved_sha": None, "head_sha": "b" * 40}
    return trust.may_run(**{**args, **kw})


def test_trusted_same_repo_pr_runs_without_approval():
    assert _decide().allowed
    assert _decide(commenter_is_author=False, author_permission="read", approved_sha="b" * 40).allowed


def test_untrusted_commenter_is_refused():
    decision = _decide(commenter_permission="read", commenter_is_author=False)
    assert not decision.allowed and not decision.pending_approval and "`write`" in decision.reason


def test_fork_needs_approval_of_the_current_head():
    assert _decide(fork=True).pending_approval
    assert _decide(fork=True, approved_sha="b" * 40).allowed
    stale = _decide(fork=True, approved_sha="a" * 40)
    assert not stale.allowed and "older commit" in stale.reason


def test_low_permission_author_may_ask_but_needs_approval():
    decision = _decide(author_permission="read", commenter_permission="read")
    assert decision.pending_approval and "author below `write` permission" in decision.reason
    assert _decide(author_permission="read", commenter_permission="read", approved_sha="b" * 40).allowed


def test_min_permission_from_config_is_honoured():
    assert not _decide(author_permission="write", commenter_permission="write", minimum="maintain",
                       commenter_is_author=False).allowed
    assert _decide(author_permission="triage", commenter_permission="triage", minimum="triage").allowed


def test_fork_detection():
    same = {"head": {"repo": {"full_name": "a/b"}}, "base": {"repo": {"full_name": "a/b"}}}
    fork = {"head": {"repo": {"full_name": "m/b"}}, "base": {"repo": {"full_name": "a/b"}}}
    deleted = {"head": {"repo": None}, "base": {"repo": {"full_name": "a/b"}}}
    assert not trust.is_fork(same) and trust.is_fork(fork) and trust.is_fork(deleted)


@pytest.mark.parametrize(("status", "headers", "message", "attempt", "kind", "wait"), [
    (403, {"Retry-After": "3"}, "", 0, "retry", 3.0),
    (429, {"retry-after": "120"}, "", 0, "defer", 120.0),
    (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1005"}, "", 0, "retry", 6.0),
    (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4600"}, "", 0, "defer", 3601.0),
    (403, {}, "You have exceeded a secondary rate limit", 0, "defer", 60.0),
    (403, {}, "Resource not accessible by integration", 0, "fail", 0.0),
    (502, {}, "", 0, "retry", 0.5),
    (502, {}, "", 2, "retry", 2.0),
    (502, {}, "", 3, "fail", 0.0),
    (404, {}, "", 0, "fail", 0.0),
    (403, {"Retry-After": "3"}, "", 3, "defer", 3.0),
])
def test_rate_limit_and_retry_decisions(status, headers, message, attempt, kind, wait):
    action = ratelimit.decide(status, headers, message, attempt, now=1000.0, max_wait_s=10.0, max_attempts=4)
    assert (action.kind, action.wait_s) == (kind, wait)


def test_installation_tokens_are_per_repository_least_permission_cached_and_refreshed(app_keys):
    import jwt

    from bot.auth import READ, WRITE

    now = [1_800_000_000.0]
    calls = []

    def post(path, token, body):
        claims = jwt.decode(token, app_keys[1], algorithms=["RS256"],
                            options={"verify_exp": False, "verify_iat": False})
        calls.append((path, claims["iss"], body))
        return {"token": f"t{len(calls)}", "expires_at": "2027-01-15T09:00:00Z"}  # 1_800_003_600

    tokens = InstallationTokens(42, app_keys[0], post, clock=lambda: now[0], refresh_margin_s=300)
    assert tokens.get(7, "acme/models") == "t1" and tokens.get(7, "acme/models", WRITE) == "t1"
    path, issuer, body = calls[0]
    assert path == "/app/installations/7/access_tokens" and issuer == "42"
    assert body["repositories"] == ["models"]  # never every repository of the installation
    assert "workflows" not in body["permissions"] and body["permissions"]["checks"] == "write"
    assert tokens.get(7, "acme/models", READ) == "t2"  # a checkout only reads
    assert calls[1][2] == {"repositories": ["models"], "permissions": {"contents": "read", "metadata": "read"}}
    assert tokens.get(7, "acme/other") == "t3"
    now[0] = 1_800_003_600 - 301
    assert tokens.get(7, "acme/models") == "t1"
    now[0] = 1_800_003_600 - 299
    assert tokens.get(7, "acme/models") == "t4"  # refreshed ahead of expiry
    assert tokens.get(8, "acme/models") == "t5"  # one token per installation
    tokens.forget(8)
    assert tokens.get(8, "acme/models") == "t6"
    with pytest.raises(ValueError, match="owner/name"):
        tokens.get(7, "models")


def test_app_jwt_claims(app_keys):
    import jwt

    claims = jwt.decode(app_jwt(42, app_keys[0], 1000.0), app_keys[1], algorithms=["RS256"],
                        options={"verify_exp": False, "verify_iat": False})
    assert claims == {"iat": 940, "exp": 1540, "iss": "42"}


def test_branch_names_identify_op_and_base():
    assert branch_name("rms_norm", "feature") == "kernelevo/rms-norm/feature"
    assert branch_name("rms_norm", "feature/Fast-Path").startswith("kernelevo/rms-norm/feature-fast-path-")
    assert branch_name("a" * 100, "main").startswith("kernelevo/" + "a" * 51 + "-")  # cut, so the exact name's hash
    assert branch_name("x;rm -rf", "$(evil)").startswith("kernelevo/x-rm-rf-")  # not a folder's name: hashed
    assert "/evil-" in branch_name("x;rm -rf", "$(evil)")


def test_open_kernel_prs_are_counted_per_repo():
    def pull(ref, repo="a/b", state="open"):
        return {"state": state, "head": {"ref": ref, "repo": {"full_name": repo}}}

    pulls = [pull("kernelevo/x/main"), pull("kernelevo/y/main", state="closed"), pull("feature"),
             pull("kernelevo/z/main", repo="m/b")]
    assert count_open_kernel_prs(pulls, "a/b") == 1
