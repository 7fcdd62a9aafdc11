"""The arrowmix version, single source for packaging and cache metadata."""

__version__ = "0.1.0"
