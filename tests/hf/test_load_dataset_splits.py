"""``load_dataset``'s ``split=`` grammar, ``data_files`` forms, errors, cache reuse, run_clm.

Compared with HF ``datasets`` 5.2 on the same files, offline.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

import arrowmix as am
from arrowmix.exceptions import NotLocalError

hf = pytest.importorskip("datasets")

from tests.hf.test_load_dataset import same  # noqa: E402


@pytest.fixture
def hf_load(tmp_path, monkeypatch):
    monkeypatch.setattr(hf.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf.config, "HF_UPDATE_DOWNLOAD_COUNTS", False)
    hf.disable_progress_bars()

    def load(*args, **kwargs):
        return hf.load_dataset(*args, cache_dir=str(tmp_path / "hf-cache"), **kwargs)

    return load


@pytest.fixture
def corpus(tmp_path):
    """A directory with train (1,237 rows), validation (83) and test (41) JSON Lines files."""
    d = tmp_path / "corpus"
    (d / "data").mkdir(parents=True)
    for name, n in (("train", 1237), ("validation", 83), ("test", 41)):
        rows = [{"idx": i, "split": name, "x": i * 0.5} for i in range(n)]
        with open(d / "data" / f"{name}.jsonl", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return d


SPLITS = [
    "train",
    "test",
    "train[:5%]",
    "train[5%:]",
    "train[:2000]",
    "train[10:20]",
    "train[-7:]",
    "train[-15%:-10%]",
    "train[33%:67%]",
    "validation[:50%]",
    "train+test",
    "train[:10%]+test[-5:]",
    "all",
    "train[:33%](pct1_dropremainder)",
    "train[25%:](closest)",
]


@pytest.mark.parametrize("split", SPLITS)
def test_split_grammar_as_hf(corpus, hf_load, split):
    same(am.load_dataset(str(corpus), split=split), hf_load(str(corpus), split=split))


def test_split_list_and_read_instruction(corpus, hf_load):
    ours = am.load_dataset(str(corpus), split=["train[:3]", "test"])
    theirs = hf_load(str(corpus), split=["train[:3]", "test"])
    assert len(ours) == len(theirs) == 2
    for a, b in zip(ours, theirs, strict=True):
        same(a, b)
    instr = hf.ReadInstruction("train", from_=-20, to=40, unit="%")
    same(am.load_dataset(str(corpus), split=instr), hf_load(str(corpus), split=instr))


def test_bad_split_names_the_splits(corpus, hf_load):
    with pytest.raises(ValueError, match=r"Should be one of \['train', 'validation', 'test'\]"):
        am.load_dataset(str(corpus), split="dev")
    with pytest.raises(ValueError, match="Unknown split"):
        hf_load(str(corpus), split="dev")
    with pytest.raises(ValueError, match="Unrecognized instruction format"):
        am.load_dataset(str(corpus), split="train[:5%")
    with pytest.raises(ValueError, match="less than 100"):
        am.load_dataset(str(corpus), split="test[:10%](pct1_dropremainder)")


def test_data_files_forms(corpus, hf_load, monkeypatch):
    data = corpus / "data"
    monkeypatch.chdir(corpus)
    forms = [
        str(data / "train.jsonl"),
        "data/*.jsonl",
        "**/t*.jsonl",
        [str(data / "test.jsonl"), str(data / "validation.jsonl")],
        {"train": "data/train.jsonl", "eval": ["data/test.jsonl", "data/validation.jsonl"]},
        [{"split": "a", "path": "data/test.jsonl"}, {"split": "b", "path": ["data/v*.jsonl"]}],
    ]
    for files in forms:
        same(am.load_dataset("json", data_files=files), hf_load("json", data_files=files))
    same(
        am.load_dataset("json", data_dir="data", data_files="t*.jsonl"),
        hf_load("json", data_dir="data", data_files="t*.jsonl"),
    )
    same(am.load_dataset(str(corpus), data_dir="data"), hf_load(str(corpus), data_dir="data"))


def test_directory_split_inference(tmp_path, hf_load):
    layouts = {
        "dirs": ["training/a.jsonl", "training/b.jsonl", "dev/c.jsonl", "eval/d.jsonl"],
        "names": ["my_train-0.jsonl", "my_train-1.jsonl", "test_set.jsonl", "README.md"],
        "flat": ["x.jsonl", "y.jsonl", ".hidden.jsonl", "__pycache__/z.jsonl"],
        "mixed": ["a.jsonl", "b.jsonl", "c.csv", "notes.txt"],
    }
    for name, files in layouts.items():
        root = tmp_path / name
        for i, rel in enumerate(files):
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith(".csv"):
                path.write_text("idx\n1\n")
            elif rel.endswith((".md", ".txt")):
                path.write_text("# not data\n")
            else:
                path.write_text(json.dumps({"idx": i, "file": rel}) + "\n")
        same(am.load_dataset(str(root)), hf_load(str(root)))


def test_missing_files_and_builder_options(tmp_path, corpus):
    with pytest.raises(FileNotFoundError, match=r"nothing\.jsonl"):
        am.load_dataset("json", data_files=str(tmp_path / "nothing.jsonl"))
    with pytest.raises(FileNotFoundError):
        am.load_dataset(str(tmp_path / "empty_dir_that_exists"), data_files="*.jsonl")
    with pytest.raises(ValueError, match="Please specify the data files"):
        am.load_dataset("json")
    with pytest.raises(ValueError, match="does not take 'sep'"):
        am.load_dataset(str(corpus), sep=";")
    with pytest.raises(ValueError, match="UTF-8"):
        am.load_dataset(str(corpus), encoding="latin-1")
    with pytest.raises(ValueError, match="Empty 'data_files'"):
        am.load_dataset("json", data_files=[])


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("stanfordnlp/imdb",), {}),
        (("glue", "mrpc"), {}),
        (("wikitext",), {"name": "wikitext-2-raw-v1", "revision": "main"}),
        (("hf://datasets/openai/gsm8k",), {}),
        (("my_loader.py",), {"trust_remote_code": True}),
        (("json",), {"data_files": "https://example.com/train.jsonl"}),
    ],
)
def test_hub_names_raise_one_clear_error(args, kwargs):
    with pytest.raises(NotLocalError, match="local") as info:
        am.load_dataset(*args, **kwargs)
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, ValueError)
    if "/" in args[0] and "://" not in args[0]:
        assert f"huggingface-cli download {args[0]} --repo-type dataset" in str(info.value)


def test_streaming_gives_hf_iterable_datasets(corpus, hf_load):
    it = am.load_dataset(str(corpus), split="test", streaming=True)
    theirs = hf_load(str(corpus), split="test", streaming=True)
    assert isinstance(it, am.IterableDataset) and it.split == "test"
    assert list(it) == list(theirs)
    every = am.load_dataset(str(corpus), streaming=True)
    assert isinstance(every, am.IterableDatasetDict)
    assert sorted(every) == sorted(hf_load(str(corpus), streaming=True))
    assert [r["idx"] for r in every["test"].take(3)] == [0, 1, 2]
    state = None
    for n, _row in enumerate(it):
        if n == 9:
            state = it.state_dict()
            break
    it.load_state_dict(state)
    assert [r["idx"] for r in it] == list(range(10, 41))


def test_rerun_in_a_fresh_process_reads_no_file(corpus, tmp_path):
    """The second process finds the cache by the files' content: no reader runs."""
    cache = tmp_path / "am-cache"
    script = textwrap.dedent(
        f"""
        import sys
        import arrowmix as am
        from arrowmix._storage import readers
        if sys.argv[1] == "rerun":
            def refuse(*args, **kwargs):
                raise AssertionError("parsed again")
            for name in list(readers.FORMATS):
                readers.FORMATS[name] = refuse
        dd = am.load_dataset({str(corpus)!r})
        print(dd["train"]._fingerprint, len(dd["train"]), dd["test"][-1]["idx"])
        """
    )
    env = {**os.environ, "ARROWMIX_CACHE": str(cache)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, mode],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=os.path.dirname(os.path.dirname(am.__file__)),
        ).stdout
        for mode in ("first", "rerun")
    ]
    assert runs[0] == runs[1]
    assert runs[0].split()[1:] == ["1237", "40"]
    (corpus / "data" / "test.jsonl").write_text(json.dumps({"idx": 7, "split": "t", "x": 1.0}))
    assert am.load_dataset(str(corpus), split="test")["idx"] == [7]  # new content: read again


def whitespace_tokenize(batch):
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(w) * 31 % 997) for w in t.split()] for t in batch["text"]]
    return {"input_ids": ids, "attention_mask": [[1] * len(i) for i in ids]}


def group_texts(examples, block_size=64):
    concatenated = {k: list(itertools.chain(*examples[k])) for k in examples}
    total = (len(concatenated["input_ids"]) // block_size) * block_size
    result = {
        k: [t[i : i + block_size] for i in range(0, total, block_size)]
        for k, t in concatenated.items()
    }
    result["labels"] = result["input_ids"].copy()
    return result


def run_clm(lib, files, cache_dir=None):
    """run_clm.py's data path, verbatim but for the library (``lib.load_dataset``)."""
    kwargs = {"cache_dir": cache_dir} if cache_dir else {}
    raw = lib.load_dataset("text", data_files={"train": files}, keep_linebreaks=True, **kwargs)
    raw["validation"] = lib.load_dataset(
        "text", data_files={"train": files}, split="train[:5%]", keep_linebreaks=True, **kwargs
    )
    raw["train"] = lib.load_dataset(
        "text", data_files={"train": files}, split="train[5%:]", keep_linebreaks=True, **kwargs
    )
    tokenized = raw.map(whitespace_tokenize, batched=True, remove_columns=["text"])
    lm = tokenized.map(group_texts, batched=True)
    lm.set_format("torch")
    return lm


def test_run_clm_flow_as_hf(tmp_path, hf_load):
    pytest.importorskip("torch")
    stdlib = sysconfig.get_paths()["stdlib"]
    d = tmp_path / "lm"
    d.mkdir()
    for name in ("argparse.py", "textwrap.py"):
        with open(os.path.join(stdlib, name), encoding="utf-8") as f:
            (d / name.replace(".py", ".txt")).write_text(f.read())
    files = str(d / "*.txt")
    ours = run_clm(am, files)
    theirs = run_clm(hf, files, cache_dir=str(tmp_path / "hf-cache"))
    assert list(ours) == list(theirs) == ["train", "validation"]
    for split in ours:
        assert len(ours[split]) == len(theirs[split]) > 0
        a, b = ours[split][:], theirs[split][:]
        assert list(a) == list(b) == ["input_ids", "attention_mask", "labels"]
        for key in a:
            assert a[key].dtype == b[key].dtype
            assert a[key].tolist() == b[key].tolist()
