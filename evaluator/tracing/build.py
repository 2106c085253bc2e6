"""Building the trace shim at run time: the system C compiler, CUPTI's headers and library, a cached ``.so``.

CUPTI's activity record layouts change between CUDA releases, so the shim is compiled on the machine that runs
it, against the headers of the libcupti it will load, and cached under a key of everything that changes the
binary (sources, compiler, flags, headers). Headers and library are taken from one installation, searched in
order: ``$CUDA_HOME/extras/CUPTI``, ``$CUDA_HOME`` itself, ``/usr/local/cuda/extras/CUPTI``, ``/usr/local/cuda``,
then the ``nvidia-cuda-cupti`` wheel (``nvidia/cu13`` for CUDA 13, ``nvidia/cuda_cupti`` for CUDA 12), whose
library is the one torch itself loads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = ("shim.c", "siphash24.h")
CFLAGS = ("-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wl,-z,now",
          "-Wl,-z,relro")
LIBS = ("-ldl", "-lpthread")
_STRUCTS = {"KE_KERNEL_T": "Kernel", "KE_MEMCPY_T": "Memcpy", "KE_MEMSET_T": "Memset", "KE_P2P_T": "MemcpyPtoP"}


@dataclass(frozen=True)
class CuptiInstall:
    """One place CUPTI is installed: its headers, and the library beside them (None when there is none)."""

    origin: str
    include: Path
    library: Path | None


@dataclass(frozen=True)
class BuiltShim:
    library: Path  # the shim, for LD_PRELOAD
    cupti_library: Path | None  # what the shim should dlopen (KERNELEVO_CUPTI_LIB); None: the default soname
    cupti_include: Path
    cuda_include: Path
    cupti_origin: str
    cupti_api_version: int
    structs: Mapping[str, str]
    compiler: str
    key: str
    reused: bool  # found in the cache


@dataclass(frozen=True)
class BuildError:
    """What is missing, and what to install or set to fix it."""

    problem: str
    remedy: str

    def __str__(self) -> str:
        return f"{self.problem}: {self.remedy}"


# --- locating things (pure given the places to search) ---

@dataclass(frozen=True)
class SearchPaths:
    """Where CUPTI, the CUDA headers and a compiler may be: the only inputs of the search."""

    cuda_home: Path | None
    system_root: Path  # /usr/local/cuda
    wheels: tuple[Path, ...]  # folders of the ``nvidia`` namespace package
    triton_include: Path | None  # Triton ships cuda.h and builtin_types.h for its launcher
    path: str  # PATH, for the compiler
    cc: str | None

    @classmethod
    def discover(cls, env: Mapping[str, str] | None = None) -> SearchPaths:
        env = os.environ if env is None else env
        try:
            spec = importlib.util.find_spec("nvidia")
        except (ImportError, ValueError):
            spec = None
        wheels = tuple(Path(p) for p in (spec.submodule_search_locations or [])) if spec else ()
        triton = importlib.util.find_spec("triton")
        triton_include = (Path(triton.origin).parent / "backends" / "nvidia" / "include"
                          if triton is not None and triton.origin else None)
        home = env.get("CUDA_HOME")
        return cls(Path(home) if home else None, Path("/usr/local/cuda"), wheels, triton_include,
                   env.get("PATH", os.defpath), env.get("CC"))


def cupti_installs(search: SearchPaths) -> list[CuptiInstall]:
    """Every installation that has ``cupti.h``, in search order."""
    roots: list[tuple[str, Path, Sequence[str]]] = []
    for base_name, base in (("$CUDA_HOME", search.cuda_home), (str(search.system_root), search.system_root)):
        if base is not None:
            roots.append((f"{base_name}/extras/CUPTI", base / "extras" / "CUPTI", ("lib64", "lib")))
            roots.append((base_name, base, ("lib64", "lib", "targets/x86_64-linux/lib")))
    for wheel in search.wheels:
        for sub in ("cu13", "cuda_cupti", "cu12"):
            roots.append((f"wheel nvidia/{sub}", wheel / sub, ("lib",)))
    found: list[CuptiInstall] = []
    for origin, root, lib_dirs in roots:
        include = root / "include"
        if (include / "cupti.h").is_file():
            found.append(CuptiInstall(origin, include, _find_library([root / d for d in lib_dirs])))
    return found


def _find_library(dirs: Sequence[Path]) -> Path | None:
    """``libcupti.so.<major>`` if present (the soname), else another ``libcupti.so*``."""
    for d in dirs:
        if not d.is_dir():
            continue
        names = sorted(p.name for p in d.glob("libcupti.so*"))
        for pattern in (r"libcupti\.so\.\d+$", r"libcupti\.so\.[\d.]+$", r"libcupti\.so$"):
            matched = [n for n in names if re.match(pattern, n)]
            if matched:
                return d / matched[0]
    return None


def cuda_include_dirs(cupti: CuptiInstall, search: SearchPaths) -> list[Path]:
    """Where ``cuda.h`` and ``builtin_types.h`` (which the CUPTI headers include) may be, in search order."""
    dirs = [cupti.include]
    if search.cuda_home is not None:
        dirs.append(search.cuda_home / "include")
    dirs.append(search.system_root / "include")
    for wheel in search.wheels:
        dirs += [wheel / "cu13" / "include", wheel / "cuda_runtime" / "include", wheel / "cu12" / "include"]
    if search.triton_include is not None:
        dirs.append(search.triton_include)
    return dirs


def record_structs(header_text: str) -> dict[str, str]:
    """The newest activity record structs a ``cupti_activity.h`` defines (``-DKE_KERNEL_T=CUpti_ActivityKernel10``)."""
    out: dict[str, str] = {}
    for macro, stem in _STRUCTS.items():
        versions = [int(v or 1) for v in re.findall(rf"\}}\s*CUpti_Activity{stem}(\d*)\s*;", header_text)]
        if versions:
            best = max(versions)
            out[macro] = f"CUpti_Activity{stem}{best if best > 1 else ''}"
    return out


def api_version(version_header: str) -> int:
    m = re.search(r"#define\s+CUPTI_API_VERSION\s+(\d+)", version_header)
    return int(m.group(1)) if m else 0


def find_compiler(search: SearchPaths) -> str | None:
    for name in (search.cc, "cc", "gcc", "clang"):
        if name and (path := shutil.which(name, path=search.path)):
            return path
    return None


def cache_key(sources: Mapping[str, bytes], compiler_id: str, flags: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(sources):
        digest.update(name.encode() + b"\0" + sources[name] + b"\0")
    digest.update(compiler_id.encode() + b"\0" + "\0".join(flags).encode())
    return digest.hexdigest()[:24]


# --- building (I/O) ---

def _compiler_id(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    return f"{os.path.realpath(compiler)}|{out.splitlines()[0] if out else ''}"


def build_shim(cache_dir: Path, *, search: SearchPaths | None = None, timeout_s: float = 120.0,
               ) -> BuiltShim | BuildError:
    """Compile (or reuse) the shim for this machine; a :class:`BuildError` says what is missing."""
    search = SearchPaths.discover() if search is None else search
    compiler = find_compiler(search)
    if compiler is None:
        return BuildError("no C compiler found (looked for $CC, cc, gcc, clang)",
                          "install one (apt-get install gcc) or set CC")
    installs = cupti_installs(search)
    if not installs:
        return BuildError("CUPTI headers (cupti.h) not found in $CUDA_HOME/extras/CUPTI/include, $CUDA_HOME/include, "
                          "/usr/local/cuda[/extras/CUPTI]/include or the nvidia-cuda-cupti wheel",
                          "pip install nvidia-cuda-cupti (the CUDA 13 wheel ships include/ and lib/), or set "
                          "CUDA_HOME to a CUDA toolkit with CUPTI")
    cupti = installs[0]
    library = cupti.library or next((i.library for i in installs if i.library is not None), None)
    if library is None:
        return BuildError(f"CUPTI headers found ({cupti.include}) but no libcupti.so beside them or elsewhere",
                          "pip install nvidia-cuda-cupti, or install the CUPTI library of the same CUDA release")
    cuda_dirs = cuda_include_dirs(cupti, search)
    cuda_inc = next((d for d in cuda_dirs if (d / "cuda.h").is_file() and (d / "builtin_types.h").is_file()), None)
    if cuda_inc is None:
        return BuildError("CUDA headers cuda.h and builtin_types.h (included by cupti.h) not found in "
                          + ", ".join(map(str, cuda_dirs)),
                          "install the CUDA toolkit headers (set CUDA_HOME) or pip install nvidia-cuda-runtime")
    activity = (cupti.include / "cupti_activity.h").read_text(errors="replace")
    structs = record_structs(activity)
    if set(structs) != set(_STRUCTS):
        return BuildError(f"{cupti.include}/cupti_activity.h lacks activity record structs "
                          f"({', '.join(sorted(set(_STRUCTS) - set(structs)))})",
                          "use CUPTI from CUDA 12 or newer")
    version = api_version((cupti.include / "cupti_version.h").read_text(errors="replace"))
    defines = [f"-D{k}={v}" for k, v in sorted(structs.items())] + [f'-DKE_CUPTI_SONAME="{library.name}"']
    includes = [f"-I{cupti.include}", f"-I{cuda_inc}", f"-I{HERE}"]
    flags = [*CFLAGS, *defines, *includes]
    sources = {name: (HERE / name).read_bytes() for name in SOURCES}
    sources["cupti_activity.h"] = activity.encode()
    key = cache_key(sources, _compiler_id(compiler), flags)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f"kernelevo_trace_{key}.so"
    result = dict(cupti_library=library, cupti_include=cupti.include, cuda_include=cuda_inc,
                  cupti_origin=cupti.origin, cupti_api_version=version, structs=structs, compiler=compiler, key=key)
    if target.is_file():
        return BuiltShim(library=target, reused=True, **result)  # type: ignore[arg-type]
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", dir=cache_dir)
    os.close(fd)
    command = [compiler, *flags, "-o", tmp, str(HERE / "shim.c"), *LIBS]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError) as exc:
        Path(tmp).unlink(missing_ok=True)
        return BuildError(f"running the C compiler failed ({exc})", f"check that {compiler} works")
    if done.returncode != 0:
        Path(tmp).unlink(missing_ok=True)
        output = (done.stderr or done.stdout).strip()
        errors = [line for line in output.splitlines() if "error" in line][:10]
        shown = "\n".join(errors) if errors else output[-2000:]
        return BuildError(f"compiling the trace shim failed ({compiler}, CUPTI from {cupti.origin}):\n{shown}",
                          "check that the CUPTI and CUDA headers belong to one CUDA release")
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)  # atomic: concurrent builders produce the same file
    return BuiltShim(library=target, reused=False, **result)  # type: ignore[arg-type]
