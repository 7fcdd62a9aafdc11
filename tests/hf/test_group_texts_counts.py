""" "Group texts" block counts against HF datasets, as the migration guide states them."""

from __future__ import annotations

from itertools import chain

import pytest

import arrowmix as am

hf = pytest.importorskip("datasets")


def group_texts(examples, block=16):
    joined = list(chain(*examples["ids"]))
    total = len(joined) // block * block
    return {"ids": [joined[i : i + block] for i in range(0, total, block)]}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_blocks_equal_hfs_without_num_proc_whatever_num_proc(tmp_path):
    rows = {"ids": [list(range(1 + (7 * i) % 23)) for i in range(3001)]}
    ours = am.Dataset.from_dict(rows)
    theirs = hf.Dataset.from_dict(rows)
    hf_plain = theirs.map(group_texts, batched=True, batch_size=250)
    hf_sharded = theirs.map(group_texts, batched=True, batch_size=250, num_proc=2)
    for num_proc in (None, 2):
        got = ours.map(group_texts, batched=True, batch_size=250, num_proc=num_proc)
        assert got["ids"] == hf_plain["ids"]
    # HF's count depends on num_proc: each shard ends with a short batch of its own.
    assert len(hf_sharded) != len(hf_plain)
