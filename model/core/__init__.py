"""The model of one plan: resolved against the catalog, its rates with their readings
and ranges, economics, diagnostics, and the projection that gathers them."""
