"""Writing a command's output file, safely in a directory another user owns.

Every file a command writes (``record``'s traces, ``flight``'s captures,
``profile -o``, ``export -o``) goes through :class:`AtomicFile`. livetrace
often runs as root, told to write into a home or a shared folder whose
owner may be hostile, so nothing is done by a name that owner could swap:

- the directory is opened once (``O_DIRECTORY|O_NOFOLLOW``) and every
  later step is relative to that handle;
- the data goes to a new temporary file beside the target, created
  exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600 while written), so
  no planted name or link is ever opened;
- when whole, it is flushed to disk, given its mode through the descriptor
  (``fchmod``: 0666 less the umask), and renamed to its final name, which
  replaces whatever entry is there, a symlink included, without following
  it;
- the entries are checked, before and after the rename, to be the file
  written: a temporary file moved away or swapped for a link is reported
  as :class:`OutputTamperedError`, never as a file saved.

A pipe, a terminal or a device (``-o /dev/stdout``, ``-o -``) has no name to
give and is written in place, but only one the caller or root put there: a
link or a pipe of another user at the output's name is an entry to
replace, never a way in.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO
from urllib.parse import quote

from livetrace._errors import OutputPathError, OutputTamperedError, OutputWriteError

PART_SUFFIX = ".part"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Bytes of a name made from one a peer chose: a file system takes 255 in one name, and the caller adds
# its own parts (``service=``, ``-PID-NS.trace``) to it.
PLAIN_NAME_BYTES = 200
_CUT_MARK = "~"  # starts the hash of a name that was cut: the encoding never writes one
_HASH_BYTES = 8


def _encoded(text: str) -> str:
    # A byte that was not UTF-8 (a surrogate escape) as its escape's text: what a reader decodes is text.
    return quote(text, safe="", errors="backslashreplace").replace("~", "%7E")


def plain_name(text: str, limit: int = PLAIN_NAME_BYTES) -> str:
    """A name a peer chose (a service's name, an executable's), made one
    plain name in a directory: percent-encoded as Hive encodes a partition's
    value (so ``/``, ``..`` and any byte past ASCII become ``%XX``, and a
    reader decodes it back), a leading dot encoded too (never hidden, never
    ``.`` or ``..``), and at most ``limit`` bytes. A name too long is cut
    between characters (so that it still decodes to text) and ends in ``~``
    and a hash of the whole name, so that two long names that start alike
    stay two names."""
    encoded = _encoded(text)
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    if len(encoded) <= limit:
        return encoded
    digest = hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=_HASH_BYTES).hexdigest()
    room = limit - len(_CUT_MARK) - len(digest)
    kept = 0
    for i, ch in enumerate(text):
        size = 3 if i == 0 and ch == "." else len(_encoded(ch))
        if kept + size > room:
            break
        kept += size
    return encoded[:kept] + _CUT_MARK + digest


def umask() -> int:
    """The process's umask, read without setting it where Linux allows
    (setting it, even back, races with other threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _trusted(uid: int) -> bool:
    """An entry the caller or root made: one nobody else could have planted."""
    return uid in (0, os.geteuid())


def open_dir(directory: Path) -> int:
    """The directory, opened once; a symbolic link in its place is followed
    only if the caller or root made it (``~/traces -> /data/traces``), since
    another user's link could send the file anywhere."""
    try:
        return os.open(directory, _DIR_FLAGS | os.O_NOFOLLOW)
    except OSError as e:
        # (Linux says ENOTDIR for a link opened with O_DIRECTORY|O_NOFOLLOW, some systems ELOOP)
        if e.errno not in (errno.ELOOP, errno.ENOTDIR) or not os.path.islink(directory):
            raise OutputPathError(f"cannot write in {directory}: {e.strerror}") from None
    owner = os.lstat(directory).st_uid
    if not _trusted(owner):
        raise OutputPathError(
            f"cannot write in {directory}: it is a symbolic link made by another user (uid {owner}); "
            "give the directory's real path"
        )
    try:
        return os.open(directory, _DIR_FLAGS)
    except OSError as e:
        raise OutputPathError(f"cannot write in {directory}: {e.strerror}") from None


def _what(dir_fd: int, name: str) -> str:
    """What an entry is now, for a message."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return "it is gone"
    if stat.S_ISLNK(st.st_mode):
        return f"it is now a symbolic link (made by uid {st.st_uid})"
    return f"it is now another file (owned by uid {st.st_uid})"


class AtomicFile:
    """A file written under a temporary name beside ``path`` (``file``, a
    buffered binary stream, takes the bytes, and may be truncated and
    sought), then put in place by :meth:`commit`; see the module's
    docstring. Used as a context manager, the temporary file is removed if
    the block ends without a commit.

    The temporary name is ``path``'s name, a random part and ``.part``
    (starting with a dot if ``hidden``), so that a recording in progress
    shows beside its target.
    """

    def __init__(self, path: Path, *, hidden: bool = False, mode: int | None = None, dir_fd: int | None = None) -> None:
        self.path = path
        self._mode = 0o666 & ~umask() if mode is None else mode
        # dir_fd: path's directory, opened already by a caller that made it (a dataset's partitions)
        self._dir = open_dir(path.parent) if dir_fd is None else os.dup(dir_fd)
        prefix = ("." if hidden else "") + path.name + "."
        try:
            for _ in range(64):
                name = prefix + secrets.token_hex(8) + PART_SUFFIX
                try:
                    fd = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=self._dir)
                    break
                except FileExistsError:
                    continue  # someone's name, or a chance collision: another random one
                except OSError as e:
                    raise OutputPathError(
                        f"cannot create a file in {path.parent} for {path}: {e.strerror}", errno=e.errno
                    ) from None
            else:
                raise OutputPathError(f"cannot create a file in {path.parent} for {path}: every name tried was taken")
        except BaseException:
            os.close(self._dir)
            raise
        self._name: str | None = name
        self.temp = path.parent / name
        st = os.fstat(fd)
        self._id = (st.st_dev, st.st_ino)
        self.file: BinaryIO = os.fdopen(fd, "wb", buffering=1 << 20)

    def _is_ours(self, name: str) -> bool:
        try:
            st = os.lstat(name, dir_fd=self._dir)
        except FileNotFoundError:
            return False
        return (st.st_dev, st.st_ino) == self._id

    def commit(self, name: str | None = None) -> Path:
        """Put the file in place under ``name`` (default: ``path``'s name) in
        the same directory, and return its path; raise
        :class:`OutputTamperedError` if another user moved or replaced the
        temporary file, or what the rename put at the final name is not it."""
        assert self._name is not None, "committed or discarded already"
        final = self.path.name if name is None else name
        where = self.path.parent / final
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            os.fchmod(self.file.fileno(), self._mode)  # the descriptor, never a name that could be a link by now
            if not self._is_ours(self._name):
                raise self._tampered(where)
            try:
                os.rename(self._name, final, src_dir_fd=self._dir, dst_dir_fd=self._dir)
            except FileNotFoundError:  # moved away since the check
                raise self._tampered(where) from None
            self._name = None  # renamed: nothing left to remove
            if not self._is_ours(final):
                raise OutputTamperedError(
                    f"{where} is not the file written: another user replaced {self.temp} as it was being "
                    f"renamed ({_what(self._dir, final)}); write to a directory only you can change",
                    path=where,
                )
        except BaseException:
            self.discard()
            raise
        self.discard()
        return where

    def _tampered(self, where: Path) -> OutputTamperedError:
        assert self._name is not None
        return OutputTamperedError(
            f"the file being written, {self.temp}, was moved or replaced by another user "
            f"({_what(self._dir, self._name)}): nothing was saved at {where}; "
            "write to a directory only you can change",
            path=where,
        )

    def discard(self) -> None:
        """Close, and remove the temporary file if it is still there and
        still ours (another user's entry by that name is left alone).
        Safe to call again."""
        if self._dir < 0:
            return
        with contextlib.suppress(OSError):  # a full disk's last flush: the file goes anyway
            self.file.close()
        try:
            if self._name is not None and self._is_ours(self._name):
                os.unlink(self._name, dir_fd=self._dir)
        finally:
            self._name = None
            os.close(self._dir)
            self._dir = -1

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def write_atomic(path: Path, pieces: Iterable[bytes], *, hidden: bool = False) -> int:
    """Write the pieces, as they come, to a new file at ``path`` through
    :class:`AtomicFile`; returns the size. Nothing is left behind if a piece
    raises."""
    size = 0
    with AtomicFile(path, hidden=hidden) as out:
        for piece in pieces:
            out.file.write(piece)
            size += len(piece)
        out.commit()
    return size


def _stream_stat(path: Path) -> os.stat_result | None:
    """What a stream target at ``path`` is (None if it is to be written as
    a file): a device, or a pipe the caller or root made, reached directly
    or through a link the caller or root made (``/dev/stdout``)."""
    try:
        st = os.lstat(path)
        via_link = stat.S_ISLNK(st.st_mode)
        if via_link:
            if not _trusted(st.st_uid):
                return None  # another user's link: replaced, never followed
            st = os.stat(path)
    except OSError:
        return None  # nothing there, or a dangling link: a file is written (over the link)
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    if via_link or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or _trusted(st.st_uid):
        return st
    return None  # another user's pipe or socket: replaced, never written into


def is_stream(path: Path) -> bool:
    """Whether ``path`` is written in place rather than as a new file:
    ``-`` (standard output), or a pipe or device as :func:`open_stream`
    takes it."""
    return str(path) == "-" or _stream_stat(path) is not None


def open_stream(path: Path) -> BinaryIO:
    """An existing pipe or device (or ``-``: standard output), opened for
    writing without creating or truncating anything. Raises
    :class:`OutputPathError` if it is not one now, or changed while being
    opened."""
    if str(path) == "-":
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    want = _stream_stat(path)
    if want is None:
        raise OutputPathError(f"{path} is no longer a pipe or device; not writing to it")
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    got = os.fstat(fd)
    if (got.st_dev, got.st_ino) != (want.st_dev, want.st_ino):
        os.close(fd)
        raise OutputPathError(f"{path} changed while it was being opened; not writing to it")
    return os.fdopen(fd, "wb")


def write_error(path: Path, e: OSError) -> OutputWriteError:
    """The typed error of a file that failed to be written (after it was removed)."""
    why = e.strerror or str(e)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        why += ": the disk is full"
    return OutputWriteError(f"cannot write {path}: {why}; nothing was saved there", path=path, errno=e.errno)


def check_output(path: str | os.PathLike[str], verb: str = "write") -> None:
    """Raise :class:`OutputPathError` unless a command's output can go to
    path: a stream target must be writable, a file's directory must exist
    and take new files. Checked before the work, so that a typo costs no
    session and no decoding."""
    p = Path(path)
    if str(p) == "-":
        return
    if p.is_dir():
        raise OutputPathError(f"cannot {verb} to {p}: it is a directory; give a file name")
    if is_stream(p):
        if not os.access(p, os.W_OK):
            raise OutputPathError(f"cannot write to {p}: permission denied")
        return
    parent = p.parent
    if not parent.is_dir():
        raise OutputPathError(f"cannot {verb} to {p}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot {verb} to {p}: the directory {parent} is not writable")


def write_output(path: Path, pieces: Iterable[bytes]) -> int:
    """A command's ``-o``: standard output for ``-``, a pipe or device in
    place, anything else a new file through :class:`AtomicFile`. Returns the
    size written. A failed write raises :class:`OutputWriteError` (a new
    file is then removed; a pipe or device keeps what it took)."""
    if str(path) == "-":
        out = sys.stdout.buffer
        size = 0
        for piece in pieces:
            out.write(piece)
            size += len(piece)
        out.flush()
        return size
    if is_stream(path):
        try:
            with open_stream(path) as out:
                return sum(out.write(piece) for piece in pieces)
        except OSError as e:
            why = e.strerror or str(e)
            raise OutputWriteError(
                f"cannot write to {path}: {why}; what it took is incomplete", path=path, errno=e.errno
            ) from None
    try:
        return write_atomic(path, pieces)
    except IsADirectoryError:  # made a directory since the check
        raise OutputPathError(f"cannot write to {path}: it is a directory; give a file name") from None
    except OSError as e:
        raise write_error(path, e) from None
