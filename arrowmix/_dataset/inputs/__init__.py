"""How rows come into a Dataset: the ``from_*`` constructors and what they call (private)."""
