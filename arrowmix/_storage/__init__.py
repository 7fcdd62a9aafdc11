"""Storage: Arrow IPC files, memory mapping, atomic writes, fsspec URLs and chunk files."""
