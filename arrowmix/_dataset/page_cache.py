"""Whether a corpus fits the page cache, and the warning when a global shuffle needs it to.

``shuffle="global"`` reads rows in a random order. While the memory-mapped corpus fits in
the page cache, every row is read from disk once and then served from memory; past that,
almost every row is a random disk read (the disk's random-read rate, a few hundred thousand
rows per second at best), where ``shuffle="blocks"`` reads contiguous blocks at
near-sequential speed. The default stays ``"global"``: choosing the order from the
machine's memory would make the order, and so the checkpoints, depend on the machine. So
:func:`warn_global_past_memory` warns instead, naming the sizes and the setting, when the
order is ``"global"`` by default (:data:`DEFAULT_SHUFFLE`); a user who passes
``shuffle="global"`` has chosen it and is not warned.

The memory available for the page cache is ``MemAvailable`` of ``/proc/meminfo`` (free
memory plus the page cache and slabs the kernel can reclaim: what the corpus's pages could
occupy without pushing out other processes' memory), capped by the limit of the process's
control group (``memory.max``), whose page cache is charged to it. ``MemFree`` would
count the corpus's own cached pages as taken, and ``MemTotal`` would count other processes'
memory as free. Unknown on other systems: no warning.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from arrowmix._dataset.state import num_rows
from arrowmix.exceptions import PerformanceWarning

if TYPE_CHECKING:
    from arrowmix._dataset.state import DatasetState

__all__ = [
    "DEFAULT_SHUFFLE",
    "DefaultShuffle",
    "available_memory",
    "mapped_bytes",
    "warn_global_past_memory",
]


class DefaultShuffle(str):
    """The default ``shuffle`` of ``to_stream``: equal to ``"global"``, but not chosen."""

    __slots__ = ()


#: ``to_stream``'s default order: ``"global"``, told apart from a user's explicit choice.
DEFAULT_SHUFFLE = DefaultShuffle("global")

_MEMINFO = "/proc/meminfo"
_CGROUP_MAX = "/sys/fs/cgroup/memory.max"


def available_memory() -> int | None:
    """Bytes of memory the page cache can use (see the module docstring), or None if unknown."""
    try:
        with open(_MEMINFO, encoding="ascii") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    available = kb * 1024
    try:
        with open(_CGROUP_MAX, encoding="ascii") as f:
            limit = f.read().strip()
    except OSError:
        return available
    return min(available, int(limit)) if limit.isdigit() else available


def mapped_bytes(s: DatasetState) -> int:
    """Bytes of memory-mapped storage a shuffled pass over the view ``s`` touches (0: none).

    From the buffers' sizes (metadata: nothing is read), scaled by the share of the table's
    rows the view holds. In-memory tables and remote corpora count 0.
    """
    whole = s.reader.arrow
    if not s.files or whole is None or whole.num_rows == 0:
        return 0
    columns = s.format.read_columns()
    table = whole if columns is None else whole.select(list(columns))
    return table.get_total_buffer_size() * num_rows(s) // whole.num_rows


def warn_global_past_memory(s: DatasetState) -> None:
    """Warn (:class:`PerformanceWarning`) when a global shuffle's corpus exceeds the memory."""
    size = mapped_bytes(s)
    if size == 0:
        return
    available = available_memory()
    if available is None or size <= available:
        return
    warnings.warn(
        f"to_stream(shuffle='global') reads rows in a random order from {size / 2**30:.1f} GiB "
        f"of memory-mapped data, more than the {available / 2**30:.1f} GiB of memory available "
        "for the page cache: each row will be a random disk read, often 10-100x slower than "
        "reading in blocks. Pass shuffle='blocks' (contiguous blocks of rows, shuffled in "
        "windows: see block_size= and window_blocks=) for near-sequential reads, or "
        "shuffle='global' explicitly to keep this order without this warning.",
        PerformanceWarning,
        stacklevel=3,
    )
