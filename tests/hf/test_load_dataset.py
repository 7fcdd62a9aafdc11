"""``load_dataset`` reads local files as HF ``datasets`` 5.2 does: every builder, value by value.

HF runs offline on the same files (its cache in ``tmp_path``); both results are compared
split by split: rows, Arrow types and HF features.
"""

from __future__ import annotations

import json
import os
import sysconfig
import wave

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")

STDLIB = sysconfig.get_paths()["stdlib"]


@pytest.fixture
def hf_load(tmp_path, monkeypatch):
    """HF's ``load_dataset``, offline, with its cache in ``tmp_path``."""
    monkeypatch.setattr(hf.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf.config, "HF_UPDATE_DOWNLOAD_COUNTS", False)
    hf.disable_progress_bars()

    def load(*args, **kwargs):
        return hf.load_dataset(*args, cache_dir=str(tmp_path / "hf-cache"), **kwargs)

    return load


def same(ours, theirs):
    """``ours`` (arrowmix) holds HF's splits, rows, Arrow types and features."""
    if isinstance(theirs, hf.DatasetDict):
        assert isinstance(ours, am.DatasetDict)
        assert list(ours) == list(theirs)
        for name in theirs:
            same(ours[name], theirs[name])
        return
    assert isinstance(ours, am.Dataset)
    table = theirs.with_format("arrow")[:]
    assert ours.column_names == theirs.column_names
    assert [f.type for f in ours.data.schema] == [f.type for f in table.schema]
    assert ours.to_dict() == table.to_pydict()
    assert ours.features == theirs.features
    assert str(ours.split) == str(theirs.split)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


ROWS = [
    {"id": i, "text": f"row {i}", "score": i / 4, "tags": ["a"] * (i % 3), "meta": {"k": i}}
    for i in range(57)
]


def test_json_lines_split_by_file_names(tmp_path, hf_load):
    d = tmp_path / "data"
    d.mkdir()
    write_jsonl(d / "train.jsonl", ROWS[:40])
    write_jsonl(d / "validation.jsonl", ROWS[40:50])
    write_jsonl(d / "test.jsonl", ROWS[50:])
    same(am.load_dataset(str(d)), hf_load(str(d)))
    same(am.load_dataset("json", data_dir=str(d)), hf_load("json", data_dir=str(d)))


def test_json_array_and_field(tmp_path, hf_load):
    array = tmp_path / "array.json"
    array.write_text(json.dumps(ROWS))
    same(am.load_dataset("json", data_files=str(array)), hf_load("json", data_files=str(array)))
    strings = tmp_path / "strings.json"
    strings.write_text(json.dumps(["first", "second", "third"]))
    same(
        am.load_dataset("json", data_files=str(strings), split="train"),
        hf_load("json", data_files=str(strings), split="train"),
    )
    doc = tmp_path / "squad.json"
    doc.write_text(json.dumps({"version": "1.1", "data": ROWS[:9]}))
    kwargs = {"data_files": {"train": str(doc)}, "field": "data"}
    same(am.load_dataset("json", **kwargs), hf_load("json", **kwargs))


def test_csv_and_tsv(tmp_path, hf_load):
    lines = ["id,score,flag"] + [f"{i},{i * 0.5},{i % 2}" for i in range(30)]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "test.csv").write_text("\n".join(lines[:5]) + "\n")
    same(am.load_dataset(str(tmp_path)), hf_load(str(tmp_path)))
    tsv = tmp_path / "t" / "data.tsv"
    tsv.parent.mkdir()
    tsv.write_text("\n".join(line.replace(",", "\t") for line in lines) + "\n")
    same(am.load_dataset(str(tsv.parent)), hf_load(str(tsv.parent)))
    for key in ("sep", "delimiter"):
        ours = am.load_dataset("csv", data_files=str(tsv), split="train", **{key: "\t"})
        same(ours, hf_load("csv", data_files=str(tsv), split="train", **{key: "\t"}))


def test_parquet_sharded_and_columns(tmp_path, hf_load):
    d = tmp_path / "repo" / "data"
    d.mkdir(parents=True)
    table = pa.Table.from_pylist(ROWS)
    pq.write_table(table.slice(0, 20), d / "train-00000-of-00002.parquet")
    pq.write_table(table.slice(20, 20), d / "train-00001-of-00002.parquet")
    pq.write_table(table.slice(40), d / "test-00000-of-00001.parquet")
    repo = str(tmp_path / "repo")
    same(am.load_dataset(repo), hf_load(repo))
    files = str(d / "train-*.parquet")
    same(
        am.load_dataset("parquet", data_files=files, columns=["text", "id"]),
        hf_load("parquet", data_files=files, columns=["text", "id"]),
    )


def test_arrow_files(tmp_path, hf_load):
    table = pa.Table.from_pylist(ROWS)
    d = tmp_path / "arrows"
    d.mkdir()
    with pa.ipc.new_stream(d / "a.arrow", table.schema) as w:  # HF's own format
        w.write_table(table.slice(0, 30))
    with pa.ipc.new_file(d / "b.arrow", table.schema) as w:
        w.write_table(table.slice(30))
    files = [str(d / "a.arrow"), str(d / "b.arrow")]
    same(am.load_dataset("arrow", data_files=files), hf_load("arrow", data_files=files))
    same(am.load_dataset(str(d)), hf_load(str(d)))


def stdlib_text(tmp_path):
    """Real text: three of the Python standard library's modules, with CRLF in one."""
    d = tmp_path / "text"
    d.mkdir()
    for name in ("this.py", "textwrap.py", "shlex.py"):
        with open(os.path.join(STDLIB, name), encoding="utf-8") as f:
            src = f.read()
        (d / name.replace(".py", ".txt")).write_text(src, encoding="utf-8")
    crlf = (d / "shlex.txt").read_text(encoding="utf-8").replace("\n", "\r\n")
    (d / "shlex.txt").write_bytes(crlf.encode())
    (d / "tail.txt").write_text("no final newline\n\n\nlast words")
    return d


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"keep_linebreaks": True},
        {"sample_by": "paragraph"},
        {"sample_by": "document"},
    ],
)
def test_text_modes(tmp_path, hf_load, options):
    d = stdlib_text(tmp_path)
    files = str(d / "*.txt")
    same(
        am.load_dataset("text", data_files=files, **options),
        hf_load("text", data_files=files, **options),
    )


def test_text_directory_and_features(tmp_path, hf_load):
    d = stdlib_text(tmp_path)
    same(am.load_dataset(str(d)), hf_load(str(d)))
    feats = hf.Features({"text": hf.Value("large_string")})
    same(
        am.load_dataset("text", data_dir=str(d), features=feats, split="train"),
        hf_load("text", data_dir=str(d), features=feats, split="train"),
    )


def make_images(root, layout):
    from PIL import Image

    for rel in layout:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (3, 2), (10, 20, 30)).save(path)


def test_imagefolder_labels_and_splits(tmp_path, hf_load):
    pytest.importorskip("PIL")
    root = tmp_path / "pets"
    make_images(
        root,
        [
            "train/cat/1.png",
            "train/cat/2.jpg",
            "train/dog/3.png",
            "test/dog/4.png",
            "test/cat/5.png",
        ],
    )
    (root / "train" / "notes.md").write_text("not an image")
    same(am.load_dataset(str(root)), hf_load(str(root)))
    same(
        am.load_dataset("imagefolder", data_dir=str(root), split="test"),
        hf_load("imagefolder", data_dir=str(root), split="test"),
    )
    ours = am.load_dataset("imagefolder", data_dir=str(root), drop_labels=True)
    same(ours, hf_load("imagefolder", data_dir=str(root), drop_labels=True))
    row = am.load_dataset(str(root), split="train")[0]
    assert row["image"] == {"bytes": None, "path": str(root / "train" / "cat" / "1.png")}


def test_imagefolder_metadata(tmp_path, hf_load):
    pytest.importorskip("PIL")
    root = tmp_path / "captions"
    make_images(root, ["train/a.png", "train/sub/b.png", "test/c.png"])
    rows = [{"file_name": "a.png", "caption": "an a"}, {"file_name": "sub/b.png", "caption": "b"}]
    write_jsonl(root / "train" / "metadata.jsonl", rows)
    write_jsonl(root / "test" / "metadata.jsonl", [{"file_name": "c.png", "caption": "c!"}])
    same(am.load_dataset(str(root)), hf_load(str(root)))
    (root / "train" / "metadata.jsonl").unlink()
    (root / "test" / "metadata.jsonl").unlink()
    (root / "train" / "metadata.csv").write_text("file_name,caption\na.png,an a\nsub/b.png,b\n")
    (root / "test" / "metadata.csv").write_text("file_name,caption\nc.png,c!\n")
    ours = am.load_dataset("imagefolder", data_dir=str(root))
    assert ours["train"]["caption"] == ["an a", "b"]
    assert ours["train"][1]["image"]["path"] == str(root / "train" / "sub" / "b.png")
    assert list(ours["train"].features) == ["image", "caption"]


def test_audiofolder_paths(tmp_path):
    """HF needs torchcodec to build an audio dataset; arrowmix stores the paths, undecoded."""
    root = tmp_path / "speech"
    for rel in ("train/yes/1.wav", "train/no/2.wav", "train/yes/3.wav"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(8000)
            w.writeframes(b"\0\0" * 10)
    ds = am.load_dataset(str(root), split="train")
    assert ds["label"] == [0, 1, 1]
    assert ds[0]["audio"] == {"bytes": None, "path": str(root / "train" / "no" / "2.wav")}
    assert ds.features["label"].names == ["no", "yes"]
    assert type(ds.features["audio"]).__name__ == "Audio"


def test_from_star_options_as_hf(tmp_path, hf_load):
    """``from_text(keep_linebreaks=)``, ``from_json(field=)``, ``from_csv(sep=)`` as HF's."""
    d = stdlib_text(tmp_path)
    files = [str(p) for p in sorted(d.glob("*.txt"))]
    cache = str(tmp_path / "hf-from")
    same(
        am.Dataset.from_text(files, keep_linebreaks=True),
        hf.Dataset.from_text(files, keep_linebreaks=True, cache_dir=cache),
    )
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"data": ROWS[:5], "other": 1}))
    same(
        am.Dataset.from_json(str(doc), field="data"),
        hf.Dataset.from_json(str(doc), field="data", cache_dir=cache),
    )
    semi = tmp_path / "semi.csv"
    semi.write_text("a;b\n1;2.5\n3;4.0\n")
    same(
        am.Dataset.from_csv(str(semi), sep=";"),
        hf.Dataset.from_csv(str(semi), sep=";", cache_dir=cache),
    )
