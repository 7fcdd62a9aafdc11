"""The options of HF's packaged builders (``json``, ``csv``, ``text``...) as reader options.

``load_dataset(builder, **options)`` and ``Dataset.from_json``/``from_csv``/``from_text``/
``from_parquet`` take the same ones. An option HF's builder has and arrowmix does not is
refused by name, never ignored; HF's block-size options change nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["builder_options", "check_options", "reader_format"]

#: Options of HF's builder configs that change nothing here (the text is UTF-8, sizes of
#: read blocks are arrowmix's own).
_HARMLESS = {"chunksize", "block_size", "use_threads", "batch_size", "writer_batch_size"}
_OPTIONS = {
    "json": {"field", "encoding", "on_mixed_types"},
    "csv": {
        "sep",
        "delimiter",
        "encoding",
        "column_names",
        "names",
        "header",
        "usecols",
        "on_bad_lines",
    },
    "text": {"keep_linebreaks", "sample_by", "encoding"},
    "parquet": {"columns"},
    "arrow": set(),
    "imagefolder": {"drop_labels", "drop_metadata"},
    "audiofolder": {"drop_labels", "drop_metadata"},
}


def builder_options(builder: str) -> set[str]:
    """The options ``builder`` takes (those that change nothing here included)."""
    return _OPTIONS[builder] | _HARMLESS


def check_options(
    builder: str,
    options: Mapping[str, Any],
    call: str = "load_dataset",
    others: str = "data_files, data_dir, split, features, cache_dir",
) -> None:
    """Refuse an option ``builder`` does not take, or an encoding other than UTF-8.

    ``call`` and ``others``: the call the options were given to, and its own arguments.

    Raises:
        ValueError: naming the option and the ones the builder takes.
    """
    known = _OPTIONS[builder]
    for name, value in options.items():
        if name in _HARMLESS:
            continue
        if name not in known:
            raise ValueError(
                f"The {builder} builder of arrowmix's {call} does not take {name!r}; it "
                f"takes {sorted(known) or 'no option'} (and {others})."
            )
        if name == "encoding" and str(value).lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise ValueError(
                f"arrowmix reads UTF-8 text only (got encoding={value!r}); convert the files "
                "first, e.g. `iconv -f ENCODING -t UTF-8`."
            )


def reader_format(builder: str, options: Mapping[str, Any]) -> Any:
    """The reader format (``read_batches``' name and options) of HF's ``builder`` options."""
    if builder == "json":
        return ("json", {"field": options.get("field")})
    if builder == "csv":
        return ("csv", _csv_options(options))
    if builder == "text":
        return _text_format(options)
    return "parquet"


def _csv_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The CSV reader's options of HF's (pandas') ``sep``, ``names``, ``usecols``..."""
    out: dict[str, Any] = {}
    sep = options.get("delimiter", options.get("sep"))
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1):
        raise ValueError(f"`sep` must be one character, got {sep!r}.")
    if sep not in (None, ","):
        out["delimiter"] = sep
    names = options.get("column_names", options.get("names"))
    if names is not None:
        if isinstance(names, str) or not all(isinstance(n, (str, int)) for n in names):
            raise ValueError(f"`column_names` must be a list of names, got {names!r}.")
        out["names"] = [str(n) for n in names]
    header = options.get("header", "infer")
    if header not in ("infer", 0, None) or header is False:
        raise ValueError(
            f"`header` must be 'infer', 0 or None (a header row, or none), got {header!r}."
        )
    if header is None or (header == "infer" and names is not None):
        out["header"] = False  # pandas: with `names`, the first row is data
    usecols = options.get("usecols")
    if usecols is not None:
        if isinstance(usecols, (str, int)) or callable(usecols):
            raise ValueError(f"`usecols` must be a list of names or positions, got {usecols!r}.")
        out["usecols"] = list(usecols)
    bad = options.get("on_bad_lines", "error")
    if bad not in ("error", "skip", "warn"):
        raise ValueError(f"`on_bad_lines` must be 'error', 'skip' or 'warn', got {bad!r}.")
    if bad != "error":
        out["on_bad_lines"] = bad
    return out


def _text_format(options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    sample_by = options.get("sample_by", "line")
    if sample_by not in ("line", "paragraph", "document"):
        raise ValueError(
            f"`sample_by` must be 'line', 'paragraph' or 'document', got {sample_by!r}."
        )
    if sample_by == "line" and options.get("keep_linebreaks"):
        return "text:line", {"keep_linebreaks": True}
    return f"text:{sample_by}", {}
