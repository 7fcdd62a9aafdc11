"""The map/filter cache: hits, fingerprints, segments, num_proc reuse, invalid files, switches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import arrowmix as am
from arrowmix._cache import segments as segmod
from arrowmix._storage.ipc import read_meta
from arrowmix.exceptions import FingerprintWarning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def chunked(tmp_path):
    am.write_chunks(
        ({"n": i, "t": f"row{i}"} for i in range(40)), tmp_path / "c", rows_per_chunk=15
    )
    return am.Dataset.from_chunks(str(tmp_path / "c"))


def _counting(log_path):
    def fn(row):
        with open(log_path, "a") as f:
            f.write(f"{row['n']}\n")
        return {"sq": row["n"] ** 2}

    return fn


def _calls(log_path):
    if not os.path.exists(log_path):
        return []
    with open(log_path) as f:
        return [int(x) for x in f.read().split()]


def _cache_names(directory):
    return sorted(
        n for n in os.listdir(directory) if n.startswith("cache-") and n.endswith(".arrow")
    )


def test_second_map_is_a_hit_without_recompute(chunked, tmp_path):
    log = tmp_path / "calls"
    fn = _counting(log)
    a = chunked.map(fn)
    assert len(_calls(log)) == 40
    b = chunked.map(fn, desc="again", num_proc=3)
    assert len(_calls(log)) == 40
    assert a.fingerprint == b.fingerprint and a.cache_files == b.cache_files
    assert b["sq"] == [i * i for i in range(40)]
    assert b.filter(lambda r: r["sq"] > 1000)["n"] == list(range(32, 40))


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import arrowmix as am
    from arrowmix._cache import segments
    segments.SEGMENT_ROWS = segments.MIN_SEGMENT_ROWS = 10

    def fn(row):  # reads several globals (sys, open): hashed the same in every process
        with open(sys.argv[2], "a") as f:
            f.write(f"{row['n']}\\n")
        return {"sq": row["n"] ** 2}

    ds = am.Dataset.from_chunks(sys.argv[1])
    out = ds.map(fn, num_proc=int(sys.argv[3]))
    kept = out.filter(lambda r: r["n"] % 3 == 0)
    print(json.dumps([out.fingerprint, out["sq"], kept.fingerprint, kept["n"]]))
    """
)


def _run_script(data_dir, log, num_proc=1):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(data_dir), str(log), str(num_proc)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ARROWMIX_PROGRESS": "0"},
    )
    return json.loads(out.stdout)


def test_cache_hit_in_a_new_process(chunked, tmp_path):
    log = tmp_path / "calls"
    first = _run_script(tmp_path / "c", log)
    assert sorted(_calls(log)) == list(range(40))
    second = _run_script(tmp_path / "c", log, num_proc=2)
    assert sorted(_calls(log)) == list(range(40))  # nothing recomputed
    assert first == second
    assert first[1] == [i * i for i in range(40)] and first[3] == list(range(0, 40, 3))


def test_segment_reuse_across_num_proc(chunked, tmp_path, small_segments):
    log = tmp_path / "calls"
    fn = _counting(log)
    out = chunked.map(fn, num_proc=2)
    assert sorted(_calls(log)) == list(range(40))
    names = _cache_names(chunked.cache_dir)
    assert names == [f"cache-{out.fingerprint}-{i:05d}-of-00004.arrow" for i in range(4)]
    os.unlink(os.path.join(chunked.cache_dir, names[2]))
    log.unlink()
    again = chunked.map(fn, num_proc=1)
    assert sorted(_calls(log)) == list(range(20, 30))  # only the deleted segment
    assert again["sq"] == [i * i for i in range(40)]
    assert again.fingerprint == out.fingerprint


def test_segment_metadata(chunked, small_segments):
    out = chunked.map(lambda r: {"sq": r["n"] ** 2})
    path = next(f for f in out.cache_files if "-00001-of-" in f)
    meta = read_meta(pa.ipc.open_file(path).schema)
    assert meta["kind"] == "map" and meta["fingerprint"] == out.fingerprint
    assert meta["parent"] == chunked.fingerprint and meta["transform"] == "arrowmix.map@1"
    assert (meta["rows"], meta["segment"], meta["num_segments"]) == (10, 1, 4)
    assert meta["input_rows"] == [10, 20]
    assert meta["record"]["fingerprint"] == out.fingerprint  # the explain record
    assert meta["record"]["parent"] == chunked.fingerprint
    schema_meta = pa.ipc.open_file(path).schema.metadata
    assert json.loads(schema_meta[b"arrowmix.fingerprint_record"]) == meta["record"]
    assert abs(meta["created"] - time.time()) < 60
    assert meta["columns"] == ["n", "t", "sq"] and meta["zero_copy"] == ["n", "t"]
    filt = chunked.filter(lambda r: r["n"] % 2 == 0)
    fmeta = read_meta(
        pa.ipc.open_file(os.path.join(chunked.cache_dir, _cache_names(chunked.cache_dir)[0])).schema
    )
    assert {"kind", "fingerprint", "rows", "segment"} <= set(fmeta)
    assert any(
        read_meta(pa.ipc.open_file(os.path.join(chunked.cache_dir, n)).schema)["kind"] == "filter"
        for n in _cache_names(chunked.cache_dir)
    )
    assert filt["n"] == list(range(0, 40, 2))


def test_hit_touches_files(chunked):
    out = chunked.map(f_a)
    path = out.cache_files[-1]
    os.utime(path, (1_000_000, 1_000_000))
    chunked.map(f_a)
    assert os.path.getmtime(path) > 1_000_000


def f_a(row):
    return {"x": row["n"] + 1}


def f_b(row):
    return {"x": row["n"] + 2}


def test_fingerprint_depends_on_function_and_arguments_not_num_proc_or_desc(chunked):
    fp = chunked.map(f_a).fingerprint
    assert chunked.map(f_a, num_proc=2, desc="x", load_from_cache_file=False).fingerprint == fp
    assert chunked.map(f_a, batch_size=7).fingerprint == fp  # unbatched: batch size is moot
    assert chunked.map(f_a, fn_kwargs={}).fingerprint == fp  # defaults do not count

    def batched(b):
        return {"x": [n + 1 for n in b["n"]]}

    others = {
        chunked.map(f_b).fingerprint,
        chunked.map(
            lambda r: {"x": r["n"] + 1}, input_columns=None, with_indices=False
        ).fingerprint,
        chunked.map(lambda r, i: {"x": i}, with_indices=True).fingerprint,
        chunked.map(lambda n: {"x": n}, input_columns="n").fingerprint,
        chunked.map(f_a, remove_columns="t").fingerprint,
        chunked.map(batched, batched=True).fingerprint,
        chunked.map(batched, batched=True, batch_size=7).fingerprint,
        chunked.map(lambda r, k: {"x": k}, fn_kwargs={"k": 1}).fingerprint,
        chunked.map(lambda r, k: {"x": k}, fn_kwargs={"k": 2}).fingerprint,
        chunked.with_format("numpy").map(f_a).fingerprint,
    }
    assert fp not in others and len(others) == 10
    assert chunked.map(batched, batched=True, batch_size=1000).fingerprint in others


def test_closure_values_change_the_fingerprint(chunked):
    def make(k):
        return lambda row: {"x": row["n"] * k}

    assert chunked.map(make(2)).fingerprint != chunked.map(make(3)).fingerprint
    assert chunked.map(make(2)).fingerprint == chunked.map(make(2)).fingerprint


def test_new_fingerprint_overrides(chunked):
    out = chunked.map(f_a, new_fingerprint="0123456789abcdef")
    assert out.fingerprint == "0123456789abcdef"
    assert out.cache_files[-1].endswith("cache-0123456789abcdef.arrow")


def test_unhashable_function_random_fingerprint_one_warning(chunked):
    gen = (i for i in range(3))  # generators cannot be pickled, so not hashed

    def locked(row):
        assert gen is not None
        return {"x": row["n"]}

    with pytest.warns(FingerprintWarning, match="locked") as rec:
        a = chunked.map(locked)
    assert len(rec) == 1
    with pytest.warns(FingerprintWarning):
        b = chunked.map(locked)
    assert a.fingerprint != b.fingerprint
    assert a["x"] == b["x"] == list(range(40))


def test_load_from_cache_file_false_recomputes(chunked, tmp_path):
    log = tmp_path / "calls"
    a = chunked.map(_counting(log))
    b = chunked.map(_counting(log), load_from_cache_file=False)
    assert len(_calls(log)) == 80
    assert a.cache_files == b.cache_files and b["sq"] == a["sq"]


def test_cache_file_name_and_foreign_lineage(chunked, tmp_path):
    path = str(tmp_path / "mine" / "out.arrow")  # the directory is created
    a = chunked.map(f_a, cache_file_name=path)
    assert a.cache_files[-1] == path and a["x"] == [n + 1 for n in range(40)]
    with pytest.warns(segmod.CacheWarning, match=r"out\.arrow.*fingerprint"):
        b = chunked.map(f_b, cache_file_name=path)  # another lineage at that path
    assert b["x"] == [n + 2 for n in range(40)]


def test_corrupt_segment_is_recomputed_with_a_warning(chunked, tmp_path, small_segments):
    log = tmp_path / "calls"
    out = chunked.map(_counting(log))
    victim = out.cache_files[-2]
    with open(victim, "r+b") as f:
        f.truncate(100)
    log.unlink()
    with pytest.warns(segmod.CacheWarning, match=r"-00002-of-00004\.arrow.*not usable"):
        again = chunked.map(_counting(log))
    assert sorted(_calls(log)) == list(range(20, 30))
    assert again["sq"] == [i * i for i in range(40)]


def test_stale_tmp_files_of_dead_writers_are_removed(chunked, small_segments):
    fp_probe = chunked.map(f_a)
    final = os.path.basename(fp_probe.cache_files[-1])
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    stale = os.path.join(chunked.cache_dir, f"tmp-{dead_pid}-abcd1234-{final}.partial")
    live = os.path.join(chunked.cache_dir, f"tmp-{os.getpid()}-abcd1234-{final}.partial")
    for p in (stale, live):
        with open(p, "wb") as f:
            f.write(b"half")
    chunked.map(f_a, load_from_cache_file=False)
    assert not os.path.exists(stale)
    assert os.path.exists(live)  # a live writer's file is never touched


def test_disable_caching_writes_to_temp_and_never_reuses(chunked, tmp_path):
    log = tmp_path / "calls"
    am.disable_caching()
    try:
        a = chunked.map(_counting(log))
        b = chunked.map(_counting(log))
    finally:
        am.enable_caching()
    assert len(_calls(log)) == 80
    assert not any(f.startswith(chunked.cache_dir + os.sep + "cache-") for f in a.cache_files)
    assert _cache_names(chunked.cache_dir) == []
    assert b["sq"] == [i * i for i in range(40)]


def test_num_proc_results_equal_single_process(chunked, small_segments):
    def batched(b, idx):
        return {"x": [n * 3 + i for n, i in zip(b["n"], idx, strict=True)]}

    one = chunked.map(
        batched, batched=True, batch_size=4, with_indices=True, new_fingerprint="a" * 16
    )
    two = chunked.map(batched, batched=True, batch_size=4, with_indices=True, num_proc=2)
    assert one["x"] == two["x"] == [4 * i for i in range(40)]
    assert chunked.filter(lambda r: r["n"] % 7 == 0, num_proc=3)["n"] == [0, 7, 14, 21, 28, 35]


def test_worker_exception_reaches_the_caller(chunked, small_segments):
    def boom(row):
        if row["n"] == 25:
            raise ValueError("twenty-five")
        return {}

    with pytest.raises(ValueError, match="twenty-five") as e:
        chunked.map(boom, num_proc=2)
    assert any("row 25" in n for n in e.value.__notes__)
    assert not [n for n in os.listdir(chunked.cache_dir) if n.endswith(".partial")]


@pytest.mark.parametrize(("env", "shown"), [("1", True), ("0", False)])
def test_progress_bar_switch(chunked, capfd, monkeypatch, env, shown):
    monkeypatch.setenv("ARROWMIX_PROGRESS", env)
    chunked.map(f_a, desc="Tokenizing")
    err = capfd.readouterr().err
    assert ("Tokenizing" in err and "segments 1/1" in err) is shown


def test_spawn_workers_where_fork_is_unavailable(monkeypatch, small_segments):
    from arrowmix._dataset.mapping import local as workers

    monkeypatch.setattr(workers.mp, "get_all_start_methods", lambda: ["spawn"])
    ds = am.Dataset.from_dict({"n": list(range(40))})
    k = 3
    out = ds.map(lambda r: {"m": r["n"] * k}, num_proc=2)
    assert out["m"] == [3 * n for n in range(40)] and len(out.cache_files) == 4


def test_cache_file_name_with_segments(chunked, tmp_path, small_segments):
    out = chunked.map(f_a, cache_file_name=str(tmp_path / "o" / "mapped.arrow"))
    names = sorted(os.listdir(tmp_path / "o"))
    assert [n for n in names if n.endswith(".arrow")] == [
        f"mapped-{i:05d}-of-00004.arrow" for i in range(4)
    ]
    again = chunked.map(f_a, cache_file_name=str(tmp_path / "o" / "mapped.arrow"))
    assert again.cache_files == out.cache_files and again["x"] == list(range(1, 41))


def test_all_null_segment_takes_type_from_other_segments(chunked, small_segments):
    out = chunked.map(lambda r: {"m": None if r["n"] < 20 else f"s{r['n']}"})
    assert out.schema.field("m").type == pa.string()
    assert out["m"] == [None] * 20 + [f"s{n}" for n in range(20, 40)]


def test_segments_with_uncastable_types_raise(chunked, small_segments):
    from arrowmix.exceptions import SchemaMismatchError

    with pytest.raises(SchemaMismatchError, match=r"Column 'm' is string in cache segment"):
        chunked.map(lambda r: {"m": r["n"] if r["n"] < 20 else "text"})


def test_function_capturing_a_dataset_is_hashed_by_its_fingerprint(chunked):
    lookup = am.Dataset.from_dict({"w": [f"w{i}" for i in range(40)]})
    other = am.Dataset.from_dict({"w": [f"v{i}" for i in range(40)]})

    def make(table):
        return lambda r: {"w": table[r["n"]]["w"]}

    a = chunked.map(make(lookup))  # no FingerprintWarning (filterwarnings=error)
    assert a["w"][:2] == ["w0", "w1"]
    assert chunked.map(make(lookup)).fingerprint == a.fingerprint
    assert chunked.map(make(other)).fingerprint != a.fingerprint
    assert chunked.map(make(lookup.with_format("numpy"))).fingerprint != a.fingerprint


def test_results_hold_their_cache_files_while_alive(chunked):
    import gc

    from arrowmix._cache.inuse import in_use

    out = chunked.map(f_a)
    big = am.Dataset.from_dict({"n": list(range(250_000))})
    kept = big.filter(lambda b: [n % 2 == 0 for n in b["n"]], batched=True, batch_size=50_000)
    files = [f for f in out.cache_files if "cache-" in f] + kept.cache_files
    # The map's file; the filter's indices file and its 5 segments of kept positions (their
    # boundaries are multiples of batch_size).
    assert len(files) == 7 and sum("indices-" in f for f in files) == 1
    assert all(in_use(f) for f in files)  # a cleanup would skip them
    del out, kept
    gc.collect()
    assert not any(in_use(f) for f in files)


def test_workers_disable_tokenizer_thread_pools(chunked, small_segments, monkeypatch):
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)

    def env(row):
        import os as _os

        return {"tp": _os.environ.get("TOKENIZERS_PARALLELISM", "unset"), "pid": _os.getpid()}

    out = chunked.map(env, num_proc=2)
    assert set(out["tp"]) == {"false"} and os.getpid() not in set(out["pid"])
    assert os.environ.get("TOKENIZERS_PARALLELISM") is None  # the parent is untouched


def test_renaming_a_function_keeps_its_cache(chunked):
    src = "def {}(row):\n    return {{'sq': row['n'] ** 2}}\n"
    fns = {}
    for name in ("square", "sq_of_n"):
        exec(compile(src.format(name), "user_code.py", "exec"), fns)
    first = chunked.map(fns["square"])
    assert chunked.map(fns["sq_of_n"]).fingerprint == first.fingerprint
