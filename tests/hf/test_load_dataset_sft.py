"""An SFT-style data script over three local JSON Lines files, run on arrowmix and on HF.

The script is what instruction-tuning repositories write: ``load_dataset("json")`` per source,
``select_columns``, ``interleave_datasets`` by probabilities, a chat-template ``map``, a batched
tokenizing ``map``, ``train_test_split`` and ``set_format``; then the same mix streamed.
Only the library differs; every value is compared with HF ``datasets`` 5.2, offline.
"""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")


def _lines(name: str) -> list[str]:
    path = Path(sysconfig.get_paths()["stdlib"]) / name
    return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


@pytest.fixture
def sources(tmp_path):
    """Three JSONL files of prompt/completion pairs (real text), each with its own extra column."""
    files = []
    for i, (name, n, extra) in enumerate(
        [("textwrap.py", 60, "license"), ("argparse.py", 35, "lang"), ("shlex.py", 17, "score")]
    ):
        text = _lines(name)
        rows = [
            {"prompt": text[2 * k], "completion": text[2 * k + 1], extra: k * (i + 1)}
            for k in range(n)
        ]
        path = tmp_path / f"source{i}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        files.append(str(path))
    return files


def chat(ex):
    return {"text": f"<|user|>\n{ex['prompt']}\n<|assistant|>\n{ex['completion']}"}


def tokenize(batch):
    ids = [[sum(map(ord, w)) % 30_000 for w in t.split()] for t in batch["text"]]
    return {"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]}


def sft(lib, files, cache_dir):
    """The data part of an SFT script, verbatim but for the library."""
    parts = [
        lib.load_dataset("json", data_files=f, split="train", cache_dir=cache_dir).select_columns(
            ["prompt", "completion"]
        )
        for f in files
    ]
    mixed = lib.interleave_datasets(
        parts, probabilities=[0.5, 0.3, 0.2], seed=42, stopping_strategy="all_exhausted"
    )
    mixed = mixed.map(chat, remove_columns=["prompt", "completion"])
    tokenized = mixed.map(tokenize, batched=True, remove_columns=["text"])
    split = tokenized.train_test_split(test_size=0.1, seed=0)
    split.set_format("numpy")
    return split


def test_sft_script_gives_hf_values(sources, tmp_path):
    ours = sft(am, sources, str(tmp_path / "am"))
    theirs = sft(hf, sources, str(tmp_path / "hf"))
    # train_test_split gives a pair that is also indexable by name (a documented difference).
    for name in ("train", "test"):
        a, b = ours[name], theirs[name]
        assert len(a) == len(b) > 0
        assert a.column_names == b.column_names == ["input_ids", "attention_mask"]
        for i in (0, len(a) // 2, len(a) - 1):
            for col in a.column_names:
                assert a[i][col].dtype == b[i][col].dtype
                assert a[i][col].tolist() == b[i][col].tolist()
        a.reset_format()
        b.reset_format()
        assert a[:] == b[:]


def test_the_same_mix_streamed_gives_hf_rows_and_resumes(sources, tmp_path):
    def streamed(lib, cache_dir):
        parts = [
            lib.load_dataset(
                "json", data_files=f, split="train", streaming=True, cache_dir=cache_dir
            )
            for f in sources
        ]
        parts = [p.select_columns(["prompt", "completion"]) for p in parts]
        mixed = lib.interleave_datasets(
            parts, probabilities=[0.5, 0.3, 0.2], seed=42, stopping_strategy="first_exhausted"
        )
        return mixed.map(chat, remove_columns=["prompt", "completion"])

    ours = streamed(am, str(tmp_path / "am"))
    theirs = streamed(hf, str(tmp_path / "hf"))
    rows = list(ours)
    assert rows == list(theirs) and len(rows) > 20
    it = streamed(am, str(tmp_path / "am"))
    for n, _row in enumerate(it):
        if n == 20:
            state = json.loads(json.dumps(it.state_dict()))
            break
    again = streamed(am, str(tmp_path / "am"))
    again.load_state_dict(state)
    assert list(again) == rows[21:]
