"""Many plans at once: search, comparison against a baseline, sensitivity (split curve,
tornado) and balance. The top layer: nothing in the model imports it."""
