"""``Dataset.from_generator``: rows from a generator function, written once into cached chunks.

The result is cached by the generator's fingerprint, as HF ``datasets`` does: the directory
``<cache root>/generated/<fp>/`` is named by a hash of the generator function (by value, with
its ``gen_kwargs``) and the declared schema, so a rerun, in this process or a new one, opens
the chunks and never calls the generator. Rows are streamed in blocks into chunk files (memory
stays bounded by a block and a chunk). A directory counts as finished only once its
``_COMPLETE.json`` marker exists, written atomically last: a generator that raises midway
leaves no marker, and the next call writes the chunks again.

The chunks are a cache and are checked like one: a rerun compares each chunk with the size
and digest its ``_manifest.json`` records, hashing a chunk only once per ``stat`` identity
(:func:`arrowmix._storage.trust.check`; the writer records the chunks it wrote), so a rerun of
an intact corpus costs a ``stat`` per chunk. A changed, truncated or missing chunk, or a
damaged manifest, makes the rerun generate the corpus again (with a
:class:`~arrowmix.exceptions.CacheWarning`). A dataset over the corpus holds its marker
(:func:`arrowmix._cache.inuse.hold`), so that ``cleanup-cache`` leaves it alone while in use;
every rerun touches the marker, which is the corpus's last use.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._cache import generated
from arrowmix._cache.inuse import hold
from arrowmix._cache.lock import fingerprint_lock
from arrowmix._cache.paths import cache_root, is_caching_enabled, temp_cache_dir
from arrowmix._dataset.state import derive, state_of
from arrowmix._fingerprint.functions import fingerprint_function
from arrowmix._fingerprint.hasher import hash_value
from arrowmix._storage import trust
from arrowmix._storage.atomic import atomic_sink
from arrowmix._storage.chunks import write_batches
from arrowmix._storage.fs import is_local, local_path

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = ["GENERATED_DIR", "MARKER", "corpus_dataset", "from_generator"]

_VERSION = 2  # 2: tokenizer-shaped columns in HF's optimized int types
#: The directory below a cache root holding one corpus per generator fingerprint.
GENERATED_DIR = "generated"
#: Written last into a corpus directory: the corpus is complete.
MARKER = "_COMPLETE.json"
_MARKER = MARKER
_ROWS_PER_BLOCK = 1000


def _root(cache_dir: str | os.PathLike[str] | None) -> str:
    if cache_dir is None:
        return cache_root() if is_caching_enabled() else temp_cache_dir()
    root = os.fspath(cache_dir)
    if not is_local(root):
        raise ValueError(f"`cache_dir` must be a local directory, got {root!r}.")
    return local_path(root)


def generator_fingerprint(
    generator: Callable[..., Any], gen_kwargs: Mapping[str, Any], schema: pa.Schema | None
) -> str:
    """The cache key of a generator's rows: its code and captured values, kwargs, schema."""
    fn = functools.partial(generator, **gen_kwargs) if gen_kwargs else generator
    declared = None if schema is None else schema.to_string(show_schema_metadata=True)
    return hash_value(("generator", _VERSION, fingerprint_function(fn), declared))


def _blocks(rows: Iterator[Any], schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
    from arrowmix._dataset.inputs.py_columns import optimized_batch, typed_table
    from arrowmix._dataset.row_batches import conformed, rows_batch

    def blocks() -> Iterator[pa.RecordBatch]:
        start = 0
        while block := list(itertools.islice(rows, _ROWS_PER_BLOCK)):
            if schema is None:
                yield optimized_batch(rows_batch(block, start))  # HF's types, as from_dict
            else:
                cols = {n: [r.get(n) for r in block] for n in schema.names}
                yield from typed_table(cols, schema).to_batches()
            start += len(block)

    return blocks() if schema is not None else conformed(blocks())


def from_generator(
    generator: Callable[..., Any],
    schema: pa.Schema | None,
    gen_kwargs: Mapping[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    fingerprint: str | None = None,
) -> Dataset:
    """The rows ``generator(**gen_kwargs)`` yields, as a dataset over cached chunks."""
    if not callable(generator):
        raise TypeError(f"`generator` must be a callable; got {type(generator).__name__}.")
    kwargs = dict(gen_kwargs or {})
    fp = fingerprint or generator_fingerprint(generator, kwargs, schema)
    return corpus_dataset(
        cache_dir,
        fp,
        lambda: _blocks(iter(generator(**kwargs)), schema),
        schema,
        "The generator yielded no rows and no `features` were given.",
    )


def corpus_dataset(
    cache_dir: str | os.PathLike[str] | None,
    fp: str,
    batches: Callable[[], Iterator[pa.RecordBatch]],
    schema: pa.Schema | None,
    empty: str,
) -> Dataset:
    """A dataset over the corpus ``<cache root>/generated/<fp>/``, written from ``batches()``.

    A complete corpus of that name is opened as it is; otherwise ``batches()`` is written
    into it (no batches: an empty corpus of ``schema``, or ``ValueError(empty)`` without one).
    """
    from arrowmix._dataset.inputs.builders import from_chunks

    root = os.path.join(_root(cache_dir), GENERATED_DIR)
    out = os.path.join(root, fp)
    marker = os.path.join(out, _MARKER)
    os.makedirs(out, exist_ok=True)
    with fingerprint_lock(root, fp):  # one writer per corpus; cleanup-cache takes it too
        if generated.served(out, "generated corpus", "Generating it again.") is None:
            written = batches()
            try:
                first = next(written, None)
                if first is None and schema is None:
                    raise ValueError(empty)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.rmdir(out)  # nothing was written: leave no empty corpus directory
                raise
            if first is None:
                first = pa.RecordBatch.from_pylist([], schema=schema)
            chunks = write_batches(itertools.chain([first], written), out, overwrite=True)
            with trust.batch():  # written and hashed just now (the manifest's digests)
                for path in chunks:
                    trust.vouch(path)
            info = {"fingerprint": fp, "chunks": [os.path.basename(p) for p in chunks]}
            with atomic_sink(marker) as sink:
                sink.write(trust.marker_bytes(info))
        else:
            os.utime(marker)  # the corpus's last use (see cleanup-cache)
        ds = from_chunks(out)
        state = state_of(ds)
        return type(ds)(derive(state, holds=(*state.holds, hold(marker))))
