"""Writing a file, as root too, without writing through a link someone else planted: every file iosched writes
goes through here (saved results, captures, charts, rules, the journal, recordings, job and registration files).

- The target's folder is reached component by component from a descriptor, never by name again. One rule for a
  link on the way (``open_dir``): it is followed only where root, or this process's user, owns every folder on the
  way up to it, and none but they could have put it there (its folder is writable by its owner alone, or the link
  is root's or ours). A link in another user's folder, or below one, is refused: that user may swap a subfolder of
  theirs for a link to one of root's while iosched runs. So is one planted in a folder others may write (0777, not
  sticky, where ``fs.protected_symlinks`` does not apply).
- A replaced file is written whole beside itself under a random name made with ``O_CREAT|O_EXCL|O_NOFOLLOW`` in
  that folder's descriptor (what ``mkstemp`` does, but ``mkstemp`` takes a path), its mode and owner set through
  the descriptor, then renamed over the target: a crash leaves the old file or the new one, never half of one.
- The target is looked at when it is written, not only when the command starts: it must be absent or a regular
  file. A link, folder, FIFO or device there is refused in one sentence (``WriteRefused``, exit 2), nothing
  written, the temporary file removed. (A rename replaces a link itself, never what it points to; the look is
  for the sentence.)
- A file written as it goes (a recording, a capture's iolog) is made new (``create_new``) and never opened by a
  name that already exists.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from iosched.core.base.errors import BadInput

__all__ = ["WriteRefused", "check_target", "create_new", "discard", "open_dir", "remove_file", "replacing",
           "same_file", "write_file"]

_MAX_LINKS = 40
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV}


class WriteRefused(BadInput):
    """A file iosched was to write was refused: its name holds no regular file (a link, a folder, a FIFO, a
    device) or exists where a new file was asked for, or its folder lies behind a link others could have planted.
    Nothing was written."""


# The folder ------------------------------------------------------------------------------------------------


def open_dir(path: str | Path) -> int:
    """An ``O_PATH`` descriptor of the folder ``path`` (the caller closes it), reached one component at a time.

    A link on the way is followed only where root or this process's user owns every folder walked so far (the one
    the walk starts from, each one entered, the link's own) and none but they could have put the link there: its
    folder is writable by its owner alone, or the link is root's or ours (and no hard link to one). OSError when a
    component is missing or no folder; WriteRefused for a link another user could have put there or swapped in."""
    text = os.fspath(path) or "."
    start = os.open("/" if text.startswith("/") else ".", _DIR)
    way = _Way(os.geteuid())
    try:
        way.enter(start)
    except BaseException:
        os.close(start)
        raise
    try:
        return _walk(start, text, text, way)
    except OSError as e:
        raise type(e)(e.errno, e.strerror, text) from None


class _Way:
    """What the walk has met so far: the links it may still follow, and the first folder owned by another user."""

    def __init__(self, me: int) -> None:
        self.me = me
        self.links_left = _MAX_LINKS  # as the kernel's own limit on links followed in one lookup
        self.foreign: int | None = None  # the owner of the first folder on the way not root's or ours

    def enter(self, fd: int) -> None:
        uid = os.fstat(fd).st_uid
        if self.foreign is None and uid not in (0, self.me):
            self.foreign = uid


def _walk(fd: int, path: str, shown: str, way: _Way) -> int:
    """Follow ``path`` from the folder ``fd`` (taken over: closed here or returned)."""
    try:
        for part in path.split("/"):
            if part in ("", "."):
                continue
            nxt = _step(fd, part, shown, way)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _step(fd: int, name: str, shown: str, way: _Way) -> int:
    try:
        nxt = os.open(name, _DIR, dir_fd=fd)
    except OSError as e:
        if e.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
    else:
        try:
            way.enter(nxt)
        except BaseException:
            os.close(nxt)
            raise
        return nxt
    link = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    try:
        st = os.fstat(link)
        if not stat.S_ISLNK(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name)
        if way.foreign is not None:
            raise WriteRefused(f"{shown} is reached through the link {name} in a folder of user {way.foreign}'s (or "
                               "below one), who could have swapped a folder there for a link: nothing was written; "
                               "name the real folder (iosched follows a link only where root or you own every "
                               "folder on the way)")
        if not _trusted(os.fstat(fd), st):
            raise WriteRefused(f"{shown} is reached through the link {name}, which someone other than its folder's "
                               "owner could have put there (the folder is writable by others): nothing was written; "
                               "name the real folder")
        way.links_left -= 1
        if way.links_left < 0:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)
        target = os.readlink("", dir_fd=link)  # this very link: it cannot be swapped between the look and the read
    finally:
        os.close(link)
    start = os.open("/", _DIR) if target.startswith("/") else os.dup(fd)
    return _walk(start, target, shown, way)


def _trusted(folder: os.stat_result, link: os.stat_result) -> bool:
    """Whether only root or we could have put ``link`` in ``folder`` (a folder of root's or ours)."""
    if not folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return True  # only the folder's owner (root or us) can put anything there
    return link.st_uid in (0, os.geteuid()) and link.st_nlink == 1  # ours or root's, no hard link to one


def _parent(path: str | Path) -> tuple[int, str]:
    head, name = os.path.split(os.fspath(path))
    if name in ("", ".", ".."):
        raise BadInput(f"{path} names no file")
    return open_dir(head or "."), name


def _lstat(fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _kind(st: os.stat_result) -> str:
    m = st.st_mode
    return ("a symlink" if stat.S_ISLNK(m) else "a directory" if stat.S_ISDIR(m) else "a FIFO" if stat.S_ISFIFO(m)
            else "a device" if stat.S_ISBLK(m) or stat.S_ISCHR(m) else "a socket" if stat.S_ISSOCK(m)
            else "not a file")


def _refusal(path: str | Path, st: os.stat_result) -> WriteRefused:
    return WriteRefused(f"{path} is {_kind(st)}, not a regular file: nothing was written (iosched writes a new file "
                        "or replaces a regular one, never through a link)")


def _exists(path: str | Path) -> WriteRefused:
    return WriteRefused(f"{path} exists: nothing was written (iosched writes a new file here; choose another name "
                        "or remove it)")


def _look(fd: int, name: str, path: str | Path, replace: bool) -> os.stat_result | None:
    """The target's status now: None when absent, a regular file's when ``replace``; else WriteRefused."""
    st = _lstat(fd, name)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refusal(path, st)
    if st is not None and not replace:
        raise _exists(path)
    return st


def check_target(path: str | Path, replace: bool = True) -> os.stat_result | None:
    """The early look a command takes before its first run (the write looks again): the folder reached as
    ``open_dir`` reaches it, the target absent (None) or a regular file (its status), and the folder made to take
    a file there and then: a temporary file made and removed, as the write will make one (so /proc, /sys, a
    read-only or a full folder, one this user may not write, is refused now, not after the runs). OSError (its
    name ``path``, as given) when the folder is missing or takes no file; WriteRefused otherwise."""
    try:
        fd, name = _parent(path)
    except OSError as e:
        raise _as_given(e, path) from None
    try:
        st = _look(fd, name, path, replace)
        try:
            probe, tmp = _make_temp(fd, name)
        except OSError as e:
            raise _as_given(e, path) from None
        os.close(probe)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        return st
    finally:
        os.close(fd)


def _as_given(e: OSError, path: str | Path) -> OSError:
    """``e`` naming ``path`` as the user gave it, not a temporary file beside it."""
    return type(e)(e.errno, e.strerror, os.fspath(path))


# Writing a whole file ----------------------------------------------------------------------------------------


class _Pending:
    """A temporary file beside the target, in the same folder descriptor, until ``commit`` renames it over."""

    def __init__(self, path: str | Path, replace: bool) -> None:
        self.path, self.replace = path, replace
        self.dir, self.name = _parent(path)
        try:
            _look(self.dir, self.name, path, replace)  # a refusal before anything is written
            self.fd, self.tmp = _make_temp(self.dir, self.name)
        except BaseException:
            os.close(self.dir)
            raise

    def commit(self, mode: int, keep: bool, sync: bool) -> None:
        old = _look(self.dir, self.name, self.path, self.replace)
        if keep and old is not None:
            if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):  # not root: the file becomes ours
                    os.fchown(self.fd, old.st_uid, old.st_gid)
            mode = stat.S_IMODE(old.st_mode)
        os.fchmod(self.fd, mode)  # after the owner: a chown clears set-id bits
        if sync:
            os.fsync(self.fd)
        if self.replace:
            os.rename(self.tmp, self.name, src_dir_fd=self.dir, dst_dir_fd=self.dir)
        else:
            self._link_new()
        self.tmp = ""
        if sync:
            _sync_dir(self.dir)

    def _link_new(self) -> None:
        """Put the file at a name that must still be free: a hard link fails on anything there, atomically."""
        try:
            os.link(self.tmp, self.name, src_dir_fd=self.dir, dst_dir_fd=self.dir, follow_symlinks=False)
        except FileExistsError:
            _look(self.dir, self.name, self.path, replace=False)
            raise _exists(self.path) from None
        except OSError as e:
            if e.errno not in _NO_HARD_LINKS:
                raise
            # A filesystem without hard links: a rename after a look, which replaces a link or file planted in
            # between, never writes through it.
            _look(self.dir, self.name, self.path, replace=False)
            os.rename(self.tmp, self.name, src_dir_fd=self.dir, dst_dir_fd=self.dir)
            return
        with contextlib.suppress(OSError):
            os.unlink(self.tmp, dir_fd=self.dir)

    def close(self) -> None:
        """Remove the temporary file if it was not committed; close the descriptors."""
        try:
            if self.tmp:
                with contextlib.suppress(OSError):
                    os.unlink(self.tmp, dir_fd=self.dir)
        finally:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            os.close(self.dir)


def _make_temp(dirfd: int, name: str) -> tuple[int, str]:
    for _ in range(100):
        tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, _TEMP, 0o600, dir_fd=dirfd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def _sync_dir(dirfd: int) -> None:
    """The rename made durable: the folder's own entry synced (an O_PATH descriptor cannot be)."""
    with contextlib.suppress(OSError):
        fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dirfd)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_file(path: str | Path, data: str | bytes, *, mode: int = 0o644, keep: bool = True, sync: bool = False,
               replace: bool = True) -> None:
    """Write ``data`` to ``path`` whole (a temporary file beside it renamed over it). ``keep``: a file replaced
    keeps its mode and owner (``mode`` is a new file's); ``sync``: the data and the rename reach the disk before
    this returns; ``replace`` False: the name must be free (WriteRefused when it is not). WriteRefused when the
    target is no regular file, or its folder lies behind a link others could plant; OSError as the system says."""
    raw = data.encode() if isinstance(data, str) else data
    _write(path, lambda fd: _write_all(fd, raw), mode, keep, sync, replace)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write(path: str | Path, fill: Callable[[int], None], mode: int, keep: bool, sync: bool, replace: bool) -> None:
    try:
        pending = _Pending(path, replace)
        try:
            fill(pending.fd)
            pending.commit(mode, keep, sync)
        finally:
            pending.close()
    except OSError as e:
        raise _as_given(e, path) from None


@contextlib.contextmanager
def replacing(path: str | Path, *, mode: int = 0o644, keep: bool = True, sync: bool = False,
              replace: bool = True) -> Iterator[TextIO]:
    """``write_file`` for text written as it is made (``json.dump``): the file the block writes is renamed over
    ``path`` when the block ends, and removed if it raises (the old file stays)."""
    try:
        pending = _Pending(path, replace)
    except OSError as e:
        raise _as_given(e, path) from None
    try:
        with os.fdopen(os.dup(pending.fd), "w", encoding="utf-8") as f:
            yield f
        try:
            pending.commit(mode, keep, sync)
        except OSError as e:
            raise _as_given(e, path) from None
    finally:
        pending.close()


# A file written as it goes -----------------------------------------------------------------------------------


def create_new(path: str | Path, *, mode: int = 0o644, append: bool = False, replace: bool = False) -> int:
    """A descriptor (the caller's to close) of a file made new at ``path`` with ``O_CREAT|O_EXCL|O_NOFOLLOW``, for
    a writer that writes as it goes. ``replace``: a regular file there is removed first (a new one is still made:
    anything planted after the removal makes the open fail). WriteRefused when the name holds anything else, or
    anything at all without ``replace``."""
    dirfd, name = _parent(path)
    try:
        if replace and _look(dirfd, name, path, replace=True) is not None:
            os.unlink(name, dir_fd=dirfd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_APPEND if append else 0)
        try:
            fd = os.open(name, flags, 0o600, dir_fd=dirfd)
        except FileExistsError:
            _look(dirfd, name, path, replace=False)
            raise _exists(path) from None
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            raise
        return fd
    finally:
        os.close(dirfd)


def same_file(path: str | Path, st: os.stat_result) -> bool:
    """Whether ``path`` (not followed) still names the file whose status is ``st``."""
    try:
        dirfd, name = _parent(path)
    except (OSError, BadInput):
        return False
    try:
        now = _lstat(dirfd, name)
    except OSError:
        return False
    finally:
        os.close(dirfd)
    return now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def discard(path: str | Path, st: os.stat_result) -> None:
    """Remove what ``create_new`` made at ``path`` (``st``: its status), only if the name still holds it."""
    with contextlib.suppress(OSError, BadInput):
        dirfd, name = _parent(path)
        try:
            now = _lstat(dirfd, name)
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(name, dir_fd=dirfd)
        finally:
            os.close(dirfd)


def remove_file(path: str | Path) -> bool:
    """Remove the regular file at ``path`` (whether there was one); WriteRefused for anything else there."""
    dirfd, name = _parent(path)
    try:
        if _look(dirfd, name, path, replace=True) is None:
            return False
        os.unlink(name, dir_fd=dirfd)
        return True
    finally:
        os.close(dirfd)


def changeable_by_others(path: str | Path) -> Path | None:
    """The first folder on ``path`` (itself, then up to /) that a user other than root and this process could
    rename entries in: owned by another user, or writable by group or others without the sticky bit. None when
    none is. For a path handed to another program (fio opens its file by name): no descriptor can hold it, so a
    folder whose entries someone else may swap for a link is refused instead."""
    me = os.geteuid()
    here = Path(os.path.realpath(path))
    for folder in (here, *here.parents):
        try:
            st = os.lstat(folder)
        except OSError:
            return folder
        if st.st_uid not in (0, me):
            return folder
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            return folder
    return None
