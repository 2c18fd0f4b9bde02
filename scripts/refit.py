"""Fit every constant afresh and write model/data/fitted.json, which a start reads instead
of fitting (model/basics/fitcache.py). Run after editing measurements.toml, hardware.toml
or a fit's code: tests/test_fitted_cache.py fails until the file matches a fresh fit.

    python scripts/refit.py            # write the file
    python scripts/refit.py --stdout   # print the fresh results instead
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# As the command does (tui/cli.py): no pydantic plugin scan.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def render() -> str:
    """The fresh results as the file holds them: floats at full precision (repr), keys in
    a fixed order."""
    from dflash_plan.model.basics import fitcache

    fitcache.ignore_shipped()  # before the physics is imported: it reads its constants then
    from dflash_plan.model.evidence.refit import fresh_results

    return json.dumps(fresh_results(), indent=1, allow_nan=False) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--stdout", action="store_true", help="print instead of writing")
    args = parser.parse_args()
    text = render()
    if args.stdout:
        sys.stdout.write(text)
        return
    from dflash_plan.model.basics import data

    path = Path(data.DATA_DIR) / "fitted.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
