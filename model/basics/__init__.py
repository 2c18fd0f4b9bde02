"""What every layer of the model uses: errors, typed numbers, units, field bounds, TOML
and log files, the published recipe, where the data files are. Imports nothing above."""
