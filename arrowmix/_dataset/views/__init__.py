"""Views and transforms of a Dataset that build new states without a map (private)."""
