"""The colocated topology at the command line: project's verdict line and JSON block,
search --topology, compare's topology column, and a bad --topology value."""

from __future__ import annotations

import json

import pytest
from dflash_plan.tui.cli import main

COLOCATED_B300 = [
    "--set",
    "target.gpu=b300",
    "--set",
    "drafter.gpu=b300",
    "--set",
    "target.count=5",
    "--set",
    "drafter.count=3",
    "--set",
    "workload.topology=colocated",
]
TOPOLOGY_KEYS = {
    "topology",
    "gpus",
    "colocated_tokens_per_s",
    "disaggregated_tokens_per_s",
    "disaggregated_split",
    "winner",
    "speedup",
    "colocated_fits",
}


def test_project_names_the_topology_and_the_winner_on_its_gpus(capsys):
    assert main(["project", "--json", *COLOCATED_B300]) == 0
    doc = json.loads(capsys.readouterr().out)
    block = doc["topology"]
    assert set(block) == TOPOLOGY_KEYS
    assert block["topology"] == "colocated" and block["gpus"] == 8
    assert doc["bottleneck"] == "time-shared"
    shares = doc["time_shares"]
    assert shares["target_forward"] + shares["drafter_step"] == pytest.approx(1.0)
    assert doc["tokens_per_s"] == pytest.approx(block["colocated_tokens_per_s"])
    rates = (block["colocated_tokens_per_s"], block["disaggregated_tokens_per_s"])
    assert block["speedup"] == pytest.approx(max(rates) / min(rates))
    assert main(["project", *COLOCATED_B300]) == 0
    text = " ".join(capsys.readouterr().out.split())
    targets, drafters = block["disaggregated_split"]
    assert block["winner"] == "disaggregated"
    assert (
        f"topology: disaggregated wins {block['speedup']:.2f}x: "
        f"{block['disaggregated_tokens_per_s'] / 1e3:,.1f} Ktok/s at {targets}+{drafters}, "
        f"colocated {block['colocated_tokens_per_s'] / 1e3:,.1f}"
    ) in text
    assert "bottleneck: time-shared (target forward" in text
    assert "of each GPU's time)" in text
    assert "one more colocated GPU:" in text


def test_the_builtin_plan_adds_only_the_verdict_line(capsys):
    assert main(["project"]) == 0
    lines = capsys.readouterr().out.splitlines()
    verdict = [i for i, line in enumerate(lines) if line.startswith("topology: ")]
    assert len(verdict) == 1
    # 4 RTX PRO 6000: the built-in 3 + 1 is the best split (14.8 Ktok/s, target-bound);
    # colocated, 4 x 0.78 / (1/4,933.3 + 1/14,799.9) = 11.6 Ktok/s; 14.8 / 11.6 = 1.28.
    # One line at 80 columns, and so in the results panel at 120.
    assert lines[verdict[0]] == (
        "topology: disaggregated wins 1.28x: 14.8 Ktok/s at 3+1, colocated 11.6"
    )


def test_search_both_topologies_names_the_winner_per_gpu_type(capsys):
    argv = ["search", "--topology", "both", "--gpus", "b200,b300", "--max-gpus", "8"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    wins = {w["gpu"]: w for w in doc["topology_wins"]}
    assert set(wins) == {"b200", "b300"}
    assert all(c["topology"] in ("disaggregated", "colocated") for c in doc["front"])
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, key in (("B200", "b200"), ("B300", "b300")):
        assert f"{name}: {wins[key]['winner']} wins (fastest plans: disaggregated " in text
    assert "topology" in text


def test_compare_shows_each_plans_topology(tmp_path, capsys):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    split = COLOCATED_B300[:-2]
    assert main(["new", str(a), *split]) == 0
    assert main(["new", str(b), *COLOCATED_B300]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].endswith(",topology")
    assert '"disaggregated (' in rows[1] and '"colocated (' in rows[2]
    # All-disaggregated comparisons read as before: no topology column.
    assert main(["compare", str(a), str(a), "--csv"]) == 0
    assert "topology" not in capsys.readouterr().out.splitlines()[0]


def test_a_bad_topology_value_is_one_line(capsys):
    assert main(["search", "--topology", "sideways"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--topology" in err and "'sideways'" in err
    assert "disaggregated" in err and "colocated" in err and "both" in err


def test_the_readmes_topology_search_is_what_search_prints(capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("COLUMNS", "200")
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    argv = ["search", "--topology", "both", "--gpus", "rtx-pro-6000,b200,b300"]
    argv += ["--max-gpus", "8", "--set", "workload.transport=mooncake"]
    argv += ["--set", "workload.receive=host"]
    assert main(argv) == 0
    wins = [line for line in capsys.readouterr().out.splitlines() if " wins (fastest" in line]
    assert len(wins) == 3
    for line in wins:
        assert f"  {line}\n" in readme, line


def test_a_colocated_search_offline_only_is_one_line(capsys):
    assert main(["search", "--topology", "colocated", "--mode", "offline"]) != 0
    err = capsys.readouterr().err.strip()
    assert err == (
        "dflash-plan: --topology colocated: a colocated plan runs online only: search "
        "--mode online (or --topology both)"
    )


def test_a_colocated_winner_is_said_first_with_the_split_it_beats():
    from types import SimpleNamespace

    from dflash_plan.model.core.topology import TopologyVerdict
    from dflash_plan.tui.report import topology_line

    # The recipe's 8 B300 (PR #869): 18.9 against 11.5 samples/s, 18.9 / 11.5 = 1.64.
    verdict = TopologyVerdict("colocated", 8, 18_900.0, 11_500.0, (5, 3), "colocated", 1.64)
    assert topology_line(SimpleNamespace(topology_verdict=verdict)) == (  # type: ignore[arg-type]
        "topology: colocated wins 1.64x: 18.9 Ktok/s, disaggregated 11.5 at 5+3"
    )
