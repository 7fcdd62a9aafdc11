"""Fingerprint records: what entered a transform's fingerprint, and which part changed.

A :class:`FingerprintRecord` is plain JSON (see ``docs/fingerprints.md`` for the
format), so the map engine can store it in the cache file's Arrow schema metadata and
``arrowmix fingerprint --explain`` can later diff the stored record against the current
one::

    {"format": 1, "fingerprint": "<16 hex>", "parent": "<16 hex>",
     "transform": "arrowmix.map", "version": "1", "kwargs": {"batched": "<16 hex>"},
     "function": "tokenize", "function_digest": "<16 hex>",
     "components": {"tokenize -> code": "<16 hex>", ...},
     "environment": {"python": "3.11", "dill": "0.4", "arrowmix": "0.1.0"},
     "unhashable": [{"path": "tokenize -> globals['lock']", "object": "...",
                     "reason": "..."}]}

Every digest is 16 hex characters; a record with ``unhashable`` entries has a random
fingerprint. :meth:`FingerprintRecord.diff` compares the flattened components
(``parent``, ``transform``, ``version``, ``kwargs['x']``, ``environment['python']``,
each function component path) and lists what changed, appeared or disappeared.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from arrowmix._fingerprint.canonical import random_fingerprint, same_value
from arrowmix._fingerprint.functions import FunctionHasher, callable_label
from arrowmix._fingerprint.hasher import Hasher
from arrowmix.exceptions import FingerprintError

__all__ = [
    "RECORD_FORMAT",
    "RECORD_METADATA_KEY",
    "Change",
    "FingerprintRecord",
    "build_record",
    "environment",
    "explain",
]

RECORD_FORMAT = 1
# Suggested Arrow schema metadata key for a cache file's record (value: ``to_json()``).
RECORD_METADATA_KEY = b"arrowmix.fingerprint_record"
_KEYS = frozenset(
    {
        "format", "fingerprint", "parent", "transform", "version", "kwargs", "function",
        "function_digest", "components", "environment", "unhashable",
    }
)  # fmt: skip


def environment() -> dict[str, str]:
    """Versions whose change may change digests: Python (bytecode), dill, arrowmix."""
    import dill

    from arrowmix._version import __version__

    dill_minor = ".".join(str(dill.__version__).split(".")[:2])
    return {
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "dill": dill_minor,
        "arrowmix": __version__,
    }


@dataclass(frozen=True)
class Change:
    """One differing component (``kind``: changed, added or removed)."""

    component: str
    kind: str
    before: str | None
    after: str | None

    def __str__(self) -> str:
        before, after = self.before or "-", self.after or "-"
        return f"{self.kind}: {self.component} ({before} -> {after})"


@dataclass(frozen=True)
class FingerprintRecord:
    """Everything that entered one fingerprint, as JSON-ready digests.

    Attributes:
        fingerprint: The resulting 16-hex fingerprint (random when ``unhashable``).
        parent: The parent dataset's fingerprint, None for a bare function record.
        transform: Transform name, e.g. ``"arrowmix.map"``.
        version: Transform version (bump it to invalidate caches on purpose).
        kwargs: Digest of each argument that differs from its default.
        function: Label of the user function (``tokenize``, ``partial(f)``), or None.
        function_digest: Digest of the function by value, or None.
        components: Digest of each part of the function, keyed by path.
        environment: Python / dill / arrowmix versions (``environment()``).
        unhashable: One ``{"path", "object", "reason"}`` entry per object that failed.
    """

    fingerprint: str
    parent: str | None
    transform: str
    version: str
    kwargs: dict[str, str] = field(default_factory=dict)
    function: str | None = None
    function_digest: str | None = None
    components: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    unhashable: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict with a ``format`` key; ``json.dumps`` works on it."""
        return {
            "format": RECORD_FORMAT,
            "fingerprint": self.fingerprint,
            "parent": self.parent,
            "transform": self.transform,
            "version": self.version,
            "kwargs": dict(sorted(self.kwargs.items())),
            "function": self.function,
            "function_digest": self.function_digest,
            "components": dict(sorted(self.components.items())),
            "environment": dict(sorted(self.environment.items())),
            "unhashable": [dict(p) for p in self.unhashable],
        }

    def to_json(self) -> str:
        """Compact, key-sorted JSON text."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FingerprintRecord:
        """Rebuild a record from :meth:`to_dict` output.

        Raises:
            FingerprintError: Unknown format or missing / unexpected keys.
        """
        if data.get("format") != RECORD_FORMAT:
            raise FingerprintError(
                f"`record` format must be {RECORD_FORMAT}, got {data.get('format')!r}; "
                "it was written by another arrowmix version."
            )
        missing, extra = _KEYS - set(data), set(data) - _KEYS
        if missing or extra:
            raise FingerprintError(
                f"`record` keys do not match format {RECORD_FORMAT}: "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}."
            )
        return cls(**{k: v for k, v in data.items() if k != "format"})

    @classmethod
    def from_json(cls, text: str | bytes) -> FingerprintRecord:
        """Rebuild a record from :meth:`to_json` output."""
        return cls.from_dict(json.loads(text))

    def flat(self) -> dict[str, str | None]:
        """Every component as ``{name: digest}``, the basis of :meth:`diff`."""
        out: dict[str, str | None] = {
            "parent": self.parent,
            "transform": self.transform,
            "version": self.version,
            "function": self.function_digest,
        }
        out.update({f"kwargs['{k}']": v for k, v in self.kwargs.items()})
        out.update({f"environment['{k}']": v for k, v in self.environment.items()})
        out.update(self.components)
        return out

    def diff(self, other: FingerprintRecord) -> list[Change]:
        """Components that differ from ``self`` (before) to ``other`` (after)."""
        a, b = self.flat(), other.flat()
        changes = []
        for name in sorted(set(a) | set(b)):
            if name not in b:
                changes.append(Change(name, "removed", a[name], None))
            elif name not in a:
                changes.append(Change(name, "added", None, b[name]))
            elif a[name] != b[name]:
                changes.append(Change(name, "changed", a[name], b[name]))
        return changes


def build_record(
    parent: str | None,
    transform: str,
    version: int | str,
    function: Callable[..., Any] | None,
    kwargs: Mapping[str, Any] | None,
    defaults: Mapping[str, Any] | None,
    ignore: Collection[str] = (),
    hasher: FunctionHasher | None = None,
) -> FingerprintRecord:
    """Hash a transform application part by part (no warning: see the caller).

    ``hasher`` (a fresh one by default) keeps what the run found, e.g. its ``hidden_inputs``.
    """
    hasher = hasher if hasher is not None else FunctionHasher()
    defaults = defaults or {}
    kept = {
        k: v
        for k, v in (kwargs or {}).items()
        if k not in ignore and not (k in defaults and same_value(v, defaults[k]))
    }
    kw_digests = {k: hasher.value_digest(v, f"kwargs['{k}']") for k, v in sorted(kept.items())}
    label = None if function is None else callable_label(function)
    fn_digest = None if function is None else hasher.callable_digest(function, str(label))
    env = environment()
    h = Hasher()
    # arrowmix's own version is recorded but not hashed: bump `version=` to invalidate.
    hashed_env = {k: v for k, v in env.items() if k != "arrowmix"}
    h.update(("arrowmix.transform", parent, f"{transform}@{version}", hashed_env))
    h.update(kw_digests)
    h.update(fn_digest)
    problems = [{"path": p.path, "object": p.obj, "reason": p.reason} for p in hasher.problems]
    return FingerprintRecord(
        fingerprint=random_fingerprint() if problems else h.hexdigest(),
        parent=parent,
        transform=transform,
        version=str(version),
        kwargs=kw_digests,
        function=label,
        function_digest=fn_digest,
        components=dict(hasher.components),
        environment=env,
        unhashable=problems,
    )


def _as_record(obj: Any) -> FingerprintRecord:
    if isinstance(obj, FingerprintRecord):
        return obj
    if isinstance(obj, (str, bytes)):
        return FingerprintRecord.from_json(obj)
    if isinstance(obj, Mapping):
        return FingerprintRecord.from_dict(obj)
    if callable(obj):
        return build_record(None, "function", 1, obj, None, None)
    raise TypeError(
        f"`explain` takes FingerprintRecords, their dict / JSON form or callables, "
        f"got {type(obj).__name__}."
    )


def explain(before: Any, after: Any) -> str:
    """Say which components changed between two records (or two functions).

    Args:
        before: A :class:`FingerprintRecord`, its ``to_dict()`` / ``to_json()`` form, or a
            callable (hashed as a bare function record).
        after: Same, for the current run.

    Returns:
        One line per changed component, or a line saying nothing changed.

    Example:
        >>> def make(n):
        ...     def add(x):
        ...         return x + n
        ...     return add
        >>> print(explain(make(1), make(1)))
        fingerprints are equal: nothing changed
        >>> lines = explain(make(1), make(2)).splitlines()
        >>> [line.split(" (")[0].strip() for line in lines[1:]]
        ['changed: function', "changed: make.<locals>.add -> closure['n']"]
    """
    a, b = _as_record(before), _as_record(after)
    lines: list[str] = []
    if a.unhashable or b.unhashable:
        lines.extend(
            f"unhashable ({side}): {p['path']}: {p['object']}: {p['reason']}"
            for side, rec in (("before", a), ("after", b))
            for p in rec.unhashable
        )
    if a.fingerprint == b.fingerprint:
        return "\n".join([*lines, "fingerprints are equal: nothing changed"])
    lines.insert(0, f"fingerprint {a.fingerprint} -> {b.fingerprint}")
    changes = a.diff(b)
    lines.extend(f"  {c}" for c in changes)
    if not changes:
        lines.append("  no component changed (a random fingerprint: see unhashable above)")
    return "\n".join(lines)
