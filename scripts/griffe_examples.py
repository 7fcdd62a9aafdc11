"""A griffe extension for the API reference (see ``extensions:`` in mkdocs.yml).

The docstrings follow the Google style with an ``Example:`` section; griffe renders only an
``Examples:`` section as code (``>>>`` lines highlighted, not read as Markdown). This renames
the section while the site is built; the docstrings themselves stay as written.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^([ \t]*)Example:[ \t]*$", re.M)


class ExampleSections(griffe.Extension):
    """Read ``Example:`` as ``Examples:`` in every docstring."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the section title before the docstring is parsed."""
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
