"""Print the facts tests/data/wheels/facts.toml records about wheels too large for the
suite to download: the Requires-Dist lines of a wheel's core metadata (torch's CUDA), and
the NEEDED entries of shared objects in a wheel (the libcudart a Mooncake build links).

    python scripts/wheel_facts.py torch==2.11.0
    python scripts/wheel_facts.py mooncake-transfer-engine-cuda13==0.3.13.post1 \
        --needed mooncake/store.so mooncake/engine.so

Without --needed the core metadata comes from `pip install --dry-run --report` (no
download for a wheel the index gives PEP 658 metadata for, torch's 900 MB); with it the
wheel is downloaded (`pip download --no-deps`) and its objects read with `readelf -d`.
The wheel is the one pip picks for this interpreter and machine; the entry names it and
its SHA-256. Paste the output into the facts file."""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import tomli_w

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]


def requires_entry(spec: str, tmp: Path) -> dict[str, Any]:
    report = tmp / "report.json"
    subprocess.run(
        [
            *PIP,
            *("install", "--dry-run", "--no-deps", "--ignore-installed", "--only-binary=:all:"),
            *("--report", str(report), spec),
        ],
        check=True,
    )
    (item,) = json.loads(report.read_text())["install"]
    url = item["download_info"]["url"]
    return {
        "file": url.rsplit("/", 1)[1],
        "sha256": item["download_info"]["archive_info"]["hashes"]["sha256"],
        "requires_dist": item["metadata"].get("requires_dist", []),
    }


def needed_entry(spec: str, members: list[str], tmp: Path) -> dict[str, Any]:
    subprocess.run(
        [*PIP, "download", "--no-deps", "--only-binary=:all:", "--dest", str(tmp), spec],
        check=True,
    )
    (whl,) = tmp.glob("*.whl")
    needed = {}
    with zipfile.ZipFile(whl) as archive:
        for member in members:
            archive.extract(member, tmp)
            dynamic = subprocess.run(
                ["readelf", "-d", str(tmp / member)], check=True, capture_output=True, text=True
            ).stdout
            needed[member] = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dynamic)
    return {
        "file": whl.name,
        "sha256": hashlib.sha256(whl.read_bytes()).hexdigest(),
        "needed": needed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="NAME==VERSION")
    parser.add_argument("--needed", nargs="+", metavar="MEMBER", help="shared objects to read")
    args = parser.parse_args()
    name, version = args.spec.split("==")
    with tempfile.TemporaryDirectory() as tmp:
        facts = (
            needed_entry(args.spec, args.needed, Path(tmp))
            if args.needed
            else requires_entry(args.spec, Path(tmp))
        )
    entry = {"name": name, "version": version, "checked": datetime.date.today(), **facts}
    print(tomli_w.dumps({"wheel": [entry]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
