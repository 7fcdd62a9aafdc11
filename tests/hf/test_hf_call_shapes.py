"""The calls training scripts make most often, run with arrowmix and with HF ``datasets`` 5.2.

Each shape is written once against a module ``D`` (``arrowmix`` or ``datasets``) and both
results are compared: values, Python and numpy/torch types, column order, features, and
the kind of exception where one is raised. The shapes come from the ``datasets`` calls of
public training scripts (transformers' ``run_*.py`` examples, TRL, PEFT, open-instruct,
lm-evaluation-harness); design choices listed in the migration guide are left out.
"""

# ruff: noqa: E501  # the shapes are one line of code each
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")
pytestmark = pytest.mark.slow  # 53 shapes, each run by both libraries: ~5 min on 2 cores


def _norm(x):
    name = type(x).__name__
    if x is None or isinstance(x, (bool, int, str, bytes)):
        return x
    if isinstance(x, float):
        return "nan" if math.isnan(x) else x
    if isinstance(x, np.generic):
        return ("np", str(x.dtype), x.item())
    if isinstance(x, np.ndarray):
        return ("nd", str(x.dtype), x.shape, _norm(x.tolist()))
    if name == "Tensor":
        return ("pt", str(x.dtype), tuple(x.shape), _norm(x.tolist()))
    if name == "Dataset":
        rows = _norm(x[:]) if x.num_rows else None
        return ("Dataset", x.column_names, x.num_rows, repr(x.features), x.format["type"], rows)
    if name in ("DatasetDict", "SplitPair"):
        return ("DatasetDict", {k: _norm(v) for k, v in dict(x).items()})
    if name == "IterableDatasetDict":
        return ("IterableDatasetDict", {k: _norm(v) for k, v in x.items()})
    if name == "IterableDataset":
        return ("IterableDataset", repr(x.features), _norm(list(x)))
    if name == "Column":
        return _norm(list(x))
    if name == "DataFrame":
        return ("df", list(x.columns), [str(d) for d in x.dtypes], _norm(x.to_dict("list")))
    if isinstance(x, dict):
        return {str(k): _norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_norm(v) for v in x]
    return (name, repr(x))


def _tok(batch):
    return {
        "input_ids": [[len(w) for w in t.split()] for t in batch["text"]],
        "attention_mask": [[1] * len(t.split()) for t in batch["text"]],
    }


def _group(examples, block=8):
    joined = {k: [x for row in examples[k] for x in row] for k in examples}
    total = len(joined["input_ids"]) // block * block
    out = {k: [v[i : i + block] for i in range(0, total, block)] for k, v in joined.items()}
    out["labels"] = out["input_ids"].copy()
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    rows = [
        {"text": f"text {i} " + "w " * (i % 5), "label": i % 3, "score": i / 4, "m": {"n": i}}
        for i in range(24)
    ]
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:18]))
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[18:]))
    (root / "train.csv").write_text(
        "s,label,x\n" + "".join(f"s{i},{i % 2},{i % 5 or ''}\n" for i in range(9))
    )
    (root / "dev.csv").write_text("s,label,x\ns9,1,4\ns10,0,2\n")
    (root / "corpus.txt").write_text(
        "".join(f"line {i} a b c\n" if i % 7 else "\n" for i in range(40))
    )
    (root / "zen" / "p").mkdir(parents=True)
    for split, n in (("train", 10), ("test", 3)):
        table = pa.table({"prompt": [f"{split} {i}" for i in range(n)]})
        pq.write_table(table, root / "zen" / "p" / f"{split}-00000-of-00001.parquet")
    return {p.name: str(p) for p in root.iterdir()}


SHAPES = {
    "load json split": 'D.load_dataset("json", data_files=F["train.jsonl"], split="train")',
    "load json dict": 'D.load_dataset("json", data_files={"train": F["train.jsonl"], "test": F["test.jsonl"]})',
    "load json slice": 'D.load_dataset("json", data_files=F["train.jsonl"], split="train[:10%]")',
    "load json list split": 'D.load_dataset("json", data_files={"train": F["train.jsonl"], "test": F["test.jsonl"]}, split=["train[:50%]", "test"])',
    "load json streaming": 'D.load_dataset("json", data_files=F["train.jsonl"], split="train", streaming=True)',
    "load csv splits": 'D.load_dataset("csv", data_files={"train": F["train.csv"], "validation": F["dev.csv"]})',
    "load text clm": '[D.load_dataset("text", data_files={"train": F["corpus.txt"]}, split=s) for s in ("train[:5%]", "train[5%:]")]',
    "load text keep_linebreaks": 'D.load_dataset("text", data_files=F["corpus.txt"], keep_linebreaks=True)',
    "load folder": 'D.load_dataset(F["zen"])',
    "load folder split": 'D.load_dataset(F["zen"], split="test")',
    "load unknown split": 'D.load_dataset("json", data_files=F["train.jsonl"], split="validation")',
    "map tokenize dict": 'J.map(_tok, batched=True, num_proc=2, remove_columns=J["train"].column_names, desc="tok")',
    "map group_texts": 'J.map(_tok, batched=True, remove_columns=J["train"].column_names).map(_group, batched=True)',
    "map row": 'ds.map(lambda ex: {"n": len(ex["text"])})',
    "map fn_kwargs indices": 'ds.map(lambda ex, i, k: {"y": i * k}, with_indices=True, fn_kwargs={"k": 2})',
    "map input_columns": 'ds.map(lambda t: {"len": len(t)}, input_columns="text")',
    "map numpy rows": 'ds.map(lambda ex: {"v": np.full((2, 2), ex["score"], dtype=np.float32)})',
    "map unknown remove": 'ds.map(_tok, batched=True, remove_columns=["nope"])',
    "filter": 'ds.filter(lambda ex: ex["label"] == 1)',
    "filter num_proc batched": 'ds.filter(lambda b: [x > 1 for x in b["score"]], batched=True, num_proc=2)',
    "filter dict": 'J.filter(lambda ex: ex["label"] != 2)',
    "shuffle select": "ds.shuffle(seed=42).select(range(5))",
    "tts seed": "ds.train_test_split(test_size=0.2, seed=42)",
    "tts no shuffle": "ds.train_test_split(test_size=3, shuffle=False)",
    "tts stratified": 'ds.class_encode_column("label").train_test_split(test_size=0.5, stratify_by_column="label", seed=0)',
    "sort shard": '[ds.sort("score", reverse=True), ds.shard(num_shards=3, index=1)]',
    "columns": "[ds.column_names, J.column_names, ds.num_rows, J.num_rows, len(ds), ds.shape]",
    "features": '[ds.features, ds.features["label"].dtype, list(ds.features)]',
    "rename remove select": '[ds.rename_column("label", "labels"), ds.remove_columns(["m"]), ds.select_columns(["text"])]',
    "rename missing": 'ds.rename_column("nope", "x")',
    "add_column": 'ds.add_column("i", list(range(len(ds))))',
    "cast_column": '[ds.cast_column("label", D.Value("int32")), small.cast_column("label", D.ClassLabel(names=["n", "p"]))]',
    "class_encode unique": '[ds.class_encode_column("label").features, sorted(ds.unique("label"))]',
    "flatten": "ds.flatten()",
    "indexing": '[ds[0], ds[-1], ds[:2], ds[[1, 3]], ds[3]["text"], ds["label"][:4]]',
    "iterate": '[r["label"] for r in ds] + [list(ds.iter(batch_size=7))]',
    "to_dict list pandas": "[ds.to_dict(), ds.to_list(), ds.to_pandas()]",
    "torch format": 'ds.map(_tok, batched=True).with_format("torch", columns=["input_ids", "label", "m"])[:3]',
    "set_format pt": '(lambda d: (d.set_format(type="pt"), d[0], d[:2])[1:])(ds.select_columns(["label", "score"]))',
    "numpy format": 'ds.select_columns(["label", "score"]).with_format("numpy")[:4]',
    "with_transform": 'ds.with_transform(lambda b: {"up": [t.upper() for t in b["text"]]})[:2]',
    "from_dict": 'D.Dataset.from_dict({"prompt": ["a", "b"], "n": [1, 2], "msgs": [[{"role": "u", "content": "x"}], []]})',
    "from_dict features": 'D.Dataset.from_dict({"a": [1, 2]}, features=D.Features({"a": D.Value("float32")}))',
    "from_list": 'D.Dataset.from_list([{"p": "x", "n": 1}, {"p": "y", "n": 2}])',
    "from_pandas": '__import__("pandas").DataFrame({"a": [1.5, None], "b": ["x", None]}).pipe(D.Dataset.from_pandas)',
    "from_generator": "D.Dataset.from_generator(_gen)",
    "DatasetDict build": 'D.DatasetDict({"train": small, "test": small.select([0])})',
    "concatenate": 'D.concatenate_datasets([J["train"], J["test"]])',
    "interleave": "D.interleave_datasets([small, small.select([0, 1])], probabilities=[0.5, 0.5], seed=0)",
    "save load": '(ds.save_to_disk(T + "/s"), D.load_from_disk(T + "/s"))[1]',
    "iterable ops": '[ds.to_iterable_dataset(num_shards=2).map(_tok, batched=True).filter(lambda ex: ex["label"] > 0), list(ds.to_iterable_dataset().take(2)), list(ds.to_iterable_dataset().skip(16))]',
    "iterable with_format torch": 'list(ds.select_columns(["label"]).to_iterable_dataset().with_format("torch"))[:2]',
    "module names": '[D.Features({"a": D.Sequence(D.Value("int32"))}), D.ClassLabel(names=["a", "b"]).str2int("b"), D.get_dataset_config_names(F["zen"]), D.get_dataset_split_names(F["zen"])]',
}


def _gen():
    yield from ({"i": i, "s": str(i)} for i in range(4))


@pytest.fixture(scope="module")
def loaded(files, tmp_path_factory):
    """Both libraries' ``J`` (the JSON Lines splits), loaded once; HF offline, cache in tmp."""
    cache = tmp_path_factory.mktemp("hf-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hf.config, "HF_HUB_OFFLINE", True)
        mp.setattr(hf.config, "HF_DATASETS_CACHE", cache)
        mp.setenv("HF_DATASETS_CACHE", str(cache))
        hf.disable_progress_bars()
        splits = {"train": files["train.jsonl"], "test": files["test.jsonl"]}
        yield {lib: lib.load_dataset("json", data_files=splits) for lib in (hf, am)}


def _run(lib, code, files, tmp, J):
    names = {
        "D": lib,
        "F": files,
        "T": str(tmp),
        "J": J,
        "ds": J["train"],
        "small": lib.Dataset.from_dict({"text": ["a b", "c"], "label": [0, 1]}),
        "np": np,
        "_tok": _tok,
        "_group": _group,
        "_gen": _gen,
    }
    try:
        return ("ok", _norm(eval(code, names)))
    except Exception as exc:  # noqa: BLE001  # the kind of error is compared
        kinds = (KeyError, IndexError, FileNotFoundError, TypeError, ValueError, OSError)
        return ("raised", next((k for k in kinds if isinstance(exc, k)), Exception), exc)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_call_shape_as_hf(shape, files, loaded, tmp_path, monkeypatch):
    monkeypatch.setattr(hf.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(hf.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    (tmp_path / "hf").mkdir()
    (tmp_path / "am").mkdir()
    with warnings.catch_warnings():  # HF's own deprecation warnings (pyarrow's sort options)
        warnings.simplefilter("ignore")
        theirs = _run(hf, SHAPES[shape], files, tmp_path / "hf", loaded[hf])
    ours = _run(am, SHAPES[shape], files, tmp_path / "am", loaded[am])
    if theirs[0] == "raised":
        assert ours[0] == "raised", (ours, theirs)
        assert isinstance(ours[2], theirs[1]), (ours[2], theirs[2])
    else:
        assert ours == theirs
