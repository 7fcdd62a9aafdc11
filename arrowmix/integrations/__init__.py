"""Integrations with other frameworks, imported lazily (optional dependencies)."""
