"""arrowmix: cached Arrow preprocessing and checkpointable training streams."""

from arrowmix._version import __version__

__all__ = ["__version__"]
