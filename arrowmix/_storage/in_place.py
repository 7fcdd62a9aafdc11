"""Files read in place: the version each was opened at, and the one check every read makes.

Parquet read in place, MDS shards, Megatron and numpy token files and Arrow files described
for another process are the user's files: arrowmix never writes them, and nothing but their
``stat`` says when someone else did. Every reader of such files records each file's
:class:`FileVersion` when it opens it (size, inode, modification and change times, in ns)
and calls :meth:`FileVersion.check` before it reads. The change time cannot be set from user
space, so any write (in place, through a mapping, a truncation, a copy over it, a rename in
its place) gives another version, and the read raises
:class:`~arrowmix.exceptions.ChunkFileError` naming the file and what changed.

The rule, by construction:

1. **At open** (:meth:`FileVersion.of`): the version is taken once the kernel's clock tick
   of the file's times has passed (1 to 10 ms: a file written just before it is waited for),
   so any later write moves a time. The opener computes the content digest (the
   fingerprint) from the same version, and checks the version again afterwards.
2. **Before each read** that decodes or hands out bytes: one ``stat`` per file read.
3. **After each decode into memory** (Parquet row groups, MDS shards): one more ``stat``,
   so bytes written while a decode ran are not kept (nor cached) under the old version.

Zero-copy reads (token files, Arrow chunk files) hand out views of the file's memory map:
a write made after a view was handed out changes what the view holds, and no code runs to
see it; the next read through arrowmix (step 2) raises. ``docs/guarantees.md`` lists what is
and is not detected, and when.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from arrowmix.exceptions import ChunkFileError

__all__ = ["FileVersion", "OpenedFile", "changed_error", "check_all", "coarse_ns"]

#: Longest wait for a just-written file's time tick to pass (a file stamped in the future).
_SETTLE_S = 0.1


#: The clock the kernel stamps file times with (Linux's CLOCK_REALTIME_COARSE is 5; Python
#: names it on few builds).
_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5 if sys.platform.startswith("linux") else None)


def coarse_ns() -> int:
    """Now, on the clock the kernel stamps file times with (elsewhere: 20 ms ago)."""
    if _COARSE is not None:
        return time.clock_gettime_ns(_COARSE)
    return time.time_ns() - 20_000_000


@dataclass(frozen=True)
class FileVersion:
    """A file as it was opened: its path and ``stat`` version (module docstring)."""

    path: str
    size: int
    inode: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def from_stat(cls, path: str, st: os.stat_result) -> FileVersion:
        """The version ``st`` of ``path`` (no wait: see :meth:`of`)."""
        return cls(path, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)

    @classmethod
    def of(cls, path: str) -> FileVersion:
        """The version of ``path`` now, taken once its time tick has passed.

        A write within the tick of the version taken would leave every time unchanged; the
        wait (only for a file written in the last few ms) makes any later write visible.

        Raises:
            OSError: ``path`` cannot be ``stat``-ed (missing, no permission).
        """
        st = os.stat(path)
        deadline = time.monotonic() + _SETTLE_S
        while coarse_ns() <= max(st.st_mtime_ns, st.st_ctime_ns):
            if max(st.st_mtime_ns, st.st_ctime_ns) - coarse_ns() > _SETTLE_S * 1e9:
                break  # stamped in the future (clock skew): taken as it is, without a wait
            if time.monotonic() > deadline:
                break
            time.sleep(0.001)
            st = os.stat(path)
        return cls.from_stat(path, st)

    def changes(self, st: os.stat_result) -> list[str]:
        """What differs between this version and ``st`` (empty: the same version)."""
        out = []
        if st.st_ino != self.inode:
            out.append("replaced by another file")
        if st.st_size != self.size:
            out.append(f"{st.st_size} bytes now, {self.size} at open")
        if st.st_mtime_ns != self.mtime_ns:
            out.append("rewritten: its modification time moved")
        elif st.st_ctime_ns != self.ctime_ns and not out:
            out.append("written in place: its change time moved")
        return out

    def problem(self) -> str | None:
        """Why the file is not this version now, or None when it is."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return f"it cannot be read now ({exc.strerror or exc})"
        if (st.st_ctime_ns, st.st_mtime_ns, st.st_ino, st.st_size) == (
            self.ctime_ns, self.mtime_ns, self.inode, self.size
        ):  # fmt: skip
            return None  # the common case, on every read: one stat and one compare
        changes = self.changes(st)
        return "; ".join(changes) if changes else None

    def check(self, what: str) -> None:
        """Raise unless the file is still this version; ``what`` names its kind.

        Raises:
            ChunkFileError: the file changed, was replaced or removed since it was opened
                (the message names it, says what changed and how to go on).
        """
        problem = self.problem()
        if problem is not None:
            raise changed_error(what, self.path, problem)


def changed_error(what: str, path: str, problem: str) -> ChunkFileError:
    """The error of a file read in place that is not the version opened."""
    return ChunkFileError(
        f"{what} {path!r} changed since it was opened ({problem}): its rows now are not the "
        "ones the dataset's fingerprint names, so they are not read. Open it again (replace "
        "files by rename, not in place, while a dataset over them is open)."
    )


def check_all(versions: Iterable[FileVersion], what: str) -> None:
    """:meth:`FileVersion.check` of each of ``versions``.

    Raises:
        ChunkFileError: the first file that changed (named).
    """
    stat = os.stat
    for v in versions:  # the hot path of every token read: one stat and one compare a file
        try:
            st = stat(v.path)
        except OSError:
            v.check(what)  # raises, saying why
            continue
        if (st.st_ctime_ns, st.st_mtime_ns, st.st_ino, st.st_size) != (
            v.ctime_ns, v.mtime_ns, v.inode, v.size
        ):  # fmt: skip
            v.check(what)  # raises, naming what changed


class OpenedFile:
    """Base of what a reader records of one file it opened: ``version`` and its check.

    Subclasses (frozen dataclasses) declare ``version`` as their first field and name their
    kind in ``kind`` (``"Parquet file"``, ``"MDS shard"``) for the error.
    """

    version: FileVersion
    kind: ClassVar[str] = "File"

    @property
    def path(self) -> str:
        return self.version.path

    @property
    def size(self) -> int:
        return self.version.size

    def check(self) -> None:
        """Refuse the file unless it is still the version opened (ChunkFileError, named)."""
        self.version.check(self.kind)
