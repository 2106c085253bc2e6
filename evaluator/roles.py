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
    """Who a sandboxed process runs as: its account name and home (where its private home folder is bound)."""

    user: str

    @property
    def home(self) -> Path:
        return Path("/home") / self.user


_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "ch", "sh",
           "th", "br", "kr", "st", "")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ia", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "k", "m", "x")


def draw_identity() -> Identity:
    """A plausible account, drawn afresh for every process: no value of HOME, USER or a path under the home is
    the same in every verifier process, so none tells a kernel it is being verified (a fixed ``/home/user`` was
    one: a kernel right only there passed the guarded and the plain run alike). Half the names come from
    :data:`ACCOUNT_NAMES`, half are made of random syllables (a kernel testing the list is wrong half the time
    here), some with digits after them."""
    if secrets.randbelow(2):
        name = secrets.choice(ACCOUNT_NAMES)
    else:
        name = "".join(secrets.choice(_ONSETS) + secrets.choice(_VOWELS) + secrets.choice(_CODAS)
                       for _ in range(2 + secrets.randbelow(2)))
    if secrets.randbelow(3) == 0:
        name += str(secrets.randbelow(100))
    return Identity(name)


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
    env.update(HOME=str(identity.home), USER=identity.user, LOGNAME=identity.user, SHELL="/bin/bash", SHLVL="1",
               _=sys.executable)  # what bash exports to a program it starts
    env.setdefault("TERM", "xterm-256color")
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
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
    binds = [*system_binds([*packages, *read_only]), Bind(source=private.resolve(), writable=True),
             Bind(source=(private / "home").resolve(), target=identity.home, writable=True)]
    binds += [Bind(source=Path(p).resolve(), writable=True) for p in writable]
    if device == "cuda":
        binds += gpu_binds()
    env = sandbox_environment(device, private, identity=identity)  # makes the private home
    cwd = private
    if workspace is not None:
        (private / "home" / workspace).mkdir(parents=True, exist_ok=True)
        cwd = identity.home / workspace
    return SandboxPolicy(name=role, binds=tuple(binds), env=env, cwd=cwd, gpu=device == "cuda", memory_mb=memory_mb)
