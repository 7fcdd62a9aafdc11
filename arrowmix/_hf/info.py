"""HF ``datasets``' ``DatasetInfo`` texts, kept where HF keeps them: in the table's metadata.

HF stores ``{"info": {"description": ..., "citation": ..., "features": {...}}}`` as JSON under
the schema metadata key ``huggingface``. ``from_dict(info=...)`` puts the four texts of an
HF ``DatasetInfo`` (description, citation, homepage, license) and its names (dataset_name,
config_name, version) there; views keep them (they keep the table); ``concatenate_datasets``
merges them as HF's ``DatasetInfo.from_merge`` does (distinct texts joined by a blank line,
the names kept when all inputs agree); ``ds.info`` reads them back with ``ds.features``.
A rename and a ``map`` result keep them. Nothing here changes rows or
fingerprints. :class:`InfoFields` gives HF's ``DatasetInfoMixin`` properties (``builder_name``,
``citation``...) to :class:`~arrowmix.Dataset` and :class:`~arrowmix.IterableDataset`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrowmix._hf.state import state_of
from arrowmix._hf.table import HF_META_KEY

if TYPE_CHECKING:
    from arrowmix._dataset.dataset import Dataset

__all__ = [
    "INFO_FIELDS",
    "InfoFields",
    "INFO_NAMES",
    "INFO_TEXTS",
    "carried_texts",
    "dataset_info",
    "dataset_with_info",
    "info_entry",
    "merged_metadata",
    "renamed_entry",
    "with_info",
]

#: The ``DatasetInfo`` fields kept: free texts that describe the data, not its layout.
INFO_TEXTS = ("description", "citation", "homepage", "license")
#: The names kept too (``version`` as its text); a concatenation keeps them only when every
#: input has the same (HF's ``DatasetInfo.from_merge``).
INFO_NAMES = ("dataset_name", "config_name", "version")
_KEPT = INFO_TEXTS + INFO_NAMES


def _text(key: str, value: Any) -> str | None:
    """The kept text of field ``key``'s ``value`` (a ``Version`` or its saved dict: its text)."""
    if key == "version" and value is not None and not isinstance(value, str):
        value = value.get("version_str") if isinstance(value, dict) else str(value)
    return value if isinstance(value, str) and value else None


def info_entry(schema: pa.Schema) -> dict[str, Any]:
    """The ``info`` dict of ``schema``'s HF metadata, ``{}`` when absent or unreadable."""
    raw = (schema.metadata or {}).get(HF_META_KEY)
    if raw is None:
        return {}
    try:
        info = json.loads(raw)["info"]
    except (ValueError, KeyError, TypeError):
        return {}
    return info if isinstance(info, dict) else {}


def _metadata(schema: pa.Schema, info: dict[str, Any]) -> dict[bytes, bytes] | None:
    """``schema``'s metadata with its HF entry's ``info`` replaced by ``info``."""
    meta = dict(schema.metadata or {})
    try:
        entry = json.loads(meta[HF_META_KEY]) if HF_META_KEY in meta else {}
    except ValueError:
        entry = {}
    entry = entry if isinstance(entry, dict) else {}
    entry["info"] = info
    meta[HF_META_KEY] = json.dumps(entry).encode()
    return meta


def with_info(table: pa.Table, info: Any) -> pa.Table:
    """``table`` with the texts of ``info`` (an HF ``DatasetInfo``) in its HF metadata."""
    texts = {k: _text(k, getattr(info, k, None)) for k in _KEPT}
    texts = {k: v for k, v in texts.items() if v is not None}
    if not texts:
        return table
    merged = {**info_entry(table.schema), **texts}
    return table.replace_schema_metadata(_metadata(table.schema, merged))


def renamed_entry(schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
    """``schema``'s HF metadata after a rename (``{old: new}``): features renamed, texts kept."""
    from arrowmix._hf.features import renamed_metadata

    return carried_texts(renamed_metadata(schema, renamed), schema) or {}


def carried_texts(meta: dict[bytes, bytes] | None, source: pa.Schema) -> dict[bytes, bytes] | None:
    """Schema metadata ``meta`` with the ``DatasetInfo`` texts of ``source`` added.

    HF keeps a dataset's info through its transforms (``map``, ``cast``...).
    """
    texts = {k: v for k, v in info_entry(source).items() if k in _KEPT}
    if not texts:
        return meta
    base = pa.schema([]).with_metadata(meta or {})
    return _metadata(base, {**info_entry(base), **texts})


def dataset_with_info(ds: Dataset, info: Any) -> Dataset:
    """``ds`` with the texts of ``info`` kept (same rows, same fingerprint)."""
    from dataclasses import replace

    s = state_of(ds)
    if info is None or not isinstance(s.table, pa.Table):
        return ds
    return type(ds)(replace(s, table=with_info(s.table, info)))


def merged_metadata(schemas: Sequence[pa.Schema], out: pa.Schema) -> dict[bytes, bytes] | None:
    """The HF metadata of a concatenation of tables of ``schemas`` into ``out``.

    Texts: the inputs' own when they all agree, else each field's distinct non-empty values
    joined by a blank line (HF's ``DatasetInfo.from_merge``). Features: each output column's
    entry from the first input that describes it with the same Arrow type.
    """
    infos = [info_entry(s) for s in schemas]
    if not any(infos):
        return None
    merged: dict[str, Any] = {}
    for key in INFO_TEXTS:
        values = list(dict.fromkeys(str(i[key]) for i in infos if i.get(key)))
        if values:
            merged[key] = "\n\n".join(values).strip()
    kept = [{k: i.get(k) for k in _KEPT} for i in infos]
    if all(k == kept[0] for k in kept):  # HF keeps the whole info of equal inputs only
        merged.update({k: v for k, v in kept[0].items() if k in INFO_NAMES and v})
    features: dict[str, Any] = {}
    for schema, info in zip(schemas, infos, strict=True):
        feats = info.get("features")
        if not isinstance(feats, dict):
            continue
        for name, feature in feats.items():
            known = name in out.names and name in schema.names and name not in features
            if known and schema.field(name).type.equals(out.field(name).type):
                features[name] = feature
    if features:
        merged["features"] = features
    return _metadata(out.remove_metadata(), merged) if merged else None


def dataset_info(ds: Dataset) -> Any:
    """HF's ``DatasetInfo`` of ``ds``: its kept texts, ``load_dataset``'s fields, ``ds.features``.

    Raises:
        ImportError: HF ``datasets`` is not installed.
    """
    try:
        import datasets  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError as exc:
        raise ImportError(
            "`ds.info` is HF datasets' `DatasetInfo` and needs `datasets` installed."
        ) from exc
    from arrowmix._hf.load_info import info_fields

    s = state_of(ds)
    entry = info_entry(s.table.schema) if isinstance(s.table, pa.Table) else {}
    texts = {k: entry[k] for k in _KEPT if isinstance(entry.get(k), str)}
    loaded = info_fields(s.hf_info, datasets)  # load_dataset's names win
    return datasets.DatasetInfo(**{**texts, **loaded}, features=ds.features)


#: HF's ``DatasetInfoMixin`` properties read from ``info`` (``features`` and ``split`` apart).
INFO_FIELDS = (
    "builder_name",
    "citation",
    "config_name",
    "dataset_size",
    "description",
    "download_checksums",
    "download_size",
    "homepage",
    "license",
    "size_in_bytes",
    "supervised_keys",
    "version",
)


def _info_field(name: str) -> Any:
    def get(self: Any) -> Any:
        info = self.info
        return None if info is None else getattr(info, name)

    return property(get, doc=f"``info.{name}`` (HF's ``DatasetInfo`` field).")


class InfoFields:
    """HF's ``DatasetInfoMixin`` properties: each is the field of ``self.info``."""

    info: Any
    builder_name = _info_field("builder_name")
    citation = _info_field("citation")
    config_name = _info_field("config_name")
    dataset_size = _info_field("dataset_size")
    description = _info_field("description")
    download_checksums = _info_field("download_checksums")
    download_size = _info_field("download_size")
    homepage = _info_field("homepage")
    license = _info_field("license")
    size_in_bytes = _info_field("size_in_bytes")
    supervised_keys = _info_field("supervised_keys")
    version = _info_field("version")
