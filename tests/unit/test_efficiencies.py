"""GPU efficiencies fitted, not typed (issue 30): a kernel family's measured share of the
matmul ceiling, one vote per source group, and the measured families' share where no
case measures a family."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from dflash_plan.model.evidence.evidence import all_cases, load_cases, waiting_cases
from dflash_plan.model.physics import caserates, fitting
from dflash_plan.tui.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _family(arch: str, field: str) -> fitting.FamilyEfficiency:
    return next(f for f in fitting.FAMILY_EFFICIENCIES if f.arch == arch and f.field == field)


def test_no_efficiency_is_typed_in_the_catalog():
    doc = tomllib.loads((ROOT / "hardware.toml").read_text())
    for key, table in doc.items():
        assert "prefill_efficiency" not in table, key
        assert "training_efficiency" not in table, key


def test_a_family_share_is_the_mean_of_its_groups_each_reproducing_its_cases(catalog):
    # sm100's drafter share: SpecForge's DFlash2 recipe (B300 over H200) and TorchSpec's
    # B200 run, one vote each.
    family = _family("sm100", "training_efficiency")
    cases = fitting.cases_by_id(family.fitted_on)
    values = {n: fitting.value(n) for n in (*fitting.CEILING_NAMES, "SM90_TRAINING_SHARE")}
    per_group: dict[str, list[float]] = {}
    for case in cases.values():
        # The share a case implies is the one at which the model reproduces it.
        share = fitting.BY_NAME[family.name].implied(case, values)[0]
        gpus = dict(catalog.gpus)
        ceiling = fitting.ceiling_of(case["gpu"], values)
        gpus[case["gpu"]] = gpus[case["gpu"]].model_copy(
            update={"training_efficiency": share * ceiling}
        )
        assert caserates.rate(case, gpus) == pytest.approx(float(case["value"]), rel=1e-6)
        per_group.setdefault(case["source_group"], []).append(share)
    assert len(per_group) == 2
    expected = sum(sum(v) / len(v) for v in per_group.values()) / len(per_group)
    assert fitting.value(family.name) == pytest.approx(expected)
    # Every sm100 GPU takes the family's share of its own ceiling.
    for key in ("b200", "b300", "gb200"):
        gpu = catalog.gpus[key]
        assert gpu.training_efficiency == pytest.approx(expected * gpu.efficiency_ceiling)


def test_an_unmeasured_family_takes_the_measured_families_share(catalog):
    # No DFlash-family trainer was measured on Ada, sm120 or AMD: they take the pooled
    # share over every measured family's cases, times their own ceiling.
    pooled = fitting.value("TRAINING_SHARE")
    assert not fitting.efficiency_measured("cdna3", "training_efficiency")
    mi300x = catalog.gpus["mi300x"]
    assert mi300x.training_efficiency == pytest.approx(pooled * mi300x.efficiency_ceiling)
    assert "no cdna3 measurement" in fitting.efficiency_basis(mi300x, "training_efficiency")
    # A GPU without a measured ceiling (RTX PRO 6000) uses the mean measured ceiling.
    ceilings = [fitting.value(n) for n in fitting.CEILING_NAMES]
    assert catalog.gpus["rtx-pro-6000"].training_efficiency == pytest.approx(
        pooled * sum(ceilings) / len(ceilings)
    )


def test_the_blackwell_drafter_comes_from_blackwell_dflash_runs(catalog):
    # The B200 drafter is sm100's DFlash-family share, not a dense-LLM table: both its
    # cases are DFlash-family trainers, and it sits below what dense training reaches.
    family = _family("sm100", "training_efficiency")
    for case in fitting.cases_by_id(family.fitted_on).values():
        assert case["drafter"] in ("dflash", "dflash2"), case["id"]
    b200 = catalog.gpus["b200"]
    dense = fitting.value("DENSE_TRAINING_SHARE") * b200.efficiency_ceiling
    assert b200.training_efficiency < dense
    basis = fitting.efficiency_basis(b200, "training_efficiency")
    assert "specforge-dflash2-recipe" in basis and "torchspec-prs" in basis


def test_a_family_band_spans_its_disagreeing_sources():
    # The two Blackwell sources imply shares 1.5x apart: the band covers both.
    from dflash_plan.model.core.scenarios import efficiency_band

    low, high = fitting.value_range("SM100_TRAINING_SHARE")
    central = fitting.value("SM100_TRAINING_SHARE")
    band = efficiency_band("drafter", "sm100")
    assert band.low <= low / central < 1 < high / central <= band.high


def test_waiting_cases_are_recorded_and_not_predicted():
    waiting = waiting_cases()
    predicted = {c["id"] for c in load_cases()}
    every = {c["id"] for c in all_cases()}
    assert waiting and set(waiting) <= every and not set(waiting) & predicted
    assert predicted | set(waiting) == every
    # The recipe's DFlash2 trainer ranks are predicted (the drafter family is built); its
    # H200 pipeline rows wait for the untuned FP8 capture they ran, its colocated rows for
    # the topology (issue 32 builds it).
    assert "specforge-dflash2-qwen38-27b-h200-trainer-rank" in predicted
    assert "untuned FP8" in waiting["specforge-dflash2-qwen38-27b-h200-4srv-dp4-1node-pipeline"]
    assert (
        "topology colocated"
        in waiting["specforge-dflash2-qwen38-27b-b300-colocated-1node-pipeline"]
    )
    assert all(capability.strip() for capability in waiting.values())


def test_validate_lists_the_waiting_cases_and_the_dflash_family_tier(capsys):
    assert main(["validate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["waiting"] == waiting_cases()
    assert doc["summary"]["cross_validated"]["dflash-family"]["cases"] >= 30
    groups = {c["group"] for c in doc["cases"] if c["cross_validated"] and c["dflash_family"]}
    assert {"specforge", "specforge-dflash2-recipe", "torchspec-results"} <= groups


def test_gpus_marks_an_unmeasured_family(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "mi300x" in line)
    assert "~" in row
    row = next(line for line in out.splitlines() if " h200 " in line)
    assert "~" not in row
