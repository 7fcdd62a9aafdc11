"""Fingerprint records: JSON round trip, diff and explain name the changed component."""

from __future__ import annotations

import json

import pytest

from arrowmix._fingerprint.record import FingerprintRecord, explain
from arrowmix._fingerprint.transform import fingerprint_transform, transform_record
from arrowmix.exceptions import FingerprintError

PARENT = "0123456789abcdef"
SRC = """
MAX_LEN = 8

def clean(text):
    return text.strip()

def make(vocab):
    def tokenize(batch):
        return [vocab.get(w, 0) for w in clean(batch["text"]).split()][:MAX_LEN]
    return tokenize

tokenize = make({"a": 1})
"""


def _record(fn: object, **kwargs: object) -> FingerprintRecord:
    parent = str(kwargs.pop("parent", PARENT))
    version = kwargs.pop("version", 1)
    return transform_record(
        parent,
        "arrowmix.map",
        version,  # type: ignore[arg-type]
        fn,  # type: ignore[arg-type]
        kwargs,
        {"batched": False},
    )


def _changed(a: FingerprintRecord, b: FingerprintRecord) -> set[str]:
    return {c.component for c in a.diff(b)}


def test_record_fingerprint_matches_fingerprint_transform(load_module) -> None:
    mod = load_module(SRC)
    rec = _record(mod.tokenize, batched=True)
    fp = fingerprint_transform(
        PARENT, "arrowmix.map", 1, mod.tokenize, {"batched": True}, {"batched": False}
    )
    assert rec.fingerprint == fp


def test_json_round_trip(load_module) -> None:
    rec = _record(load_module(SRC).tokenize, batched=True, remove_columns=["text"])
    text = json.dumps(rec.to_dict())
    back = FingerprintRecord.from_dict(json.loads(text))
    assert back == rec
    assert FingerprintRecord.from_json(rec.to_json()) == rec
    assert set(rec.kwargs) == {"batched", "remove_columns"}
    assert rec.environment["python"].count(".") == 1


def test_from_dict_rejects_other_formats(load_module) -> None:
    data = _record(load_module(SRC).tokenize).to_dict()
    with pytest.raises(FingerprintError, match="format"):
        FingerprintRecord.from_dict({**data, "format": 99})
    with pytest.raises(FingerprintError, match="unexpected"):
        FingerprintRecord.from_dict({**data, "extra": 1})


@pytest.mark.parametrize(
    ("old", "new", "component"),
    [
        ("MAX_LEN = 8", "MAX_LEN = 9", "tokenize -> globals['MAX_LEN']"),
        ('make({"a": 1})', 'make({"a": 2})', "tokenize -> closure['vocab']"),
        ("text.strip()", "text.lower()", "tokenize -> globals['clean'] -> code"),
        ("[:MAX_LEN]", "[-MAX_LEN:]", "tokenize -> code"),
    ],
)
def test_diff_names_the_changed_function_component(
    load_module, old: str, new: str, component: str
) -> None:
    a = _record(load_module(SRC).tokenize)
    b = _record(load_module(SRC.replace(old, new)).tokenize)
    qual = "make.<locals>."
    changed = {c.replace(qual, "") for c in _changed(a, b)}
    assert component in changed
    assert "function" in changed
    assert a.fingerprint != b.fingerprint
    untouched = {"parent", "version", "transform"}
    assert not changed & untouched


def test_diff_names_parent_version_and_kwargs(load_module) -> None:
    fn = load_module(SRC).tokenize
    base = _record(fn, batch_size=10)
    assert _changed(base, _record(fn, batch_size=11)) == {"kwargs['batch_size']"}
    assert _changed(base, _record(fn, batch_size=10, version=2)) == {"version"}
    assert _changed(base, _record(fn, batch_size=10, parent="f" * 16)) == {"parent"}
    added = base.diff(_record(fn, batch_size=10, desc="x"))
    assert [(c.component, c.kind) for c in added] == [("kwargs['desc']", "added")]
    # passing a default explicitly is not a change
    assert base.diff(_record(fn, batch_size=10, batched=False)) == []


def test_explain_text(load_module) -> None:
    a = _record(load_module(SRC).tokenize)
    b = _record(load_module(SRC.replace("MAX_LEN = 8", "MAX_LEN = 9")).tokenize)
    text = explain(a.to_json(), b.to_dict())
    assert text.splitlines()[0] == f"fingerprint {a.fingerprint} -> {b.fingerprint}"
    assert "changed: make.<locals>.tokenize -> globals['MAX_LEN']" in text
    assert explain(a, a) == "fingerprints are equal: nothing changed"


def test_explain_accepts_functions(load_module) -> None:
    a = load_module(SRC).tokenize
    b = load_module(SRC.replace('make({"a": 1})', 'make({"b": 1})')).tokenize
    assert "closure['vocab']" in explain(a, b)
    with pytest.raises(TypeError, match="explain"):
        explain(1, a)


def test_records_without_function_and_renamed_functions(load_module) -> None:
    plain = transform_record(PARENT, "arrowmix.select", 1, None, {"indices": [1, 2]})
    assert plain.function is None
    assert plain.components == {}
    assert FingerprintRecord.from_json(plain.to_json()) == plain
    a = _record(load_module(SRC).tokenize)
    b = _record(load_module(SRC.replace("tokenize", "encode")).encode)
    kinds = {(c.component.split(" -> ")[0], c.kind) for c in a.diff(b)}
    assert ("make.<locals>.tokenize", "removed") in kinds
    assert ("make.<locals>.encode", "added") in kinds
