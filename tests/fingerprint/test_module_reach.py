"""A user module hashed as a whole covers the user modules it reaches.

Each case is a small project run as a script in a fresh interpreter, as a user reruns a
training script after editing a helper file: the fingerprints before and after an edit
are compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "pkg/__init__.py": "from .impl import clean\n",
    "pkg/impl.py": "def clean(x):\n    return x.strip()\n",
    "config.py": "MAX = 8\n",
    "helper.py": "from config import MAX\n\ndef limit(x):\n    return x[:MAX]\n",
    "lazy.py": "def shout(x):\n    from config import MAX\n    return x.upper()[:MAX]\n",
    "script.py": textwrap.dedent(
        """
        import importlib
        import json

        from arrowmix._fingerprint.functions import fingerprint_function

        def imports_package(x):
            import pkg
            return pkg.clean(x)

        def imports_helper(x):
            import helper
            return helper.limit(x)

        def imports_lazy_helper(x):
            import lazy
            return lazy.shout(x)

        def make(module):
            return lambda x: getattr(module, "clean")(x)

        def unrelated(x):
            import json
            return json.dumps(x)

        fns = {
            "imports_package": imports_package,
            "imports_helper": imports_helper,
            "imports_lazy_helper": imports_lazy_helper,
            "closure_module_getattr": make(importlib.import_module("pkg")),
            "unrelated": unrelated,
        }
        print(json.dumps({k: fingerprint_function(f) for k, f in fns.items()}))
        """
    ),
}


def _run(project: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(project), str(ROOT)]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run(
        [sys.executable, str(project / "script.py")],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """Fingerprints of: the project, a rerun, after editing impl.py, after editing config.py."""
    project = tmp_path_factory.mktemp("project")
    for rel, text in FILES.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    results = [_run(project), _run(project)]
    for name, old, new in [
        ("pkg/impl.py", "x.strip()", "x.lower()"),
        ("config.py", "MAX = 8", "MAX = 9"),
    ]:
        target = project / name
        target.write_text(target.read_text().replace(old, new))
        results.append(_run(project))
    return results


def test_rerun_of_an_unchanged_project_keeps_every_fingerprint(runs) -> None:
    assert runs[0] == runs[1]


def test_editing_a_submodule_reexported_by_a_package_invalidates(runs) -> None:
    before, after = runs[1], runs[2]
    assert before["imports_package"] != after["imports_package"]
    assert before["closure_module_getattr"] != after["closure_module_getattr"]
    assert before["unrelated"] == after["unrelated"]
    assert before["imports_helper"] == after["imports_helper"]


def test_editing_a_constant_a_helper_imports_invalidates(runs) -> None:
    before, after = runs[2], runs[3]
    assert before["imports_helper"] != after["imports_helper"]
    assert before["imports_lazy_helper"] != after["imports_lazy_helper"]
    assert before["imports_package"] == after["imports_package"]
    assert before["unrelated"] == after["unrelated"]


def test_a_submodule_imported_later_by_other_code_leaves_the_package_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing a package's submodule binds it on the package: that binding, made whenever
    some code (another thread, a later call) first imports it, must not change the digest of
    the package, or one function hashes two ways in one process."""
    from arrowmix._fingerprint.modules import module_source_digest

    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .core import f\n")
    (pkg / "core.py").write_text("def f(x):\n    return x\n")
    (pkg / "extra.py").write_text("def g(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("lazypkg")
    before = module_source_digest(module)
    importlib.import_module("lazypkg.extra")  # someone else's lazy import
    try:
        assert module_source_digest(module) == before
    finally:
        for name in ("lazypkg", "lazypkg.core", "lazypkg.extra"):
            sys.modules.pop(name, None)
