"""Fetch the pinned upstream wheels the tests check the launch scripts against (the pins and
their SHA-256 digests: tests/upstream.py) into the wheel cache, outside the clone: the
user's cache folder, or $DFLASH_PLAN_WHEEL_CACHE. A wheel already there and matching its
digest is kept without asking the package index, so after one run the tests, and this
command, need no network. Nothing fetched is committed.

    .venv/bin/python scripts/fetch_upstream.py

The README's test command runs it before pytest. Exit 1, with one line, when a wheel
cannot be downloaded or does not match its digest.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from upstream import PINS, sha256, wheel_cache, wheel_name  # noqa: E402


def fetch(pin: tuple[str, str, str], cache: Path) -> str:
    """Make sure the pinned wheel is in the cache; what was done, in a few words."""
    name, version, digest = pin
    target = cache / wheel_name(pin)
    if target.is_file() and sha256(target) == digest:
        return "present"
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "-q",
                "--dest",
                tmp,
                f"{name}=={version}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        got = Path(tmp) / wheel_name(pin)
        if result.returncode or not got.is_file():
            last = (result.stderr.strip().splitlines() or ["no wheel written"])[-1]
            raise SystemExit(f"fetch_upstream: cannot download {name}=={version}: {last}")
        if sha256(got) != digest:
            raise SystemExit(
                f"fetch_upstream: {name}=={version} from the index has SHA-256 "
                f"{sha256(got)}, pinned {digest} (tests/upstream.py)"
            )
        got.replace(target)  # whole or not at all: a test never reads half a wheel
    return "downloaded"


def main() -> None:
    cache = wheel_cache()
    cache.mkdir(parents=True, exist_ok=True)
    done = {f"{name}=={version}": fetch((name, version, d), cache) for name, version, d in PINS}
    fetched = [w for w, how in done.items() if how == "downloaded"]
    print(
        f"upstream wheels in {cache}: {len(done)} pinned, "
        + (f"downloaded {', '.join(fetched)}" if fetched else "all present")
    )


if __name__ == "__main__":
    main()
