"""``arrowmix rows-seen FACTORY CHECKPOINT``: which rows the steps after a checkpoint saw.

FACTORY names the function that builds the training pipeline (``train.py:make_pipeline``
or ``package.module:make_pipeline``); it is called with ``provenance=True`` when it takes
that keyword, else with no argument, and must then build its sources with provenance on.
CHECKPOINT is a JSON file holding the pipeline's ``state_dict()`` (``--key`` picks it
inside a larger JSON document), or ``start`` for the pipeline's beginning. One JSON line per
step is printed: ``{"step": k, "sources": [...]}``, ``k`` counted from the checkpoint (1:
the first step after it). See ``arrowmix.testing.rows_seen`` and ``docs/provenance.md``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import runpy
from collections.abc import Callable
from typing import Any

from arrowmix._cli.common import CommandError

__all__ = ["add_parser", "load_factory", "run"]

EPILOG = """\
examples:
  arrowmix rows-seen train.py:make_pipeline ckpt/data_state.json --steps 4
  arrowmix rows-seen train.py:make_pipeline ckpt/trainer.json --key data --skip 41
  arrowmix rows-seen mypkg.data:pipeline start --steps 1

exit status: 0 printed, 1 the factory, the checkpoint or the pipeline failed (the message
says which), 2 usage error.
"""


def add_parser(subparsers: Any) -> None:
    """Register ``rows-seen``."""
    p = subparsers.add_parser(
        "rows-seen",
        help="the source rows of the steps after a stream checkpoint",
        description=(
            "Build the pipeline with provenance, restore the checkpoint and print the\n"
            "source references (source, index, chunk, row) of the next steps' rows."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("factory", metavar="FACTORY", help="file.py:function or module:function")
    p.add_argument(
        "checkpoint", metavar="CHECKPOINT", help="a JSON file of state_dict(), or 'start'"
    )
    p.add_argument("--key", help="dotted path of the state inside the JSON document")
    p.add_argument("--steps", type=_count, default=1, help="steps to report (default 1)")
    p.add_argument("--skip", type=_count, default=0, help="steps to pass over first")
    p.set_defaults(func=run)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: must be an int >= 0")
    return n


def load_factory(spec: str) -> Callable[[], Any]:
    """The pipeline builder ``spec`` names, called with ``provenance=True`` if it takes it."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise CommandError(f"FACTORY {spec!r} must be file.py:function or module:function.")
    if where.endswith(".py") or os.sep in where:
        if not os.path.isfile(where):
            raise CommandError(f"FACTORY file {where!r} does not exist.")
        names = runpy.run_path(where, run_name="__arrowmix_rows_seen__")
    else:
        try:
            names = vars(importlib.import_module(where))
        except ImportError as exc:
            raise CommandError(f"FACTORY module {where!r} cannot be imported: {exc}") from exc
    fn = names.get(name)
    if not callable(fn):
        raise CommandError(f"FACTORY {spec!r}: {where} has no function {name!r}.")
    try:
        takes = "provenance" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes = False
    return (lambda: fn(provenance=True)) if takes else fn


def _state(path: str, key: str | None) -> Any:
    if path == "start":
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except json.JSONDecodeError as exc:
        raise CommandError(f"CHECKPOINT {path!r} is not JSON: {exc}") from exc
    except OSError as exc:  # missing, a directory, unreadable
        raise CommandError(
            f"CHECKPOINT {path!r} cannot be read ({exc.strerror or exc}): give the JSON file "
            "of the pipeline's state_dict(), or 'start'."
        ) from exc
    for part in [] if key is None else key.split("."):
        if not isinstance(doc, dict) or part not in doc:
            raise CommandError(f"CHECKPOINT {path!r} has no key {key!r} (missing {part!r}).")
        doc = doc[part]
    return doc


def run(args: argparse.Namespace) -> int:
    """Print one JSON line per step: its number after the checkpoint and its sources."""
    from arrowmix._stream.rows_seen import rows_seen

    factory = load_factory(args.factory)
    state = _state(args.checkpoint, args.key)
    try:
        seen = rows_seen(factory, state, args.steps, skip=args.skip)
    except (ValueError, TypeError) as exc:
        raise CommandError(str(exc)) from exc
    for k, refs in enumerate(seen, start=args.skip + 1):
        print(json.dumps({"step": k, "sources": refs}))
    return 0
