"""HF ``datasets.iterable_dataset``'s public names (public facade).

``IterableDataset`` (also ``arrowmix.IterableDataset``), ``IterableColumn`` (what
``ids["col"]`` gives) and ``ExamplesIterable``, HF's generator source:
``IterableDataset(ExamplesIterable(generate_examples_fn, kwargs))``.
"""

from arrowmix._hf.examples_iterable import ExamplesIterable
from arrowmix._hf.iterable import IterableDataset
from arrowmix._hf.iterable_ops import IterableColumn

__all__ = ["ExamplesIterable", "IterableColumn", "IterableDataset"]
