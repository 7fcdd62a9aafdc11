from __future__ import annotations

import json

import pytest

from arrowmix._cli.fingerprint import diff
from arrowmix._cli.main import main

FP1, FP2 = "1" * 16, "2" * 16

RECORD_A = {
    "transform": "arrowmix.map",
    "version": "1",
    "kwargs": {"batched": "aaaa", "batch_size": "bbbb"},
    "components": {"tokenize -> code": "c0de", "tokenize -> globals['VOCAB']": "v1"},
    "environment": {"python": "3.11"},
}
RECORD_B = {
    "transform": "arrowmix.map",
    "version": "1",
    "kwargs": {"batched": "aaaa", "num_proc": "4444"},
    "components": {"tokenize -> code": "c0de", "tokenize -> globals['VOCAB']": "v2"},
    "environment": {"python": "3.11"},
}


def test_explain_prints_changed_added_removed_components(tmp_path, make_cache, capsys):
    (a,) = make_cache(FP1, extra={"record": {**RECORD_A, "fingerprint": FP1}})
    rec_b = json.dumps({**RECORD_B, "fingerprint": FP2})  # a record stored as JSON text works too
    (b,) = make_cache(FP2, extra={"record": rec_b}, parent=FP1)
    assert main(["fingerprint", "--explain", a, b]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        f"A: {a}",
        f"   fingerprint {FP1}  kind map  parent {'a' * 16}",
        f"B: {b}",
        f"   fingerprint {FP2}  kind map  parent {FP1}",
    ]
    assert out[4:] == [
        'changed  components["tokenize -> globals[\'VOCAB\']"]: "v1" -> "v2"',
        "removed  kwargs['batch_size']: \"bbbb\"",
        "added    kwargs['num_proc']: \"4444\"",
        "3 components differ (1 changed, 1 added, 1 removed).",
    ]


def test_identical_records(tmp_path, make_cache, capsys):
    (a,) = make_cache(FP1, extra={"record": RECORD_A})
    (b,) = make_cache(FP2, extra={"record": RECORD_A})
    assert main(["fingerprint", "--explain", a, b]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "The records are identical: no component differs."
    )


def test_fingerprints_are_looked_up_in_the_cache_dir(tmp_path, make_cache, capsys):
    make_cache(FP1, segments=2, extra={"record": RECORD_A})
    make_cache(FP2, kind="indices", extra={"record": RECORD_B})
    assert main(["fingerprint", "--explain", FP1, FP2, "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"A: {tmp_path}/cache-{FP1}-00000-of-00002.arrow" in out
    assert f"B: {tmp_path}/indices-{FP2}.arrow" in out
    assert "3 components differ" in out


def test_random_fingerprints_are_flagged(tmp_path, make_cache, capsys):
    unhashable = {**RECORD_B, "unhashable": [{"path": "f -> globals['lock']", "reason": "lock"}]}
    (a,) = make_cache(FP1, extra={"record": RECORD_A})
    (b,) = make_cache(FP2, extra={"record": unhashable})
    assert main(["fingerprint", "--explain", a, b]) == 0
    out = capsys.readouterr().out
    assert "Note: B's fingerprint is random (unhashable: " in out
    assert "added    unhashable: " in out


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no-record", "has no fingerprint record"),
        ("bad-json", "not valid JSON"),
        ("not-a-dict", "not a JSON object"),
        ("missing", "does not exist"),
        ("not-arrow", "Cannot read"),
        ("unknown-fp", f"No cache file of fingerprint {FP2}"),
    ],
)
def test_errors_exit_1_with_a_clear_message(tmp_path, make_cache, capsys, setup, message):
    (a,) = make_cache(FP1, extra={"record": RECORD_A})
    b = str(tmp_path / f"cache-{FP2}.arrow")
    if setup == "no-record":
        make_cache(FP2)
    elif setup == "bad-json":
        make_cache(FP2, extra={"record": "{not json"})
    elif setup == "not-a-dict":
        make_cache(FP2, extra={"record": [1, 2]})
    elif setup == "not-arrow":
        (tmp_path / f"cache-{FP2}.arrow").write_bytes(b"nope")
    elif setup == "unknown-fp":
        b = FP2
        (tmp_path / f"cache-{FP2}.lock").write_bytes(b"")  # a lock is not a cache file
        (tmp_path / f"cache-{FP2}.arrow.bak").write_bytes(b"")
    args = ["fingerprint", "--explain", a, b, "--cache-dir", str(tmp_path)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("arrowmix: error: ") and message in err


@pytest.mark.parametrize("args", [[], ["--explain"], ["--explain", "a"]])
def test_usage_errors_exit_2(capsys, args):
    assert main(["fingerprint", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arrowmix fingerprint: error: ") and "--explain" in err
    assert err.count("\n") == 1 and "arrowmix fingerprint --help" in err


def test_diff_of_nested_dicts():
    before = {"a": 1, "n": {"x": 1, "deep": {"y": [1, 2]}}, "gone": {"k": 1}}
    after = {"a": 1, "n": {"x": 2, "deep": {"y": [1, 3]}}, "new": None}
    assert list(diff(before, after)) == [
        ("removed", "gone", {"k": 1}, None),
        ("changed", "n['deep']['y']", [1, 2], [1, 3]),
        ("changed", "n['x']", 1, 2),
        ("added", "new", None, None),
    ]
    assert list(diff(before, before)) == []
