"""The import rules between arrowmix's rooms (docs/architecture.md), checked on the source.

Every ``import arrowmix...`` statement of a module is read from its syntax tree, lazy ones
inside functions too; imports under ``if TYPE_CHECKING:`` are types only and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import arrowmix

ROOT = Path(arrowmix.__file__).parent


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, types: bool = False) -> list[str]:
    """The arrowmix modules ``path`` imports at run time (and for type checking: ``types``)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node) and not types:
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return [m for m in found if m == "arrowmix" or m.startswith("arrowmix.")]


def _room_imports(room: str) -> dict[str, list[str]]:
    base = ROOT / room
    files = sorted(base.rglob("*.py")) if base.is_dir() else [ROOT / f"{room}.py"]
    return {str(f.relative_to(ROOT)): _imports(f) for f in files}


def _outside(imports: dict[str, list[str]], allowed: tuple[str, ...]) -> list[str]:
    return [
        f"{module} imports {name}"
        for module, names in imports.items()
        for name in names
        if not any(name == a or name.startswith(a + ".") for a in allowed)
    ]


#: Leaf modules every room may use: they import nothing of arrowmix's (checked below).
LEAVES = ("arrowmix.exceptions", "arrowmix._warn")


def test_the_leaves_import_nothing_of_arrowmix() -> None:
    assert _room_imports("exceptions") == {"exceptions.py": []}
    assert _room_imports("_warn") == {"_warn.py": []}


def test_storage_is_the_ground_floor() -> None:
    allowed = (
        "arrowmix._storage",
        *LEAVES,
        "arrowmix._validate",
        "arrowmix._version",
    )
    assert _outside(_room_imports("_storage"), allowed) == []


def test_the_remote_chunk_cache_imports_only_storage() -> None:
    allowed = ("arrowmix._remote", "arrowmix._storage", *LEAVES)
    assert _outside(_room_imports("_remote"), allowed) == []


def test_the_cache_layer_imports_only_storage_below_it() -> None:
    allowed = ("arrowmix._cache", "arrowmix._storage", *LEAVES)
    assert _outside(_room_imports("_cache"), allowed) == []


#: HF's objects the core calls directly: the features entry, its texts, HF's table wrappers,
#: ``DatasetDict``, and the one mixin of ``Dataset`` with HF's names.
HF_OBJECTS = ("features", "info", "table", "dataset_dict", "compat")


def _hf_imports(path: Path) -> list[str]:
    return [m for m in _imports(path) if m == "arrowmix._hf" or m.startswith("arrowmix._hf.")]


def test_the_hf_package_imports_nothing() -> None:
    # Importing arrowmix._hf.features must not load the rest of the layer.
    assert _room_imports("_hf/__init__") == {"_hf/__init__.py": []}


def test_hf_features_sit_below_the_map_engine() -> None:
    # The map engine checks class labels and casts to features on every batch it writes.
    allowed = ("arrowmix._storage", *LEAVES)
    assert _outside(_room_imports("_hf/features"), allowed) == []


#: Above the core: the HF layer, the CLI and the facades that re-export their public names.
EDGES = ("_hf", "_cli", "__init__.py", "iterable_dataset.py")


def test_the_core_calls_only_hfs_objects() -> None:
    # The CLI is an edge above every layer: `arrowmix verify` checks save_to_disk directories.
    allowed = tuple(f"arrowmix._hf.{name}" for name in HF_OBJECTS)
    reaches = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted(ROOT.rglob("*.py"))
        # the facades re-export the HF layer's public names
        if path.relative_to(ROOT).parts[0]
        not in ("_hf", "_cli", "__init__.py", "iterable_dataset.py")
        for name in _hf_imports(path)
        if name not in allowed
    ]
    assert reaches == []
    mixin_hosts = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if "arrowmix._hf.compat" in _hf_imports(path)
    )
    assert mixin_hosts == ["_dataset/dataset.py"]


def test_the_stream_layer_never_imports_the_dataset_layer() -> None:
    # A stream reads tables through its sources; Dataset.to_stream builds them from above.
    reaches = [
        f"{module} imports {name}"
        for module, names in _room_imports("_stream").items()
        for name in names
        if name == "arrowmix._dataset" or name.startswith("arrowmix._dataset.")
    ]
    assert reaches == []


def test_fingerprints_import_only_the_leaves() -> None:
    allowed = ("arrowmix._fingerprint", "arrowmix._version", *LEAVES)
    assert _outside(_room_imports("_fingerprint"), allowed) == []


#: The map engine's modules from the top (``Dataset.map``'s entry) down: each imports only
#: modules after it, lazily or for type checking too, so a change travels one way.
MAP_ENGINE_ORDER = (
    "options",
    "plan",
    "execute",
    "local",
    "pieces",
    "jobs",
    "compute",
    "output",
    "conform",
    "result",
    "deferred",
    "call",
    "residency",
    "arrays",
    "optimized",
    "worker",
)


def test_the_map_engine_imports_only_downward() -> None:
    base = ROOT / "_dataset" / "mapping"
    assert sorted(p.stem for p in base.glob("*.py") if p.stem != "__init__") == sorted(
        MAP_ENGINE_ORDER
    ), "a new module of the map engine takes its place in MAP_ENGINE_ORDER"
    prefix = "arrowmix._dataset.mapping."
    upward = [
        f"{module} imports {name}"
        for rank, module in enumerate(MAP_ENGINE_ORDER)
        for name in _imports(base / f"{module}.py", types=True)
        if name.startswith(prefix) and MAP_ENGINE_ORDER.index(name[len(prefix) :]) <= rank
    ]
    assert upward == []
