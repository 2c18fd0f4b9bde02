"""Online or offline: storage size per format, storage reads binding the trainers, the
break-even epochs of the closed form (docs/model.md, model/core/offline.py)."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import default_plan
from dflash_plan.tui.cli import main
from dflash_plan.tui.format import ktok
from support import edit


def storage(capsys, *sets: str) -> dict:
    argv = ["project", "--json"]
    for item in sets:
        argv += ["--set", item]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    return doc


def test_built_in_workload_offline_needs_about_77_tb(capsys):
    # 5 captured layers x 4,096 x 2 bytes (bf16) = 40,960 bytes per token; x 1.875e9
    # tokens per epoch (800,000 samples x 2,344 tokens) = 76.8e12 bytes = 76.8 TB.
    doc = storage(capsys, "workload.mode=offline")
    assert doc["mode"] == "offline"
    bf16 = doc["storage"]["tb"]
    assert 76.8 <= bf16 <= 76.8 * 1.35
    fp8 = storage(capsys, "workload.mode=offline", "workload.storage_dtype=fp8")["storage"]
    assert fp8["tb"] == pytest.approx(bf16 / 2, rel=0.01)
    assert fp8["dtype"] == "fp8"


def test_speculators_268_mb_per_8k_llama_sample(catalog):
    # speculators' training guide (as quoted in issue 22): 268 MB per 8,192-token
    # Llama-3.1-8B sample = 4 layers (the default target_layer_ids [2, n//2, n-3] of
    # src/speculators/train/config/schema.py plus the last layer launch_vllm.py appends,
    # c05b95b3) x 4,096 x 2 bytes x 8,192 tokens = 268.4e6 bytes.
    plan = edit(
        default_plan(),
        workload={
            "target_model": "llama-3.1-8b-instruct",
            "target_layer_ids": (2, 16, 29),
            "draft_layers": 3,
            "mode": "offline",
            "max_length": 8192,
        },
        launch={"format": "speculators"},
    )
    p = project(plan, catalog)
    assert p.offline is not None and p.offline.format.name == "speculators"
    per_sample = p.offline.bytes_per_token * 8192
    assert per_sample == pytest.approx(268e6, rel=0.25)
    assert per_sample == pytest.approx(268.4e6, rel=0.001)


def test_deepspec_qwen3_4b_sample_matches_its_estimator(catalog):
    # DeepSpec (deepseek-ai/DeepSpec 40c413ea) scripts/data/estimate_target_cache_size.py:
    # per sample input_ids 4 x L + attention_mask L + loss_mask L + L x layers x hidden x 2
    # + L x hidden x 2 (target_last_hidden_states); config/dflash/dflash_qwen3_4b.py
    # (74d0b926): target_layer_ids [1, 9, 17, 25, 33], max_length 4096, Qwen3-4B hidden
    # 2560: 4096 x (6 + 6 x 2560 x 2) = 125,853,696 bytes. Its data README's ~38 TB total
    # follows from the regenerated open-perfectblend set's token count, which is not
    # published (38e12 / 30,726 bytes = 1.24e9 tokens): the per-sample figure is what its
    # own config fixes.
    plan = edit(
        default_plan(),
        workload={
            "target_model": "qwen3-4b",
            "target_layer_ids": (1, 9, 17, 25, 33),
            "mode": "offline",
            "max_length": 4096,
        },
        storage={"format": "deepspec"},
    )
    p = project(plan, catalog)
    assert p.offline is not None
    assert p.offline.bytes_per_token * 4096 == pytest.approx(125_853_696, rel=1e-9)


def test_storage_read_bandwidth_binds_the_trainers(capsys):
    # 0.2 GB/s on one drafter node / 40,976 bytes per token = 4,881 tok/s, below the
    # drafter's ~19.7 K.
    doc = storage(capsys, "workload.mode=offline", "storage.read_gb_per_s_per_node=0.2")
    s = doc["storage"]
    assert s["bound"] == "storage"
    assert s["train_tokens_per_s"] == pytest.approx(0.2e9 / s["bytes_per_token"])
    assert s["train_tokens_per_s"] < doc["drafter"]["capacity_tokens_per_s"]
    assert s["train_days_per_epoch"] == pytest.approx(
        doc["tokens_per_epoch"] / s["train_tokens_per_s"] / 86_400
    )
    assert "storage-read-bound" in [d["code"] for d in doc["diagnostics"]]


@pytest.mark.parametrize(
    "sets",
    [
        (),
        ("storage.billing=whole-run",),
        ("cost.usd_per_gpu_hour.rtx-pro-6000=1.8", "storage.usd_per_tb_month=20"),
    ],
)
def test_break_even_epochs_equal_the_closed_form(capsys, sets):
    # 3 targets + 2 drafters: the built-in 3 + 1 trains offline no faster than online (its
    # drafter runs at the 14,799.9 tok/s the targets feed it, _built_in_offline), so the
    # days' break-even and whole-run billing's would have no finite E* to check. With two
    # drafters an epoch trains in half the online epoch: both closed forms are finite.
    s = storage(capsys, "workload.mode=offline", "drafter.count=2", *sets)["storage"]
    # docs/model.md: E* = (C_cap + s t_cap) / (a - b - s t_tr), s the storage USD per day.
    per_day = (s["storage_usd"] / s["days"]) if s["storage_in_cost"] else 0.0
    closed = (s["capture_cost"] + per_day * s["capture_days"]) / (
        s["online_cost_per_epoch"] - s["train_cost_per_epoch"] - per_day * s["train_days_per_epoch"]
    )
    assert s["break_even_epochs"] == pytest.approx(closed)
    # At E*, offline and online cost the same.
    e = s["break_even_epochs"]
    offline_at = (
        s["capture_cost"]
        + per_day * s["capture_days"]
        + e * (s["train_cost_per_epoch"] + per_day * s["train_days_per_epoch"])
    )
    assert offline_at == pytest.approx(e * s["online_cost_per_epoch"])
    days_closed = s["capture_days"] / (s["online_days"] / 6 - s["train_days_per_epoch"])
    assert s["break_even_epochs_days"] == pytest.approx(days_closed)
    if "storage.usd_per_tb_month=20" in sets:
        assert s["storage_in_cost"] and s["storage_usd"] == pytest.approx(
            s["tb"] * 20 * s["days"] / (365.25 / 12)
        )


def test_dear_storage_never_breaks_even(capsys):
    # 76.8 TB at 150 USD per TB-month is ~380 USD a day, more than the 4 GPUs' ~170:
    # every epoch costs more offline (a <= b + s t_tr), so there is no break-even.
    s = storage(
        capsys,
        "workload.mode=offline",
        "cost.usd_per_gpu_hour.rtx-pro-6000=1.8",
        "storage.usd_per_tb_month=150",
    )["storage"]
    assert s["storage_in_cost"] and s["break_even_epochs"] is None
    assert s["cost"] > s["online_cost"]


def test_data_larger_than_storage_is_an_error(capsys):
    doc = storage(capsys, "workload.mode=offline", "storage.tb=50")
    full = [d for d in doc["diagnostics"] if d["code"] == "storage-full"]
    assert full and full[0]["level"] == "error" and full[0]["key"] == "storage.tb"
    assert doc["storage"]["fits"] is False
    # Online, the same storage is not a problem.
    doc = storage(capsys, "storage.tb=50")
    assert "storage-full" not in [d["code"] for d in doc["diagnostics"]]


def test_online_stays_the_default(capsys):
    doc = storage(capsys)
    assert doc["mode"] == "online"
    assert default_plan().workload.mode == "online"


# --- the Mooncake store in host memory ------------------------------------------------------


@pytest.mark.parametrize(
    "fmt,sets",
    [
        ("specforge", {}),
        (
            "specforge",
            {
                "target": {"gpu": "b200", "count": 6, "tp": 2},
                "drafter": {"gpu": "b200", "count": 2, "batch_size": 4},
            },
        ),
        (
            "speculators",
            {
                "target": {"gpu": "b200", "count": 6, "tp": 1},
                "drafter": {"gpu": "b200", "count": 2, "batch_size": 2},
            },
        ),
    ],
)
def test_store_memory_is_what_the_launch_writes(catalog, fmt, sets):
    from dflash_plan.model.launch import specforge, speculators
    from dflash_plan.model.launch.common import context

    plan = edit(default_plan(), launch={"format": fmt}, **sets)
    p = project(plan, catalog)
    ctx = context(plan, catalog)
    launched = (
        specforge.server_segment_gib(ctx)
        if fmt == "specforge"
        else speculators.vllm_segment_gib(ctx)
    )
    assert p.store_memory is not None and p.store_memory.segment_gib == launched
    # At the longest sample: 5 captured layers + the last x 4,096 x 2 bytes x max_length.
    assert p.store_memory.sample_bytes == 6 * 4096 * 2 * plan.workload.max_length


def test_store_memory_at_the_longest_sample_over_host_ram(capsys):
    # B200 nodes (DGX B200: 2 TB host RAM), 6 TP1 capture servers + 2 trainer ranks on the
    # first of two nodes (4 more ranks on the second), 262,144-token samples of 12 GiB
    # (6 layers x 4,096 x 2 bytes x 262,144). Flow control (physics/flow.py) across nodes:
    # high watermark max(8 x the 12-sample quantum, 6 servers x 8) = 96, so each segment
    # holds 16 samples x 1.25 = 240 GiB; each server's buffer the recipe's 4 GiB per 500 MB
    # sample scaled, ceil(102.4) = 103 GiB; each rank's client buffer ceil(51.2) = 52 GiB
    # and two batches of 2 = 48 GiB. 6 x (240 + 103) + 2 x 100 = 2,258 GiB = 2,424 GB.
    base = [
        "target.gpu=b200",
        "drafter.gpu=b200",
        "target.count=6",
        "drafter.count=6",
        "workload.avg_sample_tokens=2000",
    ]
    doc = storage(capsys, *base, "workload.max_length=262144")
    mem = doc["store_memory"]
    assert mem["host_memory_gb"] == 2000 and mem["fits"] is False
    assert mem["busiest_node_gib"] == 2258 and mem["busiest_node_gib"] * 2**30 / 1e9 > 2000
    err = [d for d in doc["diagnostics"] if d["code"] == "store-memory"]
    assert err and err[0]["level"] == "error"
    # The mean sample is the same, the longest 8x shorter: it fits.
    doc = storage(capsys, *base, "workload.max_length=32768")
    assert doc["store_memory"]["fits"] is True
    assert "store-memory" not in [d["code"] for d in doc["diagnostics"]]


def test_host_memory_unknown_is_not_checked(capsys):
    doc = storage(capsys, "workload.max_length=131072")
    assert doc["store_memory"]["host_memory_gb"] is None
    assert doc["store_memory"]["fits"] is None


# The README's online/offline table, row by row: the --set of each offline row.
README_ROWS = {
    "offline, bf16": [],
    "offline, fp8 storage": ["workload.storage_dtype=fp8"],
    "offline, the 4 GPUs rented for both phases": ["storage.billing=whole-run"],
    "offline, storage read at 0.5 GB/s": ["storage.read_gb_per_s_per_node=0.5"],
    "offline at $1.97/GPU-h and $20/TB-month": [
        "cost.usd_per_gpu_hour.rtx-pro-6000=1.97",
        "storage.usd_per_tb_month=20",
    ],
}


def _first_number(cell: str) -> float | None:
    import re

    found = re.search(r"[\d,]+(?:\.\d+)?", cell)
    return (
        None if found is None or cell.strip() == "never" else float(found.group().replace(",", ""))
    )


def _shown(cell: str, value: float | None) -> bool:
    shown = _first_number(cell)
    if value is None or shown is None:
        return shown is None and (value is None or cell.strip() == "")
    decimals = len(str(shown).split(".")[1]) if "." in cell.split()[0] else 0
    return abs(shown - value) <= 0.5 * 10**-decimals + 1e-9


def test_readme_offline_table_is_what_the_model_prints(capsys):
    from pathlib import Path

    text = (Path(__file__).parents[2] / "README.md").read_text()
    rows = {
        cells[1].strip(): [c.strip() for c in cells[2:-1]]
        for line in text.splitlines()
        if line.startswith("| offline")
        for cells in [line.split("|")]
    }
    for label, sets in README_ROWS.items():
        tb, days, cost, cheaper, faster = rows[label]
        s = storage(capsys, "workload.mode=offline", *[f"{x}" for x in sets])["storage"]
        assert _shown(tb, s["tb"]), (label, tb, s["tb"])
        assert _shown(days, s["days"]), (label, days, s["days"])
        assert _shown(cost.lstrip("$"), s["cost"]), (label, cost, s["cost"])
        assert _shown(cheaper, s["break_even_epochs"]), (label, cheaper)
        assert _shown(faster, s["break_even_epochs_days"]), (label, faster)


def test_compare_shows_storage_of_offline_plans(capsys, tmp_path):
    online, offline = tmp_path / "online.toml", tmp_path / "offline.toml"
    assert main(["new", str(online)]) == 0
    text = online.read_text()
    offline.write_text(
        text.replace('transport = "direct"', 'transport = "direct"\nmode = "offline"')
    )
    capsys.readouterr()
    assert main(["compare", "--csv", str(online), str(offline)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(",offline")
    assert lines[1].endswith(",—") and "76.8 TB" in lines[2]
    # All online: no offline column.
    assert main(["compare", "--csv", str(online), str(online)]) == 0
    assert "offline" not in capsys.readouterr().out.splitlines()[0]


def test_offline_mode_names_only_the_launches_that_cannot_write_it(capsys):
    # specforge, speculators and slurm write the capture-then-train pair; the legacy
    # trainer and the JobSet cannot, and the projection says so.
    for fmt in ("specforge", "speculators", "slurm"):
        doc = storage(capsys, "workload.mode=offline", f"launch.format={fmt}")
        assert "mode-differs-from-launch" not in [d["code"] for d in doc["diagnostics"]]
    for fmt in ("specforge-legacy", "kubernetes", "skypilot"):
        doc = storage(capsys, "workload.mode=offline", f"launch.format={fmt}")
        (diag,) = [d for d in doc["diagnostics"] if d["code"] == "mode-differs-from-launch"]
        assert (
            fmt in diag["message"] and "--format specforge, speculators or slurm" in diag["message"]
        )
    assert "mode-differs-from-launch" not in [d["code"] for d in storage(capsys)["diagnostics"]]


def test_offline_drafters_read_storage_not_the_mooncake_store(capsys):
    # Through the store with host receive a B200 drafter waits for its Mooncake fetch (30.8
    # Ktok/s online); offline it reads from storage: its compute-bound capacity (82 K), as
    # with direct.
    gpus = ["target.gpu=b200", "drafter.gpu=b200", "workload.mode=offline"]
    store = storage(capsys, *gpus, "workload.transport=mooncake", "workload.receive=host")
    direct = storage(capsys, *gpus, "workload.transport=direct")
    assert (
        store["drafter"]["capacity_tokens_per_s"] < 0.5 * direct["drafter"]["capacity_tokens_per_s"]
    )
    assert store["storage"]["train_tokens_per_s"] == pytest.approx(
        direct["drafter"]["capacity_tokens_per_s"]
    )


def _built_in_offline(catalog) -> tuple[float, float, float]:
    """The built-in 3 + 1 RTX PRO 6000 run offline, by hand: (days, cost in RTX PRO
    6000-hours at by-phase billing, break-even epochs on cost).

    The capture runs at the 3 targets' measured 3 x 4,933.3 tok/s; training at the
    drafter's rate, its estimate (roofline x the RTX PRO 6000's training efficiency, the
    pooled share for sm120, 27 %: 14.4 K) held at the 14,799.9 tok/s it was seen to keep up
    with. 1.8752e9 tokens per epoch / 14,799.9 = 1.467 days per pass: capture + 6 epochs =
    7 passes = 10.27 days; cost 24 h x (3 GPUs x 1 pass + 1 GPU x 6 passes) = 317; online
    an epoch costs 4 GPUs x 1 pass, so E* = 3 t_cap / (4 t_on - t_tr) = 1.00."""
    from dflash_plan.model.physics.roofline import drafter_roofline

    plan = default_plan()
    w, cal = plan.workload, plan.calibration
    gpu = catalog.gpus["rtx-pro-6000"]
    estimate = drafter_roofline(project(plan, catalog).drafter_work, gpu, w.avg_sample_tokens)
    capture = 3 * cal.target["rtx-pro-6000"].tokens_per_s
    train = max(
        estimate.tokens_per_s * gpu.training_efficiency, cal.drafter["rtx-pro-6000"].tokens_per_s
    )
    tokens = w.samples * w.avg_sample_tokens
    t_cap, t_tr, t_on = (tokens / rate / 86_400 for rate in (capture, train, min(capture, train)))
    days = t_cap + w.epochs * t_tr
    cost = 24 * (3 * t_cap + 1 * w.epochs * t_tr)
    even = 24 * 3 * t_cap / (24 * 4 * t_on - 24 * 1 * t_tr)
    return days, cost, even


def test_comparison_view_rows_of_an_offline_scenario(catalog):
    from dflash_plan.tui.scenarios import OFFLINE_ROWS, offline_column

    online = project(default_plan(), catalog)
    offline = project(edit(default_plan(), workload={"mode": "offline"}), catalog)
    assert offline_column(online) == ["—"] * len(OFFLINE_ROWS)
    days, cost, even = _built_in_offline(catalog)
    assert offline.offline is not None and offline.offline.days == pytest.approx(days)
    assert offline.offline.break_even_epochs == pytest.approx(even)
    # Days with 2 decimals below 10, 1 above (format._narrow_days).
    shown = f"{days:.2f}" if days < 10 else f"{days:.1f}"
    assert offline_column(offline) == ["76.8", shown, f"{cost:.0f}", f"{even:.2f} ep"]


async def test_comparison_view_shows_the_offline_rows(catalog):
    from apphelp import choose, planner
    from dflash_plan.tui.scenarios import OFFLINE_ROWS, ROWS, ScenariosScreen
    from textual.widgets import DataTable

    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("f6")
        await pilot.pause()
        table = app.screen.query_one("#scenarios-table", DataTable)
        assert table.row_count == len(ROWS)  # all online: as before
        await pilot.press("escape")
        await pilot.pause()
        await choose(pilot, "workload.mode", "offline")
        await pilot.press("f6")
        await pilot.pause()
        assert isinstance(app.screen, ScenariosScreen)
        table = app.screen.query_one("#scenarios-table", DataTable)
        assert table.row_count == len(ROWS) + len(OFFLINE_ROWS)
        now = [str(v) for v in table.get_column_at(2)]
        even = _built_in_offline(catalog)[2]
        assert now[len(ROWS)] == "76.8" and now[-1] == f"{even:.2f} ep"
        assert [str(v) for v in table.get_column_at(1)][len(ROWS)] == "—"  # the baseline


def test_offline_mode_leads_the_app_figures_with_the_offline_run(catalog, baseline):
    """A plan set offline shows its own days and cost first; the online pipeline's rows
    follow, named (the headline is not left looking like the online run's)."""
    from dflash_plan.tui.planner.results import figure_rows

    offline = project(edit(baseline, workload={"mode": "offline"}), catalog)
    rows = figure_rows(offline)
    o = offline.offline
    assert rows[0][0] == "time" and rows[0][1] == f"{o.days:,.1f} days"
    assert "offline run" in rows[0][2] and f"{o.tb:,.1f} TB" in rows[0][2]
    # Its rates (the capture's, then the training's from storage) before the online rows.
    at = rows.index(("throughput", f"capture {ktok(o.capture_tokens_per_s)}", ""))
    assert rows[at + 1] == ("", f"then training {ktok(o.train_tokens_per_s)} ({o.bound}-bound)", "")
    assert at < rows.index(("online", "the figures below", ""))
    full = project(edit(baseline, workload={"mode": "offline"}, storage={"tb": 50.0}), catalog)
    # Over its storage it does not fit, as GPU memory: no figures (tests/app/test_app.py).
    assert figure_rows(full)[0][1:] == ("—", "does not fit")
    assert figure_rows(project(baseline, catalog))[0][0] == "throughput"  # online as before


@pytest.mark.parametrize("sets", [(), ("storage.read_gb_per_s_per_node=0.2",)])
def test_offline_throughput_row_names_the_capture_and_the_training(capsys, sets):
    """An offline plan's throughput row is its own run's: the capture at the targets'
    rate, then the training at the drafters' (or storage's), and what bounds it; the
    online pipeline's rate and bottleneck go to its own row."""
    argv = ["project", "--set", "workload.mode=offline"]
    for item in sets:
        argv += ["--set", item]
    s = storage(capsys, "workload.mode=offline", *sets)["storage"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    row = " ".join(next(line for line in lines if line.startswith("throughput")).split())
    train = ktok(s["train_tokens_per_s"])
    assert row == (
        f"throughput capture {ktok(s['capture_tokens_per_s'])}, then training {train} "
        f"({s['bound']}-bound)"
    )
    assert "bottleneck" not in row
    online = " ".join(next(line for line in lines if line.startswith("online")).split())
    assert "at 14.8 Ktok/s (bottleneck: target)," in online


@pytest.mark.parametrize(
    "fmt, dtype, per_token",
    [
        # 5 captured layers x 4,096 x 2 + int64 ids and mask
        ("specforge", "bf16", 5 * 4096 * 2 + 16),
        # 5 captured + the last layer, int64 ids, bool mask; fp8: one byte each plus a
        # float32 scale per token (hs-connectors' fp8 connector)
        ("speculators", "bf16", 6 * 4096 * 2 + 9),
        ("speculators", "fp8", 6 * 4096 + 9 + 4),
    ],
)
def test_the_offline_launch_writes_what_the_projection_sizes(catalog, fmt, dtype, per_token):
    from dflash_plan.model.launch import generate

    plan = edit(
        default_plan(),
        workload={"mode": "offline", "storage_dtype": dtype},
        launch={"format": fmt},
    )
    p = project(plan, catalog)
    assert p.offline is not None and p.offline.bytes_per_token == per_token
    text = generate(plan, catalog, fmt).text
    assert f"the capture writes {per_token:,} bytes per token" in text
    assert f"projection of this offline run: {p.offline.tb:,.1f} TB" in text


def test_an_offline_launch_refuses_a_storage_format_it_does_not_write(catalog):
    from dflash_plan.model.basics.errors import PlanError
    from dflash_plan.model.launch import generate

    plan = edit(default_plan(), workload={"mode": "offline"}, storage={"format": "deepspec"})
    with pytest.raises(PlanError, match=r"storage\.format = deepspec: the specforge launch"):
        generate(plan, catalog, "specforge")
    # The plan's launch format sizes SpecForge's files; the speculators launch writes others.
    plan = edit(default_plan(), workload={"mode": "offline"})
    with pytest.raises(PlanError, match=r"set storage\.format = speculators"):
        generate(plan, catalog, "speculators")


def test_the_offline_sbatch_asks_for_the_offline_runs_host_needs(catalog):
    # The built-in plan, 3 targets + 1 drafter on one 8-GPU node: not whole nodes, so
    # --mem and --cpus-per-task are the offline run's: 3 capture replicas x the 15.3 GiB
    # of weights each loads through host memory + 1 trainer rank x two batches of 2
    # max-length samples (0.6 GiB), no Mooncake segment; CPUs 3 x (1 + 4 loaders) +
    # 1 x (1 + 8 loaders) = 24.
    from dflash_plan.model.launch import generate

    plan = edit(default_plan(), workload={"mode": "offline"}, launch={"format": "slurm"})
    text = generate(plan, catalog, "slurm").text
    assert "#SBATCH --mem=47G" in text and "#SBATCH --cpus-per-task=24" in text
    online = generate(edit(plan, workload={"mode": "online"}), catalog, "slurm").text
    assert "#SBATCH --mem=47G" not in online


@pytest.mark.parametrize("sets", [{}, {"target": {"gpu": "b200"}, "drafter": {"gpu": "b200"}}])
def test_offline_range_brackets_the_projection(catalog, sets):
    # The offline run's days and cost carry the range of the same readings as the online
    # pipeline's: the central value is the projection's offline run, the ends bracket it,
    # and each role's span is its rate alone (scenarios' role_span).
    plan = edit(default_plan(), workload={"mode": "offline"}, **sets)
    p = project(plan, catalog)
    o = p.offline
    r = o.ranges
    assert r is not None and r.days[0] <= o.days <= r.days[1] and r.days[0] < r.days[1]
    assert r.cost[0] <= o.cost <= r.cost[1]
    for low, high in r.role_days.values():
        assert r.days[0] <= low <= o.days <= high <= r.days[1]
    # The ranges' capacities at the central scenario are the offline run's own.
    assert p.scenarios.offline_capacities({}) == (o.capture_tokens_per_s, o.drafter_tokens_per_s)
    assert o.to_json("offline")["ranges"]["days"] == list(r.days)


def test_plans_in_different_modes_compare_on_their_own_figures(catalog, tmp_path, capsys):
    # An offline plan against an online baseline: speed and cost ratio are the offline
    # run's days and cost against the online pipeline's (not the offline plan's unused
    # online figures), with a range from the same scenarios; the rows show those figures.
    from dflash_plan.model.explore.compare import compare
    from dflash_plan.tui.scenarios import column

    online = project(default_plan(), catalog)
    offline = project(edit(default_plan(), workload={"mode": "offline"}), catalog)
    c = compare(offline, online)
    o = offline.offline
    assert c.speedup == online.days / o.days and c.cost_ratio == o.cost / online.total_cost
    # The drafter's central rate is the floor it kept up at (_built_in_offline), so the
    # offline run's central days may be its slowest: the speedup sits at or above the
    # range's low end; the drafter's band above the floor gives the range its width.
    assert c.speedup_range[0] <= c.speedup < c.speedup_range[1]
    assert c.cost_ratio_range[0] <= c.cost_ratio <= c.cost_ratio_range[1]
    assert "mode online -> offline" in c.why
    back = compare(online, offline)
    assert back.speedup == o.days / online.days
    assert compare(offline, offline).speedup_range == (1.0, 1.0)
    days, cost, _ = _built_in_offline(catalog)
    # Online: 6 epochs at the targets' 14,799.9 tok/s, against the offline run's 7 passes.
    assert c.speedup == pytest.approx(online.days / days) and o.cost == pytest.approx(cost)
    shown = f"{days:.2f}" if days < 10 else f"{days:.1f}"
    assert (column(offline, online)[2], column(offline, online)[4]) == (shown, f"{cost:.0f}")
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["new", str(a)]) == 0
    b.write_text(a.read_text().replace("[workload]", '[workload]\nmode = "offline"', 1))
    capsys.readouterr()
    assert main(["compare", "--csv", str(a), str(b)]) == 0
    row = capsys.readouterr().out.splitlines()[2].split(",")
    (low, high) = c.speedup_range
    assert row[3:5] == [f"{days:.1f} days", f"{cost:.0f} RTX PRO 6000-h"]
    assert row[7] == f"{c.speedup:.2f}x ({low:.2f}-{high:.2f}x)"


def test_a_drafter_both_plans_hold_at_its_floor_is_named_once(catalog, baseline):
    # The built-in drafter's estimate falls below the 14,799.9 tok/s it kept up with, so
    # both the offline and the online plan hold it there: the range's note says so once.
    from dflash_plan.model.explore.compare import compare

    offline = project(edit(baseline, workload={"mode": "offline"}), catalog)
    c = compare(offline, project(baseline, catalog))
    named = " | ".join(c.speedup_range_scenarios or ())
    assert "held at the 14,800 tok/s" in named
    for end in c.speedup_range_scenarios or ():
        assert end.count("held at the 14,800 tok/s") <= 1, end
