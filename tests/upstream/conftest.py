"""The pinned upstream code the tests of this folder check launch scripts against, loaded
once per session (tests/upstream.py says where it comes from)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from upstream import (
    HS_CONNECTORS,
    SPECULATORS,
    backend_options,
    load_skypilot,
    load_specforge,
    prepare_data_options,
    train_config_options,
    typer_options,
    wheel,
)


@pytest.fixture(scope="session")
def cache(pytestconfig) -> Path:
    """Where the wheels' modules are extracted: the pytest cache (shared by the workers),
    or a temporary folder without it. The wheels themselves: upstream.wheel_cache()."""
    if getattr(pytestconfig, "cache", None) is not None:
        return Path(pytestconfig.cache.mkdir("upstream"))
    folder = Path(tempfile.gettempdir()) / "dflash-plan-upstream"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def specforge(cache):
    return load_specforge(cache)


@pytest.fixture(scope="session")
def skypilot(cache):
    return load_skypilot(cache)


@pytest.fixture(scope="session")
def speculators_options():
    spec, hs = wheel(SPECULATORS), wheel(HS_CONNECTORS)
    return {
        "train": {**train_config_options(spec), **backend_options(hs, "add_train_args")},
        "launch": backend_options(hs, "add_launch_args"),
        "prepare": prepare_data_options(spec),
        "generate": typer_options(
            spec, "speculators/cli/generate_offline_data.py", "generate_offline_data"
        ),
    }
