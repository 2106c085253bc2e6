"""What a sandboxed process may see, as data, and the bubblewrap command line that enforces it.

:func:`bwrap_argv` (pure) turns a :class:`SandboxPolicy` into argv for ``bwrap`` (Debian's ``bubblewrap``), and
:func:`system_binds` (reading the host's paths and settings) lists the read-only view of the machine every
sandbox gets (system directories, the Python installation, the import path), nothing else, and refuses any of
them that would show a secret (the secrets folder, the App's private key). Everything the policy does not name
is absent inside: home directories, ``/tmp``, ``/var``, ``/run``, other processes (a PID namespace), the network
(a network namespace with only a loopback that nothing listens on), System V IPC and the host name (their own
namespaces), every capability. The command is pid 1 of its namespace (``--as-pid-1``): no helper process of
bubblewrap's shares the sandbox with it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# Files of /etc that programs need to start (dynamic loader, user names, time zone); /etc as a whole may hold
# deployment secrets, so it is never bound whole.
ETC_FILES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "localtime", "os-release",
    "alternatives", "hosts", "debian_version", "lsb-release", "mime.types", "ssl/openssl.cnf",
)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
GPU_DEVICE_PREFIXES = ("nvidia", "dri")  # /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/dri/...
SHM_MB = 256  # the private /dev/shm (bwrap's /dev would otherwise give half the host's memory)
READ_ONLY_VARIABLE = "KERNELEVO_SANDBOX_READ_ONLY"  # extra folders every sandbox sees read-only (':'-separated)


class Bind(BaseModel):
    """A path of the host made visible inside the sandbox (at the same path unless ``target`` is given)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Path
    target: Path | None = None
    writable: bool = False
    device: bool = False  # a device node (bound with device access)

    @property
    def inside(self) -> Path:
        return self.target or self.source


class SandboxPolicy(BaseModel):
    """Everything a sandboxed process gets. The network, other processes and every path not listed are absent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="what runs inside, for logs and cgroup names (e.g. 'candidate')")
    binds: tuple[Bind, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="the whole environment (nothing is inherited)")
    cwd: Path = Path("/tmp")
    gpu: bool = False
    memory_mb: int | None = Field(default=None, ge=64, description="cgroup memory.max where cgroup v2 is delegated")
    pids_max: int | None = Field(default=512, ge=8, description="cgroup pids.max where cgroup v2 is delegated")
    tmp_size_mb: int = Field(default=4096, ge=16, description="size of the private /tmp (tmpfs)")
    uid: int | None = Field(default=None, ge=0, description="the user and group id inside (None: the caller's)")


# Repositories this (trusted) process wrote a task for: ``kernelevo.op_task.write_task`` vouches for the root it
# puts into a generated task's ``load_op(...)``. A task's text is the user's (a KernelBench file in a PR is used as
# is), so a ``load_op`` root it names is bound into a sandbox only when it lies inside the task's own folder or a
# root vouched for here: never another job's checkout, the worker's secrets or the host's system folders.
_VOUCHED_TASK_ROOTS: set[Path] = set()
_VOUCHED_LOCK = threading.Lock()


def vouch_for_task_root(root: str | Path) -> None:
    """Record that this process generated a task importing from ``root`` (called by the task generator only)."""
    with _VOUCHED_LOCK:
        _VOUCHED_TASK_ROOTS.add(Path(root).resolve())


def task_root_allowed(root: str | Path, task_dir: str | Path | None) -> bool:
    """Whether a ``load_op`` root named in a task's text may be bound: inside the task's own folder, or inside a
    root this process vouched for (pure but for the vouched set)."""
    resolved = Path(root).resolve()
    if resolved == Path(resolved.anchor):
        return False  # the whole file system is nobody's repository
    with _VOUCHED_LOCK:
        allowed = [*_VOUCHED_TASK_ROOTS, *([Path(task_dir).resolve()] if task_dir is not None else [])]
    return any(base != Path(base.anchor) and resolved.is_relative_to(base) for base in allowed)


def existing(paths: Iterable[str | Path]) -> list[Path]:
    """The paths that exist (a missing system directory is simply not bound)."""
    return [Path(p) for p in paths if os.path.lexists(p)]


def _under_private_root(path: Path) -> bool:
    return any(str(path) == root or str(path).startswith(root + "/") for root in PRIVATE_ROOTS)


def python_paths(extra: Sequence[str] = ()) -> list[Path]:
    """Where this interpreter and its modules live: its prefixes and the executable's real location, and the
    folders on sys.path that are package folders (``site-packages``/``dist-packages``, or inside a prefix). Other
    sys.path folders under home, temporary or state directories (``python -m`` from a home directory puts it on
    sys.path) are left out unless named in ``extra`` (``KERNELEVO_SANDBOX_READ_ONLY``, checked by
    :func:`system_binds`)."""
    prefixes = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                                            Path(sys.executable).resolve().parent.parent)]
    wanted = {Path(p).resolve() for p in extra if p}
    candidates: list[Path] = [*prefixes, *wanted]
    for raw in sys.path:
        if not raw:
            continue
        path = Path(raw).resolve()
        if path.is_file():  # a zip on sys.path
            path = path.parent
        packages = path.name in ("site-packages", "dist-packages") or any(path.is_relative_to(p) for p in prefixes)
        checkout = (path / ".git").exists()  # an editable install's source tree: its .git, runs/... stay out
        if packages or path in wanted or not (_under_private_root(path) or checkout):
            candidates.append(path)
    found: list[Path] = []
    for path in candidates:
        if path.is_dir() and not any(path == f or path.is_relative_to(f) for f in found):
            found = [f for f in found if not f.is_relative_to(path)] + [path]
    return sorted(found)


# Every sandbox has its own /tmp, a tmpfs no other process sees (libraries write their scratch files there).
SANDBOX_TMP = "/tmp"
PRIVATE_ROOTS = ("/home", "/root", "/tmp", "/var", "/run", "/etc", "/srv", "/mnt", "/media")


def tool_prefixes(path_variable: str | None = None) -> list[Path]:
    """Installations of the tools on PATH that live outside the system directories (``/opt/gcc/bin`` ->
    ``/opt/gcc``, with its libexec and headers): compilers that Triton and load_inline run. Folders under home
    directories, temporary or state directories are never included."""
    found = []
    for entry in (path_variable if path_variable is not None else os.environ.get("PATH", "")).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        directory = Path(entry).resolve()
        if not directory.is_dir() or any(directory.is_relative_to(Path(s).resolve()) for s in SYSTEM_DIRS
                                         if os.path.exists(s)):
            continue
        if any(str(directory).startswith(root + "/") or str(directory) == root for root in PRIVATE_ROOTS):
            continue
        found.append(directory.parent if directory.name == "bin" else directory)
    return found


class SecretBindRefused(ValueError):
    """A read-only path asked for would show a secret to sandboxed code: the secrets folder (or a folder holding
    it), a file in it, or the GitHub App's private key file (or a folder holding it)."""


def _forms(path: str | Path) -> set[Path]:
    """A path as written (made absolute) and with its links resolved: a link to the secrets is refused too."""
    return {Path(os.path.abspath(path)), Path(path).resolve()}


def secret_exposed(path: str | Path, secrets: Iterable[str | Path]) -> Path | None:
    """The secret location (a folder or a file) that binding ``path`` would make visible: one that ``path`` is,
    lies under or contains; None when it shows none (pure but for resolving links)."""
    mine = _forms(path)
    for secret in secrets:
        for theirs in _forms(secret):
            if any(p.is_relative_to(theirs) or theirs.is_relative_to(p) for p in mine):
                return Path(secret)
    return None


def secret_locations() -> list[Path]:
    """Where this host keeps secrets: the secrets folder (``kernelevo.settings.SECRETS_DIR``) and the App's
    private key file (``KERNELEVO_GITHUB_PRIVATE_KEY_PATH``), whether or not they exist here."""
    from kernelevo.settings import SECRETS_DIR, get_settings

    key = get_settings().github_private_key_path
    return [SECRETS_DIR, *([key] if key is not None else [])]


def refuse_secret_binds(paths: Iterable[str | Path], secrets: Sequence[str | Path], origin: str, fix: str) -> None:
    """Raise :class:`SecretBindRefused` for the first of ``paths`` that would show a secret, saying where the path
    came from (``origin``) and what to do (``fix``); nothing is bound half-way."""
    for path in paths:
        exposed = secret_exposed(path, secrets)
        if exposed is not None:
            raise SecretBindRefused(f"{origin} names {str(path)!r}, which would show {exposed} to sandboxed code "
                                    f"(the secrets folder and the App's private key are never bound): {fix}")


def system_binds(extra_read_only: Sequence[str | Path] = (),
                 secrets: Sequence[str | Path] | None = None) -> tuple[Bind, ...]:
    """The read-only view of the machine: system directories, selected /etc files, the Python installation and
    the tool installations on PATH, plus the folders of ``KERNELEVO_SANDBOX_READ_ONLY`` and ``extra_read_only``.

    Every one of them is checked against ``secrets`` (default: :func:`secret_locations`) before anything is
    bound: a path that is, lies under or contains a secret raises :class:`SecretBindRefused`, naming the path and
    where it came from (``extra_read_only`` holds folders read from a task's text, which may be a user's file)."""
    secrets = secret_locations() if secrets is None else secrets
    extra = [p for p in os.environ.get(READ_ONLY_VARIABLE, "").split(os.pathsep) if p]
    refuse_secret_binds(extra, secrets, READ_ONLY_VARIABLE, f"take it out of {READ_ONLY_VARIABLE} and name only "
                        "the package folders sandboxed code imports")
    refuse_secret_binds(extra_read_only, secrets, "the sandbox's read-only folders (the task's own and those its "
                        "text imports from)", "a task's load_op(...) must name its own repository, and no "
                        "repository may hold or lie above a secret")
    paths = existing(SYSTEM_DIRS) + existing(f"/etc/{name}" for name in ETC_FILES)
    refuse_secret_binds(paths, secrets, "the system directories every sandbox sees",
                        "keep the App's key and KernelEvo's secrets out of /usr, /bin and /lib (under /run/secrets,"
                        " /etc or /var, which no sandbox sees)")
    found = python_paths(extra) + tool_prefixes()
    refuse_secret_binds(found, secrets, "the Python installation, its sys.path or PATH",
                        "keep the App's key and KernelEvo's secrets outside the Python installation and the tool "
                        "folders on PATH, and start Python from a folder that holds no secret")
    paths += found + [Path(p).resolve() for p in extra_read_only if os.path.exists(p)]
    binds, seen = [], set()
    for path in paths:
        if path not in seen:
            seen.add(path)
            binds.append(Bind(source=path))
    return tuple(binds)


def gpu_binds(dev: Path = Path("/dev")) -> tuple[Bind, ...]:
    """The GPU's device nodes and the read-only /sys the driver libraries read (PCI topology, NUMA)."""
    nodes = sorted(p for p in dev.iterdir() if p.name.startswith(GPU_DEVICE_PREFIXES)) if dev.is_dir() else []
    binds = [Bind(source=p, device=True) for p in nodes]
    binds += [Bind(source=Path(p)) for p in existing(["/sys"])]
    return tuple(binds)


def _symlink_args(path: Path) -> list[str] | None:
    """Merged-/usr systems have /bin -> usr/bin: recreate the link instead of binding it twice."""
    if path.is_symlink() and str(path) in SYSTEM_DIRS:
        return ["--symlink", os.readlink(path), str(path)]
    return None


def bwrap_argv(policy: SandboxPolicy, command: Sequence[str], *, bwrap: str = "bwrap",
               block_fd: int | None = None, cgroup_namespace: bool = True, disable_userns: bool = True,
               prlimit: str | None = None) -> list[str]:
    """The ``bwrap`` command line running ``command`` under ``policy`` (see the module docstring).

    ``block_fd``: bwrap waits until that fd is readable before starting ``command`` (the caller moves bwrap
    into a cgroup first, so that no process of the sandbox ever runs outside it).
    """
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts"]
    if cgroup_namespace:
        argv.append("--unshare-cgroup-try")
    if disable_userns:  # no nested user namespaces: the kernel attack surface behind most container escapes
        argv.append("--disable-userns")
    # The host's name inside and the policy's uid (else the caller's): nothing says it is no ordinary process.
    if policy.uid is not None:
        argv += ["--uid", str(policy.uid), "--gid", str(policy.uid)]
    argv += ["--hostname", os.uname().nodename,
             "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL", "--clearenv"]
    for key, value in sorted(policy.env.items()):
        argv += ["--setenv", key, value]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(policy.tmp_size_mb * 1024 * 1024),
             "--tmpfs", SANDBOX_TMP, "--size", str(SHM_MB * 1024 * 1024), "--tmpfs", "/dev/shm"]
    for bind in sorted(policy.binds, key=lambda b: len(b.inside.parts)):  # parents before children
        link = _symlink_args(bind.source)
        if link is not None:
            argv += link
            continue
        flag = "--dev-bind" if bind.device else ("--bind" if bind.writable else "--ro-bind")
        argv += [flag, str(bind.source), str(bind.inside)]
    argv += ["--remount-ro", "/"]  # the sandbox's own root: nothing but its binds and tmpfs mounts is writable
    argv += ["--chdir", str(policy.cwd)]
    if block_fd is not None:
        argv += ["--block-fd", str(block_fd)]
    if prlimit is not None and policy.pids_max is not None:
        # where no cgroup caps it, a task limit (counted per user namespace: only this sandbox's processes)
        command = [prlimit, f"--nproc={policy.pids_max}", "--", *command]
    return [*argv, "--", *command]
