"""HF's media features (Image, Audio, Video, Pdf): stored as HF stores them, never decoded."""

from __future__ import annotations

import pyarrow as pa
import pytest

import arrowmix as am

datasets = pytest.importorskip("datasets")
MEDIA = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def _features(kind, **kw):
    return datasets.Features({"m": getattr(datasets, kind)(decode=False, **kw)})


@pytest.mark.parametrize("kind", ["Image", "Audio", "Video", "Pdf"])
def test_cast_column_of_paths_matches_hf(kind) -> None:
    data = {"m": ["a.png", None, "dir/b.png"]}
    feature = getattr(datasets, kind)(decode=False)
    ours = am.Dataset.from_dict(data).cast_column("m", feature)
    hf = datasets.Dataset.from_dict(data).cast_column("m", feature)
    assert ours.features == hf.features
    assert ours.schema.field("m").type == MEDIA
    assert (
        ours[:]
        == hf[:]
        == {"m": [{"bytes": None, "path": "a.png"}, None, {"bytes": None, "path": "dir/b.png"}]}
    )


def test_bytes_and_dicts_pass_through_unchanged() -> None:
    data = {"m": [b"\x89PNG\r\n", None]}
    ours = am.Dataset.from_dict(data).cast_column("m", datasets.Image(decode=False))
    hf = datasets.Dataset.from_dict(data).cast_column("m", datasets.Image(decode=False))
    assert ours[:] == hf[:] == {"m": [{"bytes": b"\x89PNG\r\n", "path": None}, None]}
    rows = {"m": [{"bytes": b"RIFF", "path": "x.wav"}]}  # HF needs torchcodec to encode
    given = am.Dataset.from_dict(rows, features=_features("Audio"))
    assert given[0] == {"m": {"bytes": b"RIFF", "path": "x.wav"}}
    assert given.features == _features("Audio")


def test_from_dict_of_paths_with_media_features_matches_hf() -> None:
    data = {"m": ["a.png", "b.png"]}
    ours = am.Dataset.from_dict(data, features=_features("Image"))
    hf = datasets.Dataset.from_dict(data, features=_features("Image"))
    assert ours.features == hf.features and ours[:] == hf[:]


def test_decoding_features_are_kept_but_rows_are_not_decoded() -> None:
    """HF decodes to PIL images / audio arrays on access; arrowmix returns the stored dict."""
    ds = am.Dataset.from_dict({"m": ["missing.png"]}).cast_column("m", datasets.Image())
    assert ds.features["m"] == datasets.Image()  # decode=True kept for HF readers
    assert ds[0] == {"m": {"bytes": None, "path": "missing.png"}}  # the file is never opened
    same = ds.cast(datasets.Features({"m": datasets.Image()}))
    assert same[0] == ds[0]


def test_class_labels_given_by_name_in_from_dict_match_hf() -> None:
    feats = datasets.Features({"l": datasets.ClassLabel(names=["a", "b"])})
    ours = am.Dataset.from_dict({"l": ["b", "a", None]}, features=feats)
    hf = datasets.Dataset.from_dict({"l": ["b", "a", None]}, features=feats)
    assert ours[:] == hf[:] == {"l": [1, 0, None]} and ours.features == hf.features


def test_a_column_that_cannot_be_media_names_itself() -> None:
    with pytest.raises(am.exceptions.SchemaMismatchError, match="'m'"):
        am.Dataset.from_dict({"m": [1, 2]}).cast_column("m", datasets.Image(decode=False))
