"""Token files as Datasets: ``from_megatron``, ``from_token_file`` and ``to_megatron``.

The dataset's table is one ``list<dtype>`` column whose values are the files' memory maps
(:mod:`arrowmix._storage.token_files`): nothing is converted or copied, ``ds[i]`` reads one
row's tokens, and the token path (``to_stream`` then ``budget_bucket``/``pack``/``collate``)
copies each token once, from the map into the batch. The column keeps the file's dtype
(``list<uint16>`` for a uint16 corpus) so that no token is widened; a stream over it collates
into the dtype the collator asks for.

The fingerprint hashes the files' content digests (:func:`~arrowmix._storage.digests.file_digest`:
hashed once per file version, then answered from the digest cache by size, inode and
times), and how rows are cut: a moved corpus keeps its fingerprint and its cached ``map``
results (written under ``cache_dir=``, else ``<cache root>/in-place``, never beside the
files, as for Parquet read in place); a changed file gets a new one. A pickled dataset (a
``DataLoader`` worker) reopens the files instead of carrying tokens, and refuses a file
changed since it was opened.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from arrowmix._dataset.tables.parquet import _results_dir
from arrowmix._dataset.tables.tokens import TokenTable
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage.digests import file_digest
from arrowmix._storage.megatron_index import DTYPE_CODES, code_of, write_pair
from arrowmix._storage.token_arrays import TokenSource
from arrowmix._storage.token_files import flat_source, megatron_source
from arrowmix._stream.tokens.column import is_token_type
from arrowmix.exceptions import ColumnNotFoundError, InvalidTypeError, SchemaMismatchError

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["from_megatron", "from_token_file", "to_megatron"]

PathLike = str | os.PathLike[str]
_WRITE_ROWS = 1 << 16  # rows read per step by to_megatron


def _paths(spec: PathLike | Sequence[PathLike], what: str) -> list[str]:
    items = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if not items or not all(isinstance(p, (str, os.PathLike)) for p in items):
        raise TypeError(f"`{what}` must be a path or a non-empty list of paths, got {spec!r}.")
    return [os.fspath(p) for p in items]


def from_megatron(
    prefix_or_prefixes: PathLike | Sequence[PathLike],
    *,
    by: str = "sequence",
    column: str = "input_ids",
    cache_dir: PathLike | None = None,
) -> Dataset:
    """Megatron ``<prefix>.bin``/``<prefix>.idx`` pairs as one dataset, read in place.

    Rows are the index's sequences, in order, prefix after prefix (what megatron-core's
    ``IndexedDataset`` returns for each index), or its documents with ``by="document"`` (the
    sequences of each document together; the same rows when every document is one sequence,
    as Megatron's ``preprocess_data`` and datatrove write them). The one column, ``column``,
    is ``list<dtype>`` in the ``.bin``'s dtype (``list<uint16>`` for a uint16 corpus): its
    values are the ``.bin``'s memory map, never copied. Prefixes must share a dtype.

    Opening reads the index (memory-mapped; its arrays checked), builds the row offsets in
    RAM (4 bytes per row) and hashes both files once per file version for the fingerprint
    (remembered in the digest cache: a second open reads no data).

    Raises:
        TokenFileError: a missing, truncated or damaged file, or a pair whose ``.bin`` is
            not the size its ``.idx`` describes (the message names the file and problem).

    Example:
        >>> import arrowmix as am
        >>> import numpy as np, tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> am.Dataset.from_dict({"input_ids": [[1, 2, 3], [4, 5]]}).to_megatron(
        ...     os.path.join(d, "corpus"), dtype=np.uint16)
        92
        >>> ds = am.from_megatron(os.path.join(d, "corpus"))
        >>> ds.features["input_ids"], ds["input_ids"]
        (List(Value('uint16')), [[1, 2, 3], [4, 5]])
    """
    names = _paths(prefix_or_prefixes, "prefix_or_prefixes")
    sources = [megatron_source(p, by) for p in names]
    return _dataset("from_megatron", sources, [by], column, cache_dir)


def from_token_file(
    path: PathLike | Sequence[PathLike],
    dtype: Any,
    *,
    eos_id: int | None = None,
    offsets: Any = None,
    seq_len: int | None = None,
    column: str = "input_ids",
    cache_dir: PathLike | None = None,
) -> Dataset:
    """Flat numpy token files (nanoGPT's ``train.bin``) as one dataset, read in place.

    A flat file is token ids back to back in ``dtype`` (nanoGPT: uint16), with no index, so
    the rows are given by exactly one of:

    - ``eos_id``: a document ends after each ``eos_id`` token (kept in the document); a tail
      without one is the last document. Found by one pass over the file, then cached under
      the cache root by the file's content digest.
    - ``offsets``: the token offset where each document starts (an integer array, or a
      ``.npy`` file), from 0; a last entry equal to the token count may be given or not.
      One file per call.
    - ``seq_len``: consecutive blocks of ``seq_len`` tokens, as nanoGPT cuts its samples
      (``seq_len = block_size + 1`` gives inputs and shifted labels); a shorter tail is left
      out.

    The column is ``list<dtype>`` over the file's memory map (no copy); several files are
    rows one after the other.

    Raises:
        TokenFileError: a file whose size is not a multiple of the dtype, or offsets that do
            not fit it (naming the file and the problem).
        ValueError: none or several of ``eos_id``, ``offsets``, ``seq_len``.

    Example:
        >>> import arrowmix as am
        >>> import numpy as np, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "train.bin")
        >>> np.array([5, 6, 0, 7, 0, 8], dtype=np.uint16).tofile(path)
        >>> am.from_token_file(path, np.uint16, eos_id=0)["input_ids"]
        [[5, 6, 0], [7, 0], [8]]
        >>> am.from_token_file(path, np.uint16, seq_len=4)["input_ids"]
        [[5, 6, 0, 7]]
    """
    names = _paths(path, "path")
    if offsets is not None and len(names) > 1:
        raise ValueError("`offsets=` describes one file: open one file per call with it.")
    sources = [
        flat_source(p, dtype, eos_id=eos_id, offsets=offsets, seq_len=seq_len) for p in names
    ]
    cut: Any = ("eos", eos_id) if eos_id is not None else ("seq_len", seq_len)
    if offsets is not None:
        cut = ("offsets", _offsets_key(sources[0], offsets))
    return _dataset("from_token_file", sources, [str(np.dtype(dtype)), cut], column, cache_dir)


def _offsets_key(source: TokenSource, offsets: Any) -> str:
    """The identity of given offsets: the ``.npy`` file's digest, or the array's hash."""
    if isinstance(offsets, (str, os.PathLike)):
        return file_digest(source.files[1])
    return hash_value(np.asarray(source.args[3], dtype=np.int64).tobytes())


def _dataset(
    kind: str,
    sources: list[TokenSource],
    how: list[Any],
    column: str,
    cache_dir: PathLike | None,
) -> Dataset:
    from arrowmix._dataset.dataset import Dataset, DatasetState

    if not isinstance(column, str) or not column:
        raise TypeError(f"`column` must be a column name, got {column!r}.")
    parts = [s.chunks() for s in sources]
    types = {str(c.type) for chunks in parts for c in chunks}
    if len(types) > 1:
        raise SchemaMismatchError(
            f"{kind}: the files hold tokens of different types ({sorted(types)}): "
            f"{[s.files[0] for s in sources]}. Open each type as its own dataset."
        )
    value_type = parts[0][0].type if parts[0] else _empty_type(sources[0])
    chunks = [c for chunks in parts for c in chunks]
    table = pa.Table.from_arrays([pa.chunked_array(chunks, type=value_type)], [column])  # type: ignore[arg-type]
    rows = [sum(len(c) for c in chunks) for chunks in parts]
    digests = [[file_digest(f) for f in s.files] for s in sources]
    for s in sources:
        s.check()  # the digests are of the versions mapped
    opened = f"{kind}({[s.files[0] for s in sources]!r})"
    state = DatasetState(
        table=TokenTable(sources, table, opened),
        fingerprint=hash_value((kind, digests, how, column)),
        files=tuple(s.files[0] for s in sources),
        file_offsets=tuple(itertools.accumulate(rows, initial=0)),
        cache_dir=_results_dir(cache_dir),
    )
    return Dataset(state)


def _empty_type(source: TokenSource) -> pa.DataType:
    """The column type of a source with no rows (its dtype, from the index or the call)."""
    from arrowmix._storage.megatron_index import read_index

    if source.opener.__name__ == "open_megatron":
        return pa.list_(pa.from_numpy_dtype(read_index(source.files[1]).dtype))
    return pa.list_(pa.from_numpy_dtype(np.dtype(source.args[1])))


# ---------------------------------------------------------------------------- writing
def to_megatron(
    ds: Dataset, prefix: PathLike, *, column: str = "input_ids", dtype: Any = None
) -> int:
    """Write ``ds[column]`` as ``<prefix>.bin``/``<prefix>.idx`` (Megatron's format).

    One sequence and one document per row, in the view's order, readable by megatron-core's
    ``IndexedDataset`` and by :func:`from_megatron`. ``dtype``: the token type written (one
    Megatron has a code for: uint8, int8, int16, int32, int64, uint16); by default the
    column's value type, or int32 for uint32/uint64 ids. Ids that do not fit it raise
    ``ValueError``, as do null rows. The pair is written atomically: temporaries renamed
    into place after the last byte, the ``.idx`` last, so a crash never leaves a pair that
    opens as finished. Memory: one block of rows at a time, plus 8 bytes per row.
    Returns the bytes written (both files).
    """
    from arrowmix._dataset.state import num_rows, state_of

    s = state_of(ds)
    schema = s.table.schema
    if column not in schema.names:
        raise ColumnNotFoundError(
            f"to_megatron: no column {column!r}; the dataset has columns {schema.names}."
        )
    kind = schema.field(column).type
    if not is_token_type(kind):
        raise InvalidTypeError(
            f"to_megatron: column {column!r} must hold token ids as list<int*>, got {kind}."
        )
    source = np.dtype(str(kind.value_type))
    target = _target_dtype(source, dtype)
    n = num_rows(s)
    prefix = os.fspath(prefix)
    batches = _batches(ds, column, n, target, check=not np.can_cast(source, target, "safe"))
    _seqs, tokens = write_pair(prefix, target, batches)
    return int(tokens * target.itemsize + os.path.getsize(f"{prefix}.idx"))


def _target_dtype(source: np.dtype, dtype: Any) -> np.dtype:
    if dtype is not None:
        target: np.dtype = np.dtype(dtype)
        if target.kind not in "iu":
            raise ValueError(f"`dtype` must be an integer type for token ids, got {target}.")
        code_of(target)  # ValueError naming Megatron's types
        return target
    if source in DTYPE_CODES.values():
        return source
    return np.dtype("int32")  # uint32/uint64 ids: Megatron has no code; checked to fit


def _batches(
    ds: Dataset, column: str, n: int, target: np.dtype, *, check: bool
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    from arrowmix._dataset.state import state_of, view_range

    info = np.iinfo(target)
    for lo in range(0, n, _WRITE_ROWS):
        hi = min(n, lo + _WRITE_ROWS)
        col = view_range(state_of(ds), lo, hi, [column]).column(0)
        row = lo
        for chunk in col.chunks:
            if chunk.null_count:
                bad = row + int(np.flatnonzero(chunk.is_null().to_numpy(zero_copy_only=False))[0])
                raise ValueError(f"to_megatron: column {column!r} is null at row {bad}.")
            values = chunk.flatten()  # type: ignore[attr-defined]
            if values.null_count:
                raise ValueError(f"to_megatron: column {column!r} holds null token ids.")
            arr = values.to_numpy(zero_copy_only=False)
            if check and len(arr) and (arr.min() < info.min or arr.max() > info.max):
                raise ValueError(
                    f"to_megatron: column {column!r} holds token ids from {arr.min()} to "
                    f"{arr.max()}, outside {target} ([{info.min}, {info.max}]); pass a wider "
                    "`dtype=`."
                )
            offsets = chunk.offsets.to_numpy()  # type: ignore[attr-defined]
            yield arr.astype(target, copy=False), np.diff(offsets)
            row += len(chunk)
