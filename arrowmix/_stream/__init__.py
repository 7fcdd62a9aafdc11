"""Private stream layer: checkpointable iterators (public API: arrowmix.stream)."""
