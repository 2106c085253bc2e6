"""Red team, round 3: a malicious pull request against what rounds 1 and 2 (test_redteam_pr.py, test_redteam_pr2.py)
did not reach: the cost of static discovery per file, the op's source hash (what "changed" and "stale" rest on),
the follow-up PR's branch name, and the trust rules of pending requests and check-run buttons.

Each test plays one attack and asserts the safe behaviour; an attack that gets through today is
``xfail(strict=True)`` with what gets through and where. Pure layers are attacked directly; the attacks on
published follow-ups and on trust need the real ``kernelevo serve`` (tests/bot/bot_harness.py).
"""

from __future__ import annotations

import pytest

# -- discovery: one file of the PR costs the bot time quadratic in its ops ----------------------------------------
#
# kernelevo/discovery.py:discover_source computes each op's source hash with kernelevo.op.source_hash, which
# walks the module (find_definition, linear in the statements before the op) and splits the whole text into lines
# (definition_segment: text.splitlines per op). N ops in one file cost O(N * len(text)): a 400 KB file of 8000
# one-line ops takes ~30 s of the bot's CPU, a 4 MB one most of an hour, and on_pull_updated runs discovery twice
# per push (base and head) and again per optimize request, with no cap on a file's size or its ops.


def _many_ops_file(count: int) -> str:
    return "import kernelevo\n" + "".join(f"\n@kernelevo.optimize\ndef op_{i}(x):\n    return x\n"
                                          for i in range(count))


def test_discovery_of_one_pr_file_is_linear_in_its_ops(monkeypatch):
    """Each op's hash cuts its lines out of the file's lines, split once per file (not once per op, which made a
    file of n ops cost n splits of the whole file), and no op is looked up again by name (a walk of the module per
    op). Counted, not timed."""
    import kernelevo.discovery as discovery
    import kernelevo.op as op

    splits, lookups = [], []
    real_lines, real_find = discovery.source_lines, op.find_definition
    monkeypatch.setattr(discovery, "source_lines", lambda *a, **k: splits.append(1) or real_lines(*a, **k))
    monkeypatch.setattr(op, "find_definition", lambda *a, **k: lookups.append(1) or real_find(*a, **k))
    for count in (10, 1000):
        splits.clear()
        lookups.clear()
        ops, errors = discovery.discover_source(_many_ops_file(count), "ops/many.py")
        assert len(ops) == count and not errors
        assert (len(splits), len(lookups)) == (1, 0)
    # the hashes are the ones source_hash gives wherever an op is checked later
    text = _many_ops_file(3)
    assert [o.source_hash for o in discovery.discover_source(text, "ops/many.py")[0]] == [
        op.source_hash(text, f"op_{i}") for i in range(3)]


# -- the op's source hash: a line break only str.splitlines sees shifts the hashed lines ---------------------------
#
# kernelevo/op.py:definition_segment cuts the op's lines out of text.splitlines(), which also breaks at \x0c,
# \x0b, \x1c-\x1e, \x85, U+2028, U+2029; the AST's line numbers count only \n and \r. One form feed in a comment
# above the op shifts the hashed window by a line: the op's last line is left out of its source hash. The hash is
# what discovery's "changed" (the PR's default optimize set) and dispatch's stale-kernel check
# (kernelevo/dispatch.py compares it with the manifest's) rest on, so a PR that changes the op's last line keeps a
# kernel verified for the old code in use, silently computing the old op.

ODD_BREAKS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("separator", ODD_BREAKS)
def test_changing_an_ops_last_line_always_changes_its_source_hash(separator):
    from kernelevo.discovery import discover_source
    from kernelevo.op import source_hash

    before = ("import kernelevo\n# layout notes" + separator + "see the design doc\n\n"
              "@kernelevo.optimize\ndef scale(x):\n    y = x * 2.0\n    return y\n")
    after = before.replace("return y\n", "return y + 1.0\n")
    assert source_hash(before, "scale") != source_hash(after, "scale")
    (op_before,), _ = discover_source(before, "ops/scale.py")
    (op_after,), _ = discover_source(after, "ops/scale.py")
    assert op_before.source_hash != op_after.source_hash


def test_the_source_hash_still_covers_the_op_without_odd_line_breaks():
    """Guard for the fix above: with only \\n, \\r\\n line ends, the last line is hashed."""
    from kernelevo.op import source_hash

    before = "import kernelevo\r\n\r\n@kernelevo.optimize\r\ndef scale(x):\r\n    return x\r\n"
    assert source_hash(before, "scale") != source_hash(before.replace("return x", "return -x"), "scale")


# -- the follow-up's branch: two ops' kernel folders, one branch ---------------------------------------------------
#
# bot/jobflow.py:publish_result names the follow-up branch bot/publish.py:branch_name(kernel folder, base), whose
# slug() keeps the first 60 characters. The kernel store's folder names (kernelevo/kernel_store.py op_name and
# _long_name: the qualname, or path__qualname when the short one is taken) are often longer, so two ops whose
# folders share 60 characters get one branch. A fork's op named like a maintained op's kernel folder plus a
# different tail force-pushes its commit onto that op's open follow-up branch (publish() builds on the base, so the
# other op's kernel disappears from it) and retitles the other PR.

PREFIX60 = ("fused_rotary_attention_kv_cache_sliding_window_" + "x" * 60)[:60]


def _folder(op_id: str) -> str:
    from kernelevo.kernel_store import op_name

    return op_name(op_id)


def test_two_ops_with_different_kernel_folders_never_share_a_follow_up_branch():
    from bot.publish import branch_name

    legit, evil = f"ops/attn.py::{PREFIX60}_legit", f"evil/attn.py::{PREFIX60}_evil"
    assert _folder(legit) != _folder(evil)
    assert branch_name(_folder(legit), "main") != branch_name(_folder(evil), "main")


def test_short_kernel_folders_still_get_distinct_branches():
    from bot.publish import branch_name

    names = ["fast_gelu", "fastgelu", "fast_gelu_2", "gelu"]
    assert len({branch_name(n, "main") for n in names}) == len(names)


LONG_LEGIT = f'''import kernelevo


@kernelevo.optimize(inputs=lambda device: [(1.0,)])
def {PREFIX60}_legit(x):
    return x * 0.5
'''


def _approved_fork_pr(scene, fake, owner: str, branch: str, files: dict[str, str],
                      rewrites: dict[str, bytes | None] | None = None) -> int:
    """``owner``'s fork pushes ``files`` on ``branch`` (GitHub's archive of the commit changed as ``rewrites`` says)
    and opens a PR; its author asks for a search, maya approves."""
    from bot_harness import REPO

    fake.fork(REPO, f"{owner}/models")
    sha = fake.push(f"{owner}/models", branch, files, "an op")
    fake.archive_rewrites[sha] = rewrites or {}
    number = fake.open_pull(REPO, branch, "main", owner, head_repo=f"{owner}/models")["number"]
    scene.send("issue_comment", scene.comment(number, owner, "/kernelevo optimize"))
    scene.wait_status(number, "comes from a fork")
    scene.approve(number, "maya")
    return number


def test_a_fork_op_cannot_take_over_another_ops_open_follow_up_pr(scene, fake):
    from bot_harness import REPO, finish_like_a_gpu_worker, gpu_summary, wait_for

    legit_op = f"ops/attn.py::{PREFIX60}_legit"
    evil_op = f"evil/attn.py::{PREFIX60}_evil"
    # 1. bob's fork adds the maintained op; maya approves; its follow-up PR opens
    first = _approved_fork_pr(scene, fake, "bob", "attn", {"ops/attn.py": LONG_LEGIT})
    (job,) = scene.wait_jobs(first, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(legit_op))
    scene.wait_reported(job.id)
    (pull,) = wait_for(lambda: scene.kernel_pulls() or None, "the first follow-up PR", timeout=60)
    branch, title = pull["head"]["ref"], pull["title"]
    legit_kernel = f"kernels/{_folder(legit_op)}/kernel.py"
    assert legit_op in fake.files_at(REPO, branch)[legit_kernel]
    # 2. mallory's fork adds an innocent-looking op of another name; maya approves that one too
    second = _approved_fork_pr(scene, fake, "mallory", "mine", {"evil/attn.py": LONG_LEGIT.replace("_legit", "_evil")})
    (job2,) = scene.wait_jobs(second, 1)
    finish_like_a_gpu_worker(scene.jobs, job2.id, gpu_summary(evil_op))
    scene.wait_reported(job2.id)
    # the first op's follow-up still offers its own kernel, under its own title
    files = fake.files_at(REPO, branch)
    assert legit_op in files.get(legit_kernel, ""), sorted(files)
    assert fake.pulls[REPO][pull["number"]]["title"] == title


def test_two_long_head_branches_still_get_distinct_follow_up_branches():
    """The base part of the name keeps a hash of the exact branch when its slug differs (truncated or not)."""
    from bot.publish import branch_name

    head = "feature/" + "y" * 80
    assert branch_name("gelu", head + "-a") != branch_name("gelu", head + "-b")


# -- discovery: one file that the parser cannot build fails the whole PR's discovery ------------------------------
#
# kernelevo/discovery.py:discover_source catches SyntaxError and ValueError from ast.parse, but a long chain
# (``a.b.b.b...``, ``a[0][0]...``, ``f()()()...``) makes CPython raise RecursionError ("during ast construction")
# and deep unary chains (``- - - ... a``) MemoryError. Neither is a DiscoveryError of that file: the exception
# escapes discover(), so one such file in a PR fails the bot's discovery (on_pull_updated) and every optimize
# request of that PR instead of being listed as a file that does not parse.

DEEP = {
    "attribute-chain": "x = a" + ".b" * 200_000,
    "subscript-chain": "x = a" + "[0]" * 200_000,
    "call-chain": "x = a" + "()" * 200_000,
    "unary-chain": "x = " + "-" * 200_000 + "a",
}


@pytest.mark.parametrize("body", list(DEEP.values()), ids=list(DEEP))
def test_a_file_too_deep_to_parse_is_a_discovery_error_of_that_file(tmp_path, body):
    from kernelevo.discovery import discover

    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "deep.py").write_text("import kernelevo\n" + body + "\n")
    (tmp_path / "ops" / "good.py").write_text("import kernelevo\n\n\n@kernelevo.optimize\ndef good(x):\n"
                                              "    return x\n")
    result = discover(tmp_path, ["**/*.py"], [])
    assert [op.op_id for op in result.ops] == ["ops/good.py::good"]
    assert [e.path for e in result.errors] == ["ops/deep.py"]


# -- the archive is not the commit: git archive applies the commit's own .gitattributes ---------------------------
#
# The bot checks a commit out from GitHub's tarball, which git archive builds with the commit's own .gitattributes:
# ``export-subst`` expands ``$Format:...$`` placeholders at download time (``%D``: the ref names pointing at the
# commit, which the fork's owner can create at will, and git ref names may hold quotes, parentheses and
# semicolons), and ``export-ignore`` leaves files out. A maintainer's approval binds to the reviewed blobs; what the
# workers import is the archive's text. The fake's ``archive_rewrites`` plays git archive's part: the bot must
# compare its checkout with the commit's tree (bot/archive_check.py) and queue nothing when they differ.

SUBST_OP = '''import kernelevo

BUILD = "$Format:%D$"  # filled in by git archive


@kernelevo.optimize(inputs=lambda device: [(1.0,)])
def fast_scale(x):
    return x * 0.5
'''


@pytest.mark.parametrize("rewrite", ["export-subst", "export-ignore"])
def test_an_approved_fork_commit_whose_archive_is_rewritten_by_gitattributes_is_not_queued(scene, fake, rewrite):

    files = {".gitattributes": f"*.py {rewrite}\n", "evil/scale.py": SUBST_OP, "evil/__init__.py": "OK = 1\n"}
    rewrites = ({"evil/scale.py": SUBST_OP.replace("$Format:%D$", "HEAD'); import os; ('").encode()}
                if rewrite == "export-subst" else {"evil/__init__.py": None})
    number = _approved_fork_pr(scene, fake, "mallory", "stamp", files, rewrites)
    status = scene.wait_status(number, "is not the commit's files")
    assert ("not the commit's content" if rewrite == "export-subst" else "left out") in status
    assert scene.pr_jobs(number) == []


def test_an_archive_that_is_the_commit_is_queued(scene, fake):
    """The same fork op whose .gitattributes changes nothing in the archive (``text``, ``diff``) is queued."""

    files = {".gitattributes": "*.py text diff=python\n", "evil/scale.py": SUBST_OP}
    number = _approved_fork_pr(scene, fake, "mallory", "plain", files)
    assert len(scene.wait_jobs(number, 1)) == 1


def test_a_checkout_is_compared_file_by_file_with_the_commits_tree(tmp_path):
    from bot.archive_check import TreeEntry, differences, git_blob_id

    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "a.py").write_bytes(b"A = 1\n")
    (tmp_path / "ops" / "b.py").write_bytes(b"B = 2\n")
    (tmp_path / "extra.py").write_bytes(b"X = 0\n")
    tree = [TreeEntry(path="ops", mode="040000", type="tree", sha="0" * 40),
            TreeEntry(path="ops/a.py", mode="100644", type="blob", sha=git_blob_id(b"A = 1\n")),
            TreeEntry(path="ops/b.py", mode="100755", type="blob", sha=git_blob_id(b"B = 1\n")),
            TreeEntry(path="ops/c.py", mode="100644", type="blob", sha=git_blob_id(b"C = 3\n")),
            TreeEntry(path="ops/link.py", mode="120000", type="blob", sha=git_blob_id(b"a.py"))]
    assert differences(tmp_path, tree) == ["extra.py: not in the commit", "ops/b.py: not the commit's content",
                                           "ops/c.py: left out"]
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object


def test_publishing_never_updates_an_open_follow_up_of_another_op():
    """Defence in depth under distinct branch names: the open follow-up PR on a branch names its op in a hidden
    marker; publishing another op's result onto that branch is refused and leaves the branch and PR as they were."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from github_server import FakeGitHub

    from bot import publish
    from bot.auth import InstallationTokens
    from bot.github_api import GitHubAPI, token_exchange

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    repo, branch = "acme/models", "kernelevo/gelu/main"
    body = "Kernel for gelu\n<!-- kernelevo:follow-up op=ops/act.py::{op} -->\n"
    with FakeGitHub(app_id=77, public_key=public) as fake:
        fake.add_repo(repo, {"ops/act.py": "def gelu(x):\n    return x\n"})
        gh = GitHubAPI(fake.base_url, 77, InstallationTokens(77, private, token_exchange(fake.base_url)))
        kwargs = dict(base_branch="main", branch=branch, title="KernelEvo", message="kernelevo", max_open_prs=5)
        first = publish.publish(gh, repo, files={"kernels/gelu/kernel.py": b"# gelu\n"},
                                body=body.format(op="gelu"), **kwargs)
        assert first.action == "created"
        tip = fake.refs[repo][branch]
        with pytest.raises(LookupError, match="follows up another op"):
            publish.publish(gh, repo, files={"kernels/evil/kernel.py": b"# evil\n"}, body=body.format(op="evil"),
                            **kwargs)
        assert fake.refs[repo][branch] == tip
        again = publish.publish(gh, repo, files={"kernels/gelu/kernel.py": b"# gelu 2\n"},
                                body=body.format(op="gelu"), **kwargs)
        assert again.action == "updated"
    assert publish.follow_up_marker(body.format(op="gelu")) == "ops/act.py::gelu"
