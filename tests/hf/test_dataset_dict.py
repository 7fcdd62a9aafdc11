"""DatasetDict: HF's dict of splits, its per-split transforms, files and the split pair."""

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix.exceptions import TargetExistsError

ROOT = Path(__file__).resolve().parents[2]


def _dd():
    return am.DatasetDict(
        {
            "train": am.Dataset.from_dict({"x": list(range(10)), "s": list("abcdefghij")}),
            "test": am.Dataset.from_dict({"x": [10, 11, 12], "s": ["k", "l", "m"]}),
        }
    )


def test_transforms_apply_to_each_split():
    dd = _dd()
    out = dd.map(lambda r: {"y": r["x"] * 2}).filter(lambda r: r["x"] % 2 == 0)
    assert isinstance(out, am.DatasetDict) and list(out.keys()) == ["train", "test"]
    assert out["train"]["y"] == [0, 4, 8, 12, 16] and out["test"]["y"] == [20, 24]
    assert out.num_rows == {"train": 5, "test": 2}
    assert out.column_names == {"train": ["x", "s", "y"], "test": ["x", "s", "y"]}
    assert out.num_columns == {"train": 3, "test": 3}
    assert out.shape == {"train": (5, 3), "test": (2, 3)}
    renamed = dd.rename_column("s", "t").rename_columns({"x": "n"})
    assert renamed.column_names["test"] == ["n", "t"]
    assert dd.select_columns("s").column_names == {"train": ["s"], "test": ["s"]}
    assert dd.remove_columns(["s"]).column_names == {"train": ["x"], "test": ["x"]}
    assert dd.sort("x", reverse=True)["test"]["x"] == [12, 11, 10]
    assert dd.unique("s")["test"] == ["k", "l", "m"]
    assert (
        dd.cast(pa.schema([("x", pa.int32()), ("s", pa.string())]))["train"].schema.field("x").type
        == pa.int32()
    )
    nested = am.DatasetDict({"a": am.Dataset.from_dict({"p": [{"q": 1}]})})
    assert nested.flatten().column_names == {"a": ["p.q"]}


def test_each_split_is_cached_by_its_own_fingerprint(tmp_path):
    log = str(tmp_path / "calls.txt")  # a counter that is not part of the function's hash

    def double(r):
        with open(log, "a") as fh:
            fh.write(f"{r['x']}\n")
        return {"y": r["x"] * 2}

    def calls():
        found = Path(log).read_text().split() if os.path.exists(log) else []
        Path(log).write_text("")
        return [int(x) for x in found]

    dd = am.DatasetDict(
        {"train": am.Dataset.from_dict({"x": [1, 2]}), "test": am.Dataset.from_dict({"x": [3]})}
    )
    first = dd.map(double)
    assert first["train"].fingerprint != first["test"].fingerprint
    assert first["train"].cache_files != first["test"].cache_files
    calls()
    again = dd.map(double)  # both splits read their caches
    assert calls() == [] and again["test"]["y"] == [6]
    dd["test"] = am.Dataset.from_dict({"x": [4]})
    changed = dd.map(double)  # only the changed split is computed
    assert calls() == [4] and changed["train"].fingerprint == first["train"].fingerprint
    assert set(changed.cache_files) == {"train", "test"}
    assert all(isinstance(f["filename"], str) for f in changed.cache_files["train"])


def test_map_with_split_and_per_split_cache_files(tmp_path):
    dd = _dd()
    names = {"train": str(tmp_path / "tr.arrow"), "test": str(tmp_path / "te.arrow")}
    out = dd.map(lambda r, i, split: {"tag": f"{split}{i}"}, with_indices=True, with_split=True,
                 cache_file_names=names)  # fmt: skip
    assert out["test"]["tag"] == ["test0", "test1", "test2"]
    assert out["train"].cache_files == [names["train"]] and os.path.isfile(names["test"])
    with pytest.raises(ValueError, match="one `cache_file_names` per split"):
        dd.map(lambda r: r, cache_file_names="x.arrow")


def test_shuffle_seeds_per_split_as_hf():
    dd = _dd()
    out = dd.shuffle(seeds={"train": 1, "test": 2})
    assert out["train"]["x"] == np.random.default_rng(1).permutation(10).tolist()
    assert out["test"]["x"] == [10 + i for i in np.random.default_rng(2).permutation(3)]
    same = dd.shuffle(seed=5)
    assert same["test"]["x"] == [10 + i for i in np.random.default_rng(5).permutation(3)]
    with pytest.raises(ValueError, match="seed or seeds"):
        dd.shuffle(seeds=1, seed=1)
    out = dd.shuffle(generators={"train": np.random.default_rng(3)})  # HF's: drawn from it
    assert out["train"]["x"] == np.random.default_rng(3).permutation(10).tolist()


def test_formats_in_place_and_as_views():
    dd = _dd()
    view = dd.with_format("numpy", columns=["x"])
    assert isinstance(view["train"][0]["x"], np.integer) and dd["train"].format["type"] is None
    dd.set_format("numpy")
    assert dd["test"].format["type"] == "numpy"
    with dd.formatted_as("arrow"):
        assert isinstance(dd["test"][:2], pa.Table)
    assert dd["test"].format["type"] == "numpy"
    dd.reset_format()
    assert dd["test"][0] == {"x": 10, "s": "k"}


def test_indexing_by_row_asks_for_a_split_and_concatenate_refuses_dicts():
    dd = _dd()
    with pytest.raises(KeyError, match=r"my_dataset_dictionary\['train'\]\[0\]"):
        dd[0]
    with pytest.raises(
        KeyError, match=r"Unknown split 'dev'; available splits: \['train', 'test'\]"
    ):
        dd["dev"]
    with pytest.raises(ValueError, match=r"at least one split: \['train', 'test'\]"):
        am.concatenate_datasets([dd, dd])
    per_split = am.DatasetDict({k: am.concatenate_datasets([dd[k], dd[k]]) for k in dd})
    assert per_split.num_rows == {"train": 20, "test": 6}
    with pytest.raises(TypeError, match="should be of type `Dataset`"):
        am.DatasetDict({"a": [1]}).map(lambda r: r)


def test_train_test_split_is_a_dataset_dict_that_unpacks():
    ds = am.Dataset.from_dict({"x": list(range(10))})
    split = ds.train_test_split(test_size=0.2, seed=0)
    assert isinstance(split, am.DatasetDict) and split.keys() == ["train", "test"]
    train, test = split  # arrowmix's pair, as before
    assert train is split["train"] and test is split.test
    both = split.map(lambda r: {"y": -r["x"]})
    assert type(both) is am.DatasetDict and list(both) == ["train", "test"]  # HF: keys
    assert both["test"]["y"] == [-x for x in test["x"]]


# -- save_to_disk / load_from_disk ------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path):
    dd = _dd().map(lambda r: {"y": r["x"] + 1}).with_format("numpy")
    dd.save_to_disk(tmp_path / "d", num_shards={"train": 2, "test": 1})
    assert sorted(os.listdir(tmp_path / "d")) == ["dataset_dict.json", "test", "train"]
    assert json.loads((tmp_path / "d" / "dataset_dict.json").read_text()) == {
        "splits": ["train", "test"]
    }
    assert len([f for f in os.listdir(tmp_path / "d" / "train") if f.endswith(".arrow")]) == 2
    back = am.load_from_disk(tmp_path / "d")
    assert isinstance(back, am.DatasetDict) and list(back.keys()) == ["train", "test"]
    for k in dd:
        assert back[k].fingerprint == dd[k].fingerprint and back[k].format == dd[k].format
        assert back[k].with_format(None)[:] == dd[k].with_format(None)[:]
    assert am.DatasetDict.load_from_disk(tmp_path / "d").num_rows == {"train": 10, "test": 3}
    with pytest.raises(FileNotFoundError, match="holds a `DatasetDict`"):
        am.Dataset.load_from_disk(tmp_path / "d")
    dd["train"].save_to_disk(tmp_path / "one")
    with pytest.raises(FileNotFoundError, match="holds a `Dataset`"):
        am.DatasetDict.load_from_disk(tmp_path / "one")
    with pytest.raises(ValueError, match="one `num_shards` per split"):
        dd.save_to_disk(tmp_path / "e", num_shards=2)


def test_save_replaces_only_a_previous_dict_save(tmp_path):
    dd = _dd()
    dd.save_to_disk(tmp_path / "d")
    smaller = am.DatasetDict({"train": dd["train"].select([0, 1])})
    smaller.save_to_disk(tmp_path / "d")  # a previous save: replaced whole (no stale "test")
    assert sorted(os.listdir(tmp_path / "d")) == ["dataset_dict.json", "train"]
    (tmp_path / "d" / "notes.txt").write_text("mine")
    with pytest.raises(TargetExistsError, match=r"notes\.txt"):
        dd.save_to_disk(tmp_path / "d")
    assert (tmp_path / "d" / "notes.txt").read_text() == "mine"
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "script.py").write_text("print(1)")
    with pytest.raises(TargetExistsError, match="not a DatasetDict directory"):
        dd.save_to_disk(tmp_path / "proj")
    dd["test"].save_to_disk(tmp_path / "single")
    with pytest.raises(TargetExistsError):  # a Dataset's save is not replaced by a dict
        dd.save_to_disk(tmp_path / "single")
    assert am.load_from_disk(tmp_path / "single")["x"] == [10, 11, 12]
    loaded = am.load_from_disk(tmp_path / "d")
    (tmp_path / "d" / "notes.txt").unlink()
    with pytest.raises(PermissionError, match="reads files"):
        loaded.save_to_disk(tmp_path / "d")
    with pytest.raises(ValueError, match="Split name"):
        am.DatasetDict({"../x": dd["test"]}).save_to_disk(tmp_path / "bad")
    assert not (tmp_path / "bad").exists() and not (tmp_path / "x").exists()


def test_a_damaged_dict_json_names_the_problem(tmp_path):
    _dd().save_to_disk(tmp_path / "d")
    (tmp_path / "d" / "dataset_dict.json").write_text('{"splits": ["../../etc"]}')
    with pytest.raises(am.exceptions.SavedDatasetError, match="refusing to read outside"):
        am.load_from_disk(tmp_path / "d")


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import arrowmix as am
    target = sys.argv[1]
    real_rename = os.rename

    def rename(src, dst, *a, **k):
        if os.fspath(dst) == target:  # the new save is whole, the previous one moved aside
            os.kill(os.getpid(), signal.SIGKILL)
        return real_rename(src, dst, *a, **k)

    os.rename = rename
    am.DatasetDict({"train": am.Dataset.from_dict({"x": [7, 8, 9]})}).save_to_disk(target)
    """
)


def test_a_killed_dict_save_is_finished_by_the_next_load(tmp_path):
    target = tmp_path / "d"
    _dd().save_to_disk(target)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", KILLER, str(target)], env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert not target.exists()  # killed between the two renames
    back = am.load_from_disk(target)
    assert list(back.keys()) == ["train"] and back["train"]["x"] == [7, 8, 9]
    assert sorted(os.listdir(tmp_path)) == ["d"]  # nothing left beside it


# -- split= on the readers -----------------------------------------------------------------------


def test_split_names_on_readers(tmp_path):
    (tmp_path / "a.csv").write_text("x,y\n1,a\n2,b\n")
    (tmp_path / "b.csv").write_text("x,y\n3,c\n")
    one = am.Dataset.from_csv(str(tmp_path / "a.csv"))
    assert one.split == "train"  # HF's default
    assert am.Dataset.from_dict({"x": [1]}).split is None
    named = am.Dataset.from_csv(str(tmp_path / "a.csv"), split="validation")
    assert named.split == "validation" and named.fingerprint == one.fingerprint
    assert named.map(lambda r: {"z": 1}).select([0]).shuffle(seed=0).split == "validation"
    files = {"train": str(tmp_path / "a.csv"), "test": [str(tmp_path / "b.csv")]}
    dd = am.Dataset.from_csv(files)
    assert isinstance(dd, am.DatasetDict) and dd.num_rows == {"train": 2, "test": 1}
    assert dd["test"].split == "test" and dd["test"]["y"] == ["c"]
    assert am.Dataset.from_csv(files, split="test")["x"] == [3]
    assert am.DatasetDict.from_csv(files).num_rows == dd.num_rows
    with pytest.raises(ValueError, match="Unknown split 'dev'"):
        am.Dataset.from_csv(files, split="dev")
    with pytest.raises(ValueError, match="Split name"):
        am.Dataset.from_csv({"a/b": str(tmp_path / "a.csv")})
    (tmp_path / "t.txt").write_text("hello\nworld\n")
    (tmp_path / "j.jsonl").write_text('{"v": 1}\n')
    assert am.Dataset.from_text({"train": str(tmp_path / "t.txt")})["train"]["text"] == [
        "hello",
        "world",
    ]
    assert am.Dataset.from_json(str(tmp_path / "j.jsonl"), split="test").split == "test"
    pa_path = tmp_path / "p.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"v": [1, 2]}), pa_path)
    assert am.Dataset.from_parquet({"train": str(pa_path)}).num_rows == {"train": 2}


def test_split_survives_save_and_load(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    ds = am.Dataset.from_csv(str(tmp_path / "a.csv"), split="dev")
    ds.save_to_disk(tmp_path / "d")
    assert json.loads((tmp_path / "d" / "state.json").read_text())["_split"] == "dev"
    assert am.load_from_disk(tmp_path / "d").split == "dev"
    assert pickle.loads(pickle.dumps(ds)).split == "dev"
    dd = pickle.loads(pickle.dumps(am.DatasetDict({"dev": ds})))
    assert isinstance(dd, am.DatasetDict) and dd["dev"]["x"] == [1]


# -- against HF datasets ------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Specifying null_placement:FutureWarning")  # HF's sort
def test_same_as_hf_for_the_same_calls(tmp_path):
    datasets = pytest.importorskip("datasets")
    data = {"train": {"x": list(range(12))}, "test": {"x": list(range(100, 105))}}
    ours = am.DatasetDict({k: am.Dataset.from_dict(v) for k, v in data.items()})
    hf = datasets.DatasetDict({k: datasets.Dataset.from_dict(v) for k, v in data.items()})

    def steps(dd):
        out = dd.map(lambda r, s: {"y": r["x"] * 3, "s": s}, with_split=True)
        out = out.filter(lambda r: r["x"] % 2 == 0).shuffle(seeds={"train": 3, "test": 4})
        return out.sort("y", reverse=True).shuffle(seed=7).rename_column("y", "z")

    a, b = steps(ours), steps(hf)
    assert list(a.keys()) == list(b.keys())
    assert a.num_rows == b.num_rows and a.column_names == b.column_names
    assert a.shape == b.shape and a.num_columns == b.num_columns
    for k in b:
        assert a[k][:] == b[k][:]
        assert a[k].features == b[k].features
    assert a.unique("s") == b.unique("s")
    split_a = ours["train"].train_test_split(test_size=0.25, seed=1)
    split_b = hf["train"].train_test_split(test_size=0.25, seed=1)
    assert {k: v["x"] for k, v in split_a.items()} == {k: v["x"] for k, v in split_b.items()}
    with pytest.raises(ValueError, match="at least one split"):
        datasets.concatenate_datasets([hf, hf])  # HF refuses a dict too


def test_hf_loads_our_dict_save_and_we_load_hf_s(tmp_path):
    datasets = pytest.importorskip("datasets")
    feats = datasets.Features(
        {"label": datasets.ClassLabel(names=["neg", "pos"]), "t": datasets.Value("string")}
    )
    rows = {"label": [0, 1, 1], "t": ["a", "b", "c"]}
    hf = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict(rows, features=feats),
            "validation": datasets.Dataset.from_dict(rows, features=feats).select([2]),
        }
    )
    hf.save_to_disk(str(tmp_path / "hf"))
    ours = am.load_from_disk(tmp_path / "hf")
    assert isinstance(ours, am.DatasetDict) and list(ours.keys()) == ["train", "validation"]
    assert ours["validation"][:] == {"label": [1], "t": ["c"]}
    assert ours["train"].features == feats
    assert ours["train"].fingerprint == hf["train"]._fingerprint  # HF's saved fingerprint
    ours.map(lambda r: {"n": len(r["t"])}).save_to_disk(tmp_path / "ours")
    back = datasets.load_from_disk(str(tmp_path / "ours"))
    assert isinstance(back, datasets.DatasetDict) and list(back) == ["train", "validation"]
    assert back["train"]["n"] == [1, 1, 1] and back["validation"]["t"] == ["c"]
    assert back["train"].features["label"] == feats["label"]
    with pytest.raises(PermissionError, match="reads files"):
        ours.save_to_disk(tmp_path / "hf")  # it reads HF's files there
    fresh = am.DatasetDict({"train": am.Dataset.from_dict({"t": ["z"]})})
    (tmp_path / "hf" / "README.md").write_text("mine")
    with pytest.raises(TargetExistsError, match="README"):
        fresh.save_to_disk(tmp_path / "hf")
    (tmp_path / "hf" / "README.md").unlink()
    fresh.save_to_disk(tmp_path / "hf")  # HF's dict save is a previous save: replaced whole
    assert datasets.load_from_disk(str(tmp_path / "hf"))["train"]["t"] == ["z"]


def test_split_from_files_as_hf(tmp_path):
    datasets = pytest.importorskip("datasets")
    (tmp_path / "a.csv").write_text("x\n1\n2\n")
    (tmp_path / "b.csv").write_text("x\n3\n")
    files = {"train": str(tmp_path / "a.csv"), "test": str(tmp_path / "b.csv")}
    cache = str(tmp_path / "hf-cache")
    hf_one = datasets.Dataset.from_csv(files["train"], cache_dir=cache)
    assert am.Dataset.from_csv(files["train"]).split == str(hf_one.split) == "train"
    hf_dict = datasets.Dataset.from_csv(files, cache_dir=cache)
    ours = am.Dataset.from_csv(files)
    assert isinstance(hf_dict, datasets.DatasetDict) and isinstance(ours, am.DatasetDict)
    assert {k: v["x"] for k, v in ours.items()} == {k: v["x"] for k, v in hf_dict.items()}
    assert ours["test"].split == str(hf_dict["test"].split) == "test"
