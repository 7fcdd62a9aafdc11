"""The map engine of ``Dataset.map`` and ``Dataset.filter`` (see ``options`` for the entry)."""
