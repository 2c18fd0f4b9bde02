"""`launch --upstream`: every script's header names the pins of the line it installs and
their check date; the newer line (versions.py main-d23761c5) changes what it says it
changes (install lines, capture-patch target, run.yaml receive_buffers, image, projected
receive path) and nothing else; an unknown line is one line on stderr."""

from __future__ import annotations

import shlex

import pytest
import yaml
from dflash_plan.model.inputs import formats
from dflash_plan.model.launch import generate, versions
from dflash_plan.model.launch.escape import comment
from dflash_plan.model.launch.specforge import RECEIVE_BUFFERS
from dflash_plan.tui.cli import main
from launch_shapes import shapes
from support import edit

MAIN = "main-d23761c5"
B200 = {"gpu": "b200"}


def plans(baseline) -> dict:
    return {
        "builtin": baseline,
        "two-nodes": shapes(baseline)["two-nodes-shared"],
        "dflash2": edit(baseline, workload={"drafter": "dflash2"}),
        "colocated": edit(
            baseline,
            workload={"topology": "colocated"},
            target={**B200, "count": 4},
            drafter={**B200, "count": 4},
        ),
    }


def accepted(plan, fmt: str) -> bool:
    return formats.refusal(fmt, plan.workload.topology, plan.workload.drafter) is None


@pytest.mark.parametrize("line", list(versions.LINES))
@pytest.mark.parametrize("fmt", formats.names())
def test_every_script_header_names_its_pins_and_check_date(catalog, baseline, fmt, line):
    for plan in plans(baseline).values():
        if not accepted(plan, fmt):
            continue
        text = generate(plan, catalog, fmt, template="echo {run_id}", upstream=line).text
        named = [x for x in text.splitlines() if x.startswith("# upstream")]
        assert named == [comment(versions.header_line(fmt, versions.LINES[line], plan))]
        if fmt != "template":
            used = versions.effective_line(plan, versions.LINES[line], fmt)
            assert f"checked {used.checked.isoformat()}" in named[0]
            for pin in versions.pins_for(fmt, versions.LINES[line], plan):
                assert pin.version[:8] in named[0]


def test_the_pinned_line_is_the_default(catalog, baseline):
    for fmt in formats.names():
        default = generate(baseline, catalog, fmt, template="echo")
        assert default.text == generate(baseline, catalog, fmt, "echo", upstream="pinned").text


def run_yaml(script) -> dict:
    return yaml.safe_load(script.files["run.yaml"])


@pytest.mark.parametrize("receive", ["host", "pinned"])
def test_the_newer_line_writes_the_receive_mode_its_specforge_reads(catalog, baseline, receive):
    plan = edit(baseline, workload={"transport": "mooncake", "receive": receive})
    for fmt in ("specforge", "slurm", "kubernetes"):
        old, new = (generate(plan, catalog, fmt, upstream=u) for u in ("pinned", MAIN))
        assert "receive_buffers" not in run_yaml(old)["deployment"]["disaggregated"]
        disaggregated = run_yaml(new)["deployment"]["disaggregated"]
        assert disaggregated["receive_buffers"] == RECEIVE_BUFFERS[receive]
        # The launched run receives as the plan says: the header projects the plan's path.
        (projected,) = [x for x in new.text.splitlines() if x.startswith("# projection of")]
        assert f"workload.receive = {receive})" in projected
        assert "this launch does not run that path" not in new.text
        if receive != "host":  # 0.2.0 receives pageable whatever the plan says
            assert "this launch does not run that path" in old.text


def test_the_newer_line_installs_its_stack_and_patches_sglang_0_5_18(catalog, baseline):
    main_line = versions.LINES[MAIN]
    commit = main_line.pin("specforge").version
    for fmt in ("specforge", "slurm"):
        text = generate(baseline, catalog, fmt, upstream=MAIN).text
        (note,) = [x for x in text.splitlines() if "upstream line main-d23761c5" in x]
        assert f"pip install 'specforge @ git+{versions.SPECFORGE_REPO}@{commit}'" in note
        assert "sglang==0.5.18" in note and "mooncake-transfer-engine-cuda13==0.3.13.post1" in note
        assert "--target v0.5.18" in note
        assert "runs SpecForge" not in generate(baseline, catalog, fmt).text
    sky = yaml.safe_load_all(generate(baseline, catalog, "skypilot", upstream=MAIN).text)
    (setup,) = [doc["setup"] for doc in sky if doc and "setup" in doc]
    lines = [shlex.split(x) for x in setup.splitlines()]
    assert ["git", "-C", "$HOME/SpecForge", "checkout", "--quiet", commit] in lines
    assert [
        "bash",
        "$HOME/SpecForge/scripts/apply_sglang_spec_capture_patch.sh",
        "--target",
        "v0.5.18",
    ] in lines
    (install,) = [x for x in lines if x[:2] == ["pip", "install"]]
    assert install[2:] == [p.requirement for p in versions.pins_for("skypilot", main_line)[:2]] + [
        main_line.pin("mooncake").requirement
    ]
    k8s = generate(
        edit(baseline, launch={"volume_claim": "work"}), catalog, "kubernetes", upstream=MAIN
    ).text
    assert f"image: dflash-specforge:{commit[:8]}" in k8s
    assert "FROM lmsysorg/sglang:v0.5.18-cu130" in k8s


def test_a_dflash2_run_takes_main_on_the_newer_line(catalog, baseline):
    plan = edit(baseline, workload={"drafter": "dflash2"})
    pr = versions.PINNED.pin("specforge_pr").version[:8]
    assert pr in generate(plan, catalog, "specforge").text
    newer = generate(plan, catalog, "specforge", upstream=MAIN).text
    assert pr not in newer and "specforge@d23761c5" in newer


def test_a_colocated_run_keeps_the_pinned_stack_on_the_newer_line(catalog, baseline):
    plan = plans(baseline)["colocated"]
    for fmt in ("specforge", "slurm"):
        old = generate(plan, catalog, fmt).text.splitlines()
        new = generate(plan, catalog, fmt, upstream=MAIN).text.splitlines()
        changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
        ((was, now),) = changed
        assert now == was.replace(
            "upstream pinned,", f"upstream {MAIN} (this launch: the pinned stack),"
        )


def test_an_unknown_line_is_one_line_on_stderr(capsys):
    assert main(["launch", "--upstream", "0.3.0"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "dflash-plan: --upstream = 0.3.0: not an upstream line; the known ones are pinned, "
        "main-d23761c5"
    ]
