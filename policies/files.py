"""Reading a file from a folder someone else may have written (a run folder, a checkpoint, a policy folder): only
a regular file, never through a link, never waiting on it, never past the size it may have.

A path in such a folder can be a link to ``/dev/zero`` (endless bytes), a FIFO (an open that waits for a writer
forever) or a sparse file of a terabyte that takes no disk. Opening with ``O_NOFOLLOW | O_NONBLOCK`` and checking
the open descriptor (``fstat``: a regular file, its size) before a byte is read refuses each of them at once, and
the check is of the very file that is then read, so it cannot be swapped in between. Folders are walked the same
way: every entry is looked at without following it, and a link or any other file that is not a plain file or
folder is refused, by name, before anything is read or copied.

`FileRefused` (a `ValueError`) is one line naming the file and what it is.
"""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

CHUNK = 1 << 20


class FileRefused(ValueError):
    """A file that is not a regular file of an allowed size (a link, a FIFO, a device, too large); one line."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | Path, max_bytes: int | None = None) -> int:
    """A read-only descriptor of the regular file at `path`, opened without following a link in its last part and
    without waiting (a FIFO opens at once, and is then refused). `FileRefused` unless it is a regular file of at
    most `max_bytes`; `OSError` when it cannot be opened (gone). The caller closes the descriptor."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if os.path.islink(path):  # O_NOFOLLOW's ELOOP: say what it is, not the errno
            raise FileRefused(f"'{path}' is a symbolic link, refused: only a regular file is read") from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise FileRefused(f"'{path}' is {_kind(status.st_mode)}, refused: only a regular file is read")
        if max_bytes is not None and status.st_size > max_bytes:
            raise FileRefused(f"'{path}' is {status.st_size:,} bytes, more than the {max_bytes:,} such a file may "
                              "have: refused")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path` (`open_regular`), at most `max_bytes`: a file that grows past them
    while it is read is refused, not read on."""
    fd = open_regular(path, max_bytes)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise FileRefused(f"'{path}' grew past the {max_bytes:,} bytes such a file may have while it was read: "
                          "refused")
    return data


def regular_files(folder: str | Path) -> list[str]:
    """The paths (``a/b.pkl``, relative to `folder`) of every file under `folder`, sorted, found without following
    a link; `FileRefused` naming the first entry that is neither a regular file nor a folder (a link to anything,
    a FIFO, a device, a socket). No file is opened. A `folder` that is not there has none."""
    folder = Path(folder)
    if folder.is_symlink():
        raise FileRefused(f"'{folder}' is a symbolic link, refused: only a regular folder is read")
    if not folder.is_dir():
        return []
    found = []
    pending = [folder]
    while pending:
        current = pending.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    pending.append(Path(entry.path))
                elif stat.S_ISREG(mode):
                    found.append(Path(entry.path).relative_to(folder).as_posix())
                else:
                    raise FileRefused(f"'{entry.path}' is {_kind(mode)}, refused: only regular files are read")
    return sorted(found)


def copy_regular(fd: int, target: Path, size: int) -> str:
    """Copy the first `size` bytes of the open file `fd` into a new file `target` (never one that is there): the
    SHA-256 of the bytes written, and of a byte past `size` when the file has grown since it was opened, so that
    the digest then differs from the signed one. Nothing past ``size + 1`` bytes is read, nor past `size`
    written."""
    digest = hashlib.sha256()
    read = written = 0
    with open(target, "xb") as out:
        while read <= size:
            block = os.read(fd, min(CHUNK, size + 1 - read))
            if not block:
                break
            digest.update(block)
            read += len(block)
            kept = block[:max(0, size - written)]
            out.write(kept)
            written += len(kept)
    return digest.hexdigest()


def sha256_regular(fd: int, size: int) -> str:
    """The SHA-256 of the first `size` bytes of the open file `fd`, and of one byte past them if there is one (a
    file that grew then no longer matches the digest of its `size` bytes)."""
    digest = hashlib.sha256()
    left = size + 1
    while left > 0:
        block = os.read(fd, min(CHUNK, left))
        if not block:
            break
        digest.update(block)
        left -= len(block)
    return digest.hexdigest()
