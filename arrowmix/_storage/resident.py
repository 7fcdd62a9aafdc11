"""Keep the pages of memory-mapped chunk and cache files a process holds resident bounded.

Every page of a file mapping a process touches counts in its resident set (RSS, and in its
peak, ``ru_maxrss``) until the mapping goes, although it is page cache the kernel can drop:
a gather of 1M random rows out of a 2 GB corpus, or a training stream reading random rows
for hours, would show the whole corpus in the process. Every reader of mapped rows (the
gathers and slices of :class:`~arrowmix._dataset.reader.TableReader`, the token gathers of
streams, a map's passes) tells :func:`touched` how many bytes it read, an estimate; so do
the reads around them: the offsets read to locate scattered rows
(:func:`~arrowmix._storage.pages.row_ranges`) and the head, footer and headers of each file
opened (:func:`~arrowmix._storage.ipc.open_table`).
Every :data:`CHECK_BYTES` of them the process's resident file pages are looked up
(``/proc/self/statm``, one read); once they have grown by :data:`RESIDENT_LIMIT` since the
last release, the pages of every mapping made by
:func:`~arrowmix._storage.pages.map_file` are handed back (``madvise(MADV_DONTNEED)``).

The mappings are read-only views of files arrowmix never modifies in place: the pages stay
in the page cache, and a later read faults them back in from there (a minor fault, no disk
read, no value changed). Linux only; elsewhere nothing is counted.

The cost is those faults. The kernel maps up to 16 cached pages around each fault, so random
rows of a corpus in the page cache fill the limit quickly, and every row read after a
hand-back faults again: a warm corpus read at random many times over (a training stream over
a corpus that fits in memory) reads several times slower than with every page kept mapped.
A cold corpus, past the page cache, faults anyway. So by default pages are handed back only
while the live mappings are larger than half the memory available (:func:`past_memory`): a
corpus past memory is read with a bounded resident set, one that fits keeps its pages mapped
(the process then shows each page it touched, up to the corpus's size). The memory is looked
up (``/proc/meminfo``) only once :data:`RESIDENT_LIMIT` more pages are resident than at the last
look, so a corpus that fits, read over and over, costs one ``statm`` read per
:data:`CHECK_BYTES`.
``ARROWMIX_RESIDENT_MB=N`` hands them back past N MiB whatever the corpus's size;
``ARROWMIX_RESIDENT_MB=off`` never.
"""

from __future__ import annotations

import mmap
import os
import sys

from arrowmix._storage import pages

__all__ = [
    "ADAPTIVE",
    "AROUND",
    "CHECK_BYTES",
    "DEFAULT_LIMIT",
    "RESIDENT_LIMIT",
    "memory_available",
    "past_memory",
    "release_mapped",
    "resident_file_bytes",
    "touched",
]


#: The limit without ``$ARROWMIX_RESIDENT_MB``.
DEFAULT_LIMIT = 64 * 2**20


def _limit(env: str | None) -> int:
    """``$ARROWMIX_RESIDENT_MB`` in bytes (64 MiB unset; ``off``: never hand pages back)."""
    if env is None or not env.strip():
        return DEFAULT_LIMIT
    if env.strip().lower() == "off":
        return 2**62
    try:
        mib = float(env)
    except ValueError:
        mib = -1.0
    if not 0 <= mib < 2**40:
        raise ValueError(
            f"ARROWMIX_RESIDENT_MB must be a number of MiB (>= 0) or 'off', got {env!r}."
        )
    return int(mib * 2**20)


#: Growth of the resident file pages (bytes) that hands back the mapped files' pages
#: (``$ARROWMIX_RESIDENT_MB`` in MiB; ``off`` keeps every page, as a corpus that fits the
#: page cache and is read at random many times over may prefer: see the module's notes).
RESIDENT_LIMIT = _limit(os.environ.get("ARROWMIX_RESIDENT_MB"))
#: Without ``$ARROWMIX_RESIDENT_MB``, pages are handed back only while the live mappings
#: are larger than half the memory the kernel reports available (:func:`past_memory`): a
#: corpus that fits keeps its pages mapped, where re-reads cost nothing.
ADAPTIVE = not os.environ.get("ARROWMIX_RESIDENT_MB", "").strip()
#: Bytes read (as estimated by the readers) between two looks at the resident set.
CHECK_BYTES = 32 * 2**20

_DONTNEED = 4  # MADV_DONTNEED (Linux)
_ON = sys.platform.startswith("linux")


class _Gauge:
    """The counters of :func:`touched`.

    Bytes read since the last look, and the resident file bytes right after the last release
    (libraries, other files included; -1: not looked yet).

    Process state, not a value: code that reaches it (a user's subclass of a stage, hashed by
    value from a source checkout) fingerprints the same whatever the counters hold.
    """

    __slots__ = ("floor", "pending")

    def __init__(self) -> None:
        self.pending = 0
        self.floor = -1

    def __fingerprint__(self) -> str:
        return "arrowmix resident gauge"


_GAUGE = _Gauge()


#: Bytes a fault on a scattered row may map: the page read and the cached pages around it
#: (the kernel's ``fault_around_bytes``, 64 KiB by default). Readers count this much for each
#: buffer a scattered row reads.
AROUND = 64 * 1024


def resident_file_bytes() -> int:
    """This process's resident pages of files and shared memory, in bytes (0 if unknown)."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return 0
    try:
        return int(os.pread(fd, 128, 0).split()[2]) * mmap.PAGESIZE
    except (OSError, ValueError, IndexError):
        return 0
    finally:
        os.close(fd)


def touched(nbytes: int) -> None:
    """Count ``nbytes`` read from mapped files; hand their pages back when too many stay."""
    if not _ON:
        return
    g = _GAUGE
    g.pending += nbytes
    if g.pending < CHECK_BYTES:
        return
    g.pending = 0
    now = resident_file_bytes()
    if g.floor < 0 or now < g.floor:
        g.floor = now  # the first look, or pages the kernel reclaimed itself
    elif now - g.floor > RESIDENT_LIMIT:
        if not ADAPTIVE or past_memory():
            release_mapped()
        else:  # the corpus fits: asked again once as many more pages are resident
            g.floor = now


def memory_available() -> int:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (0 if unknown)."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def past_memory() -> bool:
    """Whether the live mappings are larger than half the memory available.

    Such a corpus cannot stay in the page cache: its random reads fault anyway, so handing
    pages back costs little, and keeping them would show gigabytes in the process. A smaller
    one is kept mapped (the process shows at most its size).
    """
    mapped = sum(end - start for start, end in pages.mapped_ranges())
    return mapped > memory_available() // 2


def release_mapped() -> int:
    """Hand back this process's pages of every live :func:`~pages.map_file` mapping.

    Returns the bytes of the mappings advised (whether their pages were resident or not).
    """
    done = 0
    for start, end in pages.mapped_ranges():
        if pages.advise(start, end - start, _DONTNEED):
            done += end - start
    _GAUGE.pending = 0
    _GAUGE.floor = resident_file_bytes()
    return done
