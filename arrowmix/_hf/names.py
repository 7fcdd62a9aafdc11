"""HF ``datasets``' feature and split classes under arrowmix's name (``am.Features``...).

arrowmix describes columns with HF's own ``Features`` (``ds.features``, ``features=``), so
``am.Value("int32")`` is ``datasets.Value("int32")``: a script that imports them from arrowmix
passes the very objects HF would. They are looked up when first used; without HF ``datasets``
installed, using one raises an ``ImportError`` saying so (every other name of arrowmix works
without it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["HF_NAMES", "hf_name"]

#: The names forwarded from ``datasets``: its features, splits and dataset info classes.
HF_NAMES = frozenset(
    {
        "Array2D",
        "Array3D",
        "Array4D",
        "Array5D",
        "Audio",
        "ClassLabel",
        "DatasetInfo",
        "Features",
        "Image",
        "Json",
        "LargeList",
        "List",
        "NamedSplit",
        "NamedSplitAll",
        "Pdf",
        "ReadInstruction",
        "Sequence",
        "Split",
        "SplitInfo",
        "Translation",
        "TranslationVariableLanguages",
        "Value",
        "Version",
        "Video",
    }
)


def hf_name(name: str) -> Any:
    """``datasets.<name>`` for a name of :data:`HF_NAMES`.

    Raises:
        ImportError: HF ``datasets`` is not installed.
    """
    try:
        import datasets  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError as exc:
        raise ImportError(
            f"arrowmix.{name} is HF datasets' {name} class, which arrowmix uses to describe "
            "columns: install it with `pip install datasets` (or describe the columns with a "
            "pyarrow.Schema, e.g. `from_dict(..., schema=...)`)."
        ) from exc
    return getattr(datasets, name)
