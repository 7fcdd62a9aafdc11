"""Write into a file in place the way a disk error or another tool would: no time moves."""

from __future__ import annotations

import os
from pathlib import Path


def write_in_place(path: str | Path, data: bytes, offset: int = 0) -> None:
    """Write ``data`` at ``offset`` of ``path``, keeping its inode, size and modification time.

    Only the change time moves (user space cannot set it).
    """
    st = os.stat(path)
    assert offset + len(data) <= st.st_size
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )
