"""The headless commands' output: JSON contract and human tables."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.core import figures as F
from dflash_plan.tui.cli import build_parser, import_app, main
from support import CONTRACT, ROLE_CONTRACT, edit


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_project_json_default(capsys):
    doc = run_json(capsys, ["project", "--json"])
    assert doc["ktok_per_s"] == pytest.approx(14.8, rel=0.005)
    assert doc["bottleneck"] == "target"
    assert doc["target"]["source"] == "measured"


# 4x B200 (the built-in plan's 3 + 1 on B200) against the measured run.
FOUR_B200_VS_MEASURED = [
    "project",
    "--json",
    "--set",
    "target.gpu=b200",
    "--set",
    "drafter.gpu=b200",
    "--baseline",
]


def test_project_json_against_the_baseline(capsys, catalog, baseline):
    from dflash_plan.model.core.projection import project
    from dflash_plan.model.core.scenarios import efficiency_band
    from dflash_plan.model.physics.roofline import drafter_roofline

    doc = run_json(capsys, FOUR_B200_VS_MEASURED)
    # The single B200 drafter binds at every end (the targets' slowest reading, the
    # measured shortfall carried over, is above the drafter's fastest). The low end: that
    # drafter at its roofline x B200's fitted training efficiency (sm100, ~23 %: 54.2 K)
    # x the low end of sm100's drafter band (~0.82), against the measured 14,799.9 tok/s:
    # about 3.0x.
    assert doc["bottleneck"] == "drafter"
    assert (
        doc["target"]["capacity_tokens_per_s_range"][0]
        > doc["drafter"]["capacity_tokens_per_s_range"][1]
    )
    b200 = catalog.gpus["b200"]
    work = project(edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"}), catalog)
    roof = drafter_roofline(work.drafter_work, b200, baseline.workload.avg_sample_tokens)
    drafter = roof.tokens_per_s * b200.training_efficiency
    low = drafter * efficiency_band("drafter", "sm100").low / 14_799.9
    versus = doc["versus_baseline"]
    assert versus["speedup"] == pytest.approx(drafter / 14_799.9, rel=1e-6)
    assert versus["speedup_range"][0] == pytest.approx(low, rel=1e-6)
    assert versus["speedup_range"][0] < versus["speedup"] < versus["speedup_range"][1]
    # Same four GPUs at the plan's B200 price (cost.ratio.b200 = 3.4 RTX PRO 6000s): the
    # cost ratio is price / speedup, dearest at the slow end (3.4 / 3.0 = 1.13: at the low
    # end of its drafter band the B200 run costs more than the measured one).
    price = baseline.cost.ratio["b200"]
    assert versus["cost_ratio"] == pytest.approx(price / versus["speedup"], rel=1e-6)
    assert versus["cost_ratio_range"][1] == pytest.approx(price / low, rel=1e-6)
    # Same four GPUs: the break-even price ratio is the speedup.
    assert versus["break_even_price_ratio"]["target"] == pytest.approx(versus["speedup"])
    assert doc["baseline"]["days"] == pytest.approx(8.8, rel=0.01)


def test_project_human_output_names_the_figures(capsys):
    assert main(["project", "--set", "target.count=7"]) == 0
    out = capsys.readouterr().out
    assert "Ktok/s" in out and "days" in out and "bottleneck" in out
    assert "drafter" in out


def test_gpus_and_models(capsys):
    assert "b300" in run_json(capsys, ["gpus", "--json"])
    assert run_json(capsys, ["models", "--json"])["qwen3-8b"]["hidden"] == 4096
    assert main(["gpus"]) == 0 and "RTX PRO 6000" in capsys.readouterr().out
    assert main(["models"]) == 0 and "gpt-oss-120b" in capsys.readouterr().out


def test_user_config_hardware_file_is_read(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    (tmp_path / "hardware.toml").write_text("[rtx-pro-6000]\nusd_per_gpu_hour = 9.0\n")
    doc = run_json(capsys, ["gpus", "--json"])
    assert doc["rtx-pro-6000"]["usd_per_gpu_hour"] == 9.0


def test_new_writes_the_builtin_plan(tmp_path, capsys):
    path = tmp_path / "mine.toml"
    assert main(["new", str(path)]) == 0
    capsys.readouterr()
    doc = run_json(capsys, ["project", str(path), "--json"])
    assert doc["ktok_per_s"] == pytest.approx(14.8, rel=0.005)
    # Comments name only what the user has: no reference notes of ours.
    assert "shared reference" not in path.read_text() and ".md" not in path.read_text()


# -- issue 10: the command line -----------------------------------------------------------

# The JSON contract (README): these names are extended, never renamed.


def test_project_json_contract(capsys):
    doc = run_json(capsys, ["project", "--json"])
    assert set(doc) >= CONTRACT
    for role in ("target", "drafter"):
        assert set(doc[role]) >= ROLE_CONTRACT


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("dflash-plan ")


def test_check_exit_code_for_a_plan_that_does_not_fit(tmp_path, capsys, baseline):
    path = tmp_path / "big.toml"
    path.write_text(
        edit(
            baseline,
            workload={"target_model": "llama-3.3-70b-instruct"},
            target={"gpu": "rtx-4090", "count": 1},
        ).to_toml()
    )
    assert main(["check", str(path)]) == 3
    out = capsys.readouterr().out
    assert "does NOT fit" in out and "ok" not in out and "target does not fit: needs" in out


def test_check_exit_code_for_an_offline_plan_over_its_storage(tmp_path, capsys, baseline):
    """Offline data over storage.tb does not fit, as memory that does not: exit 3 with the
    reason (it was "ok", exit 0). The built-in workload captures 76.8 TB (1.875 G tokens x
    40,976 bytes per token, tests/unit/test_offline.py); 50 TB does not hold it."""
    path = tmp_path / "offline.toml"
    path.write_text(edit(baseline, workload={"mode": "offline"}, storage={"tb": 50}).to_toml())
    assert main(["check", str(path)]) == 3
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: valid, but does NOT fit (")
    assert "offline hidden states need 76.8 TB" in out and "storage.tb is 50.0 TB" in out
    path.write_text(edit(baseline, workload={"mode": "offline"}, storage={"tb": 80}).to_toml())
    assert main(["check", str(path)]) == 0


@pytest.mark.parametrize(
    "sets, reason",
    [
        (["workload.mode=offline", "storage.tb=50"], "offline hidden states need 76.8 TB"),
        (
            ["workload.target_model=llama-3.3-70b-instruct", "target.gpu=rtx-4090"],
            "target does not fit: needs",
        ),
    ],
)
def test_launch_says_a_plan_does_not_fit(capsys, sets, reason):
    """launch writes a plan that does not fit (storage as memory) all the same, and says
    why: one line on stderr, and in the script's header."""
    argv = ["launch"]
    for item in sets:
        argv += ["--set", item]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err.startswith("warning: the plan does not fit: ") and reason in err
    assert len(err.splitlines()) == 1
    header = [line for line in out.splitlines() if line.startswith("# projection of this")]
    assert header and "does not fit: " in header[0] and reason in header[0]


# A plan per way of not fitting: storage (50 TB cannot hold the 76.8 TB capture) and GPU
# memory (a 70B target on one 24 GB card), each with check's reason.
UNFIT = {
    "storage": (
        {"workload": {"mode": "offline"}, "storage": {"tb": 50}},
        "offline hidden states need 76.8 TB",
    ),
    "memory": (
        {"workload": {"target_model": "llama-3.3-70b-instruct"}, "target": {"gpu": "rtx-4090"}},
        "target does not fit: needs",
    ),
}


@pytest.mark.parametrize("kind", UNFIT)
@pytest.mark.parametrize("style", ["table", "markdown", "csv", "json"])
def test_compare_says_a_plan_does_not_fit(tmp_path, capsys, monkeypatch, baseline, kind, style):
    """A plan over its storage is "does not fit" in compare as one out of GPU memory: no
    figure and no ratio, "does not fit" where its bottleneck goes, check's reason after
    the table (the JSON: `does_not_fit` and the comparison's why). It was ranked with
    figures ("cost ratio 0.31x"), and memory read "0.0 Ktok/s" and "None"."""
    import csv
    import io
    import json

    monkeypatch.setenv("COLUMNS", "300")
    edits, reason = UNFIT[kind]
    base, unfit = tmp_path / "base.toml", tmp_path / "unfit.toml"
    base.write_text(baseline.to_toml())
    unfit.write_text(edit(baseline, **edits).to_toml())
    flag = [] if style == "table" else [f"--{style}"]
    assert main(["compare", str(base), str(unfit), *flag]) == 0
    out = capsys.readouterr().out
    if style == "json":
        doc = json.loads(out)
        assert doc[0]["projection"]["does_not_fit"] is None
        assert reason in doc[1]["projection"]["does_not_fit"]
        versus = doc[1]["versus_baseline"]
        assert versus["speedup"] is None and versus["cost_ratio"] is None
        assert (
            versus["why"][0].startswith("this plan does not fit: ") and reason in versus["why"][0]
        )
        return
    if style == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        cells = {k: v for k, v in rows[1].items() if k != "plan"}
    else:
        sep = "│" if style == "table" else "|"
        line = next(line for line in out.splitlines() if "unfit.toml" in line)
        cells = dict(enumerate(c.strip() for c in line.strip(sep + " ").split(sep)[1:]))
        assert f"unfit.toml: does not fit: {reason}" in " ".join(out.split())
    assert sorted(set(cells.values())) == ["does not fit", "—"], cells


@pytest.mark.parametrize("kind", UNFIT)
def test_project_says_a_plan_does_not_fit_first(tmp_path, capsys, monkeypatch, baseline, kind):
    """`project` says a plan over its storage does not fit up front, as one out of GPU
    memory: the throughput row, right under the plan's name, gives check's reason, and no
    headline figure follows (it printed the offline run's days and cost, and the error
    only at the end)."""
    monkeypatch.setenv("COLUMNS", "300")
    edits, reason = UNFIT[kind]
    path = tmp_path / "unfit.toml"
    path.write_text(edit(baseline, **edits).to_toml())
    assert main(["project", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("throughput  does not fit: ") and reason in lines[1]
    heads = (F.DAYS.name, F.JOB_DAYS.name, F.TOTAL_COST.name, F.JOB_COST.name, F.GPU_HOURS.name)
    assert not [line for line in lines if line.startswith(heads)]
    assert not [line for line in lines if line.startswith("one more target")]
    # Against a baseline: no days of its own either ("8.1 days" was the run it cannot do).
    base = tmp_path / "base.toml"
    base.write_text(baseline.to_toml())
    assert main(["project", str(path), "--baseline", str(base)]) == 0
    against = next(line for line in capsys.readouterr().out.splitlines() if "against" in line)
    assert "speed —, cost —, — (" in against and re.search(r" -> —[;)]", against)


def test_calibrate_without_write_says_it_wrote_nothing(tmp_path, capsys):
    log = Path(__file__).parents[1] / "data" / "runlogs" / "own.csv"
    assert main(["calibrate", str(log)]) == 0
    captured = capsys.readouterr()
    assert "dry run: nothing written" in captured.err
    # The measured plan's figures have no range: none is printed zero wide.
    assert "range" not in captured.out.splitlines()[-1]


def test_calibrate_reports_the_logged_acceptance(capsys):
    runlogs = Path(__file__).parents[1] / "data" / "runlogs"
    # A speculators log has no throughput lines the planner reads, only acceptance.
    assert main(["calibrate", str(runlogs / "speculators_dflash.log")]) == 0
    captured = capsys.readouterr()
    # val/eal_epoch 2.802 + 1 at step 3,000; the built-in plan's batch 2 x 1 drafter GPU
    # = 2 samples per step (the log says no batch): 6,000 sample passes.
    assert (
        "acceptance: tau 3.80 at step 3,000, 6,000 sample passes (speculators_dflash.log: "
        "speculators log 'val/eal_epoch' + 1, the last eval report to step 3,000)"
    ) in captured.out
    assert "eval reports (step: tau): 1,000: 3.33, 3,000: 3.80" in captured.out
    assert "samples per step assumed from the plan" in captured.err


def test_calibrate_moves_the_acceptance_curve_through_the_logged_tau(tmp_path, capsys):
    from dflash_plan.model.physics.acceptance import curve

    log = Path(__file__).parents[1] / "data" / "runlogs" / "specforge_domino.log"
    plan = tmp_path / "plan.toml"
    assert main(["new", str(plan)]) == 0
    plan.write_text("# my run\n" + plan.read_text())
    capsys.readouterr()

    def acceptance() -> dict:
        assert main(["project", str(plan), "--json"]) == 0
        return json.loads(capsys.readouterr().out)["acceptance"]

    before = acceptance()
    assert main(["calibrate", str(log), "--plan", str(plan), "--write"]) == 0
    out = capsys.readouterr().out
    after = acceptance()
    # The log: tau 3.10 (quartiles 3.09-3.105) at step 18,000 x 64 samples per step =
    # 1,152,000 sample passes. The curve's level is refit through it, its shape kept:
    # tau(P) = 1 + (3.10 - 1) x share(P) / share(1,152,000), at the plan's 4.8 M passes.
    c, passes = curve(), before["sample_passes"]
    share = float(c.share(passes)) / float(c.share(1_152_000))
    assert not before["calibrated"] and after["calibrated"]
    assert after["tau"] == pytest.approx(1 + 2.10 * share)
    # The built-in curve says 4.11 there; the run lags it, so the plan's tau comes down,
    # toward the logged value, by the computed amount.
    assert before["tau"] == pytest.approx(4.114, abs=1e-3)
    assert after["tau"] == pytest.approx(3.658, abs=1e-3)
    # The range: the curves through the quartiles, widened by the fit's worst residual x
    # the share of the gain extrapolated (1 - share(1.152 M) / share(4.8 M)).
    widen = c.worst_residual * (1 - 1 / share)
    assert after["tau_range"] == pytest.approx(
        [(1 + 2.09 * share) * (1 - widen), (1 + 2.105 * share) * (1 + widen)]
    )
    assert after["tau_range"][1] - after["tau_range"][0] < (
        before["tau_range"][1] - before["tau_range"][0]
    )
    assert "after: tau 3.66 (3.64 - 3.67) after 4,800,000 sample passes (calibrated)" in out
    # The measurement is in the plan, the user's comment kept.
    text = plan.read_text()
    assert text.startswith("# my run\n")
    entry = tomllib.loads(text)["calibration"]["acceptance"]["specforge_domino"]
    assert entry["tau"] == pytest.approx(3.10) and entry["sample_passes"] == 1_152_000
    assert (entry["tau_low"], entry["tau_high"]) == pytest.approx((3.09, 3.105))
    assert entry["source"].startswith("specforge_domino.log: SpecForge log 'accept_len'")


def test_calibrate_refuses_a_log_with_neither_rates_nor_acceptance(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text("loading the model\n")
    assert main(["calibrate", str(log)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dflash-plan: {log}: no SpecForge or TorchSpec throughput lines")
    assert "and no logged acceptance length" in err and "\n" not in err


def test_check_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "3: valid but does not fit (a role in GPU memory, the offline data in storage.tb" in out
    assert "2 bad input" in out


@pytest.mark.parametrize("columns", ["40", "80"])
@pytest.mark.parametrize(
    "command, keys",
    [
        ("gpus", ["rtx-pro-6000", "h100-sxm", "a100-80g", "mi355x"]),
        ("models", ["llama-3.3-70b-instruct", "llama-3.1-8b-instruct", "qwen3-30b-a3b"]),
    ],
)
def test_listings_never_cut_the_key_column(capsys, monkeypatch, columns, command, keys):
    """Piped (as under pytest) or at a narrow terminal, every key is printed whole."""
    monkeypatch.setenv("COLUMNS", columns)
    assert main([command]) == 0
    out = capsys.readouterr().out
    for key in keys:
        assert f" {key} " in out, key


def test_launch_formats_are_the_registry(capsys):
    from dflash_plan.model.launch import FORMATS

    assert main(["launch", "--format", FORMATS[-2]]) == 0
    capsys.readouterr()
    with pytest.raises(PlanError, match="invalid choice: 'nope'"):
        build_parser("launch").parse_args(["launch", "--format", "nope"])


def test_the_workload_from_a_specforge_config_and_a_dataset(tmp_path, capsys):
    # SpecForge's 1-server disaggregated example (tests/data/runconfig, copied verbatim)
    # and a small JSONL dataset: the plan takes their anchors, epochs and sample count,
    # and says where each came from.
    data = Path(__file__).parents[1] / "data"
    plan = tmp_path / "plan.toml"
    assert (
        main(
            [
                "new",
                str(plan),
                "--from-config",
                str(data / "runconfig" / "specforge_disaggregated.yaml"),
                "--from-dataset",
                str(data / "dataset" / "mixed.jsonl"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "training.num_anchors" in err and "mixed.jsonl" in err
    doc = tomllib.loads(plan.read_text())
    assert doc["workload"]["transport"] == "mooncake"
    assert doc["workload"]["num_anchors"] == 512
    assert main(["check", str(plan)]) in (0, 3)


@pytest.mark.parametrize("user_value", [None, "logfire"])
def test_pydantic_plugins_are_not_looked_for_unless_the_user_says(monkeypatch, capsys, user_value):
    # Looking for them reads the metadata of every installed package (tui/cli.py).
    if user_value is None:
        monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", user_value)
    assert main(["gpus"]) == 0
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == (user_value or "__all__")
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    assert import_app().__name__ == "PlannerApp"  # the app's path sets it too
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"


def test_a_derived_name_says_a_drafter_family_other_than_dflash(capsys):
    # The name is the title: it says the family, and the header does not repeat it.
    doc = run_json(capsys, ["project", "--json", "--set", "workload.drafter=dflash2"])
    assert doc["name"] == "3 targets + 1 drafter, RTX PRO 6000, Qwen3-8B, DFlash2"
    assert main(["project", "--set", "workload.drafter=eagle3"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "3 targets + 1 drafter, RTX PRO 6000, Qwen3-8B, EAGLE-3"
    # A name the user gave does not say it: the header does.
    assert main(["project", "--set", "workload.drafter=dspark", "--set", "name=mine"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "mine  (Qwen3-8B, DSpark drafter)"


def test_a_plan_changed_by_set_is_named_for_what_it_is(capsys, tmp_path):
    doc = run_json(capsys, FOUR_B200_VS_MEASURED)
    assert doc["name"] == "3 targets + 1 drafter, B200, Qwen3-8B"
    assert doc["baseline"]["name"].startswith("measured baseline")  # the two differ
    # Unchanged, or named by the user: the name stays.
    assert run_json(capsys, ["project", "--json"])["name"].startswith("measured baseline")
    assert (
        run_json(capsys, ["project", "--json", "--set", "name=mine", "--set", "target.count=7"])[
            "name"
        ]
        == "mine"
    )
    # `new` takes --set the same way.
    path = tmp_path / "b200.toml"
    assert (
        main(
            [
                "new",
                str(path),
                "--set",
                "target.gpu=b200",
                "--set",
                "drafter.gpu=b200",
                "--set",
                "workload.samples=1e6",
            ]
        )
        == 0
    )
    written = tomllib.loads(path.read_text())
    assert written["name"] == "3 targets + 1 drafter, B200, Qwen3-8B"
    assert written["workload"]["samples"] == 1_000_000


# --- output to pipes ------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["project"], ["gpus"]])
def test_a_reader_gone_ends_quietly_with_exit_0(argv):
    """`dflash-plan project | head -2` exited 1 (Rich's exit on a broken pipe): a closed
    pipe ends it with exit 0 and nothing on stderr, as Unix tools do. The pipe's read end
    is closed before the command writes."""
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    code = "import sys; from dflash_plan.tui.cli import main; sys.exit(main(sys.argv[1:]))"
    try:
        result = subprocess.run(
            [sys.executable, "-c", code, *argv], stdout=write, stderr=subprocess.PIPE, timeout=60
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr.decode()) == (0, "")


@pytest.mark.parametrize(
    "argv",
    [["project"], ["project", "--set", "target.gpu=b300", "--baseline"], ["gpus"], ["models"]],
)
def test_piped_output_has_no_trailing_spaces(capsys, monkeypatch, argv):
    """Piped, the report's lines end at their text: Rich padded every row of a table to
    80 columns."""
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and [line for line in lines if line.endswith(" ")] == []


def test_compare_help_says_each_output_format(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag in ("--json print JSON", "--markdown print the table as Markdown", "--csv print"):
        assert flag in out, flag


def test_a_small_plan_costs_more_than_0(capsys):
    """A 1,000-sample plan read "total cost 0". The built-in plan's cost is 844.69
    RTX PRO 6000-hours for 800,000 samples (140.78 per epoch, $1,668.26): 1,000 samples
    cost 844.69 / 800 = 1.06 (0.176 per epoch, ~$2.09), to three significant digits."""
    assert main(["project", "--set", "workload.samples=1000"]) == 0
    out = capsys.readouterr().out
    assert "total cost  1.06 RTX PRO 6000-hours (0.176 per epoch; ~$2.09 at catalog" in out


@pytest.mark.parametrize(
    "value, text",
    [(0.0023, "0.00230"), (0.176, "0.176"), (2.085, "2.08"), (9.994, "9.99"), (10.4, "10")],
)
def test_a_cost_is_whole_from_10_and_three_figures_below(value, text):
    from dflash_plan.tui import format as fmt

    assert fmt.cost(value, "RTX PRO 6000-hours") == f"{text} RTX PRO 6000-hours"
    assert fmt.cost(value, "USD") == f"${text}"
    assert fmt.cost_figure(value, "USD") == f"${text}"


def test_project_says_the_prices_it_does_not_set_first(capsys):
    """project --baseline priced B300 at the catalog's 3.51x and said so only at the end
    (in a 'because' line); compare and search say where each price comes from in one
    line: project says it in the same words, right after the figures it prices."""
    argv = ["project", "--set", "target.gpu=b300", "--set", "drafter.gpu=b300", "--baseline"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    said = next(i for i, line in enumerate(lines) if line.startswith("prices not set in"))
    text = " ".join(lines[said : said + 2])
    assert text.startswith(
        "prices not set in the plan: B300 at 3.51x the RTX PRO 6000 price (catalog default ratio)"
    )
    assert said < next(i for i, line in enumerate(lines) if line.startswith("launch: "))
    assert said < next(i for i, line in enumerate(lines) if "because" in line)
