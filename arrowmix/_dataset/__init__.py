"""The Dataset layer: memory-mapped Arrow tables, indices mappings, formats and transforms."""
