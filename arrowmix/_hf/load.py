"""``load_dataset`` for local data, with HF ``datasets``' rules (see ``docs/load_dataset.md``).

Where the files are and what reads them: :mod:`arrowmix._hf.load_files`; the builders:
:mod:`arrowmix._hf.load_builders` and :mod:`arrowmix._hf.load_folder`; the ``split=``
grammar: :mod:`arrowmix._hf.load_split`. Nothing here opens a network connection: a name that
is not a local path or a builder raises :class:`~arrowmix.exceptions.NotLocalError`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from arrowmix._hf.load_files import BUILDERS, resolve_data_files
from arrowmix.exceptions import NotLocalError

__all__ = ["load_dataset"]

#: HF's loading arguments that change nothing for local files read once into the cache.
_LOADER_ARGS = (
    "download_config",
    "download_mode",
    "verification_mode",
    "save_infos",
    "token",
    "use_auth_token",
    "num_proc",
    "storage_options",
    "revision",
    "trust_remote_code",
)
#: HF builders arrowmix does not have.
_OTHER_BUILDERS = (
    "conll",
    "eval",
    "hdf5",
    "lance",
    "pandas",
    "pdffolder",
    "spark",
    "sql",
    "videofolder",
    "webdataset",
    "xml",
    "generator",
)


def _download_hint(path: str) -> str:
    return (
        "arrowmix's load_dataset reads local files only and never uses the network. To use a "
        "dataset of the Hugging Face Hub, download it once, e.g. `huggingface-cli download "
        f"{path} --repo-type dataset --local-dir DIR` (or `hf download {path} --repo-type "
        "dataset --local-dir DIR`), then call `load_dataset(DIR)` (with `data_dir=` or "
        "`data_files=` to pick a configuration's files). A copy already in the local Hugging "
        "Face cache ($HF_HUB_CACHE, as `hf download` and HF datasets leave it) is read by name."
    )


def _local_copy(path: str, revision: Any = None) -> str:
    """``path``, or for a Hub name not on disk, its copy in the local Hugging Face cache."""
    if path in BUILDERS or os.path.exists(os.path.expanduser(path)) or "://" in path:
        return path
    from arrowmix._hf.load_hub_cache import hub_snapshot

    return hub_snapshot(path, None if revision is None else str(revision)) or path


def _check_local(path: str, data_files: Any) -> None:
    """Raise :class:`NotLocalError` for anything that would need the network."""
    if path.endswith(".py"):
        raise NotLocalError(
            f"{path!r} is a dataset script: HF datasets no longer runs them and arrowmix never "
            "did. Convert the data to files (JSON Lines, CSV, Parquet...) and load those. "
            + _download_hint("NAME")
        )
    if "://" in path or path.startswith("buckets/"):
        raise NotLocalError(f"{path!r} is a remote location. " + _download_hint(path))
    if path in _OTHER_BUILDERS:
        raise ValueError(
            f"arrowmix's load_dataset has no {path!r} builder; its builders are "
            f"{', '.join(BUILDERS)}, and local directories or files read by them."
        )
    if path not in BUILDERS and not os.path.exists(os.path.expanduser(path)):
        raise NotLocalError(
            f"{path!r} is not a local directory or file, nor one of the builders "
            f"({', '.join(BUILDERS)}). " + _download_hint(path)
        )
    for pattern in _patterns(data_files):
        if "://" in pattern and not pattern.startswith("file://"):
            raise NotLocalError(f"The data file {pattern!r} is remote. " + _download_hint(path))


def _patterns(data_files: Any) -> list[str]:
    if data_files is None:
        return []
    if isinstance(data_files, (str, os.PathLike)):
        return [os.fspath(data_files)]
    if isinstance(data_files, Mapping):
        return [p for v in data_files.values() for p in _patterns(v)]
    out: list[str] = []
    for item in data_files:
        out += _patterns(item.get("path") if isinstance(item, Mapping) else item)
    return out


def _needed(split: Any, available: Sequence[str]) -> list[str]:
    """The splits a ``split=`` spec reads, checked against ``available``."""
    from arrowmix._hf.load_split import parse_split

    specs = split if isinstance(split, (list, tuple)) else [split]
    names: list[str] = []
    for spec in specs:
        text = str(spec)
        terms = list(available) if text == "all" else [t.split for t in parse_split(text)]
        for name in terms:
            if name not in available:
                raise ValueError(f'Unknown split "{name}". Should be one of {list(available)}.')
            if name not in names:
                names.append(name)
    return names


def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: Any = None,
    split: Any = None,
    cache_dir: str | None = None,
    features: Any = None,
    streaming: bool = False,
    keep_in_memory: bool | None = None,
    **builder_kwargs: Any,
) -> Any:
    """Load local data files as HF ``datasets.load_dataset`` does, cached by their content.

    ``path``: a builder (``"json"``, ``"csv"``, ``"parquet"``, ``"text"``, ``"arrow"``,
    ``"imagefolder"``, ``"audiofolder"``) with ``data_files=`` or ``data_dir=``; or a local
    directory or file, whose builder is inferred from the file extensions. ``data_files``: a
    path, glob (``**`` recursive), list, or ``{split: files}``; without it, a directory's files
    are split by HF's naming rules (``train``/``validation``/``test`` in file or directory
    names, else all ``"train"``). ``split``: ``None`` (a :class:`DatasetDict` of every split),
    or HF's grammar (``"train"``, ``"train[:5%]"``, ``"train[10:20]"``, ``"train+test"``,
    ``"all"``...), or a list of those (a list of Datasets). Builder options go by keyword
    (``field=``, ``sep=``/``delimiter=``, ``keep_linebreaks=``, ``sample_by=``,
    ``columns=``, ``drop_labels=``...). ``features`` casts the columns; ``name`` (a
    configuration's name: of the folder's README ``configs:``, see below) and HF's download
    arguments are accepted (the latter change nothing).

    A folder whose README.md lists ``configs:`` in its YAML header (HF's dataset card) is read
    as HF reads it when neither ``data_files`` nor ``data_dir`` is given: the configuration
    ``name``, else the default one, gives the files per split and builder options.

    The files are read once: the result is cached by their content (under ``cache_dir`` when
    given), so a rerun, in this process or another, only hashes them. ``streaming=True``
    gives each Dataset's ``to_iterable_dataset()``. Every split is read (HF prepares them
    all), and ``ds.info`` holds HF's ``builder_name``, ``config_name``, ``version``,
    ``splits`` and sizes (see :mod:`arrowmix._hf.load_info`).

    Raises:
        NotLocalError: ``path`` is not a local path or a builder (a Hub name), or the call
            needs the network; the message says how to download a local copy.
        FileNotFoundError: no file matches ``data_files`` or is in the directory.
        ValueError: an unknown split (the message lists the splits), a bad ``split`` spec,
            an option the builder does not take.
    """
    revision = builder_kwargs.get("revision")
    for arg in _LOADER_ARGS:
        builder_kwargs.pop(arg, None)
    path = _local_copy(os.fspath(path), revision)
    if data_files is not None and not data_files:
        raise ValueError(f"Empty 'data_files': {data_files!r}. It should be non-empty or None.")
    if os.path.isfile(os.path.join(path, "state.json")) and os.path.isfile(
        os.path.join(path, "dataset_info.json")
    ):
        raise ValueError(
            "You are trying to load a dataset that was saved using `save_to_disk`. "
            "Please use `load_from_disk` instead."
        )
    _check_local(path, data_files)
    card = _card_config(path, name, data_dir, data_files)
    config_name = "default"
    if card is None:
        builder, defaults, files = resolve_data_files(path, data_dir, data_files)
    else:
        builder, defaults, files, config_name = card
    options = {**defaults, **builder_kwargs}
    from arrowmix._hf.load_builders import check_options
    from arrowmix._hf.load_info import LoadInfo, dataset_name

    check_options(builder, options)
    wanted = list(files) if split is None else _needed(split, list(files))
    if not streaming:
        wanted = list(files)  # HF prepares every split, whatever `split` picks
    file_rows: dict[str, list[int]] = {}
    member_rows: dict[str, list[int]] = {}
    splits = _build(
        builder,
        {s: files[s] for s in wanted},
        options,
        cache_dir,
        features,
        keep_in_memory,
        file_rows,
        member_rows,
    )
    if builder not in ("imagefolder", "audiofolder"):
        from arrowmix._hf.load_conform import conform_splits

        def build_one(name: str) -> Any:
            one = _build(builder, {name: files[name]}, options, cache_dir, features, False, {}, {})
            return one[name]

        splits = conform_splits(list(files), splits, build_one)
    info = LoadInfo(builder, dataset_name(path, builder), config_name)
    if not streaming:  # HF's streaming reads nothing first: no split sizes
        from arrowmix._hf.load_info import download_size, split_infos

        sizes = split_infos(splits, member_rows)
        info = replace(info, splits=sizes, download_size=download_size(_patterns(files)))
    splits = {s: _with_info(ds, info) for s, ds in splits.items()}
    if split is None:
        from arrowmix._hf.dataset_dict import DatasetDict

        result: Any = DatasetDict(splits)
    else:
        from arrowmix._hf.load_split import select_split

        result = (
            [select_split(splits, s) for s in split]
            if isinstance(split, (list, tuple))
            else select_split(splits, split)
        )
    if not streaming:
        return result
    # HF's csv and text builders know their features only when given ``features=``
    known = features is not None or builder not in ("csv", "text")
    return _streaming(result, file_rows, _row_groups(builder, files, file_rows), known)


def _with_info(ds: Any, info: Any) -> Any:
    from arrowmix._dataset.state import derive, state_of

    return type(ds)(derive(state_of(ds), hf_info=info))


def _card_config(
    path: str, name: str | None, data_dir: str | None, data_files: Any
) -> tuple[str, dict[str, Any], dict[str, list[str]], str] | None:
    """``resolve_data_files``' answer and the configuration's name for a README ``configs:``.

    HF's rules, if the folder's card has any configuration.

    Only for a local folder loaded without ``data_files`` or ``data_dir`` (see
    :mod:`arrowmix._hf.load_card`).
    """
    if data_files is not None or data_dir is not None or not os.path.isdir(path):
        return None
    from arrowmix._hf.load_builders import builder_options
    from arrowmix._hf.load_card import card_configs, config_options, pick_config

    configs = card_configs(path)
    if not configs:
        return None
    first = next(iter(configs.values()))
    builder, defaults, _ = resolve_data_files(path, first.get("data_dir"), first.get("data_files"))
    chosen = pick_config(configs, name)
    _, _, files = resolve_data_files(path, chosen.get("data_dir"), chosen.get("data_files"))
    options = config_options(chosen, builder_options(builder))
    chosen_name = next(k for k, v in configs.items() if v is chosen)
    return builder, {**defaults, **options}, files, chosen_name


def _build(
    builder: str,
    files: Mapping[str, list[str]],
    options: Mapping[str, Any],
    cache_dir: str | None,
    features: Any,
    keep_in_memory: bool | None,
    file_rows: dict[str, list[int]],
    member_rows: dict[str, list[int]],
) -> dict[str, Any]:
    """Each split's Dataset.

    ``file_rows`` gets each split's files' row counts (a zip archive as one file),
    ``member_rows`` the same with an archive's members apart.
    """
    from arrowmix._hf.load_builders import build_split
    from arrowmix._hf.load_folder import build_folder

    if builder in ("imagefolder", "audiofolder"):
        return build_folder(builder, files, options, features)
    return {
        s: build_split(
            builder,
            f,
            s,
            options,
            cache_dir,
            features,
            bool(keep_in_memory),
            file_rows.setdefault(s, []),
            member_rows.setdefault(s, []),
        )
        for s, f in files.items()
    }


def _row_groups(
    builder: str, files: Mapping[str, list[str]], file_rows: Mapping[str, list[int]]
) -> dict[str, list[tuple[int, ...]]]:
    """Each split's Parquet files' row groups (their row counts), HF's ``reshard()`` pieces.

    Empty for another builder, or a split whose files are not each one Parquet file (a zip
    archive is one shard that HF does not split either).
    """
    if builder != "parquet":
        return {}
    import pyarrow.parquet as pq

    out: dict[str, list[tuple[int, ...]]] = {}
    for split, paths in files.items():
        if len(paths) != len(file_rows.get(split, ())) or any(p.endswith(".zip") for p in paths):
            continue
        out[split] = []
        for path in paths:
            meta = pq.read_metadata(path)
            out[split].append(tuple(meta.row_group(g).num_rows for g in range(meta.num_row_groups)))
    return out


def _streaming(
    result: Any,
    file_rows: Mapping[str, list[int]],
    row_groups: Mapping[str, list[tuple[int, ...]]],
    known: bool = True,
) -> Any:
    """``result`` as HF's ``streaming=True`` gives it: iterable datasets named by their split.

    A DatasetDict becomes an ``IterableDatasetDict``; the rows are those of the (memory-mapped,
    cached) Datasets, read in order. Each data file is one shard, as in HF (so DataLoader
    workers and ``split_dataset_by_node`` share the files as HF's do); a sliced split
    (``"train[:5%]"``) is one shard. ``row_groups``: each Parquet file's row groups, the
    shards ``reshard()`` cuts it into, as HF's. ``known``: whether the features are known
    (else ``features`` is None, as HF's).
    """
    from arrowmix._dataset.dataset import Dataset
    from arrowmix._hf.iterable import to_iterable_dataset
    from arrowmix._hf.iterable_dict import IterableDatasetDict
    from arrowmix._hf.load_split import parse_split

    def shards_of(spec: str) -> tuple[list[int] | None, list[tuple[int, ...]] | None]:
        counts: list[int] = []
        pieces: list[tuple[int, ...]] | None = []
        for term in parse_split("+".join(file_rows) if spec == "all" else spec):
            rows = file_rows.get(term.split)
            if not rows or term.bounds(sum(rows)) != (0, sum(rows)):
                return None, None
            counts += rows
            groups = row_groups.get(term.split)
            pieces = None if pieces is None or groups is None else pieces + groups
        return counts, pieces

    def one(ds: Any) -> Any:
        rows, pieces = shards_of(str(ds.split))
        it = to_iterable_dataset(ds, 1, split=ds.split, file_rows=rows, info=ds.info, pieces=pieces)
        if known:
            return it
        info = copy.copy(it.info)
        info.features = None
        return it._derive(features=None, info=info)

    if isinstance(result, list):
        return [one(ds) for ds in result]
    if isinstance(result, Dataset):
        return one(result)
    return IterableDatasetDict({name: one(ds) for name, ds in result.items()})
