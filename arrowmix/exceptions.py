"""Exceptions raised by arrowmix.

Every class inherits :class:`ArrowmixError` *and* the builtin it refines, so existing
``except ValueError`` / ``except OSError`` handlers keep working.
"""

from __future__ import annotations

__all__ = [
    "ArrowmixError",
    "CacheCorruptedError",
    "CacheDirError",
    "CacheLimitError",
    "CacheWarning",
    "ChunkFileError",
    "ColumnNotFoundError",
    "DroppedDataWarning",
    "ElasticResumeError",
    "FingerprintError",
    "FingerprintWarning",
    "IncompleteCorpusError",
    "InputFormatError",
    "InvalidTypeError",
    "NotLocalError",
    "ObjectChangedError",
    "PerformanceWarning",
    "RemoteReadError",
    "SavedDatasetError",
    "SchemaMismatchError",
    "ShardingError",
    "StateError",
    "TargetExistsError",
    "TokenFileError",
    "WorkerDiedError",
    "WriteError",
]


class ArrowmixError(Exception):
    """Base class of every arrowmix exception.

    .. versionadded:: 0.1
    """


class ChunkFileError(ArrowmixError, OSError):
    """A chunk or cache file is missing, truncated, corrupt or not Arrow IPC file format.

    .. versionadded:: 0.1
    """


class CacheCorruptedError(ChunkFileError):
    """A cache file exists but its content or metadata does not match its name.

    .. versionadded:: 0.1
    """


class IncompleteCorpusError(ChunkFileError):
    """A chunk directory is an unfinished ``write_chunks``, or does not match its manifest.

    The message names the directory and the missing or unexpected files;
    ``from_chunks(..., allow_incomplete=True)`` opens the files present anyway.

    .. versionadded:: 0.1
    """


class TokenFileError(ChunkFileError):
    """A Megatron ``.bin``/``.idx`` pair or a flat numpy token file is damaged or inconsistent.

    A truncated index, a bad magic or version, a dtype code out of range, a ``.bin`` shorter
    (or longer) than its index says, a file whose size is not a multiple of its dtype, or
    document offsets that do not fit the file. The message names the file and the problem.

    .. versionadded:: 0.2
    """


class SchemaMismatchError(ArrowmixError, ValueError):
    """Tables or streams that must share a schema do not.

    .. versionadded:: 0.1
    """


class ColumnNotFoundError(ArrowmixError, KeyError, ValueError):
    """A column named in a call is not in the dataset; the message lists the columns.

    A ``KeyError`` (indexing ``ds["col"]``) and a ``ValueError`` (HF ``datasets`` raises one
    for unknown columns in ``select_columns``, ``remove_columns``, ``rename_columns``...).

    .. versionadded:: 0.2
    """


class FingerprintError(ArrowmixError, ValueError):
    """A fingerprint is malformed (not filename-safe hex).

    .. versionadded:: 0.1
    """


class InputFormatError(ArrowmixError, ValueError):
    """An input file being ingested is malformed; the message names the file and line.

    .. versionadded:: 0.1
    """


class NotLocalError(ArrowmixError, FileNotFoundError, ValueError):
    """``load_dataset`` was asked for something that needs the network (a Hub name, a script).

    arrowmix loads local files only; the message says how to download a local copy. Both a
    ``FileNotFoundError`` and a ``ValueError``.

    .. versionadded:: 0.1
    """


class InvalidTypeError(ArrowmixError, TypeError):
    """An argument of a public call, or a value a user function returned, has the wrong type.

    The message names the argument (``from_dict(mapping=...)``), the column or the row, and
    says what is expected; for example ``from_pylist([{"a": 1}, None])`` names row 1.

    .. versionadded:: 0.3
    """


class StateError(ArrowmixError, ValueError):
    """A checkpoint state does not fit the pipeline it is loaded into.

    .. versionadded:: 0.1
    """


class ShardingError(ArrowmixError, ValueError):
    """A sharding (``num_instances`` / ``instance_rank``, DataLoader split) is invalid.

    .. versionadded:: 0.2
    """


class ElasticResumeError(ArrowmixError, ValueError):
    """A pipeline cannot resume the checkpoints of another number of instances.

    The message names the stage that refuses and what to do instead.

    .. versionadded:: 0.2
    """


class DroppedDataWarning(UserWarning):
    """A stage drops part of the data by design (e.g. ``budget_bucket(remainder="drop")``).

    The message says how much and how to drop less.

    .. versionadded:: 0.2
    """


class PerformanceWarning(UserWarning):
    """A setting will run far slower than another one would on this machine.

    For instance ``to_stream(shuffle="global")`` over a memory-mapped corpus larger than the
    memory available for the page cache, where every row is a random disk read: the message
    names the sizes and the faster setting (``shuffle="blocks"``).

    .. versionadded:: 0.4
    """


class WorkerDiedError(ArrowmixError, RuntimeError):
    """A worker process of ``map``/``filter`` (``num_proc > 1``) died without raising.

    It was killed (e.g. by the out-of-memory killer) or crashed in native code; the message is
    HF ``datasets``'s, and a note names the function. Nothing partial is kept: a rerun
    computes the missing segments.

    .. versionadded:: 0.2
    """


class RemoteReadError(ArrowmixError, OSError):
    """Reading a remote object kept failing (dropped connections, throttling) after retries.

    .. versionadded:: 0.2
    """


class ObjectChangedError(RemoteReadError):
    """A remote object changed (another ETag, version or size) since the dataset was opened.

    Raised instead of mixing two versions of a corpus; reopen the dataset to read the new one.

    .. versionadded:: 0.2
    """


class CacheLimitError(ArrowmixError, ValueError):
    """A bounded local chunk cache cannot hold what must be read (``cache_limit`` too small).

    .. versionadded:: 0.2
    """


class FingerprintWarning(UserWarning):
    """An object could not be hashed; the transform got a random fingerprint.

    Also emitted when a hashed function reads what its fingerprint cannot see: the
    environment (``os.environ``, ``os.getenv``) or the ``random`` module's global generator.

    Filter it like any warning, e.g. ``warnings.simplefilter("error", FingerprintWarning)``.

    .. versionadded:: 0.1
    """


class CacheWarning(UserWarning):
    """A cache file was invalid (damaged, foreign or stale) and its result is recomputed.

    .. versionadded:: 0.1
    """


class TargetExistsError(ArrowmixError, FileExistsError):
    """A write would replace or delete files that arrowmix did not write; nothing was changed.

    ``save_to_disk`` replaces only a previous ``save_to_disk`` (and an empty directory);
    ``write_chunks(overwrite=True)`` replaces only the chunks of a previous ``write_chunks``.
    The message names the path and the files in the way.

    .. versionadded:: 0.1
    """


class WriteError(ArrowmixError, OSError):
    """Writing a file failed (a full disk, a quota, permissions); the message names the file.

    ``errno`` is the operating system's (``errno.ENOSPC`` for a full disk). What was there
    before the write is left as it was.

    .. versionadded:: 0.1
    """


class SavedDatasetError(ArrowmixError, ValueError):
    """A ``save_to_disk`` directory's ``state.json`` is damaged or names files outside it.

    .. versionadded:: 0.1
    """


class CacheDirError(ArrowmixError, NotADirectoryError):
    """The cache root (``$ARROWMIX_CACHE``) or a cache directory is not a directory.

    .. versionadded:: 0.1
    """
