"""Shared fixtures: a clean, deterministic environment for every test."""

from __future__ import annotations

import pytest

from dflash_plan.model.hardware import builtin_gpus
from dflash_plan.model.plan import Plan, default_plan
from dflash_plan.model.projection import Catalog


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path_factory):
    """No user config, no NO_COLOR (it turns snapshots monochrome), a fixed terminal."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog(gpus=builtin_gpus())


@pytest.fixture(scope="session")
def baseline() -> Plan:
    return default_plan()

