"""The import graph: no cycle in model/ or tui/, lazy and type-checking imports included
(the layers contract in pyproject.toml orders model/'s subpackages; a cycle inside one
layer is what it cannot see)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# Built in a child process: grimp reads packages from folders, so model/ and tui/ are linked
# under dflash_plan/ as the package maps them (scripts/lint.py does the same), and this
# process already holds the installed dflash_plan.
GRAPH = """
import json, sys
import grimp
graph = grimp.build_graph("dflash_plan", cache_dir=None)
print(json.dumps({m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules)
                  for m in graph.modules}))
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> dict[str, list[str]]:
    tmp = tmp_path_factory.mktemp("graph")
    package = tmp / "dflash_plan"
    package.mkdir()
    for root_file in (ROOT / "dflash_plan").glob("*.py"):
        (package / root_file.name).symlink_to(root_file)
    for name in ("model", "tui"):
        (package / name).symlink_to(ROOT / name, target_is_directory=True)
    out = subprocess.run(
        [sys.executable, "-c", GRAPH],
        cwd=tmp,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp)},
    )
    edges: dict[str, list[str]] = json.loads(out.stdout)
    return edges


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def edges(m: str) -> list[str]:
        return graph[m]

    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(edges(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges(child))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle(graph):
    assert "dflash_plan.model.physics.memory" in graph["dflash_plan.model.core.stages"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one(graph):
    # search imports errors (through others); errors importing search closes a cycle
    graph = {**graph, "dflash_plan.model.basics.errors": ["dflash_plan.model.explore.search"]}
    assert any("dflash_plan.model.basics.errors" in c for c in cycles(graph))
