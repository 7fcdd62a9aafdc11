"""Fingerprints: hasher, deterministic pickler, function hashing, transform records."""
