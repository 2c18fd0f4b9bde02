"""The package's data files (model/data/): the built-in GPU catalog (a link to the
top-level hardware.toml in a checkout, a copy in the wheel), the default plan, the price
offers and the validation set's measurements, kept together in one folder."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


def data_text(name: str) -> str:
    """The text of one data file, by its file name (say "hardware.toml")."""
    return (DATA_DIR / name).read_text(encoding="utf-8")
