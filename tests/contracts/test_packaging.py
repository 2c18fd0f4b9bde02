"""Import hygiene and packaging: the model is pure, the CLI is headless, the wheel is whole."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The wheel is built once per worker that runs these tests (a module fixture).

# What a build needs of the checkout; setuptools writes build/ and the egg-info beside the
# sources, so the build runs on a copy in a temporary directory, never in the checkout.
SOURCES = ("pyproject.toml", "README.md", "hardware.toml", "dflash_plan", "model", "tui")


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_model_imports_no_ui_library():
    loaded = modules_after(
        "import dflash_plan.model.core.projection, dflash_plan.model.explore.compare, "
        "dflash_plan.model.inputs.plan"
    )
    assert "dflash_plan.model.core.projection" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "rich")}


def test_headless_cli_imports_no_textual():
    loaded = modules_after(
        "import contextlib, io\n"
        "from dflash_plan.tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['project', '--json']); main(['project']); main(['gpus']); main(['models'])"
    )
    assert "dflash_plan.tui.report" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "textual"}


def test_one_projection_loads_no_numpy():
    """numpy is for many splits at once (search, balance); one plan's figures, what
    `project --json` and each edit in the app compute, run on numbers: loading numpy
    alone costs more than a projection (the store's sizing once loaded it on every run)."""
    loaded = modules_after(
        "import contextlib, io\n"
        "from dflash_plan.tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['project', '--json', '--set', 'workload.transport=mooncake'])"
    )
    assert "dflash_plan.model.physics.store" in loaded
    assert "numpy" not in loaded


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name,
                source / name,
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return next(out.glob("dflash_plan-*.whl"))


def test_wheel_carries_the_catalog_and_the_default_plan(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "dflash_plan/model/data/hardware.toml" in names
    assert "dflash_plan/model/data/default_plan.toml" in names
    assert "dflash_plan/model/data/measurements.toml" in names
    assert "dflash_plan/tui/app.tcss" in names
    assert "dflash_plan/__main__.py" in names
    # Every subpackage of the source tree is in the wheel (setuptools lists them by hand).
    for folder in ("model", "tui"):
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.relative_to(ROOT / folder).as_posix()
            assert f"dflash_plan/{folder}/{relative}" in names, relative
    assert not any(n.startswith(("model/", "tui/")) for n in names)  # one namespace only
    text = zipfile.ZipFile(wheel).read("dflash_plan/model/data/hardware.toml").decode()
    assert text == (ROOT / "hardware.toml").read_text()


def test_installed_wheel_finds_its_catalog(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import dflash_plan.model.physics.fitting as h, dflash_plan.model.inputs.plan as p\n"
        "assert h.__file__.startswith(sys.argv[1]), h.__file__\n"
        "print(len(h.builtin_gpus()), p.default_plan().target.count)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(site)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["14", "3"]


def test_python_dash_m_runs_the_command():
    out = subprocess.run(
        [sys.executable, "-m", "dflash_plan", "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith("dflash-plan ")
