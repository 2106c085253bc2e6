"""Unpacking a hostile tarball: the one extraction of the bot's checkouts and the workers' job tarballs.

Nothing here relies on ``tarfile``'s extraction filters (an interpreter without the fixes of CVE-2025-4517 /
CVE-2025-4138 lets a symlink chain longer than PATH_MAX out of the tree). Instead no link ever reaches the disk:

* every member's name is checked before anything is written: relative, no ``..`` component, no NUL, at most
  :data:`MAX_NAME_BYTES` bytes, :data:`MAX_DEPTH` folders deep and :data:`MAX_COMPONENT_BYTES` a component;
* a symlink or hard link whose target, resolved lexically (``posixpath``) against the archive's own member
  names, is a regular file of the archive is written as a copy of that file's bytes (its size counts towards
  the cap); a link to a folder, to a missing name or to a chain longer than :data:`MAX_LINK_HOPS` is dropped;
  a link whose target is absolute or climbs above the archive's root is refused;
* devices, fifos and unknown member types are refused; a name that appears twice (other than a folder) is refused;
* files are created with ``O_NOFOLLOW | O_CREAT | O_EXCL`` under folders this extractor created, each folder
  reached from ``dest`` one component at a time with ``O_NOFOLLOW``;
* the file count and the unpacked bytes (copies included) are capped from the headers, before any write;
* the headers are read by :class:`BoundedTarInfo`: a GNU long-name/long-link or pax header whose data is over
  :data:`MAX_EXTENDED_HEADER_BYTES` is refused before its data is read, a member announced by more than
  :data:`MAX_CHAINED_HEADERS` such headers is refused (``tarfile`` recurses once per header), and sparse
  members are refused before their maps are read; any other exception ``tarfile`` raises while reading the
  headers (``RecursionError``, ``MemoryError``, ``UnicodeError``...) becomes a :class:`TarballError`.

Every refusal is a :class:`TarballError` naming the member and the reason.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MAX_NAME_BYTES = 1024
MAX_COMPONENT_BYTES = 255
MAX_DEPTH = 64
MAX_LINK_HOPS = 32
MAX_EXTENDED_HEADER_BYTES = 16 * MAX_NAME_BYTES  # a pax header's path and linkpath and its other records
MAX_CHAINED_HEADERS = 8  # extended headers before one member (a global and a member's pax, long name, long link)
CHUNK = 1 << 16
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class TarballError(ValueError):
    """A tarball that is unsafe to unpack or over the caps, or a repository that cannot be packed within them."""


def _unsafe(name: str, why: str) -> TarballError:
    return TarballError(f"the tarball is unsafe to unpack: member {name!r} {why}")


_EXTENDED_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                   tarfile.SOLARIS_XHDTYPE)


class BoundedTarInfo(tarfile.TarInfo):
    """``tarfile``'s header reader (``tarinfo=``) with bounds checked before any extended header's data is read."""

    def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise _unsafe(self.name, "is a GNU sparse file (only files, folders and links are unpacked)")
        if self.type not in _EXTENDED_TYPES:
            return super()._proc_member(tar)  # type: ignore[misc,no-any-return]
        if self.size > MAX_EXTENDED_HEADER_BYTES:
            raise TarballError(f"the tarball is unsafe to unpack: an extended (long name or pax) header of "
                               f"{self.size} bytes, over {MAX_EXTENDED_HEADER_BYTES}")
        depth = _chain_depth(tar)
        if depth >= MAX_CHAINED_HEADERS:
            raise TarballError(f"the tarball is unsafe to unpack: more than {MAX_CHAINED_HEADERS} extended (long "
                               "name or pax) headers before one member")
        setattr(tar, _DEPTH, depth + 1)
        try:
            return super()._proc_member(tar)  # type: ignore[misc,no-any-return]
        finally:
            setattr(tar, _DEPTH, depth)

    def _proc_gnusparse_00(self, *args: object) -> None:
        raise _unsafe(self.name, "is a pax sparse file (only files, folders and links are unpacked)")

    _proc_gnusparse_01 = _proc_gnusparse_10 = _proc_gnusparse_00


_DEPTH = "_kernelevo_extended_depth"


def _chain_depth(tar: tarfile.TarFile) -> int:
    depth = getattr(tar, _DEPTH, 0)
    return depth if isinstance(depth, int) else 0


def member_parts(name: str) -> tuple[str, ...]:
    """The components of a member's name (``.`` and empty ones left out); raises :class:`TarballError` for a
    name that is absolute, climbs with ``..``, holds a NUL or is over the length and depth bounds."""
    if "\0" in name:
        raise _unsafe(name, "has a NUL in its name")
    if name.startswith(("/", "\\")):
        raise _unsafe(name, "has an absolute name")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise _unsafe(name[:80] + "...", f"has a name longer than {MAX_NAME_BYTES} bytes")
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in parts:
        raise _unsafe(name, "climbs out of the tree with '..'")
    if len(parts) > MAX_DEPTH:
        raise _unsafe(name, f"is more than {MAX_DEPTH} folders deep")
    if any(len(part.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES for part in parts):
        raise _unsafe(name, f"has a path component longer than {MAX_COMPONENT_BYTES} bytes")
    return parts


@dataclass
class Plan:
    """What an archive unpacks to, decided from its headers alone."""

    folders: list[tuple[str, ...]] = field(default_factory=list)
    files: dict[str, tarfile.TarInfo] = field(default_factory=dict)  # canonical name -> regular member
    links: dict[str, tarfile.TarInfo] = field(default_factory=dict)  # canonical name -> link member
    copies: dict[str, str] = field(default_factory=dict)  # link's name -> the regular file it copies
    bytes: int = 0


def link_target(name: str, member: tarfile.TarInfo) -> str:
    """The canonical archive name a link member points at: a symlink's target is relative to its folder, a
    hard link's to the archive's root. Raises :class:`TarballError` for a target outside the archive."""
    target = member.linkname
    if "\0" in target or target.startswith(("/", "\\")):
        raise _unsafe(member.name, f"links to {target!r}, outside the tree")
    base = posixpath.dirname(name) if member.issym() else ""
    resolved = posixpath.normpath(posixpath.join(base, target))
    if resolved == ".." or resolved.startswith("../"):
        raise _unsafe(member.name, f"links to {target!r}, outside the tree")
    return "" if resolved == "." else resolved


def resolve_copy(name: str, plan: Plan) -> str | None:
    """The regular file a link member becomes a copy of, following links to links; ``None`` (the link is
    dropped) for a folder, a missing name or a chain longer than :data:`MAX_LINK_HOPS`."""
    current = name
    for _ in range(MAX_LINK_HOPS):
        target = link_target(current, plan.links[current])
        if target in plan.files:
            return target
        if target not in plan.links:
            return None
        current = target
    return None


def _unreadable(exc: BaseException) -> TarballError:
    return TarballError(f"the tarball's headers cannot be read ({type(exc).__name__}: {exc})"[:500])


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """Each member's header in turn; whatever ``tarfile`` raises on hostile headers becomes a TarballError."""
    while True:
        try:
            member = tar.next()
        except TarballError:
            raise
        except Exception as exc:  # tarfile raises what its input provokes: RecursionError, MemoryError, ValueError
            raise _unreadable(exc) from None
        if member is None:
            return
        yield member


def plan_members(tar: tarfile.TarFile, *, max_unpacked_bytes: int, max_files: int) -> Plan:
    """Read every header, refusing an unsafe member or the caps before anything is written."""
    plan = Plan()
    seen: set[str] = set()
    count = 0
    caps = (f"the tarball unpacks to more than {max_files} files or {max_unpacked_bytes / 2**20:.0f} MiB"
            " (KERNELEVO_QUEUE_UNPACK_MAX_FILES / _BYTES)")
    for member in _members(tar):
        count += 1
        parts = member_parts(member.name)
        name = "/".join(parts)
        if member.isdir():
            if name in plan.files or name in plan.links:
                raise _unsafe(member.name, "is both a file and a folder")
            plan.folders.append(parts)
        elif member.isreg() or member.issym() or member.islnk():
            if not parts:
                raise _unsafe(member.name, "names the tree's root as a file")
            if name in seen:
                raise _unsafe(member.name, "appears more than once")
            seen.add(name)
            if member.isreg():
                plan.files[name] = member
                plan.bytes += member.size
            else:
                plan.links[name] = member
        else:
            raise _unsafe(member.name, "is a device, fifo or other special file (only files, folders and links "
                                       "are unpacked)")
        if count > max_files or plan.bytes > max_unpacked_bytes:
            raise TarballError(caps)
    for name in plan.links:
        source = resolve_copy(name, plan)
        if source is not None:
            plan.copies[name] = source
            plan.bytes += plan.files[source].size
    if plan.bytes > max_unpacked_bytes:
        raise TarballError(caps)
    return plan


def _open_folder(root_fd: int, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder ``parts`` under the root, creating the missing folders; never follows a link."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _create(root_fd: int, parts: tuple[str, ...], source: IO[bytes], mode: int) -> None:
    folder = _open_folder(root_fd, parts[:-1])
    try:
        fd = os.open(parts[-1], _NEW_FILE_FLAGS, 0o600, dir_fd=folder)
    finally:
        os.close(folder)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out, CHUNK)
        os.fchmod(out.fileno(), mode)


def _open_written(root_fd: int, parts: tuple[str, ...]) -> IO[bytes]:
    folder = _open_folder(root_fd, parts[:-1])
    try:
        return os.fdopen(os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder), "rb")
    finally:
        os.close(folder)


def _mode(member: tarfile.TarInfo) -> int:
    return 0o755 if member.mode & 0o100 else 0o644


def _write(tar: tarfile.TarFile, plan: Plan, root_fd: int) -> None:
    for parts in plan.folders:
        try:
            os.close(_open_folder(root_fd, parts))
        except OSError as exc:
            raise TarballError(f"the tarball cannot be unpacked: folder {'/'.join(parts)!r}: {exc.strerror or exc}"
                               ) from None
    for name, member in plan.files.items():
        try:
            source = tar.extractfile(member)
            if source is None:
                raise _unsafe(member.name, "has no data")
            with source:
                _create(root_fd, tuple(name.split("/")), source, _mode(member))
        except OSError as exc:
            raise TarballError(f"the tarball cannot be unpacked: member {member.name!r}: {exc.strerror or exc}"
                               ) from None
    for name, target in plan.copies.items():
        try:
            with _open_written(root_fd, tuple(target.split("/"))) as source:
                _create(root_fd, tuple(name.split("/")), source, _mode(plan.files[target]))
        except OSError as exc:
            raise TarballError(f"the tarball cannot be unpacked: member {plan.links[name].name!r} (a copy of "
                               f"{target!r}): {exc.strerror or exc}") from None


def unpack_tarball(fileobj: IO[bytes], dest: Path, *, max_unpacked_bytes: int, max_files: int) -> Path:
    """Unpack the (hostile, possibly compressed) tarball read from ``fileobj`` into ``dest``, which must be new
    or empty; returns ``dest``. What was written before an error stays under ``dest`` for the caller to remove."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise TarballError(f"{dest}: the folder to unpack into is not empty")
    root_fd = os.open(dest, _DIR_FLAGS)
    try:
        try:
            tar = tarfile.open(fileobj=fileobj, mode="r:*", tarinfo=BoundedTarInfo)  # reads the first header
        except (TarballError, tarfile.TarError, EOFError, zlib.error, OSError):
            raise
        except Exception as exc:  # as in _members
            raise _unreadable(exc) from None
        with tar:
            plan = plan_members(tar, max_unpacked_bytes=max_unpacked_bytes, max_files=max_files)
            _write(tar, plan, root_fd)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise TarballError(f"the tarball cannot be unpacked ({type(exc).__name__}: {exc})") from None
    finally:
        os.close(root_fd)
    return dest
