"""The verifier's processes: they never see secrets, and a dying or lying process becomes a verdict."""

import re
from pathlib import Path

from evaluator import EvalOptions, evaluate
from evaluator.processes import process_tree_rss_mb
from evaluator.roles import ACCOUNT_NAMES, draw_identity, sandbox_environment

TASKS = Path(__file__).resolve().parent.parent / "tasks"


def test_environment_is_an_allowlist_without_secrets(tmp_path):
    parent = {"PATH": "/usr/bin", "GITHUB_TOKEN": "ghs_x", "OPENAI_API_KEY": "sk-x", "KERNELEVO_LLM_API_KEY": "k",
              "AWS_SECRET_ACCESS_KEY": "a", "LD_LIBRARY_PATH": "/lib", "HOME": "/root", "MY_APP_SETTING": "1"}
    env = sandbox_environment("cpu", tmp_path, parent_env=parent)
    assert env["PATH"] == "/usr/bin" and env["LD_LIBRARY_PATH"] == "/lib"
    assert not any(v in env.values() for v in ("ghs_x", "sk-x", "k", "a"))
    assert "MY_APP_SETTING" not in env
    assert env["TRITON_INTERPRET"] == "1"
    # a drawn account's home (the private one is bound there), never the parent's, no path naming the work folder
    user = env.get("USER")
    assert env.get("LOGNAME") == user and (user is None or re.fullmatch(r"[a-z][a-z0-9-]*", user))
    assert env["HOME"] == "/root" if user is None else env["HOME"].endswith(f"/{user}")
    assert (tmp_path / "home").is_dir()
    assert not any(str(tmp_path) in v for v in env.values()) and "TMPDIR" not in env


def test_every_process_runs_as_an_account_of_its_own():
    """No home path or account name is the same in every verifier process (a fixed one told a kernel where it ran),
    and no list of names holds them all (a kernel testing ACCOUNT_NAMES is wrong about half of them)."""
    users = [draw_identity().user for _ in range(200)]
    assert len(set(users)) > 50 and 20 < users.count(None) < 80  # a quarter are root in /root
    listed = sum(user.rstrip("0123456789") in ACCOUNT_NAMES for user in users if user is not None)
    assert 40 < listed < 120


def test_the_password_database_agrees_with_the_home():
    """The sandbox's /etc/passwd maps its uid to its account and home (a login's view), keeps the host's system
    accounts and leaves out the host's people."""
    from evaluator.roles import Identity

    host = ("root:x:0:0:root:/root:/bin/bash\nbin:x:2:2:bin:/bin:/usr/sbin/nologin\n"
            "alice:x:1000:1000::/home/alice:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    lines = Identity("kai", 1000).passwd(host).splitlines()
    assert "kai:x:1000:1000::/home/kai:/bin/bash" in lines and not any(line.startswith("alice") for line in lines)
    assert any(line.startswith("root:") for line in lines) and any(line.startswith("nobody:") for line in lines)
    root = Identity(None, 0)
    assert root.home == Path("/root") and root.passwd(host).splitlines().count("root:x:0:0:root:/root:/bin/bash") == 1
    assert "kai:x:1000:" in Identity("kai", 1000).group("root:x:0:\nalice:x:1000:\n")


def test_without_a_sandbox_the_home_is_the_private_folder(tmp_path):
    from evaluator.roles import policy
    from kernelevo.sandbox.launch import host_view_env

    env = host_view_env(policy("candidate", "cpu", tmp_path))
    assert env["HOME"] == str((tmp_path / "home").resolve())


def test_a_cpu_process_sees_no_gpu_setting_that_a_cpu_program_lacks(tmp_path):
    """No CUDA_VISIBLE_DEVICES in a CPU sandbox, whatever the worker has (a CPU worker runs with ""): a fixed value
    was a tell (red team s28: a kernel that subtracts the row maximum only where the variable is set). The sandbox
    binds no GPU device for a CPU process; without a sandbox, the host's GPUs are hidden by the variable."""
    from evaluator.roles import policy
    from kernelevo.sandbox.launch import host_view_env

    for parent in ({}, {"CUDA_VISIBLE_DEVICES": ""}, {"CUDA_VISIBLE_DEVICES": "0"}):
        env = sandbox_environment("cpu", tmp_path, parent_env=parent)
        assert "CUDA_VISIBLE_DEVICES" not in env and env["TRITON_INTERPRET"] == "1"
    assert host_view_env(policy("candidate", "cpu", tmp_path / "w"))["CUDA_VISIBLE_DEVICES"] == ""


def test_shell_variables_a_kernel_could_test_are_each_sometimes_there(tmp_path):
    """Variables a user's shell often has (LS_COLORS, PAGER, CONDA_EXE...) are drawn for each process, each present or
    not: a kernel right only where none is set (what an allowlist-only environment always showed, red team s29) meets
    a process where some are."""
    from evaluator.roles import SHELL_EXTRAS

    seen = [sandbox_environment("cpu", tmp_path, parent_env={}) for _ in range(64)]  # each state: p = 1 - 2**-63
    for name, _value in SHELL_EXTRAS:
        present = sum(name in env for env in seen)
        assert 0 < present < len(seen), name


def test_gpu_environment_does_not_force_interpreter(tmp_path):
    env = sandbox_environment("cuda", tmp_path, parent_env={"CUDA_VISIBLE_DEVICES": "3"})
    assert "TRITON_INTERPRET" not in env and env["CUDA_VISIBLE_DEVICES"] == "3"


def test_rss_of_unknown_process_is_zero():
    assert process_tree_rss_mb(2**30) == 0.0


def test_environment_carries_no_verifier_tell(tmp_path):
    env = sandbox_environment("cuda", tmp_path, parent_env={"KERNELEVO_CACHE_DIR": "/c", "KERNELEVO_REDIS_URL": "r",
                                                            "PYTHONHASHSEED": "0"})
    assert not any(k.startswith("KERNELEVO") for k in env) and "PYTHONHASHSEED" not in env


LEAKY = '''
import os
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        token, key = os.environ.get("GITHUB_TOKEN"), os.environ.get("OPENAI_API_KEY")
        raise RuntimeError("token=" + str(token) + " key=" + str(key))
'''


def test_secrets_never_reach_a_candidate_even_without_static_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_supersecret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-supersecret")
    candidate = tmp_path / "leaky.py"
    candidate.write_text(LEAKY)
    verdict = evaluate(TASKS / "softmax.py", candidate, "cpu", EvalOptions(static_checks=False, seeds=1))
    assert verdict.reason == "crashed"
    assert "token=None key=None" in verdict.detail
    assert "supersecret" not in verdict.to_json()


def test_audit_hook_refuses_file_writes_at_import_without_static_checks(tmp_path):
    candidate = tmp_path / "writes_files.py"
    candidate.write_text('import torch.nn as nn\nopen("cache.bin", "w").write("x")\n\n'
                         'class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n')
    verdict = evaluate(TASKS / "softmax.py", candidate, "cpu", EvalOptions(static_checks=False, seeds=1))
    assert verdict.reason == "cheat_suspected"
    assert "open" in verdict.detail and "cache.bin" in verdict.detail


def test_files_of_the_host_are_not_in_a_candidates_view(tmp_path):
    secret = tmp_path / "app-key.pem"
    secret.write_text("-----BEGIN PRIVATE KEY-----")
    candidate = tmp_path / "reads_files.py"
    candidate.write_text(f'import torch.nn as nn\nDATA = open({str(secret)!r}).read()\n\n'
                         'class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n')
    verdict = evaluate(TASKS / "softmax.py", candidate, "cpu", EvalOptions(static_checks=False, seeds=1))
    assert verdict.reason == "compile_error" and "FileNotFoundError" in verdict.detail
    assert "PRIVATE KEY" not in verdict.to_json()
