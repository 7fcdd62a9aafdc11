"""Fingerprints: a small xxhash hasher, canonical values and rolling transform identities."""
