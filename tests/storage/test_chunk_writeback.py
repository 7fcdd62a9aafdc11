"""Chunks are synced on a thread while the next one is written, every one before the manifest."""

from __future__ import annotations

import errno
import os
import threading

import pytest

import arrowmix as am
from arrowmix._storage import integrity, trust, writeback
from arrowmix._storage.digests import MANIFEST_NAME


def _rows(n: int):
    for i in range(n):
        yield {"id": i, "text": "x" * (i % 7)}


def _record_syncs_and_renames(monkeypatch):
    """``(what, path, thread name)`` of each fsync and rename, in order."""
    events: list[tuple[str, str, str]] = []
    fsync, replace = os.fsync, os.replace

    def logged_fsync(fd):
        fsync(fd)  # the event once the data is on disk
        where = os.readlink(f"/proc/self/fd/{fd}")
        events.append(("fsync", where, threading.current_thread().name))

    def logged_replace(src, dst, *args, **kwargs):
        replace(src, dst, *args, **kwargs)
        events.append(("rename", os.fspath(dst), threading.current_thread().name))

    monkeypatch.setattr(os, "fsync", logged_fsync)
    monkeypatch.setattr(os, "replace", logged_replace)
    return events


def test_every_chunk_is_synced_off_the_main_thread_before_the_manifest(tmp_path, monkeypatch):
    out = tmp_path / "c"
    events = _record_syncs_and_renames(monkeypatch)
    paths = am.write_chunks(_rows(25), out, rows_per_chunk=10)
    manifest = events.index(("rename", str(out / MANIFEST_NAME), "MainThread"))
    before = events[:manifest]
    for path in paths:
        renamed = before.index(("rename", path, "MainThread"))
        synced = [i for i, e in enumerate(before) if e[:2] == ("fsync", path)]
        assert len(synced) == 1 and synced[0] > renamed, events
        assert before[synced[0]][2].startswith("arrowmix-writeback")
    last_chunk = max(before.index(("rename", p, "MainThread")) for p in paths)
    dir_synced = [i for i, e in enumerate(before) if e[:2] == ("fsync", str(out))]
    assert dir_synced and dir_synced[-1] > last_chunk  # the chunks' renames are durable too
    assert am.Dataset.from_chunks(str(out))["id"] == list(range(25))
    assert not [t for t in threading.enumerate() if t.name.startswith("arrowmix-writeback")]


def test_chunks_are_recorded_as_synced(tmp_path, monkeypatch):
    out = tmp_path / "c"
    monkeypatch.setattr(trust, "_synced", set())
    paths = am.write_chunks(_rows(25), out, rows_per_chunk=10)
    assert all(trust.identity(p) in trust._synced for p in paths)


def test_a_failed_sync_fails_the_write_naming_the_chunk(tmp_path, monkeypatch):
    out = tmp_path / "c"
    real = writeback.fsync_file

    def failing(path):
        if path.endswith("chunk-00001.arrow"):
            raise OSError(errno.EIO, "Input/output error")
        real(path)

    monkeypatch.setattr(writeback, "fsync_file", failing)
    with pytest.raises(OSError, match=r"chunk-00001\.arrow") as info:
        am.write_chunks(_rows(25), out, rows_per_chunk=10)
    assert info.value.errno == errno.EIO
    assert not (out / MANIFEST_NAME).exists()  # not a finished corpus
    assert not [t for t in threading.enumerate() if t.name.startswith("arrowmix-writeback")]


def test_rows_failing_mid_write_stop_the_sync_thread(tmp_path):
    def rows():
        yield from _rows(25)
        raise RuntimeError("the rows failed")

    with pytest.raises(RuntimeError, match="the rows failed"):
        am.write_chunks(rows(), tmp_path / "c", rows_per_chunk=10)
    assert not (tmp_path / "c" / MANIFEST_NAME).exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("arrowmix-writeback")]


def test_ingested_chunks_are_trusted_after_a_reboot(tmp_path, monkeypatch):
    src = tmp_path / "a.jsonl"
    src.write_text("".join(f'{{"id": {i}, "text": "row {i}"}}\n' for i in range(50)))
    cache = tmp_path / "cache"
    first = am.load_dataset("json", data_files=str(src), split="train", cache_dir=str(cache))
    assert first["id"] == list(range(50))
    # A fresh process in another boot: only files synced before they were recorded are trusted.
    monkeypatch.setattr(integrity, "_checked", set())
    monkeypatch.setattr(trust, "_records", {})
    monkeypatch.setattr(trust, "_changed", {})
    monkeypatch.setattr(trust, "_known", set())
    monkeypatch.setattr(trust, "_BOOT", "another-boot")
    monkeypatch.setattr(trust, "_BOOT_NS", 0)  # every file changed since the boot
    hashed: list[str] = []
    digest = trust.file_digest
    monkeypatch.setattr(trust, "file_digest", lambda p: hashed.append(p) or digest(p))
    again = am.load_dataset("json", data_files=str(src), split="train", cache_dir=str(cache))
    assert again["text"] == first["text"]
    assert hashed == []  # the chunks were synced before they were recorded
