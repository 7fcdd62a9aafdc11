"""``python -m arrowmix``: the ``arrowmix`` command line."""

from __future__ import annotations

from arrowmix._cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
