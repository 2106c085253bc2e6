"""No sandbox is ever given a view of a secret: read-only folders that are, lie under or contain the secrets folder
or the App's private key are refused, wherever they come from (``KERNELEVO_SANDBOX_READ_ONLY``, a task's text,
a link to them), with an error that names the path and where it came from.

The policies are the verifier's real ones (``evaluator.roles.policy``); settings come from the environment,
read the way every process reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelevo.sandbox.policy import READ_ONLY_VARIABLE, SecretBindRefused, secret_exposed, system_binds
from kernelevo.settings import SECRETS_DIR, reset_settings_cache


@pytest.fixture
def app_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The App's key as a file under ``keys/`` (``KERNELEVO_GITHUB_PRIVATE_KEY_PATH``), next to a package folder."""
    (tmp_path / "keys").mkdir()
    key = tmp_path / "keys" / "app.pem"
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\nnot a real key\n-----END RSA PRIVATE KEY-----\n")
    (tmp_path / "pkgs").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "keys")
    monkeypatch.setenv("KERNELEVO_GITHUB_PRIVATE_KEY_PATH", str(key))
    monkeypatch.delenv(READ_ONLY_VARIABLE, raising=False)
    reset_settings_cache()
    yield key
    reset_settings_cache()


def test_what_a_path_would_expose(tmp_path):
    secrets = [tmp_path / "secrets", tmp_path / "keys" / "app.pem"]
    (tmp_path / "keys").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "keys")
    assert secret_exposed(tmp_path / "secrets", secrets) == tmp_path / "secrets"
    assert secret_exposed(tmp_path / "secrets" / "kernelevo_webhook_secret", secrets) == tmp_path / "secrets"
    assert secret_exposed(tmp_path, secrets) == tmp_path / "secrets"  # a folder holding them
    assert secret_exposed("/", secrets) == tmp_path / "secrets"
    assert secret_exposed(tmp_path / "keys" / "app.pem", secrets) == tmp_path / "keys" / "app.pem"
    assert secret_exposed(tmp_path / "link", secrets) == tmp_path / "keys" / "app.pem"  # through a link
    assert secret_exposed(tmp_path / "keys" / "other", secrets) is None
    assert secret_exposed(tmp_path / "secrets-old", secrets) is None  # a name that only starts the same
    assert secret_exposed(tmp_path / "pkgs", secrets) is None


@pytest.mark.parametrize("named", [str(SECRETS_DIR), f"{SECRETS_DIR}/kernelevo_redis_password", "/run", "/"])
def test_the_setting_may_not_name_the_secrets_folder(monkeypatch, app_key, named):
    monkeypatch.setenv(READ_ONLY_VARIABLE, f"{app_key.parent.parent / 'pkgs'}:{named}")
    with pytest.raises(SecretBindRefused) as caught:
        system_binds()
    message = str(caught.value)
    assert message.startswith(f"{READ_ONLY_VARIABLE} names {named!r}, which would show {SECRETS_DIR} ")
    assert f"take it out of {READ_ONLY_VARIABLE}" in message


@pytest.mark.parametrize("named", ["keys", "keys/app.pem", "link", "."])
def test_the_setting_may_not_name_the_app_key_or_a_folder_holding_it(monkeypatch, app_key, named):
    path = app_key.parent.parent / named
    monkeypatch.setenv(READ_ONLY_VARIABLE, str(path))
    with pytest.raises(SecretBindRefused, match=f"^{READ_ONLY_VARIABLE} names '{path}', which would show {app_key} "):
        system_binds()


def test_other_folders_in_the_setting_are_still_bound(monkeypatch, app_key):
    packages = app_key.parent.parent / "pkgs"
    monkeypatch.setenv(READ_ONLY_VARIABLE, str(packages))
    inside = {b.inside for b in system_binds()}
    assert packages.resolve() in inside
    assert not any(p == app_key or app_key.is_relative_to(p) or p.is_relative_to(SECRETS_DIR) for p in inside)


def test_a_task_cannot_ask_for_the_secrets(app_key, tmp_path):
    """A KernelBench task file from a user's repository names the folders it imports from (``load_op``): naming
    ``/run``, the root or the key's folder binds nothing (only the task's own folder and repositories this process
    generated tasks for are bound, tests/sandbox/test_task_roots.py), and a bind of them is refused anyway."""
    from evaluator import roles

    repo = tmp_path / "repo"
    repo.mkdir()
    for hostile in ("/run", "/", str(app_key.parent)):
        task = repo / "task.py"
        task.write_text(f"from kernelevo.op_task import load_op\n_op = load_op({hostile!r}, 'ops.py::f')\n")
        (tmp_path / "private").mkdir(exist_ok=True)
        assert roles.task_read_roots(task) == [repo.resolve()]
        with pytest.raises(SecretBindRefused, match=f"^the sandbox's read-only folders .* names '{hostile}'"):
            roles.policy("reference", "cpu", tmp_path / "private", read_only=[Path(hostile)])
    inside = repo / "pkg"
    inside.mkdir()
    task.write_text(f"from kernelevo.op_task import load_op\n_op = load_op({str(inside)!r}, 'ops.py::f')\n")
    allowed = roles.policy("reference", "cpu", tmp_path / "private", read_only=roles.task_read_roots(task))
    assert inside.resolve() in {b.inside for b in allowed.binds}


def test_the_import_path_and_the_system_directories_are_checked_too(monkeypatch, tmp_path):
    """A key kept inside a folder every sandbox sees stops the sandbox, rather than being shown."""
    monkeypatch.delenv(READ_ONLY_VARIABLE, raising=False)
    packages = tmp_path / "site-packages"
    packages.mkdir()
    monkeypatch.syspath_prepend(str(packages))
    with pytest.raises(SecretBindRefused, match=f"^the Python installation, its sys.path or PATH names '{packages}'"):
        system_binds(secrets=[packages / "app.pem"])
    with pytest.raises(SecretBindRefused, match="^the system directories every sandbox sees names '/usr'"):
        system_binds(secrets=["/usr/local/etc/kernelevo/app.pem"])
    assert system_binds(secrets=[tmp_path / "elsewhere" / "app.pem"])
