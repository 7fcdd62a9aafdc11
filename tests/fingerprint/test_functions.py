"""Hash stability of functions: what changes the fingerprint and what does not."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from arrowmix._fingerprint.functions import FunctionHasher, fingerprint_function
from arrowmix._fingerprint.modules import is_user_module, module_version
from arrowmix._fingerprint.pickler import reference
from arrowmix._fingerprint.transform import fingerprint_transform
from arrowmix.exceptions import FingerprintWarning

ROOT = Path(__file__).resolve().parents[2]

TOKENIZE_SRC = """
import re

MAX_LEN = 8
SPECIAL = {"<s>", "</s>", "<pad>"}
WORD = re.compile(r"\\w+")

def normalise(text):
    return text.lower().strip()

def make_tokenizer(vocab):
    def tokenize(batch, add_special=True):
        ids = [vocab.get(w, 0) for w in WORD.findall(normalise(batch["text"]))]
        if add_special:
            ids = [1, *ids, 2]
        return {"ids": ids[:MAX_LEN], "n_special": len(SPECIAL)}
    return tokenize

tokenize = make_tokenizer({"a": 3, "b": 4, "c": 5})
"""


def _fp(fn: object) -> str:
    return fingerprint_function(fn)


RICH_SRC = """
import dataclasses, enum, functools, re
import numpy as np
import pyarrow as pa

class Mode(enum.Enum):
    FAST = 1
    SLOW = 2

@dataclasses.dataclass
class Cfg:
    mode: Mode
    tags: frozenset
    pairs: set
    table: object

class Scaler:
    def __init__(self, k):
        self.k = k
        self.cache = {("a", 1): {"x", "y"}, 3.5: None}
    def __call__(self, v):
        return v * self.k

CFG = Cfg(Mode.FAST, frozenset({"p", "q", "r"}), {(1, "a"), (2, "b")},
          pa.table({"a": pa.chunked_array([[1, 2], [3]])}))
SCALE = Scaler(np.arange(4))
PATTERN = re.compile(r"[a-z]+", re.I)

@functools.lru_cache(maxsize=8)
def cached(x):
    return x * 2

def fn(batch, *, mult=2, **extra):
    rows = [SCALE(len(PATTERN.findall(t))) for t in batch["text"]]
    return {"y": rows, "mode": CFG.mode.name, "c": cached(mult), "n": len(CFG.pairs)}

target = functools.partial(fn, mult=3)
"""


@pytest.mark.parametrize(("src", "attr"), [(TOKENIZE_SRC, "tokenize"), (RICH_SRC, "target")])
def test_equal_in_fresh_interpreter(load_module, tmp_path: Path, src, attr) -> None:
    mod = load_module(src, name=f"tokmod_{uuid.uuid4().hex[:8]}")
    here = _fp(getattr(mod, attr))
    script = textwrap.dedent(
        f"""
        import importlib, sys
        sys.path.insert(0, {str(tmp_path / "mods")!r})
        from arrowmix._fingerprint.functions import fingerprint_function
        mod = importlib.import_module({mod.__name__!r})
        print(fingerprint_function(mod.{attr}))
        """
    )
    # This process has a random hash seed; the child a fixed one: set order differs.
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == here


def test_independent_of_line_numbers_and_location(load_module) -> None:
    a = load_module(TOKENIZE_SRC, subdir="one")
    b = load_module(TOKENIZE_SRC, subdir="two/deeper", leading_lines=17)
    assert a.tokenize.__code__.co_filename != b.tokenize.__code__.co_filename
    assert a.tokenize.__code__.co_firstlineno != b.tokenize.__code__.co_firstlineno
    assert _fp(a.tokenize) == _fp(b.tokenize)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("ids[:MAX_LEN]", "ids[-MAX_LEN:]"),  # code
        ("MAX_LEN = 8", "MAX_LEN = 9"),  # global value
        ("ids = [1, *ids, 2]", "ids = [1, *ids, 3]"),  # constant
        ('"<pad>"}', '"<unk>"}'),  # global set content
        ('{"a": 3, "b": 4, "c": 5}', '{"a": 3, "b": 4, "c": 6}'),  # closure value
        ("text.lower().strip()", "text.strip()"),  # helper code
        ("re.compile(r", "re.compile(r'x' + r"),  # an installed class's object
        ("add_special=True", "add_special=False"),  # default argument
    ],
)
def test_sensitive_to(load_module, old: str, new: str) -> None:
    assert old in TOKENIZE_SRC
    a = load_module(TOKENIZE_SRC)
    b = load_module(TOKENIZE_SRC.replace(old, new))
    assert _fp(a.tokenize) != _fp(b.tokenize)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('frozenset({"p", "q", "r"})', 'frozenset({"p", "q", "s"})'),
        ('(2, "b")}', '(2, "c")}'),
        ("[[1, 2], [3]]", "[[1, 2], [4]]"),
        ("return v * self.k", "return v + self.k"),
        ("np.arange(4)", "np.arange(5)"),
        ("return x * 2", "return x * 3"),
        ("re.I)", "0)"),
        ("FAST = 1", "FAST = 3"),
        ("mult=3)", "mult=4)"),
        ("3.5: None", "3.5: 0"),
    ],
)
def test_rich_function_sensitive_to(load_module, old: str, new: str) -> None:
    assert old in RICH_SRC
    a, b = load_module(RICH_SRC), load_module(RICH_SRC)
    assert _fp(a.target) == _fp(b.target)
    c = load_module(RICH_SRC.replace(old, new))
    assert _fp(a.target) != _fp(c.target)


def test_insensitive_to_set_order_sensitive_to_dict_order(load_module) -> None:
    a = load_module(TOKENIZE_SRC)
    b = load_module(TOKENIZE_SRC.replace('{"<s>", "</s>", "<pad>"}', '{"<pad>", "</s>", "<s>"}'))
    assert _fp(a.tokenize) == _fp(b.tokenize)
    # A dict iterates in insertion order, so re-ordering one the function reads may change
    # its output: the fingerprint changes.
    c = load_module(TOKENIZE_SRC.replace('{"a": 3, "b": 4, "c": 5}', '{"c": 5, "a": 3, "b": 4}'))
    assert _fp(a.tokenize) != _fp(c.tokenize)


def test_reordered_global_dict_that_is_iterated_changes_the_fingerprint(load_module) -> None:
    src = """
    FIELDS = {"title": 1, "body": 2}

    def join(row):
        return " ".join(str(row[k] * w) for k, w in FIELDS.items())
    """
    a = load_module(src)
    b = load_module(src.replace('{"title": 1, "body": 2}', '{"body": 2, "title": 1}'))
    assert a.join({"title": "t", "body": "b"}) != b.join({"title": "t", "body": "b"})
    assert _fp(a.join) != _fp(b.join)


def test_editing_an_imported_helper_module_invalidates(load_module) -> None:
    helper_name = f"helpers_{uuid.uuid4().hex[:8]}"
    main_src = f"""
    from {helper_name} import clean
    import {helper_name} as helpers

    def by_name(x):
        return clean(x)

    def by_attribute(x):
        return helpers.clean(x) + helpers.SUFFIX
    """
    load_module("SUFFIX = '!'\ndef clean(x):\n    return x.strip()\n", name=helper_name)
    main = load_module(main_src)
    before = (_fp(main.by_name), _fp(main.by_attribute))
    # Edit the helper file and re-run "the script" (re-import both modules).
    load_module("SUFFIX = '!'\ndef clean(x):\n    return x.lower()\n", name=helper_name)
    main = load_module(main_src)
    after = (_fp(main.by_name), _fp(main.by_attribute))
    assert before[0] != after[0]
    assert before[1] != after[1]


def test_helper_components_are_recorded(load_module) -> None:
    mod = load_module(TOKENIZE_SRC)
    hasher = FunctionHasher()
    hasher.callable_digest(mod.tokenize, "tokenize")
    assert "tokenize -> code" in hasher.components
    assert "tokenize -> closure['vocab']" in hasher.components
    assert "tokenize -> globals['MAX_LEN']" in hasher.components
    assert "tokenize -> globals['normalise'] -> code" in hasher.components
    # builtins are identified by name inside the code, not listed as globals
    assert "tokenize -> globals['len']" not in hasher.components


def test_recursive_and_mutually_recursive_functions(load_module) -> None:
    src = """
    def even(n):
        return True if n == 0 else odd(n - 1)

    def odd(n):
        return False if n == 0 else even(n - 1)

    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)
    """
    a, b = load_module(src), load_module(src)
    assert _fp(a.even) == _fp(b.even)
    assert _fp(a.fact) == _fp(b.fact)
    c = load_module(src.replace("n * fact(n - 1)", "n * fact(n - 2)"))
    assert _fp(a.fact) != _fp(c.fact)
    d = load_module(src.replace("False if n == 0", "True if n == 0"))
    assert _fp(a.even) != _fp(d.even)  # odd is a helper of even, through a cycle


def test_lambdas() -> None:
    assert _fp(lambda x: x + 1) == _fp(lambda x: x + 1)
    assert _fp(lambda x: x + 1) != _fp(lambda x: x + 2)
    assert _fp(lambda x: x + 1) != _fp(lambda y: y + 1)


def test_methods_partials_and_callable_instances(load_module) -> None:
    src = """
    class Scale:
        def __init__(self, k):
            self.k = k
        def __call__(self, x):
            return x * self.k
        def shift(self, x, by=0):
            return x + self.k + by
    """
    a, b = load_module(src), load_module(src)
    assert _fp(a.Scale(2)) == _fp(b.Scale(2))
    assert _fp(a.Scale(2)) != _fp(a.Scale(3))
    assert _fp(a.Scale(2).shift) == _fp(b.Scale(2).shift)
    assert _fp(a.Scale(2).shift) != _fp(a.Scale(3).shift)
    assert _fp(functools.partial(a.Scale(2).shift, by=1)) == _fp(
        functools.partial(b.Scale(2).shift, by=1)
    )
    assert _fp(functools.partial(a.Scale(2).shift, by=1)) != _fp(
        functools.partial(a.Scale(2).shift, by=2)
    )
    c = load_module(src.replace("x * self.k", "x * self.k * 1"))
    assert _fp(a.Scale(2)) != _fp(c.Scale(2))  # editing the class's method invalidates


def test_installed_code_is_hashed_by_reference_and_version() -> None:
    ref = reference(np.mean)
    assert ref[1:3] == ("numpy", "mean")
    assert ref[3] == module_version("numpy")
    assert ref[3].startswith("numpy-")
    assert not is_user_module(np.mean.__module__)
    assert _fp(np.mean) != _fp(np.median)
    assert _fp(len) == _fp(len)


def test_numpy_and_arrow_closures() -> None:
    def make(values: object):
        return lambda x: (x, values)

    assert _fp(make(np.arange(10))) == _fp(make(np.arange(10)))
    assert _fp(make(np.arange(10))) != _fp(make(np.arange(1, 11)))
    chunked = pa.chunked_array([[1, 2], [3], [4, 5, 6]])
    single = pa.chunked_array([[1, 2, 3, 4, 5, 6]])
    assert _fp(make(chunked)) == _fp(make(single))
    assert _fp(make(pa.table({"a": chunked}))) == _fp(make(pa.table({"a": single})))


def test_big_dict_closure_order_and_value_sensitive() -> None:
    keys = [f"w{i}" for i in range(5000)]
    forward = {k: i for i, k in enumerate(keys)}
    backward = {k: forward[k] for k in reversed(keys)}
    changed = dict(forward, w42=-1)

    def make(vocab: dict[str, int]):
        return lambda w: vocab.get(w, 0)

    assert _fp(make(forward)) == _fp(make(dict(forward)))
    assert _fp(make(forward)) != _fp(make(backward))
    assert _fp(make(forward)) != _fp(make(changed))


def test_fingerprint_hook_and_registration(load_module) -> None:
    mod = load_module(
        """
        import threading

        class Model:
            def __init__(self, cfg):
                self.cfg = cfg
                self.lock = threading.Lock()  # unhashable; the hook decides
            def __fingerprint__(self):
                return self.cfg

        class Tok:
            def __init__(self, vocab):
                self.vocab = vocab
                self.lock = threading.Lock()
        """
    )
    assert _fp(mod.Model({"d": 4})) == _fp(mod.Model({"d": 4}))
    assert _fp(mod.Model({"d": 4})) != _fp(mod.Model({"d": 5}))
    from arrowmix._fingerprint.pickler import register_fingerprint

    register_fingerprint(mod.Tok, lambda tok: sorted(tok.vocab))
    assert _fp(mod.Tok({"a", "b"})) == _fp(mod.Tok({"b", "a"}))
    assert _fp(mod.Tok({"a"})) != _fp(mod.Tok({"b"}))


def test_hf_tokenizer_is_hashed_by_its_json() -> None:
    tokenizers = pytest.importorskip("tokenizers")

    def build(vocab: dict[str, int]):
        model = tokenizers.models.WordLevel(vocab, unk_token="[UNK]")
        tok = tokenizers.Tokenizer(model)
        tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
        return tok

    vocab = {"[UNK]": 0, "hello": 1, "world": 2}

    def make(tok: object):
        return lambda batch: tok.encode_batch(batch["text"])  # type: ignore[attr-defined]

    assert _fp(make(build(vocab))) == _fp(make(build(dict(reversed(vocab.items())))))
    assert _fp(make(build(vocab))) != _fp(make(build({**vocab, "there": 3})))


def test_transform_kwargs_version_and_defaults() -> None:
    def fn(batch):
        return batch

    parent = "0123456789abcdef"
    defaults = {"batched": False, "batch_size": 1000, "remove_columns": None}
    base = fingerprint_transform(parent, "arrowmix.map", 1, fn, {}, defaults)
    explicit = fingerprint_transform(
        parent, "arrowmix.map", 1, fn, {"batched": False, "batch_size": 1000}, defaults
    )
    assert base == explicit
    assert base != fingerprint_transform(
        parent, "arrowmix.map", 1, fn, {"batch_size": 10}, defaults
    )
    assert base != fingerprint_transform(parent, "arrowmix.map", 2, fn, {}, defaults)
    assert base != fingerprint_transform("fedcba9876543210", "arrowmix.map", 1, fn)
    assert base != fingerprint_transform(parent, "arrowmix.filter", 1, fn, {}, defaults)
    # kwargs in any order
    kw = {"remove_columns": ["a", "b"], "batch_size": 7}
    assert fingerprint_transform(parent, "m", 1, fn, kw) == fingerprint_transform(
        parent, "m", 1, fn, dict(reversed(kw.items()))
    )
    # a kwarg that holds a function is hashed by value too
    assert fingerprint_transform(
        parent, "m", 1, fn, {"key": lambda r: r["a"]}
    ) != fingerprint_transform(parent, "m", 1, fn, {"key": lambda r: r["b"]})


def test_result_is_json_friendly_hex() -> None:
    fp = fingerprint_transform("0123456789abcdef", "arrowmix.map", 1, _fp)
    assert json.loads(json.dumps(fp)) == fp
    assert len(fp) == 16
    assert int(fp, 16) >= 0


def test_lru_cached_helper_is_hashed_by_value(load_module) -> None:
    src = """
    import functools

    @functools.lru_cache(maxsize=None)
    def cached(x):
        return x + 1

    def fn(x):
        return cached(x)
    """
    a, b = load_module(src), load_module(src)
    c = load_module(src.replace("x + 1", "x + 2"))
    assert _fp(a.fn) == _fp(b.fn)
    assert _fp(a.fn) != _fp(c.fn)


def test_deeply_nested_value_is_reported_not_crashing() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(sys.getrecursionlimit()):
        child: list[object] = []
        node.append(child)
        node = child
    with pytest.warns(FingerprintWarning, match=r"closure\['deep'\]"):
        fingerprint_function(lambda: deep)


def test_editing_a_function_in_a_user_subpackage_invalidates(load_module, tmp_path: Path) -> None:
    pkg = f"pkg_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "mods" / pkg
    (root / "text").mkdir(parents=True)
    (root / "__init__.py").write_text("from . import text\n")
    (root / "text" / "__init__.py").write_text("def clean(s):\n    return s.strip()\n")
    main_src = f"""
    import {pkg}

    def fn(s):
        return {pkg}.text.clean(s)
    """

    def run() -> str:
        for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
            del sys.modules[name]
        return _fp(load_module(main_src).fn)

    try:
        before = run()
        assert run() == before
        (root / "text" / "__init__.py").write_text("def clean(s):\n    return s\n")
        assert run() != before
    finally:
        for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
            del sys.modules[name]


def test_ignored_kwargs_never_change_the_fingerprint() -> None:
    from arrowmix._fingerprint.transform import MAP_IGNORED_KWARGS

    def fn(batch):
        return batch

    parent = "0123456789abcdef"

    def fp(**kwargs: object) -> str:
        return fingerprint_transform(
            parent, "arrowmix.map", 1, fn, kwargs, {}, ignore=MAP_IGNORED_KWARGS
        )

    assert fp(num_proc=1, desc="a") == fp(num_proc=8, desc="tokenizing")
    assert fp(num_proc=1) == fp(load_from_cache_file=False)
    assert fp(num_proc=1) != fp(batched=True)


SCRIPT_SRC = """
import sys
from helpers_main import clean

LOWER = True

def tokenize(batch):
    text = clean(batch["text"])
    return {"ids": [len(w) for w in (text.lower() if LOWER else text).split()]}

if __name__ == "__main__":
    from arrowmix._fingerprint.transform import fingerprint_transform
    print(fingerprint_transform("0123456789abcdef", "arrowmix.map", 1, tokenize))
"""


def test_rerun_of_a_script_in_new_processes(tmp_path: Path) -> None:
    """The user story: rerun, move the script, edit an imported helper."""

    def run(script_dir: Path, helper_body: str, leading: int = 0) -> str:
        script_dir.mkdir(parents=True, exist_ok=True)
        (script_dir / "helpers_main.py").write_text(f"def clean(s):\n    {helper_body}\n")
        (script_dir / "train.py").write_text("\n" * leading + SCRIPT_SRC)
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
        out = subprocess.run(
            [sys.executable, str(script_dir / "train.py")],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        return out.stdout.strip()

    first = run(tmp_path / "a", "return s.strip()")
    assert len(first) == 16
    assert run(tmp_path / "b" / "moved", "return s.strip()", leading=9) == first
    assert run(tmp_path / "a", "return s.rstrip()") != first


def test_imports_inside_the_function_are_hashed(load_module) -> None:
    helper = f"inner_helpers_{uuid.uuid4().hex[:8]}"
    src = f"""
    def by_from(x):
        from {helper} import clean
        return clean(x)

    def by_module(x):
        import {helper}
        return {helper}.clean(x)

    def installed(x):
        import json
        return json.dumps(x)
    """

    def run(body: str) -> tuple[str, str, str]:
        sys.modules.pop(helper, None)
        load_module(f"def clean(x):\n    {body}\n", name=helper)
        mod = load_module(src)
        return _fp(mod.by_from), _fp(mod.by_module), _fp(mod.installed)

    first = run("return x.strip()")
    assert run("return x.strip()") == first
    edited = run("return x.lower()")
    assert edited[0] != first[0]
    assert edited[1] != first[1]
    assert edited[2] == first[2]


def test_user_module_passed_bare_is_hashed_by_source(load_module) -> None:
    name = f"bare_{uuid.uuid4().hex[:8]}"
    src = f"""
    import {name} as ns

    def fn(x):
        return getattr(ns, "clean")(x)
    """
    load_module("def clean(x):\n    return x\n", name=name)
    before = _fp(load_module(src).fn)
    load_module("def clean(x):\n    return x * 2\n", name=name)
    assert _fp(load_module(src).fn) != before
