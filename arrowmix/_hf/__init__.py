"""HF ``datasets`` compatibility: one layer over the core (private).

It adapts HF's names, internals and ``Features`` onto arrowmix's core: ``compat`` is the
mixin of :class:`~arrowmix.Dataset` with HF's names (``_fingerprint``, ``data``, ``info``,
``cast``, ``save_to_disk``...), ``features`` reads and writes HF's features entry and encodes
class labels, ``info`` keeps ``DatasetInfo`` texts, ``table`` mimics HF's table wrappers and
``Dataset(table)``, ``saved`` is HF's ``save_to_disk`` directory. The core never imports this
package (only ``Dataset`` inherits ``compat.HFCompat``); what it needs to ask, it asks
through :mod:`arrowmix._hooks`, where importing this package registers :class:`HFAdapter`.
"""

from arrowmix._hf.adapter import HFAdapter
from arrowmix._hooks import register

__all__ = ["HFAdapter"]

register(HFAdapter())
