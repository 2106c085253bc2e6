"""deploy/compose.yaml is a deployment that can work and keeps its promises.

Structure first (every service's image or build target exists, every variable it sets is a real setting derived
from ``kernelevo.settings.Settings``, secrets are files that git ignores, never environment values, Redis keeps
its durable configuration, workers reach only Redis and the model network, one GPU each); then, where Docker's
Compose plugin is installed, ``docker compose config`` (skipped, saying so, where it is not).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import dockerfile_model  # tests/deploy/, on sys.path as the test's own folder
import pytest
import redis
import yaml
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "workflows"))  # the worker tier's process helpers
from workflow_harness import free_port, wait_for  # noqa: E402

DEPLOY = ROOT / "deploy"
COMPOSE_FILE = DEPLOY / "compose.yaml"
COMPOSE = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
SERVICES: dict[str, dict] = COMPOSE["services"]
DOCKERFILE = dockerfile_model.parse(ROOT / "Dockerfile")
WORKERS = sorted(name for name in SERVICES if name.startswith("worker-"))
INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<rest>[^}]*)\}")
EXACT_TAG = re.compile(r"^[\w./-]+:\d+\.\d+(\.\d+)?[\w.-]*(@sha256:[0-9a-f]{64})?$")


def _settings() -> dict[str, typing.Any]:
    """``KERNELEVO_<NAME>`` -> the settings field, from the settings model itself."""
    from kernelevo.settings import Settings

    assert Settings.model_config.get("env_prefix") == "KERNELEVO_"
    fields = {}
    for name, info in Settings.model_fields.items():
        assert info.validation_alias is None and info.alias is None, f"{name} has an alias: derive its variable"
        fields[f"KERNELEVO_{name.upper()}"] = info
    return fields


SETTINGS = _settings()


def _is_secret(info: typing.Any) -> bool:
    annotation = info.annotation
    return annotation is SecretStr or SecretStr in typing.get_args(annotation)


SECRET_SETTINGS = {name for name, info in SETTINGS.items() if _is_secret(info)}


def _environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def _command(service: dict) -> list[str]:
    command = service.get("command")
    if command is None:
        stage = DOCKERFILE.stage(service["build"]["target"])
        return DOCKERFILE.inherited(stage, "CMD").words()
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def _secrets_of(service: dict) -> set[str]:
    return {s if isinstance(s, str) else s["source"] for s in service.get("secrets", [])}


def _networks_of(service: dict) -> set[str]:
    networks = service.get("networks", ["default"])
    return set(networks) if isinstance(networks, list) else set(networks)


def test_the_services_are_there():
    assert {"redis", "bot", "bot-worker"} <= set(SERVICES), sorted(SERVICES)
    assert WORKERS, "no worker-* service: one per GPU"
    assert "version" not in COMPOSE, "the top-level `version` key is obsolete in the Compose specification"


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_image_or_build_target_exists(name):
    service = SERVICES[name]
    build = service.get("build")
    if build is None:
        image = service["image"]
        assert EXACT_TAG.match(image), f"{name}: image {image} is not pinned by an exact version tag"
        return
    context = (DEPLOY / build["context"]).resolve()
    assert context == ROOT, f"{name}: build context {context} is not the repository root"
    dockerfile = context / build.get("dockerfile", "Dockerfile")
    assert dockerfile == ROOT / "Dockerfile"
    finals = {s.name for s in DOCKERFILE.final_stages()}
    assert build["target"] in finals, f"{name}: target {build['target']} is not a final stage ({sorted(finals)})"
    assert "image" in service and ":" in service["image"] and not service["image"].endswith(":latest")


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_variable_set_is_a_real_setting_and_no_secret(name):
    for variable, value in _environment(SERVICES[name]).items():
        assert variable in SETTINGS, (
            f"{name}: {variable} is not a setting of kernelevo/settings.py (a typo is silently ignored)")
        assert variable not in SECRET_SETTINGS, f"{name}: {variable} is a secret: mount it as a file instead"
        assert not re.search(r"://[^/@\s]*:[^/@\s]*@", value), f"{name}: {variable} carries a password in its URL"
        for match in INTERPOLATION.finditer(value):
            taken = f"KERNELEVO_{match['name'].removeprefix('KERNELEVO_')}"
            assert taken not in SECRET_SETTINGS, f"{name}: {variable} takes the secret {match['name']} from .env"
            assert not re.search(r"SECRET|PASSWORD|TOKEN|KEY$", match["name"]), (
                f"{name}: {variable} interpolates {match['name']}, which looks like a secret")
    assert "env_file" not in SERVICES[name], f"{name}: env_file would put whatever the file holds in the environment"


def test_fixed_values_are_valid_settings():
    """The literal values compose sets validate as the settings they are (interpolated ones are the operator's)."""
    from kernelevo.settings import Settings

    for name, service in SERVICES.items():
        fixed = {k: v for k, v in _environment(service).items() if not INTERPOLATION.search(v)}
        if fixed:
            Settings.model_validate({k.removeprefix("KERNELEVO_").lower(): v for k, v in fixed.items()})
        if "KERNELEVO_ISOLATION" in fixed:
            assert fixed["KERNELEVO_ISOLATION"] == "required", f"{name}: untrusted code must never run unsandboxed"


def test_secrets_are_files_that_git_ignores():
    secrets = COMPOSE["secrets"]
    for name, spec in secrets.items():
        assert set(spec) == {"file"}, f"secret {name} must come from a file, not {sorted(spec)}"
        path = (DEPLOY / spec["file"]).resolve()
        assert path.parent == DEPLOY / "secrets", f"secret {name}: keep it in deploy/secrets/, not {path.parent}"
        if shutil.which("git") and (ROOT / ".git").exists():
            done = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT, timeout=30)
            assert done.returncode == 0, f"git would track the secret file {path.relative_to(ROOT)}"
    used = set().union(*(_secrets_of(s) for s in SERVICES.values()))
    assert used <= set(secrets), f"services mount undefined secrets: {sorted(used - set(secrets))}"
    assert set(secrets) <= used, f"secrets no service mounts: {sorted(set(secrets) - used)}"


def test_every_secret_is_named_after_the_setting_it_fills():
    """Docker mounts secret NAME at /run/secrets/NAME, and the settings read kernelevo_<field> from there: each
    secret must be named after a secret setting, and no service may also name it in an environment variable."""
    from kernelevo.settings import SECRETS_DIR

    for secret in COMPOSE["secrets"]:
        variable = secret.upper()
        assert variable in SECRET_SETTINGS, (
            f"secret {secret} fills no setting: name it kernelevo_<field> of a SecretStr setting"
            f" ({sorted(v.lower() for v in SECRET_SETTINGS)})")
    for name, service in SERVICES.items():
        env = _environment(service)
        for secret in _secrets_of(service):
            assert secret.upper() not in env, f"{name}: {secret.upper()} in the environment would shadow the file"
        for entry in service.get("secrets", []):
            assert isinstance(entry, str) or entry.get("target", entry["source"]) == entry["source"], (
                f"{name}: secret {entry['source']} is mounted under another name, which no setting reads")
        assert not any(v.startswith(f"{SECRETS_DIR}/") for v in env.values()), (
            f"{name}: a setting points at a secret file; mount it under its setting's name instead")


def test_the_bot_services_hold_the_app_credentials_and_workers_none():
    for name in ("bot", "bot-worker"):
        service = SERVICES[name]
        assert {"kernelevo_github_private_key", "kernelevo_webhook_secret"} <= _secrets_of(service)
    for name in WORKERS:
        held = _secrets_of(SERVICES[name])
        assert not held & {"kernelevo_github_private_key", "kernelevo_webhook_secret"}, (
            f"{name} must hold no GitHub credential")
        assert not any("GITHUB" in v or "WEBHOOK" in v for v in _environment(SERVICES[name]))


def test_redis_keeps_its_durable_configuration():
    redis = SERVICES["redis"]
    mounts = [v for v in redis["volumes"] if isinstance(v, str) and v.startswith("./redis.conf:")]
    assert len(mounts) == 1 and mounts[0].endswith(":ro"), "mount deploy/redis.conf read-only"
    inside = mounts[0].split(":")[1]
    command = " ".join(_command(redis))
    assert f"redis-server {inside}" in command, "redis-server must start from the mounted deploy/redis.conf"
    config = {}
    for line in (DEPLOY / "redis.conf").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            config[key.lower()] = value.strip()
    assert config["appendonly"] == "yes" and config["maxmemory-policy"] == "noeviction"
    assert config["save"] == '""', "RDB snapshots are off: the AOF is the backup (docs/operations.md)"
    for flag in ("--appendonly", "--maxmemory-policy", "--save", "--appendfsync", "--maxmemory "):
        assert flag not in command, f"the compose command overrides {flag.strip()} of deploy/redis.conf"
    assert "--dir /data" in command and any(str(v).endswith(":/data") for v in redis["volumes"])
    assert "--requirepass" in command and "/run/secrets/kernelevo_redis_password" in command
    assert "redis-cli ping" in " ".join(redis["healthcheck"]["test"])


def _redis_argv(tmp_path: Path, password: str, port: int) -> list[str]:
    """The compose command of the Redis service as the container runs it, pointed at this machine: the repo's
    deploy/redis.conf for the mounted one, a temporary folder for the volume, loopback and a free port."""
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        pytest.skip("redis-server is not installed (deploy/system-packages.sh installs it)")
    shell = _command(SERVICES["redis"])
    assert shell[:2] == ["sh", "-c"] and shell[2].startswith("exec redis-server ")
    secret = '"$(cat /run/secrets/kernelevo_redis_password)"'
    assert secret in shell[2].replace("$$", "$")
    script = shell[2].replace("$$", "$").replace(secret, shlex.quote(password))
    argv = shlex.split(script)[1:]
    mount = next(v for v in SERVICES["redis"]["volumes"] if str(v).startswith("./redis.conf:")).split(":")[1]
    argv[argv.index(mount)] = str(DEPLOY / "redis.conf")
    argv[argv.index("--dir") + 1] = str(tmp_path)
    argv[argv.index("--bind") + 1] = "127.0.0.1"  # the container listens on its internal network only
    return [redis_server if a == "redis-server" else a for a in argv] + ["--port", str(port)]


def test_redis_starts_durable_and_password_protected_from_the_compose_command(tmp_path):
    """A real redis-server, started the way the compose service starts it, keeps deploy/redis.conf's promises."""
    port = free_port()
    password = "0123456789abcdef"
    log = (tmp_path / "redis.log").open("wb")
    server = subprocess.Popen(_redis_argv(tmp_path, password, port), stdout=log, stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(port=port, password=password, socket_connect_timeout=5, decode_responses=True)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                assert server.poll() is None, (tmp_path / "redis.log").read_text()
                return False

        wait_for(up, "redis-server to accept connections", timeout=30)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, socket_connect_timeout=5).ping()
        config = client.config_get("*")
        assert config["appendonly"] == "yes" and config["appendfsync"] == "everysec"
        assert config["maxmemory-policy"] == "noeviction" and int(config["maxmemory"]) == 4 * 2**30
        assert config["save"] == "" and config["dir"] == str(tmp_path)
        client.set("kernelevo:probe", "1")
        assert (tmp_path / "appendonlydir").is_dir(), "the append-only file lives in the volume (--dir)"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_clients_reach_the_password_protected_redis_through_the_secret_file(tmp_path, monkeypatch):
    """The one secret file both sides read: Redis's --requirepass (the compose command) and the clients' settings
    (kernelevo_redis_password under the secrets folder), with the URL a bot or worker service sets."""
    from kernelevo.settings import load_settings
    from workflows.celery_app import make_app
    from workflows.redis_conn import connect, redact_url

    port = free_port()
    password = "p@ss/w:rd+%41"  # characters a URL would otherwise misread: the settings percent-encode them
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "kernelevo_redis_password").write_text(password + "\n")
    data = tmp_path / "data"
    data.mkdir()
    log = (tmp_path / "redis.log").open("wb")
    server = subprocess.Popen(_redis_argv(data, password, port), stdout=log, stderr=subprocess.STDOUT)
    try:
        url = _environment(SERVICES["bot"])["KERNELEVO_REDIS_URL"].replace("redis:6379", f"127.0.0.1:{port}")
        monkeypatch.setenv("KERNELEVO_REDIS_URL", url)
        settings = load_settings(secrets)
        assert password not in repr(settings) and redact_url(settings.redis_url) == f"redis://:***@127.0.0.1:{port}/0"

        def up() -> bool:
            try:
                return bool(connect(settings.redis_url).ping())
            except Exception:
                assert server.poll() is None, (tmp_path / "redis.log").read_text()
                return False

        wait_for(up, "redis-server to accept the password from the secret file", timeout=30)
        with make_app(settings).connection_for_write() as connection:  # Celery's broker connection
            connection.ensure_connection(max_retries=3)
        (secrets / "kernelevo_redis_password").write_text("wrong-password")
        with pytest.raises(redis.AuthenticationError):
            connect(load_settings(secrets).redis_url, check=False).ping()
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_networks_confine_the_workers():
    networks = COMPOSE["networks"]
    assert networks["queue"].get("internal") is True and networks["model"].get("internal") is True
    assert _networks_of(SERVICES["redis"]) == {"queue"}
    for name in WORKERS:
        assert _networks_of(SERVICES[name]) == {"queue", "model"}, f"{name} reaches more than Redis and the model"
        assert "ports" not in SERVICES[name]
    for name in ("bot", "bot-worker"):
        assert "model" not in _networks_of(SERVICES[name]) and "queue" in _networks_of(SERVICES[name])
    published = {name for name, s in SERVICES.items() if s.get("ports")}
    assert published == {"bot"}, f"only the webhook service is published, not {sorted(published - {'bot'})}"
    assert all(str(p).startswith("127.0.0.1:") for p in SERVICES["bot"]["ports"]), "publish on loopback (TLS proxy)"


def test_one_worker_per_gpu():
    seen: dict[str, str] = {}
    hostnames = set()
    for name in WORKERS:
        service = SERVICES[name]
        devices = service["deploy"]["resources"]["reservations"]["devices"]
        assert len(devices) == 1 and devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
        ids = devices[0].get("device_ids", [])
        assert len(ids) == 1 and "count" not in devices[0], f"{name}: reserve exactly one GPU by id"
        assert ids[0] not in seen, f"{name} and {seen.get(ids[0])} reserve the same GPU {ids[0]}"
        seen[ids[0]] = name
        assert "CUDA_VISIBLE_DEVICES" not in _environment(service), f"{name}: the reservation chooses the GPU"
        assert _command(service) == ["kernelevo", "worker", "--gpu", "0"], (
            f"{name}: the container sees only its GPU, as GPU 0, and the health check pings gpu0@<hostname>")
        assert service["hostname"] not in hostnames, f"{name}: hostnames name the Celery nodes: keep them unique"
        hostnames.add(service["hostname"])
        assert re.fullmatch(r"[A-Za-z0-9_.-]+", service["hostname"])


def test_workers_allow_bubblewrap_with_no_privilege():
    for name in WORKERS:
        service = SERVICES[name]
        options = set(service["security_opt"])
        assert "no-new-privileges:true" in options
        assert "systempaths=unconfined" in options, f"{name}: Docker's masked /proc stops the sandbox's own /proc"
        assert any(o.startswith("seccomp=") for o in options) and any(o.startswith("apparmor=") for o in options)
        assert not service.get("privileged") and not service.get("cap_add"), f"{name}: no privilege is needed"
        assert service.get("cap_drop") == ["ALL"]
        assert _environment(service).get("KERNELEVO_ISOLATION", "required") == "required"
    for name in ("redis", "bot", "bot-worker"):
        options = set(SERVICES[name].get("security_opt", []))
        assert options == {"no-new-privileges:true"}, f"{name} runs no sandbox: keep Docker's default confinement"
        assert SERVICES[name].get("cap_drop") == ["ALL"] and SERVICES[name].get("read_only") is True


def _writable_mounts(service: dict) -> set[str]:
    tmpfs = service.get("tmpfs", [])
    mounts = {t.split(":")[0] for t in ([tmpfs] if isinstance(tmpfs, str) else tmpfs)}
    return mounts | {str(v).split(":")[1] for v in service.get("volumes", []) if not str(v).endswith(":ro")}


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_read_only_roots_leave_the_needed_folders_writable(name):
    """With a read-only root, /tmp and the cache dir (the bot's checkouts, the workers' compile caches) must be
    mounts; a cache volume shared by two containers would let each sweep the other's live checkouts by pid."""
    service = SERVICES[name]
    assert service.get("read_only") is True, f"{name}: run with a read-only root"
    writable = _writable_mounts(service)
    if name == "redis":
        assert "/data" in writable
        return
    assert "/tmp" in writable, f"{name}: /tmp must be a tmpfs"
    cache = _environment(service).get("KERNELEVO_CACHE_DIR")
    assert cache and cache in writable, f"{name}: KERNELEVO_CACHE_DIR ({cache}) is not on a writable mount"
    volume = next(str(v).split(":")[0] for v in service["volumes"] if str(v).split(":")[1] == cache)
    sharing = [other for other, s in SERVICES.items() if other != name
               and any(str(v).split(":")[0] == volume for v in s.get("volumes", []))]
    assert not sharing, f"{name} shares its cache volume {volume} with {sharing}"


def test_one_scheduler_and_no_celery_beat():
    """Sweeps are scheduled by the bot worker's tick (a turn taken in Redis); a `celery beat` would be a second,
    unused scheduler."""
    commands = {name: _command(service) for name, service in SERVICES.items()}
    assert not [n for n, c in commands.items() if "beat" in c], "no celery beat: the bot worker schedules sweeps"
    assert commands["bot-worker"][:2] == ["kernelevo", "bot-worker"]
    assert "--no-bot-worker" in commands["bot"], "the web service must not start a second bot worker of its own"


def test_every_long_running_service_has_a_health_check():
    for name, service in SERVICES.items():
        if "healthcheck" in service:
            test = service["healthcheck"]["test"]
            assert not service["healthcheck"].get("disable") and test not in (["NONE"], "NONE")
            continue
        stage = DOCKERFILE.stage(service["build"]["target"])
        assert DOCKERFILE.inherited(stage, "HEALTHCHECK") is not None, f"{name} has no health check"
    worker_check = " ".join(SERVICES["bot-worker"]["healthcheck"]["test"])
    command = _command(SERVICES["bot-worker"])
    node = command[command.index("--name") + 1]
    assert f"-d {node}" in worker_check and "inspect ping" in worker_check, "ping the bot worker's own node"
    assert SERVICES["bot-worker"]["hostname"] == node.split("@")[1]


def _docker_compose() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, timeout=60).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy and subprocess.run([legacy, "version"], capture_output=True, timeout=60).returncode == 0:
        return [legacy]
    return None


def test_docker_compose_accepts_the_file(tmp_path):
    compose = _docker_compose()
    if compose is None:
        pytest.skip("Docker's Compose plugin is not installed: the file was validated structurally only")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KERNELEVO_GITHUB_APP_ID": "1"}
    done = subprocess.run([*compose, "--project-directory", str(DEPLOY), "-f", str(COMPOSE_FILE), "config",
                           "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"docker compose config:\n{done.stderr}"
