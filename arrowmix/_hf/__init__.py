"""HF ``datasets`` compatibility: HF's objects, which the core calls directly (private).

``features`` reads and writes HF's features entry and encodes class labels, ``info`` keeps
``DatasetInfo`` texts, ``table`` mimics HF's table wrappers and ``Dataset(table)``,
``dataset_dict`` is ``DatasetDict``, ``saved`` is HF's ``save_to_disk`` directory, and
``compat`` is the one mixin of :class:`~arrowmix.Dataset` with HF's names (``_fingerprint``,
``data``, ``info``, ``cast``, ``save_to_disk``...). The package itself imports nothing, so that
a core module importing ``features`` loads only what it calls.
"""
