"""The shipped fit results (model/data/fitted.json, model/basics/fitcache.py): equal to a
fresh fit, keyed on every input of the fit, and set aside for a fresh fit when one of
them changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dflash_plan.model.basics import data, fitcache
from dflash_plan.model.physics import fitting, pipeline

ROOT = Path(__file__).resolve().parents[2]
REFIT = "run `python scripts/refit.py` after editing measurements.toml, hardware.toml or a fit"


def _python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return out.stdout


def test_the_shipped_results_are_a_fresh_fit():
    fresh = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "refit.py"), "--stdout"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shipped = data.data_text(fitcache.FILE)
    assert json.loads(shipped) == json.loads(fresh), f"fitted.json is stale: {REFIT}"
    assert shipped == fresh, f"fitted.json is not as refit.py writes it: {REFIT}"


def test_a_start_reads_the_shipped_results():
    # The key matches this checkout: the constants are the file's, not refitted.
    shipped = fitcache.shipped()
    assert shipped is not None, f"fitted.json's key does not match its inputs: {REFIT}"
    assert shipped["values"]["NETWORK_EFFICIENCY"] == pipeline.NETWORK_EFFICIENCY
    assert fitting.value_range("DECODE_BANDWIDTH_EFFICIENCY") == tuple(
        shipped["ranges"]["DECODE_BANDWIDTH_EFFICIENCY"]
    )


def test_the_key_covers_every_module_a_fit_runs():
    # A fresh fit in a new process imports exactly the modules the key hashes.
    imported = _python(
        "import sys\n"
        "from dflash_plan.model.basics import fitcache\n"
        "fitcache.ignore_shipped()\n"
        "from dflash_plan.model.evidence import refit\n"
        "print('\\n'.join(m.__file__ for n, m in sys.modules.items()"
        " if n.startswith('dflash_plan.model')))\n"
    )
    files = {Path(f).resolve().relative_to(fitcache.MODEL_DIR).as_posix() for f in imported.split()}
    sources = {s for s in fitcache.SOURCES if not s.startswith("data/")}
    assert files == sources


def test_an_edited_source_sets_the_shipped_results_aside(monkeypatch):
    key = fitcache.inputs_key()
    assert key is not None
    for edited in ("data/measurements.toml", "data/hardware.toml", "physics/decode.py"):
        original = fitcache._source_bytes

        def read(path: str, edited: str = edited, original=original) -> bytes:
            return original(path) + (b"\n# edited\n" if path == edited else b"")

        monkeypatch.setattr(fitcache, "_source_bytes", read)
        assert fitcache.inputs_key() != key, edited
        assert fitcache.shipped.__wrapped__() is None, edited
        monkeypatch.undo()
    assert fitcache.shipped.__wrapped__() is not None


def test_edited_measurements_are_fitted_afresh():
    # The network efficiency is one case's rate over its NIC rate (142.25 of 200 GB/s):
    # with the case edited, a start fits it again rather than take the shipped value.
    out = _python(
        "from dflash_plan.model.basics import data, fitcache\n"
        "read = data.data_text\n"
        "def edited(name):\n"
        "    text = read(name)\n"
        "    if name != 'measurements.toml':\n"
        "        return text\n"
        "    return text.replace('value = 142250000000.0', 'value = 100000000000.0', 1)\n"
        "data.data_text = edited\n"
        "source = fitcache._source_bytes\n"
        "fitcache._source_bytes = lambda path: (\n"
        "    edited(path[5:]).encode() if path == 'data/measurements.toml' else source(path)\n"
        ")\n"
        "from dflash_plan.model.physics import pipeline\n"
        "print(fitcache.shipped() is None, repr(pipeline.NETWORK_EFFICIENCY))\n"
    )
    assert out.split() == ["True", repr(100e9 / 200e9)]


def test_the_wheel_ships_the_results():
    # Without the file in the wheel every start would fit afresh.
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = project["tool"]["setuptools"]["package-data"]["dflash_plan.model"]
    assert f"data/{fitcache.FILE}" in package_data
