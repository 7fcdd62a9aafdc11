"""Fixtures for fingerprint tests: user modules written to temporary files."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

LoadModule = Callable[..., ModuleType]


@pytest.fixture
def load_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoadModule]:
    """Write ``source`` to ``<tmp>/<subdir>/<name>.py`` and import it as a user module.

    Every call gets a fresh module name unless ``name`` is given (to re-import an edited
    file under the same name, as after editing a helper between two runs). No bytecode
    is cached, so an edit within the same second is never hidden by a stale ``.pyc``.
    """
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    created: list[str] = []

    def load(
        source: str,
        *,
        name: str | None = None,
        subdir: str = "mods",
        leading_lines: int = 0,
    ) -> ModuleType:
        name = name or f"fpmod_{uuid.uuid4().hex[:12]}"
        folder = tmp_path / subdir
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.py"
        path.write_text("\n" * leading_lines + textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        created.append(name)
        spec.loader.exec_module(module)
        return module

    sys.path.insert(0, str(tmp_path / "mods"))
    try:
        yield load
    finally:
        sys.path.remove(str(tmp_path / "mods"))
        for name in created:
            sys.modules.pop(name, None)
