"""Shared fixtures: a clean, deterministic environment for every test."""

from __future__ import annotations

import datetime as dt
import gc
import inspect
import os
import sys
from pathlib import Path

import pytest
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.offers import builtin_offers
from dflash_plan.model.inputs.plan import Plan, default_plan
from dflash_plan.model.physics.fitting import builtin_gpus

# Tests by kind, a folder each (markers in pyproject.toml). The test modules import each
# other by module name (test_config_json's QWEN3_8B_CONFIG), as pytest imports them: every
# kind's folder is on the path, not only the folder of the module being collected.
KINDS = ("unit", "app", "snapshots", "contracts", "upstream")
sys.path[:0] = [str(Path(__file__).parent / kind) for kind in KINDS]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path_factory):
    """No user config, no recovery files of the user's, no NO_COLOR (it turns snapshots
    monochrome), a fixed terminal."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("DFLASH_PLAN_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("COLUMNS", "120")


TODAY = dt.date(2026, 11, 30)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    # Offers as shipped, judged on a fixed day so that price-age warnings are reproducible.
    return Catalog(gpus=builtin_gpus(), offers=builtin_offers(), today=TODAY)


@pytest.fixture(scope="session")
def baseline() -> Plan:
    return default_plan()


# The modules whose tests each run an app for seconds: handed out to the workers first, so
# that the many short tests fill the end of the run instead of one worker idling while
# the other finishes a snapshot sweep.
LONG_FIRST = (
    "test_snapshots",
    "test_snapshots_search",
    "test_app",
    "test_search_app",
    "test_properties",
    "test_escaping",
)


def pytest_configure(config):
    """Byte-compile the package once, before the workers start, as a wheel install does:
    with PYTHONDONTWRITEBYTECODE set (CI's machines set it) every worker and every command
    a test starts would compile it from source again (about 0.2 s of CPU each); the test
    modules likewise. Every process ends its run with fewer idle collections."""
    _collect_until_clean()
    if hasattr(config, "workerinput"):
        return
    import compileall

    import dflash_plan.model
    import dflash_plan.tui

    for package in (dflash_plan.model, dflash_plan.tui):
        compileall.compile_dir(Path(str(package.__file__)).parent, quiet=1)
    _cache_rewritten_tests(config, Path(__file__).parent)


def _collect_until_clean() -> None:
    """pytest ends each process with 5 full collections, to reach the garbage that
    finalizers make (their unraisable exceptions are reported). A collection that finds
    nothing unreachable runs no finalizer, so the ones after it would find nothing either;
    stopping there saves about 1 s of CPU a worker (its heap is large: Textual's caches)."""
    from _pytest import unraisableexception

    def collect(iterations: int) -> None:
        for _ in range(iterations):
            if gc.collect() == 0:
                return

    unraisableexception.gc_collect_harder = collect


def _cache_rewritten_tests(config, tests) -> None:
    """Write the test modules' assert-rewritten bytecode, as pytest does when bytecode may
    be written: with PYTHONDONTWRITEBYTECODE every worker rewrites every module again
    (about 1.2 s of CPU a worker). pytest reads these files either way, checked against
    the source's mtime and size."""
    from _pytest.assertion import rewrite

    if config.getoption("assertmode") != "rewrite":
        return
    state = config.stash[rewrite.assertstate_key]
    for source in [tests / "conftest.py", *sorted(tests.glob("*/test_*.py"))]:
        cache = rewrite.get_cache_dir(source)
        pyc = cache / (source.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(source, pyc) is None and rewrite.try_makedirs(cache):
            stat, code = rewrite._rewrite_test(source, config)
            rewrite._write_pyc(state, code, stat, pyc)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker more than the cores. The app tests spend about half their wall
    time in Pilot's waits for the app to go idle (a 20 ms window with no CPU, at least
    once per pause and keystroke), which an extra worker fills (2 cores: 37 s -> 33 s)."""
    if config.option.numprocesses != "auto" or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own answer: the variable's value, or the logical cores
    from xdist.plugin import pytest_xdist_auto_num_workers as usable_cores

    return usable_cores(config) + 1


def pytest_collection_modifyitems(items):
    for item in items:
        kind = item.path.parent.name
        if inspect.iscoroutinefunction(getattr(item, "function", None)):
            kind = "app"  # a Pilot test, whatever folder it sits in
        if kind in KINDS:
            item.add_marker(kind)
        if kind == "snapshots":
            item.add_marker("app")  # each runs the app: not in the fast loop (-m "not app")

    def rank(item):
        name = item.module.__name__ if item.module else ""
        return LONG_FIRST.index(name) if name in LONG_FIRST else len(LONG_FIRST)

    items.sort(key=rank)
