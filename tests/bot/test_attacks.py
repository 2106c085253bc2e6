"""The attacks on the App, each tried against the real `kernelevo serve` (PyGithub against the fake GitHub on
loopback) or, for a pure layer, against that layer directly; each must fail."""

from __future__ import annotations

import ast
import io
import json
import re
import socket
import tarfile

import pytest
from bot_harness import OP_GELU, OP_V2, REPO, SECRET, wait_for

from bot import commands
from bot.signature import sign

HOSTILE_PATH = 'ops/x"""; __import__("os").system("touch /tmp/kernelevo-pwned") #<img src=x> @org-team`.py'


def handled(scene, delivery: str) -> bool:
    return scene.state.client.get(scene.state.key("delivery", delivery)) == b"done"




def send_and_wait(scene, payload: dict, delivery: str) -> list:
    """Send a comment delivery, wait until it is handled; returns the REST calls it caused (Scene.calls_since)."""
    before = len(scene.fake.exchanges)
    assert scene.send("issue_comment", payload, delivery=delivery).status_code in (200, 202)
    wait_for(lambda: handled(scene, delivery), f"delivery {delivery} to be handled")
    return scene.calls_since(before)


# -- High: injection into generated code and Markdown -------------------------------------------------------


def test_generated_test_cannot_be_changed_by_the_op_id():
    from kernelevo.kernel_store import KernelStoreError, _generated_test

    source = _generated_test("f", HOSTILE_PATH + "::f")
    tree = ast.parse(source)
    assert HOSTILE_PATH in ast.get_docstring(tree)  # the path is only ever a string constant
    kinds = [type(node).__name__ for node in tree.body]
    assert kinds == ["Expr", "ImportFrom", "Assign", "FunctionDef"] and tree.body[3].name == "test_f_is_verified"
    assert not any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "__import__" for n in ast.walk(tree))
    with pytest.raises(KernelStoreError):
        _generated_test("f():\n    pass\nimport os\ndef g", "ops/a.py::f")


def test_pr_body_and_report_escape_every_user_controlled_value():
    from bot.report import follow_up

    op_id = "ops/a.py::f --> <img src=x onerror=alert(1)> @org/team ``` [x](http://e)"
    from bot_harness import timing

    times = timing(2.0)
    times["baseline_notes"] = {"<script>": "<script> @team"}
    times["method"] = "<script>"
    verdict = {"verdict": "accepted", "detail": "<b>@x</b>", "device": "<i>cuda</i>", "backend": "`triton`",
               "environment": {"<gpu>": "@team"}, "timing": times}
    result = {"best": {"verdict": verdict, "source": "x"}, "stop_reason": "<s>"}
    archive = [{"id": "<img src=x>", "kind": "evaluated", "accepted": False, "operator": "@team ``` <b>",
                "strategy": "[x](http://e)", "verdict": {"reason": "incorrect", "detail": "<script> @team"}}]
    made = follow_up("a/b", op_id, result, {"head_sha": "c" * 40, "backend": "triton"}, "kernels/f",
                     branch="kernelevo/f/main", origin="#3", archive=archive)
    first, _, rest = made.body.partition("\n")
    assert first.startswith("<!-- kernelevo:follow-up op=") and first.endswith(" -->") and first.count("-->") == 1
    for text in (rest, made.files["kernels/f/report.md"].decode(), made.check_summary):
        assert text.count("```") == 2  # one fenced block (the reproduce commands), which the op id cannot close
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # a fenced block shows its text literally
        outside = re.sub(r"`[^`\n]*`", "", text)  # a code span shows its text literally: no markup, no mention
        assert "ops/a.py::f" in text and "<img" not in outside and "<script>" not in outside
        assert "<b>" not in outside and "<i>" not in outside and "@org" not in outside and "@team" not in outside
        assert "[x](http" not in outside and "`triton`" not in text
        assert "-->" not in outside  # nothing can close a hidden comment
        links = re.findall(r"\]\(([^)]*)\)", outside)  # every link and image: the branch's files, report.md's plots
        assert all(re.fullmatch(r"(https://github\.com/a/b/blob/kernelevo/f/main/kernels/f/)?[a-z/.]+(\?raw=true)?",
                                url) for url in links), links
    assert "](https://github.com/a/b/blob/kernelevo/f/main/kernels/f/plots/rejections.png?raw=true)" in made.body


def test_an_op_file_name_with_quotes_and_markup_is_never_offered(scene, fake):
    fake.push(REPO, "hostile", {"ops/norm.py": OP_V2, HOSTILE_PATH: OP_GELU}, "ops")
    number = fake.open_pull(REPO, "hostile", "main", "alice")["number"]
    scene.send("pull_request", scene.pull_event("opened", number))
    (run,) = wait_for(lambda: [r for r in fake.check_runs.values() if r["name"] == "kernelevo: ops"], "the ops run")
    assert "scale_shift" in run["output"]["summary"] and "img" not in run["output"]["summary"]
    scene.send("issue_comment", scene.comment(number, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(number, 1)
    assert job.spec.op_id == "ops/norm.py::scale_shift"  # the hostile op reaches no job, file or Markdown
    assert all("img" not in c["body"] and "@org" not in c["body"] for c in scene.bot_comments(number))


# -- High: bounded work per comment, rate limits, untrusted users ------------------------------------------


def test_a_read_only_user_with_300_command_lines_costs_at_most_three_calls(scene, pr):
    payload = scene.comment(pr, "rita", "\n".join(["/kernelevo optimize"] * 150 + ["/kernelevo help"] * 150))
    calls = send_and_wait(scene, payload, "flood-1")
    assert len(calls) <= 2, [(c.method, c.path) for c in calls]  # the permission and one reaction
    assert scene.reactions(payload["comment"]["id"]) == ["-1"] and scene.bot_comments(pr) == []
    for body in ("/kernelevo help", "/kernelevo optimize ops/x.py::f"):  # one line: still only a reaction
        again = scene.comment(pr, "rita", body)
        assert len(send_and_wait(scene, again, f"flood-{body}")) <= 2
    assert scene.bot_comments(pr) == [] and scene.jobs.list() == []


def test_one_command_per_comment_so_fifty_lines_download_nothing(scene, pr):
    payload = scene.comment(pr, "alice", "\n".join(["/kernelevo optimize"] * 50))
    calls = send_and_wait(scene, payload, "fifty")
    assert not [c for c in calls if "tarball" in c.template] and scene.jobs.list() == []
    assert "one command per comment" in scene.status_text(pr)
    assert scene.reactions(payload["comment"]["id"]) == ["confused"]
    (error,) = commands.parse_comment("/kernelevo optimize " + " ".join(f"op{i}" for i in range(20)))
    assert isinstance(error, commands.CommandError) and "at most 8 ops" in error.message


def test_commands_are_rate_limited_per_user(scene, pr):
    from kernelevo.settings import Settings

    limit = Settings.model_fields["bot_user_commands_per_window"].default
    payloads = [scene.comment(pr, "alice", "/kernelevo status") for _ in range(limit + 2)]
    for i, payload in enumerate(payloads):
        send_and_wait(scene, payload, f"status-{i}")
    reactions = [scene.reactions(p["comment"]["id"]) for p in payloads]
    assert reactions[:limit] == [["+1"]] * limit
    assert reactions[limit:] == [["-1"], []]  # told once, then silence
    over = scene.comment(pr, "alice", "/kernelevo status")
    assert send_and_wait(scene, over, "status-over") == []  # no GitHub call at all
    # another user on the same PR is not blocked by alice's allowance
    maya = scene.comment(pr, "maya", "/kernelevo status")
    send_and_wait(scene, maya, "status-maya")
    assert scene.reactions(maya["comment"]["id"]) == ["+1"]


def test_the_same_signed_body_under_a_new_delivery_id_is_ignored(scene, pr):
    payload = scene.comment(pr, "alice", "/kernelevo optimize")
    send_and_wait(scene, payload, "first")
    scene.wait_jobs(pr, 1)
    assert send_and_wait(scene, payload, "second") == []  # same comment id and action: a replay
    assert scene.reactions(payload["comment"]["id"]) == ["+1"] and len(scene.jobs.list()) == 1


# -- High: a repository's config cannot stall the service --------------------------------------------------

BOMB = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB


def test_yaml_alias_bomb_and_oversized_configs_are_refused():
    from kernelevo.repo_config import RepoConfigError, load_repo_config

    assert len(BOMB) < 600
    for text, message in ((BOMB, "anchors and aliases"), ("a:\n" + "  [" * 40 + "\n", "nested more than"),
                          ("model: x\n" + "#" * 70_000, "the limit is 65536")):
        with pytest.raises(RepoConfigError, match=message):
            load_repo_config(text)


def test_an_alias_bomb_on_the_default_branch_is_reported_and_other_commands_still_answer(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": BOMB}, "bomb")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    scene.wait_status(pr, "anchors and aliases")
    help_comment = scene.comment(pr, "alice", "/kernelevo help")
    send_and_wait(scene, help_comment, "help-after-bomb")
    scene.wait_status(pr, "One command per comment")


def test_one_repository_cannot_take_every_worker():
    import threading

    from bot.workqueue import WorkQueue

    release, started, answered = threading.Event(), [], threading.Event()
    work = WorkQueue(4)
    try:
        for i in range(6):  # a slow repository's deliveries
            work.submit(lambda i=i: (started.append(i), release.wait(60)), key="slow/repo")
        work.submit(answered.set, key="other/repo")  # another repository's /kernelevo help
        wait_for(lambda: answered.is_set() and len(started) == 2,
                 "the other repository's item to run while the slow one's are stuck")
        assert len(started) == 2  # half the workers at most for one repository (the others cannot start)
    finally:
        release.set()
        assert work.join(60)
        work.stop()
    assert sorted(started) == list(range(6))


def test_config_errors_quote_the_file_only_inside_code_spans(scene, fake, pr):
    fake.push(REPO, "main", {".github/kernelevo.yml": 'max_open_prs: "<img src=x> @org/team"\n'
                                                      '"<b>[x](http://e)</b>": 1\n'}, "hostile config")
    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    status = scene.wait_status(pr, "is invalid")
    outside = re.sub(r"`[^`\n]*`", "", status)
    assert "img src" in status and "<img" not in outside and "@org" not in outside and "<b>" not in outside


# -- Medium: approvals ------------------------------------------------------------------------------------


def fork_pr(fake) -> int:
    fake.fork(REPO, "mallory/models")
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU}, "add op")
    return fake.open_pull(REPO, "speedup", "main", "mallory", head_repo="mallory/models")["number"]


def test_approval_binds_to_the_commit_the_approver_named_and_fork_options_only_lower(scene, fake):
    number = fork_pr(fake)
    scene.send("issue_comment", scene.comment(number, "mallory",
                                              "/kernelevo optimize --budget 100000000 --model gpt-huge"))
    scene.wait_status(number, "comes from a fork")
    reviewed = scene.head(number)
    fake.push("mallory/models", "speedup", {"ops/gelu.py": OP_GELU + "\n# pushed after the review\n"}, "race")
    scene.approve(number, "maya", reviewed)  # written before the push, read after it
    scene.wait_status(number, f"commit {reviewed[:12]} is not this PR's head")
    assert scene.jobs.list() == [] and scene.state.approved_sha(REPO, number) is None

    payload = scene.approve(number, "maya")  # the new head, named
    (job,) = scene.wait_jobs(number, 1)
    assert job.spec.commit_sha == scene.head(number)
    assert job.spec.budgets.tokens == 2_000_000 and job.spec.model is None  # the config's, not the fork's
    approved = scene.state.approved_sha(REPO, number)
    fake.push("mallory/models", "speedup", {"README.md": "later\n"}, "later")
    caused = send_and_wait(scene, payload, "approve-replayed")  # the signed body again, a new delivery id
    # The running job's progress may refresh the status comment meanwhile (asynchronous to this delivery): the
    # replay itself writes nothing, starts nothing and approves nothing.
    assert [e for e in caused if not (e.method == "PATCH" and "/issues/comments/" in e.path)] == []
    assert [j.id for j in scene.jobs.list()] == [job.id]
    assert scene.state.approved_sha(REPO, number) == approved != scene.head(number)


def test_approval_decisions():
    from bot.trust import may_approve

    head = "ab" * 20
    args = {"approver": "maya", "approver_permission": "maintain", "author": "mallory", "minimum": "write",
            "head_sha": head, "named_sha": head}
    assert may_approve(**args).allowed
    assert not may_approve(**{**args, "named_sha": head[:12]}).allowed  # a prefix a push could collide with
    assert "own PR" in may_approve(**{**args, "approver": "mallory"}).reason
    assert "`write`" in may_approve(**{**args, "approver_permission": "triage", "minimum": "read"}).reason
    assert "`admin`" in may_approve(**{**args, "minimum": "admin"}).reason


def test_nobody_approves_their_own_pr(scene, fake):
    fake.push(REPO, "main", {".github/kernelevo.yml": "trigger:\n  min_permission: read\n"}, "open to readers")
    number = fork_pr(fake)
    fake.set_permission(REPO, "mallory", "read")
    scene.send("issue_comment", scene.comment(number, "mallory", "/kernelevo optimize"))
    scene.wait_status(number, "comes from a fork")
    scene.approve(number, "mallory")
    scene.wait_status(number, "`approve` needs `write` permission (the commenter has `read`)")
    fake.set_permission(REPO, "mallory", "admin")  # whatever the permission
    scene.approve(number, "mallory")
    scene.wait_status(number, "nobody approves their own PR")
    assert scene.jobs.list() == [] and scene.state.approved_sha(REPO, number) is None


# -- Medium: unauthenticated memory, unpacked size --------------------------------------------------------


def test_an_oversized_body_is_refused_before_it_is_read(scene):
    with socket.create_connection(("127.0.0.1", scene.bot.port), timeout=30) as conn:
        conn.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: big\r\nContent-Length: 67108864\r\n\r\n"
                     + b"{" * 65536)
        reply = conn.recv(4096)
    assert reply.startswith(b"HTTP/1.1 413")
    assert scene.bot.http.get("/healthz").status_code == 200


def _tarball(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_checkouts_cap_the_unpacked_size_and_file_count(tmp_path):
    from bot.workspace import CheckoutError, extract

    bomb = _tarball({"r/zeros.bin": bytes(8 * 2**20)})
    assert len(bomb) < 64 * 1024
    with pytest.raises(CheckoutError, match="MiB"):
        extract(bomb, tmp_path / "a", max_unpacked_bytes=2**20)
    many = _tarball({f"r/f{i}.py": b"" for i in range(50)})
    with pytest.raises(CheckoutError, match="more than 10 files"):
        extract(many, tmp_path / "b", max_files=10)


def test_a_checkout_over_the_caps_is_refused_and_removed_and_dead_processes_folders_swept(fake, app_keys, pr,
                                                                                          tmp_path):
    from bot.auth import InstallationTokens
    from bot.github_api import token_exchange
    from bot.workspace import CheckoutError, tarball_workspace

    stale = tmp_path / "kernelevo-checkouts" / "999999999"
    (stale / "ws-old").mkdir(parents=True)
    tokens = InstallationTokens(fake.app_id, app_keys[0], token_exchange(fake.base_url))
    provider = tarball_workspace(fake.base_url, tokens.get, max_unpacked_bytes=4096, root=tmp_path)
    assert not stale.exists()  # a kill -9'd process's checkouts
    fake.push(REPO, "feature", {"data.txt": "0" * 100_000}, "big")
    with pytest.raises(CheckoutError, match="unpacks to more than"):
        with provider(77, REPO, fake.pulls[REPO][pr]["head"]["sha"]):
            pass
    assert [p for p in (tmp_path / "kernelevo-checkouts").rglob("*") if p.is_file()] == []


# -- Low: malformed input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["²", "١٢", "1e9", "-5", "0x10", "9" * 40])
def test_budget_values_that_int_would_accept_or_crash_on_are_refused(value):
    (error,) = commands.parse_comment(f"/kernelevo optimize --budget {value}")
    assert isinstance(error, commands.CommandError) and "--budget is a token count" in error.message


def test_malformed_signed_payloads_answer_400(scene, pr):
    good = scene.comment(pr, "alice", "/kernelevo status")
    bad = [dict(good, installation=[77]), dict(good, action=["created"]), dict(good, comment={"id": "1"}),
           dict(good, issue={"number": None}), dict(good, repository="acme/models")]
    for i, payload in enumerate(bad):
        response = scene.send("issue_comment", payload, delivery=f"bad-{i}")
        assert response.status_code == 400, (payload, response.text)
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    response = scene.bot.http.post("/webhook", content=deep, headers={
        "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "deep", "X-Hub-Signature-256": sign(SECRET, deep)})
    assert response.status_code == 400
    assert scene.bot.http.get("/healthz").status_code == 200 and scene.jobs.list() == []
    assert "Traceback" not in scene.bot.log()


def test_follow_up_branches_of_different_base_branches_never_collide():
    from bot.publish import branch_name

    names = {branch_name("f", base) for base in ("feature/x", "feature-x", "Feature_X", "feature.x")}
    assert len(names) == 4 and branch_name("f", "main") == "kernelevo/f/main"


def test_json_round_trip_of_a_command_with_its_sha():
    from bot.state import PendingRequest

    sha = "0123abc" + "0" * 33
    (command,) = commands.parse_comment(f"/kernelevo approve {sha}")
    request = PendingRequest(command=command, requested_by="m", head_sha=sha)
    assert PendingRequest.model_validate_json(json.dumps(request.model_dump(mode="json"))).command.sha == sha


# -- Low: what the bot says about a request ---------------------------------------------------------------


def test_optimize_on_a_finished_request_says_so_and_the_button_works_after_a_restart(scene, fake, pr):
    from bot_harness import finish_like_a_gpu_worker, gpu_summary

    scene.send("pull_request", scene.pull_event("opened", pr))
    (ops_run,) = wait_for(lambda: [r for r in fake.check_runs.values() if r["name"] == "kernelevo: ops"], "ops run")
    # the bot records which PR the run belongs to just after GitHub made it: killed before that, its button is
    # one this bot does not know (ignored), so wait for the record, not for luck
    wait_for(lambda: scene.state.discovery_run(ops_run["id"]), "the ops run's record in Redis")
    scene.bot.kill9()
    scene.bot.start()
    scene.send("check_run", scene.check_action(ops_run["id"], "alice"))  # a button made before the restart
    (job,) = scene.wait_jobs(pr, 1)
    finish_like_a_gpu_worker(scene.jobs, job.id, gpu_summary(job.spec.op_id))
    scene.wait_reported(job.id)
    scene.send("check_run", scene.check_action(ops_run["id"], "alice"))
    status = scene.wait_status(pr, "Already requested for this commit")
    assert f"{job.id}, succeeded" in status and "Queued" not in status and len(scene.jobs.list()) == 1


def test_the_status_table_says_running_once_the_job_runs(scene, pr):
    from workflows.dispatch import BOT_PROGRESS_TASK
    from workflows.models import JobProgress, WorkerIdentity

    scene.send("issue_comment", scene.comment(pr, "alice", "/kernelevo optimize"))
    (job,) = scene.wait_jobs(pr, 1)
    scene.wait_status(pr, "| queued |")
    worker = WorkerIdentity(node="gpu0@test", pid=1, device="cuda")
    record = scene.jobs.get(job.id)
    scene.jobs.store.claim(job.id, record.epoch, worker)
    scene.jobs.store.heartbeat(job.id, record.epoch, worker, JobProgress(generation=1, evaluated=2, accepted=0))
    scene.jobs.dispatcher.notify_bot(BOT_PROGRESS_TASK, job.id, record.spec.origin.kind)
    scene.wait_status(pr, "| running |")


def test_an_invalid_app_key_is_refused_at_start_up(app_keys):
    from bot.service import ConfigurationError, build
    from kernelevo.settings import Settings

    for key, message in (("-----BEGIN RSA PRIVATE KEY-----\nnot a key\n-----END RSA PRIVATE KEY-----\n",
                          "is not a PEM private key"), ("hello", "is not a PEM private key")):
        settings = Settings(webhook_secret="s", github_app_id=1, github_private_key=key,
                            redis_url="redis://127.0.0.1:1/0")
        with pytest.raises(ConfigurationError, match=message):
            build(settings)
