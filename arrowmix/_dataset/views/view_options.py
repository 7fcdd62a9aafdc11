"""HF ``datasets``' storage options of the views (select, shuffle, sort, shard, splits).

``keep_in_memory`` (the mapping stays in RAM, never in an indices file),
``indices_cache_file_name`` (the mapping is written to that file, whatever its size),
``load_from_cache_file`` (False: that file is written again), ``new_fingerprint`` (the view's
fingerprint) and ``writer_batch_size`` (accepted; an indices file is one record batch). None
of them changes which rows the view holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ViewOptions", "view_options"]


@dataclass(frozen=True)
class ViewOptions:
    """Where a view's indices mapping lives and what it is called; never which rows."""

    keep_in_memory: bool = False
    #: An absolute path (or URL) with an extension, or None (``indices-<fp>.arrow``).
    indices_cache_file_name: str | None = None
    load_from_cache_file: bool = True
    #: The view's fingerprint as given (any string HF accepts), or None (the rolled one).
    new_fingerprint: str | None = None


def view_options(
    *,
    keep_in_memory: bool = False,
    indices_cache_file_name: Any = None,
    writer_batch_size: int | None = None,
    load_from_cache_file: bool | None = None,
    new_fingerprint: str | None = None,
) -> ViewOptions:
    """The checked :class:`ViewOptions` of one view call.

    Raises:
        ValueError: ``keep_in_memory`` with ``indices_cache_file_name`` (HF refuses both), or
            a file name without an extension.
        FingerprintError: ``new_fingerprint`` is not a string HF accepts.
    """
    from arrowmix._dataset.map_options import check_cache_file_name, user_fingerprint

    del writer_batch_size  # accepted: an indices file is written as one record batch
    path = check_cache_file_name(indices_cache_file_name)
    if keep_in_memory and path is not None:
        raise ValueError(
            "Please use either `keep_in_memory` or `indices_cache_file_name` but not both."
        )
    if new_fingerprint is not None:
        user_fingerprint(new_fingerprint)  # raises for a string HF refuses
    return ViewOptions(
        keep_in_memory=bool(keep_in_memory),
        indices_cache_file_name=path,
        load_from_cache_file=load_from_cache_file is not False,
        new_fingerprint=new_fingerprint,
    )
