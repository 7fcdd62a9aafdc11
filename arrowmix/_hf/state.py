"""The HF layer's one way to a dataset's state: read it, and (for HF's setters) replace it.

HF's ``ds._fingerprint = ...`` and ``with ds.formatted_as(...):`` change the object they are
called on, so this layer replaces the state of its host; everything else only reads it. Both
go through the core's state owner, ``arrowmix._dataset.state``.
"""

from __future__ import annotations

from arrowmix._dataset.state import set_state, state_of

__all__ = ["set_state", "state_of"]
