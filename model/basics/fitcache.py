"""The fitted constants as shipped: data/fitted.json, written by scripts/refit.py from a
fresh fit (model/evidence/refit.py), so that a start reads them instead of fitting them
again (the decode fit alone is about 65 ms).

The file is used only while the inputs it was computed from are unchanged: it carries a
content hash of the measurements, the GPU catalog and the source of every module the fit
runs (`SOURCES`); where any of them differs (a user edited hardware.toml, a developer a
fit), the readers fit afresh as before. tests/test_fitted_cache.py holds the file equal to
a fresh fit and `SOURCES` equal to what a fit imports.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from . import data

FILE = "fitted.json"
MODEL_DIR = Path(__file__).resolve().parent.parent
# The package files a fit reads or runs, relative to the model package: its two data files
# and the modules of its import closure (the refit's own included).
SOURCES = (
    "data/measurements.toml",
    "data/hardware.toml",
    "__init__.py",
    "basics/__init__.py",
    "basics/arrays.py",
    "basics/data.py",
    "basics/errors.py",
    "basics/fitcache.py",
    "basics/numbers.py",
    "basics/tomlfile.py",
    "basics/units.py",
    "basics/validation.py",
    "evidence/__init__.py",
    "evidence/evidence.py",
    "evidence/refit.py",
    "inputs/__init__.py",
    "inputs/catalog.py",
    "inputs/hardware.py",
    "inputs/targets.py",
    "physics/__init__.py",
    "physics/acceptance.py",
    "physics/caserates.py",
    "physics/colocated.py",
    "physics/conditions.py",
    "physics/decode.py",
    "physics/families.py",
    "physics/fitting.py",
    "physics/footprint.py",
    "physics/memory.py",
    "physics/pipeline.py",
    "physics/roofline.py",
    "physics/work.py",
)

_ignored: list[bool] = [False]


def _source_bytes(path: str) -> bytes:
    # Data files from the data folder (in a checkout hardware.toml is a link out of it);
    # bytes, not text: decoding the measurements would double the cost of the key.
    if path.startswith("data/"):
        return (Path(data.DATA_DIR) / path.removeprefix("data/")).read_bytes()
    return (MODEL_DIR / path).read_bytes()


def inputs_key() -> str | None:
    """The content hash of every source of the fit; None when one cannot be read (an
    install without sources: the fit runs afresh)."""
    digest = hashlib.sha256()
    try:
        for path in SOURCES:
            body = _source_bytes(path)
            digest.update(f"{path}\0{len(body)}\0".encode())
            digest.update(body)
    except OSError:
        return None
    return digest.hexdigest()


@functools.cache
def shipped() -> dict[str, Any] | None:
    """The shipped fit results when they were computed from the current inputs, else None
    (the callers fit afresh)."""
    if _ignored[0]:
        return None
    try:
        doc: dict[str, Any] = json.loads(data.data_text(FILE))
    except (OSError, ValueError):
        return None
    key = inputs_key()
    return doc if key is not None and doc.get("key") == key else None


def ignore_shipped() -> None:
    """Fit afresh in this process (scripts/refit.py): call before the model's physics is
    imported, which reads its constants at import."""
    _ignored[0] = True
    shipped.cache_clear()
