"""What each sandboxed role of the verifier may see (parent side, pure except for reading the task's text).

- ``reference``: the task and the user's repository (read-only), the session's input folder (it writes the
  inputs there) and the candidates' folders (read-only: it loads their outputs), its own private folder.
- ``candidate``: its own private folder only (the parent writes the candidate's source there; its outputs go
  to ``outbox/``). Inputs and the reference model's weights arrive as file descriptors with each request, so
  no input file is ever visible in its filesystem (not even at import time).
- ``proposer``: the task and the user's repository (read-only; the offline proposer traces the task),
  its own private folder.

Every role: the system read-only, no network, its own PID/user/IPC namespaces (:mod:`kernelevo.sandbox`).
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluator.placement import load_op_calls
from kernelevo.sandbox import Bind, SandboxPolicy, gpu_binds, system_binds
from kernelevo.sandbox.policy import task_root_allowed

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Variables a sandboxed process may inherit (values from the parent); everything else is dropped, and
# anything that looks like a credential is dropped even when listed.
ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "TORCH_CUDA_ARCH_LIST",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "CC", "CXX", "OMP_NUM_THREADS", "MAX_JOBS", "TERM",
)
SECRET_WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "AUTH", "COOKIE",
                "SESSION", "REDIS", "GITHUB", "WEBHOOK")


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


# Account names as machines that run ML code have them (cloud images, notebooks, CI runners, people's own).
ACCOUNT_NAMES = (
    "ubuntu", "ec2-user", "admin", "jovyan", "runner", "dev", "ml", "research", "train", "gpu", "alex", "sam", "maria",
    "chen", "priya", "omar", "anna", "david", "li", "yuki", "jose", "emma", "noah", "fatima", "ivan", "kim", "lucas",
    "mia", "raj", "sara", "tom", "wei", "zoe", "ben", "eli", "hana", "jin", "kai", "lea", "max", "nina", "paul",
    "rosa", "tara", "umar", "vera", "yan", "ali", "ada", "leo",
)


@dataclass(frozen=True)
class Identity:
    """Who a sandboxed process runs as: root (``user`` None: ``HOME=/root``, no ``USER``, as in a container or a
    notebook) or an account of its own (``<homes>/<user>``); ``uid``: its user and group id inside the sandbox."""

    user: str | None
    uid: int
    homes: str = "/home"  # the folder of people's homes (clusters have /home/<group> or /u)

    @property
    def home(self) -> Path:
        return Path("/root") if self.user is None else Path(self.homes) / self.user

    def passwd(self, host: str) -> str:
        """The sandbox's ``/etc/passwd``: the host's system accounts (ids below 1000, ``nobody``) and this one,
        whose entry names this home (pure): ``getpwuid(getuid())`` agrees with ``HOME``, as after a login."""
        keep = _system_lines(host, self.uid)
        mine = (f"{self.user}:x:{self.uid}:{self.uid}::{self.home}:/bin/bash" if self.user is not None else
                next((line for line in host.splitlines() if _field(line, 2) == "0"), "root:x:0:0:root:/root:/bin/bash"))
        return "\n".join([*keep, mine]) + "\n"

    def group(self, host: str) -> str:
        """The sandbox's ``/etc/group``: the host's system groups and this account's own (pure)."""
        keep = _system_lines(host, self.uid)
        mine = f"{self.user}:x:{self.uid}:" if self.user is not None else "root:x:0:"
        return "\n".join([*keep, mine]) + "\n"


def _field(line: str, index: int) -> str:
    parts = line.split(":")
    return parts[index] if len(parts) > index else ""


def _system_lines(host: str, uid: int) -> list[str]:
    """The passwd or group lines of system accounts or groups (id below 1000, or nobody/nogroup's 65534), but the
    one of ``uid``, which the sandbox's own account takes."""
    def system(number: str) -> bool:
        return number.isdigit() and number != str(uid) and (int(number) < 1000 or int(number) == 65534)
    return [line for line in host.splitlines() if system(_field(line, 2))]


HOME_FOLDERS = ("/home/users", "/home/staff", "/home/research", "/u", "/users", "/data/home", "/mnt/home")
_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "ch", "sh",
           "th", "br", "kr", "st", "")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ia", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "k", "m", "x")


def draw_identity(caller_uid: int | None = None) -> Identity:
    """A plausible identity, drawn afresh for every process, so that no value of HOME, USER, the password database's
    entry or a path under the home is the same in every verifier process (a fixed ``/home/user`` was one: a kernel
    right only there passed the guarded and the plain run alike). A quarter are root in ``/root``; the others an
    account of their own, named half from :data:`ACCOUNT_NAMES`, half of random syllables (a kernel testing the list
    is wrong half the time here), some with digits after them, a third with a home outside ``/home/<name>``
    (:data:`HOME_FOLDERS`), with the caller's uid (1000 where the caller is root). Half the processes have the
    layout most users have (``/home/<name>``): a kernel right only there is seen in any of the others."""
    if secrets.randbelow(4) == 0:
        return Identity(None, 0)
    if secrets.randbelow(2):
        name = secrets.choice(ACCOUNT_NAMES)
    else:
        name = "".join(secrets.choice(_ONSETS) + secrets.choice(_VOWELS) + secrets.choice(_CODAS)
                       for _ in range(2 + secrets.randbelow(2)))
    if secrets.randbelow(3) == 0:
        name += str(secrets.randbelow(100))
    uid = os.getuid() if caller_uid is None else caller_uid
    homes = "/home" if secrets.randbelow(3) else secrets.choice(HOME_FOLDERS)
    return Identity(name, uid or 1000, homes)


# Variables many users' shells or images have and a kernel has no reason to read (none configures torch, Triton or
# CUDA), each present in a process's environment or not, drawn afresh for every process: a kernel that tests them
# ("none of these set" is what a sandbox built from an allowlist alone would always show) meets both states across
# the guarded and the plain process (red team s29). PYTHON* ones are ignored by the interpreter (-I) and only seen.
SHELL_EXTRAS = (
    ("LS_COLORS", "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:ex=01;32"),
    ("LESSOPEN", "| /usr/bin/lesspipe %s"), ("LESSCLOSE", "/usr/bin/lesspipe %s %s"), ("EDITOR", "vim"),
    ("PAGER", "less"), ("COLORTERM", "truecolor"), ("HISTCONTROL", "ignoredups:ignorespace"), ("HISTSIZE", "1000"),
    ("LANGUAGE", "en_US:en"), ("MOTD_SHOWN", "pam"), ("PYTHONUNBUFFERED", "1"), ("DEBIAN_FRONTEND", "noninteractive"),
    ("PYENV_ROOT", "/opt/pyenv"), ("CONDA_EXE", "/opt/conda/bin/conda"), ("PIP_NO_CACHE_DIR", "1"),
    ("PYTHONDONTWRITEBYTECODE", "1"), ("NVIDIA_REQUIRE_CUDA", "cuda>=12.4"), ("HF_HOME", "/data/hf"),
    ("WANDB_MODE", "offline"), ("JPY_PARENT_PID", "1"), ("GIT_PAGER", "cat"), ("VISUAL", "vim"),
    ("PYTHON_VERSION", "3.12.3"),
)


def draw_shell_extras() -> dict[str, str]:
    """A random half, about, of :data:`SHELL_EXTRAS` (each variable present with probability 1/2)."""
    return {name: value for name, value in SHELL_EXTRAS if secrets.randbelow(2)}


def sandbox_environment(device: str, private: Path, parent_env: dict[str, str] | None = None,
                        identity: Identity | None = None) -> dict[str, str]:
    """The environment of a sandboxed process: an allowlist of the parent's, never a secret.

    Nothing in it says "you are being verified": no KernelEvo variable, the caches are the usual ones under
    a private HOME of a drawn account (``identity``; what a user's program sees on a fresh machine).
    """
    identity = identity or draw_identity()
    source = os.environ if parent_env is None else parent_env
    env = {k: v for k, v in source.items() if k in ENV_ALLOWLIST and not looks_secret(k)}
    (private / "home").mkdir(parents=True, exist_ok=True)  # bound at identity.home (see policy)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # HOME names a path any machine may have, not the verifier's work folder (a kernel reading it must not learn
    # it is being verified), and the variables a login shell sets are there as on a user's machine (their absence
    # was a tell); no TMPDIR: the sandbox's /tmp is a private tmpfs, as /tmp is on a user's machine. Nothing only
    # the verifier would set (the processes start with -I: PYTHON* variables would be ignored anyway).
    env.update(HOME=str(identity.home), SHELL="/bin/bash", SHLVL="1", _=sys.executable)  # as bash exports them
    if identity.user is not None:  # a login sets them; root in a container has neither
        env.update(USER=identity.user, LOGNAME=identity.user)
    env.setdefault("TERM", "xterm-256color")
    for name, value in draw_shell_extras().items():
        env.setdefault(name, value)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # as any program that runs Triton on a CPU sets it
        # No GPU: the sandbox binds no GPU device (gpu_binds is for cuda processes only), so nothing needs hiding.
        # A fixed value here was a tell (a CPU program's CUDA_VISIBLE_DEVICES is usually unset: a kernel right only
        # where it was "" passed every check), and so would be the CPU worker's own "".
        env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def _load_op_roots(source: str) -> list[Path]:
    """The existing folders a task's text names as ``load_op`` roots."""
    return [Path(root).resolve() for root, _ in load_op_calls(source) if Path(root).is_dir()]


def task_source_roots(source: str, task_dir: Path | None = None) -> list[Path]:
    """The repositories a task's text imports from that may be bound into its sandboxes: for a task generated
    from a decorated op (``load_op('<repo root>', '<op id>')``), the op's repository, which the generator vouched
    for (:func:`kernelevo.sandbox.policy.vouch_for_task_root`); a root inside the task's own folder. Any other root
    the text names (a KernelBench file from a PR naming ``/`` or another job's checkout) is left out."""
    return [r for r in _load_op_roots(source) if task_root_allowed(r, task_dir)]


def refused_task_roots(source: str, task_dir: Path | None = None) -> list[Path]:
    """The ``load_op`` roots of a task's text that :func:`task_source_roots` leaves out (for the error message)."""
    return [r for r in _load_op_roots(source) if not task_root_allowed(r, task_dir)]


def task_read_roots(task_path: Path) -> list[Path]:
    """Folders a task needs to be imported: its own folder and the repositories its text may import from."""
    try:
        source = task_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        source = ""
    folder = task_path.resolve().parent
    return [folder, *task_source_roots(source, folder)]


def policy(role: str, device: str, private: Path, *, read_only: Sequence[Path] = (),
           writable: Sequence[Path] = (), memory_mb: int | None = None, workspace: str | None = None) -> SandboxPolicy:
    """The sandbox of one verifier process (see the module docstring for what each role gets), running as a
    freshly drawn account (:func:`draw_identity`). ``workspace``: a folder of its home the process works in (a
    candidate's repository, :mod:`evaluator.placement`); otherwise its private folder."""
    identity = draw_identity()
    # The project's packages, not its checkout (.git, runs/, untracked files stay out of view).
    packages = [PROJECT_ROOT / name for name in ("kernelevo", "evaluator")]
    accounts = _account_files(identity, private)
    binds = [*(b for b in system_binds([*packages, *read_only]) if b.inside not in accounts.values()),
             Bind(source=private.resolve(), writable=True),
             Bind(source=(private / "home").resolve(), target=identity.home, writable=True),
             *(Bind(source=source.resolve(), target=target) for source, target in accounts.items())]
    binds += [Bind(source=Path(p).resolve(), writable=True) for p in writable]
    if device == "cuda":
        binds += gpu_binds()
    env = sandbox_environment(device, private, identity=identity)  # makes the private home
    cwd = private
    if workspace is not None:
        (private / "home" / workspace).mkdir(parents=True, exist_ok=True)
        cwd = identity.home / workspace
    return SandboxPolicy(name=role, binds=tuple(binds), env=env, cwd=cwd, gpu=device == "cuda", memory_mb=memory_mb,
                         uid=identity.uid)


def _account_files(identity: Identity, private: Path) -> dict[Path, Path]:
    """The sandbox's password and group files, written beside its private folder (not inside it: the process
    cannot rewrite them) and bound over the host's; the home gets the shell's start-up files, as a new account's
    does (``/etc/skel``). Returns {file here: where the sandbox sees it}."""
    made = {}
    (private / "home").mkdir(parents=True, exist_ok=True)
    for name, render in (("passwd", identity.passwd), ("group", identity.group)):
        try:
            host = Path("/etc", name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            host = ""
        path = private.parent / f"{private.name}.{name}"
        path.write_text(render(host), encoding="utf-8")
        made[path] = Path("/etc", name)
    skel = Path("/etc/skel")
    for item in (skel.iterdir() if skel.is_dir() else ()):
        if item.is_file() and not item.is_symlink():
            (private / "home" / item.name).write_bytes(item.read_bytes())
    return made
