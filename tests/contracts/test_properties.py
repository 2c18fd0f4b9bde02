"""Property tests: generated plans, --set values, hardware files and config.json files,
each through the command line. Whatever the input: no traceback, exit 0, 2 or 3, one line
on stderr for 2, and for a projection finite non-negative figures, the JSON contract, and
days x tokens/s x 86,400 = epochs x samples x tokens. On valid plans: cost grows with
price, and capacity does not fall with one more GPU of a role (except the drafters'
gradient all-reduce, which grows with their count).

CI runs a few hundred examples per property; `python scripts/fuzz.py` runs many more and
prints counts per category. The strategies and checks here are what the script uses.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import tomli_w
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.plan import default_plan, plan_from_dict, plan_to_dict
from dflash_plan.model.inputs.targets import PRESETS
from dflash_plan.model.physics.fitting import builtin_gpus
from dflash_plan.tui.cli import EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT, EXIT_OK, main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import CONTRACT, ROLE_CONTRACT

GPUS = builtin_gpus()
GPU_KEYS = sorted(GPUS)
PLAN = plan_to_dict(default_plan())
SCALE = float(os.environ.get("DFLASH_PLAN_EXAMPLES_SCALE", "1"))  # scripts/fuzz.py: more


def ci(examples: int) -> settings:
    """CI examples per property: the suite must stay under 30 s on 2 cores, so the
    properties that run the command line several times per example get fewer."""
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


NON_NEGATIVE = {
    "tokens_per_s",
    "ktok_per_s",
    "samples_per_s",
    "days",
    "gpu_hours",
    "total_cost",
    "total_cost_usd",
    "energy_kwh",
    "capacity_tokens_per_s",
    "per_gpu_tokens_per_s",
    "utilization",
    "efficiency",
    "memory_gb_needed",
    "memory_gb_available",
    "tokens_per_epoch",
    "cost_per_epoch",
}


# -- values: mostly sane, some hostile -----------------------------------------------------

STEPS = 10_000  # log-spaced values: integer draws are cheaper than float draws


def log_floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Numbers spread evenly over orders of magnitude, both ends included."""
    return st.integers(0, STEPS).map(lambda i: min(hi, max(lo, lo * (hi / lo) ** (i / STEPS))))


def log_ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return log_floats(lo, hi).map(lambda x: min(hi, max(lo, round(x))))


HOSTILE = st.one_of(
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 10**19, 10**400, 3 * 10**7]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([5e-324, 1e-310, 1e308, math.inf, -math.inf, math.nan, 0.0]),
    st.booleans(),
    st.text(max_size=8),
    st.sampled_from(["[/bold]", "[red]", "\\", "\n", "é", "a" * 300]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def sometimes_hostile(sane: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(sane, sane, sane, HOSTILE)


_GPU = st.sampled_from(GPU_KEYS)
# (sane strategy, and the same with hostile values mixed in), built once: hypothesis
# spends most of its time on strategies built inside a draw.
_FIELDS = {
    name: (sane, sometimes_hostile(sane))
    for name, sane in {
        "target_model": st.sampled_from(sorted(PRESETS)),
        "max_length": log_ints(16, 1_048_576),
        "share": st.integers(1, 100),
        "samples": log_ints(1, 10**10),
        "epochs": log_ints(1, 1000),
        "num_anchors": log_ints(1, 4096),
        "block_size": st.integers(1, 32),
        "draft_layers": st.integers(1, 8),
        "gpu": _GPU,
        "tp": st.sampled_from([1, 1, 2, 4]),
        "replicas": log_ints(1, 2_000),
        "drafters": log_ints(1, 2_000),
        "batch_size": log_ints(1, 64),
        "usd": st.dictionaries(_GPU, log_floats(0.001, 1000), max_size=2),
        "ratio": st.dictionaries(_GPU, log_floats(0.001, 1000), max_size=2),
        "rates": st.dictionaries(_GPU, log_floats(1, 1e8), max_size=2),
    }.items()
}


def _pick_hostile(draw: st.DrawFn, names: list[str]) -> set[str]:
    """The fields that get a hostile value: none in about half the examples, else one
    or two (a document with every field hostile says nothing about any one of them)."""
    return draw(st.sets(st.sampled_from(names), max_size=2)) if draw(st.booleans()) else set()


@st.composite
def plan_docs(draw: st.DrawFn, hostile: bool = True) -> dict[str, Any]:
    """A plan document: the built-in plan with fields replaced (some by hostile values)."""
    bad = _pick_hostile(draw, list(_FIELDS)) if hostile else set()

    def get(name: str) -> Any:
        return draw(_FIELDS[name][1 if name in bad else 0])

    doc = json.loads(json.dumps(PLAN))
    w, t, d = doc["workload"], doc["target"], doc["drafter"]
    w["target_model"] = get("target_model")
    w["max_length"] = get("max_length")
    share = get("share")
    w["avg_sample_tokens"] = (
        max(1, w["max_length"] * share // 100)
        if type(w["max_length"]) is int and type(share) is int
        else share
    )
    for key in ("samples", "epochs", "num_anchors", "block_size", "draft_layers"):
        w[key] = get(key)
    t["gpu"], t["tp"], d["gpu"] = get("gpu"), get("tp"), get("gpu")
    replicas = get("replicas")
    t["count"] = (
        replicas * t["tp"]
        if type(replicas) is int and type(t["tp"]) is int and 0 < t["tp"] <= 128
        else replicas
    )
    d["count"], d["batch_size"] = get("drafters"), get("batch_size")
    doc["cost"] = {
        "usd_per_gpu_hour": get("usd"),
        "ratio": get("ratio"),
        "reference_gpu": get("gpu"),
    }
    doc["calibration"] = {"target": get("rates"), "drafter": get("rates")}
    return doc


def toml_value(value: Any) -> str:
    """A value as `--set` takes it (TOML syntax)."""
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if math.isinf(value)
            else repr(value)
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in value.items()) + "}"
    return str(value)


_NUMBER = st.one_of(st.integers(-5, 100).map(str), log_ints(1, 10**6).map(str))
_HOSTILE_SET = st.one_of(
    _NUMBER,
    HOSTILE.map(toml_value),
    st.text(max_size=10),
    st.sampled_from(
        [
            "[" * 5000,
            "1" * 4301,
            "1e400",
            "5e-324",
            "{a = 1}",
            "'[/bold]'",
            "",
            "=",
            "true",
            "nan",
            "inf",
        ]
    ),
)
# A sane value for each key (as --set takes it), mixed with hostile ones.
_SANE_SET = {
    "target.count": log_ints(1, 100_000).map(str),
    "target.tp": st.sampled_from(["1", "2", "4", "8"]),
    "target.gpu": _GPU,
    "drafter.count": log_ints(1, 100_000).map(str),
    "drafter.gpu": _GPU,
    "drafter.batch_size": log_ints(1, 4096).map(str),
    "workload.samples": log_ints(1, 10**10).map(str),
    "workload.avg_sample_tokens": log_ints(1, 3072).map(str),
    "workload.epochs": log_ints(1, 1000).map(str),
    "workload.max_length": log_ints(2344, 1_048_576).map(str),
    "workload.num_anchors": log_ints(1, 1_048_576).map(str),
    "workload.block_size": st.integers(1, 256).map(str),
    "workload.draft_layers": st.integers(1, 40).map(str),
    "workload.target_layer_ids": st.lists(st.integers(0, 40), min_size=1, max_size=6).map(str),
    "workload.target_model": st.sampled_from(sorted(PRESETS)),
    "cost.ratio.b200": log_floats(0.001, 1000).map(repr),
    "cost.usd_per_gpu_hour.b200": log_floats(0.001, 1000).map(repr),
    "cost.reference_gpu": _GPU,
    "calibration.target.rtx-pro-6000": log_floats(1, 1e8).map(repr),
    "calibration.drafter.rtx-pro-6000": log_floats(1, 1e8).map(repr),
    "calibration.drafter.b200": log_floats(1, 1e8).map(repr),
    "name": st.text(max_size=20).map(json.dumps),
    "launch.format": st.sampled_from(["specforge", "speculators", "slurm", "x"]),
    "schema_version": st.sampled_from(["1", "2", "true"]),
    "target.cuont": _NUMBER,
    "target": _NUMBER,
    "workload.x.y": _NUMBER,
}
SET_ITEM = st.one_of(
    [
        st.tuples(st.just(key), st.one_of(sane, sane, sane, _HOSTILE_SET)).map(
            lambda kv: f"{kv[0]}={kv[1]}"
        )
        for key, sane in _SANE_SET.items()
    ]
)
SETS = st.lists(SET_ITEM, min_size=1, max_size=4)


_GPU_FIELDS = {
    name: (sane, sometimes_hostile(sane))
    for name, sane in {
        "name": st.sampled_from(["My GPU", "[/bold]", "X [red]", "[link=x]y"]),
        "bf16_tflops": log_floats(0.1, 100_000),
        "memory_gb": log_floats(1, 100_000),
        "mem_bw_tb_s": log_floats(0.01, 1000),
        "link": st.fixed_dictionaries(
            {
                "kind": st.sampled_from(["pcie", "nvlink", "infinity-fabric", "carrier-pigeon"]),
                "gb_per_s": log_floats(0.1, 100_000),
            }
        ),
        "gpus_per_node": st.sampled_from([1, 2, 4, 8, 16, 72]),
        "network_gbps_per_gpu": log_floats(0.1, 100_000),
        "tdp_w": log_floats(1, 100_000),
        "prefill_efficiency": log_floats(0.001, 1),
        "training_efficiency": log_floats(0.001, 1),
        "usd_per_gpu_hour": log_floats(0.001, 1000),
        "matmul_ceiling": log_floats(0.001, 1),
        "softmax_speedup": log_floats(1, 100),
        "nvlink_domain_gpus": st.sampled_from([8, 72, 576]),
        "key": st.just("oops"),
    }.items()
}
_GPU_OPTIONAL = {
    "usd_per_gpu_hour",
    "matmul_ceiling",
    "softmax_speedup",
    "nvlink_domain_gpus",
    "key",
}


@st.composite
def gpu_tables(draw: st.DrawFn) -> dict[str, Any]:
    """A hardware-file GPU table: optional fields sometimes, hostile values in a few."""
    bad = _pick_hostile(draw, list(_GPU_FIELDS))
    table = {}
    for name, (sane, hostile) in _GPU_FIELDS.items():
        if name in _GPU_OPTIONAL and not draw(st.integers(0, 9)) < (1 if name == "key" else 5):
            continue
        table[name] = draw(hostile if name in bad else sane)
    return table


GPU_TABLE = gpu_tables()
GPU_KEY = st.one_of(
    st.just("my-gpu"),
    st.just("b200"),
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,10}", fullmatch=True),
    st.text(min_size=1, max_size=6),
)

CONFIG_FIELDS = {
    "hidden_size": log_ints(64, 131_072),
    "num_attention_heads": log_ints(1, 256),
    "num_hidden_layers": log_ints(1, 200),
    "intermediate_size": log_ints(64, 500_000),
    "num_key_value_heads": log_ints(1, 64),
    "head_dim": st.sampled_from([64, 128, 256]),
    "vocab_size": log_ints(1_000, 1_000_000),
    "tie_word_embeddings": st.booleans(),
    "num_experts": st.sampled_from([0, 8, 128]),
    "num_experts_per_tok": st.integers(0, 8),
    "moe_intermediate_size": log_ints(64, 10_000),
    "sliding_window": st.sampled_from([None, 128, 4096]),
    "layer_types": st.lists(st.sampled_from(["sliding_attention", "full_attention"]), max_size=64),
    "_name_or_path": st.sampled_from(["org/model", "[/bold]", "[red]x", ""]),
}
_CONFIG_REQUIRED = {
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "intermediate_size",
    "vocab_size",
}
_CONFIG_HOSTILE = {key: sometimes_hostile(value) for key, value in CONFIG_FIELDS.items()}


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """A config.json: the required fields mostly present, the others sometimes, hostile
    values in a few."""
    bad = _pick_hostile(draw, list(CONFIG_FIELDS))
    config = {}
    for name, sane in CONFIG_FIELDS.items():
        keep = draw(st.integers(0, 19)) if name in _CONFIG_REQUIRED else draw(st.integers(0, 1))
        if keep:
            config[name] = draw(_CONFIG_HOSTILE[name] if name in bad else sane)
    return config


CONFIG = configs()


# -- running the command line and checking what it says ------------------------------------


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def check_answer(argv: list[str]) -> tuple[int, dict[str, Any] | None]:
    """Run argv; assert the answer is a projection, a listing, or one clear error line."""
    code, out, err = run(argv)
    assert code in (EXIT_OK, EXIT_BAD_INPUT, EXIT_DOES_NOT_FIT), (code, err)
    assert "Traceback" not in err
    if code == EXIT_BAD_INPUT:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("dflash-plan: "), err
        assert len(lines[0]) < 1000, lines[0]
        return code, None
    if "--json" in argv and argv[0] == "project":
        doc = json.loads(out)
        check_projection(doc)
        return code, doc
    return code, None


def _numbers(node: Any, path: str = "") -> list[tuple[str, float]]:
    if isinstance(node, dict):
        return [n for key, value in node.items() for n in _numbers(value, key)]
    if isinstance(node, list):
        return [n for value in node for n in _numbers(value, path)]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return [(path, node)]
    return []


def check_projection(doc: dict[str, Any]) -> None:
    assert set(doc) >= CONTRACT, CONTRACT - set(doc)
    for role in ("target", "drafter"):
        assert set(doc[role]) >= ROLE_CONTRACT, ROLE_CONTRACT - set(doc[role])
    for key, value in _numbers(doc):
        assert math.isfinite(value), (key, value)
        if key in NON_NEGATIVE:
            assert value >= 0, (key, value)
    assert doc["bottleneck"] in ("target", "drafter", "link", None)
    if doc["tokens_per_s"] is not None:
        tokens = doc["epochs"] * doc["tokens_per_epoch"]
        assert doc["tokens_per_s"] > 0
        assert math.isclose(doc["days"] * doc["tokens_per_s"] * 86_400, tokens, rel_tol=1e-9)


@contextlib.contextmanager
def files(**texts: str | bytes):
    """A temporary folder holding the named files; yields their paths."""
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, text in texts.items():
            path = Path(folder) / name.replace("_", ".")
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
            paths[name] = str(path)
        yield paths


def dump_toml(doc: dict[str, Any]) -> str:
    try:
        return tomli_w.dumps(doc)
    except (TypeError, ValueError):
        return "schema_version = 1\n"


# -- the properties ------------------------------------------------------------------------


def plan_file_property(doc: dict[str, Any]) -> int:
    with files(plan_toml=dump_toml(doc)) as p:
        code, _ = check_answer(["project", "--json", p["plan_toml"]])
        checked, _ = check_answer(["check", p["plan_toml"]])
        assert checked == code or (code, checked) == (EXIT_OK, EXIT_DOES_NOT_FIT)
    return checked


def set_property(sets: list[str]) -> int:
    argv = ["project", "--json"]
    for item in sets:
        argv += ["--set", item]
    return check_answer(argv)[0]


def hardware_property(key: str, table: dict[str, Any]) -> int:
    with files(hw_toml=dump_toml({key: table})) as p:
        check_answer(["gpus", "--json", "--hardware", p["hw_toml"]])
        code, _ = check_answer(
            [
                "project",
                "--json",
                "--hardware",
                p["hw_toml"],
                "--set",
                f"target.gpu={json.dumps(key)}",
                "--set",
                f"cost.reference_gpu={json.dumps(key)}",
            ]
        )
        if "[" in str(table.get("name")):  # user text in Rich output
            check_answer(
                ["project", "--hardware", p["hw_toml"], "--set", f"drafter.gpu={json.dumps(key)}"]
            )
    return code


def config_property(config: dict[str, Any]) -> int:
    plan = json.loads(json.dumps(PLAN))
    plan["workload"]["target_model"] = "model/config.json"
    plan["workload"]["draft_layers"] = 1
    with files(config_json=json.dumps(config), plan_toml=tomli_w.dumps(plan)) as p:
        folder = Path(p["plan_toml"]).parent
        (folder / "model").mkdir()
        Path(p["config_json"]).rename(folder / "model" / "config.json")
        code, _ = check_answer(["project", "--json", p["plan_toml"]])
        if "[" in str(config.get("_name_or_path")):  # user text in Rich output
            check_answer(["project", p["plan_toml"]])
    return code


def _project(doc: dict[str, Any]) -> Any:
    from dflash_plan.model.core.projection import project
    from dflash_plan.model.inputs.catalog import Catalog

    return project(plan_from_dict(doc, "generated"), Catalog(gpus=GPUS))


CHECKED, SKIPPED = "checked", "skipped (plan rejected)"


def cost_property(doc: dict[str, Any], factor: float) -> str:
    """Raising the target GPU's price never lowers the total cost."""
    doc["cost"] = {"usd_per_gpu_hour": {doc["target"]["gpu"]: 1.0}, "ratio": {}}
    try:
        cheap = _project(doc)
    except PlanError:
        return SKIPPED
    doc["cost"]["usd_per_gpu_hour"][doc["target"]["gpu"]] = factor
    dear = _project(doc)
    if cheap.total_cost is None:
        assert dear.total_cost is None
        return CHECKED
    assert dear.total_cost >= cheap.total_cost * (1 - 1e-12)
    if dear.total_cost_usd is not None and cheap.total_cost_usd is not None:
        assert dear.total_cost_usd >= cheap.total_cost_usd * (1 - 1e-12)
    return CHECKED


def capacity_property(doc: dict[str, Any]) -> str:
    """One more target replica never lowers target capacity; one more drafter GPU never
    lowers drafter capacity unless its scaling efficiency fell (the gradient all-reduce
    over more GPUs, or across more nodes, takes longer than the compute it adds)."""
    try:
        base = _project(doc)
    except PlanError:
        return SKIPPED
    more_t = json.loads(json.dumps(doc))
    more_t["target"]["count"] += doc["target"]["tp"]
    more_d = json.loads(json.dumps(doc))
    more_d["drafter"]["count"] += 1
    try:
        t, d = _project(more_t), _project(more_d)
    except PlanError:  # e.g. past 100,000 GPUs
        return SKIPPED
    assert t.target.capacity_tokens_per_s >= base.target.capacity_tokens_per_s * (1 - 1e-12)
    if d.drafter.capacity_tokens_per_s < base.drafter.capacity_tokens_per_s * (1 - 1e-12):
        assert d.drafter.scaling_efficiency < base.drafter.scaling_efficiency, (
            "drafter capacity fell with no all-reduce cost to explain it"
        )
    return CHECKED


@ci(60)
@given(plan_docs())
def test_generated_plan_files(doc):
    plan_file_property(doc)


@ci(150)
@given(SETS)
def test_generated_set_values(sets):
    set_property(sets)


@ci(60)
@given(GPU_KEY, GPU_TABLE)
def test_generated_hardware_files(key, table):
    hardware_property(key, table)


@ci(60)
@given(CONFIG)
def test_generated_config_json(config):
    config_property(config)


@ci(150)
@given(plan_docs(hostile=False), log_floats(1.0001, 1000))
def test_cost_is_monotone_in_price(doc, factor):
    cost_property(doc, factor)


@ci(100)
@given(plan_docs(hostile=False))
def test_capacity_with_one_more_gpu(doc):
    capacity_property(doc)
