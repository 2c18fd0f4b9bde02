"""Launches of a colocated plan and of the DFlash2 and EAGLE-3 drafters (DSpark refused), on
one node and on two, run against stub commands and checked by upstream's own code where a pinned
release carries it: specforge 0.2.0's schema, CLI and launch planner, speculators 0.9.0's
trainer options and model registry. SpecForge's colocated online run and its DFlash2 are in
no release (PyPI's newest specforge is 0.2.0, which refuses them), and the commit that has
them (SPECFORGE_PR_COMMIT) cannot be fetched where the tests run (only the package index
is reachable): what it added is recorded below from that commit, as the legacy trainer's
flags are, and everything else goes through 0.2.0."""

from __future__ import annotations

import ast
import copy
import json
import re
import zipfile

import pytest
import yaml
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.core.resolve import resolve
from dflash_plan.model.inputs import formats
from dflash_plan.model.launch import generate
from dflash_plan.model.launch.common import (
    DFLASH2_CONFIG,
    SPECFORGE_PR_COMMIT,
    output_dir,
    specforge_requirement,
)
from support import edit
from test_upstream import check_flags, node_calls, specforge_plan, torchrun_worker_env
from upstream import SPECFORGE, SPECULATORS, wheel

B200 = {"gpu": "b200"}

# --- what SpecForge b780087e added, recorded from it (SPECFORGE_PR_COMMIT) ----------------
# specforge/config/schema.py at that commit: TrainingConfig.fsdp_sharding gained
# HYBRID_SHARD; Config._validate_run_structure's online local_colocated rules and its
# HYBRID_SHARD rules; DeploymentConfig, TrainerDeploymentConfig, ModelConfig's keys the
# launch writes and TrainingConfig.tp_size are 0.2.0's (checked against 0.2.0 below).
MAIN_FSDP_SHARDING = ("SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD", "NO_SHARD")
# configs/qwen3.6-27b-dflash2.json at 5943b2f6 (PR #772): the DFlash2 draft config's
# architecture and the dflash_config keys its DFlash2DraftModel reads.
DFLASH2_ARCHITECTURE = "DFlash2DraftModel"
DFLASH2_CONFIG_KEYS = {
    "block_size",
    "conv_group_size",
    "conv_kernel_size",
    "mask_token_id",
    "selector_rank",
    "selector_top_k",
    "target_layer_ids",
}


def pr_colocated_rules(doc: dict, headroom: int) -> None:
    """SpecForge b780087e's rules for an online local_colocated run (schema.py at
    SPECFORGE_PR_COMMIT, Config._validate_run_structure and validate_world_size)."""
    model, data, training = doc["model"], doc["data"], doc["training"]
    trainer = doc["deployment"]["trainer"]
    assert doc["deployment"]["mode"] == "local_colocated" and "disaggregated" not in doc
    assert data["train_data_path"] and "hidden_states_path" not in data  # online
    assert training.get("role", "all") == "all"
    tp, batch = training.get("tp_size", 1), training.get("batch_size", 1)
    world = trainer["nnodes"] * trainer["nproc_per_node"]
    assert world % tp == 0, "world_size must be divisible by training.tp_size"
    assert model.get("sglang_context_length", 10**9) >= data["max_length"] + headroom
    assert model.get("sglang_max_running_requests", tp * batch) >= tp * batch
    assert model.get("sglang_dp_size") in (None, 1)
    assert model.get("sglang_ep_size", 1) <= tp and tp % model.get("sglang_ep_size", 1) == 0
    sharding = training.get("fsdp_sharding", "SHARD_GRAD_OP")
    assert sharding in MAIN_FSDP_SHARDING
    if sharding == "HYBRID_SHARD":
        assert tp > 1 and world > tp, "HYBRID_SHARD needs islands of tp > 1, at least two"
        assert trainer["nproc_per_node"] % tp == 0, "HYBRID_SHARD keeps an island on a node"
    if trainer["nnodes"] > 1:
        assert trainer.get("master_addr")


def offline_twin(doc: dict) -> dict:
    """The colocated document as an offline run of the same trainer deployment: what 0.2.0's
    CLI plans with the same process launch (role all, `_trainer_command`) as b780087e plans the
    colocated online run ("the CLI starts torchrun itself", docs/basic_usage/
    colocated_training.md at 79d101ab); its keys 0.2.0 lacks are left out."""
    twin = copy.deepcopy(doc)
    twin["data"] = {
        "hidden_states_path": "hidden-states",
        **{k: v for k, v in doc["data"].items() if k != "train_data_path"},
    }
    twin["training"].pop("tp_size", None)
    twin["training"].pop("fsdp_sharding", None)
    return twin


def colocated_plans(baseline) -> dict:
    return {
        # one node of 8 B200s: 8 islands of tp 1
        "1-node-tp1": edit(
            baseline,
            target={**B200, "count": 4, "tp": 1},
            drafter={**B200, "count": 4},
            workload={"topology": "colocated"},
        ),
        # one node of 8 B200s: 4 islands of tp 2, HYBRID_SHARD
        "1-node-tp2-dflash2": edit(
            baseline,
            target={**B200, "count": 4, "tp": 2},
            drafter={**B200, "count": 4},
            workload={"topology": "colocated", "drafter": "dflash2", "block_size": None},
        ),
        # two nodes of 8 B200s: 8 islands of tp 2 (a 10 + 6 plan is the same colocated run)
        "2-nodes-tp2": edit(
            baseline,
            target={**B200, "count": 10, "tp": 2},
            drafter={**B200, "count": 6},
            workload={"topology": "colocated"},
            launch={"hosts": ["gpu-a", "gpu-b"]},
        ),
        "2-nodes-tp2-dflash2": edit(
            baseline,
            target={**B200, "count": 8, "tp": 2},
            drafter={**B200, "count": 8},
            workload={"topology": "colocated", "drafter": "dflash2", "block_size": None},
            launch={"hosts": ["gpu-a", "gpu-b"]},
        ),
    }


@pytest.mark.parametrize("fmt", ["specforge", "slurm"])
@pytest.mark.parametrize(
    "shape", ["1-node-tp1", "1-node-tp2-dflash2", "2-nodes-tp2", "2-nodes-tp2-dflash2"]
)
def test_a_colocated_launch_is_what_specforge_runs(
    tmp_path, monkeypatch, catalog, baseline, specforge, shape, fmt
):
    plan = colocated_plans(baseline)[shape]
    script = generate(plan, catalog, fmt)
    gpus = plan.target.count + plan.drafter.count
    doc = yaml.safe_load(script.files["run.yaml"])
    # b780087e keeps 0.2.0's SGLANG_CAPTURE_CONTEXT_HEADROOM
    pr_colocated_rules(doc, specforge.config.SGLANG_CAPTURE_CONTEXT_HEADROOM)
    trainer = doc["deployment"]["trainer"]
    assert trainer["nnodes"] * trainer["nproc_per_node"] == gpus
    assert doc["training"]["tp_size"] == plan.target.tp
    # The sections 0.2.0 already has, through 0.2.0's own models (extra keys forbidden).
    schema = specforge.config
    schema.ModelConfig.model_validate(doc["model"])
    schema.DataConfig.model_validate(doc["data"])
    schema.DeploymentConfig.model_validate(doc["deployment"])
    schema.TrainingConfig.model_validate(
        {k: v for k, v in doc["training"].items() if k != "fsdp_sharding"}
    )
    # The whole run (but b780087e's HYBRID_SHARD) 0.2.0 refuses for being colocated
    # online: hence the script installs b780087e, and says so.
    older = copy.deepcopy(doc)
    older["training"].pop("fsdp_sharding", None)
    with pytest.raises(ValueError, match="colocated online training is no longer supported"):
        schema.Config.model_validate(older)
    assert specforge_requirement(plan) in script.text and SPECFORGE_PR_COMMIT[:8] in script.text
    # Nothing of the disaggregated pipeline: no capture server, producer, or Mooncake.
    ranks = 0
    for _node, calls in node_calls(tmp_path, script):
        assert {c["cmd"] for c in calls} == {"specforge"}
        for call in calls:
            argv, env = call["argv"], call["env"]
            assert "--role" not in argv  # role all
            written = yaml.safe_load((call["cwd"] / argv[argv.index("-c") + 1]).read_text())
            assert written == doc
            # SpecForge's CLI and launch planner on the same call, the offline twin.
            twin = call["cwd"] / "twin.yaml"
            twin.write_text(yaml.safe_dump(offline_twin(written)))
            at = argv.index("-c") + 1
            twin_call = {**call, "argv": [*argv[:at], "twin.yaml", *argv[at + 1 :]]}
            rendered = specforge_plan(specforge, twin_call, monkeypatch)
            assert rendered["role"] == "all"
            (command,) = rendered["commands"]
            launcher = command["argv"]
            visible = env["CUDA_VISIBLE_DEVICES"].split(",")
            assert int(launcher[launcher.index("--nproc_per_node") + 1]) == len(visible)
            assert len(visible) % plan.target.tp == 0  # whole islands on each node
            for worker_env, _ in consumer_workers_all(specforge, twin_call, monkeypatch):
                assert worker_env["CUDA_VISIBLE_DEVICES"] == env["CUDA_VISIBLE_DEVICES"]
                ranks += 1
            if trainer["nnodes"] > 1:
                rank = int(launcher[launcher.index("--node_rank") + 1])
                assert rank == int(env["NODE_RANK"])
                assert launcher[launcher.index("--master_addr") + 1] in ("gpu-a", "h0")
            else:
                assert "--standalone" in launcher
    assert ranks == gpus  # every GPU one rank: a target shard and a drafter rank each


def consumer_workers_all(specforge, call: dict, monkeypatch):
    """consumer_workers for a role-all call (its config has no disaggregated section)."""
    rendered = specforge_plan(specforge, call, monkeypatch)
    (command,) = rendered["commands"]
    cfg = specforge.config.load_config(
        str(call["cwd"] / call["argv"][call["argv"].index("-c") + 1]),
        [a for a in call["argv"] if "=" in a],
    )
    launcher = command["argv"]
    node_rank = int(launcher[launcher.index("--node_rank") + 1]) if "--node_rank" in launcher else 0
    topology = cfg.deployment.trainer
    return [
        (
            torchrun_worker_env(
                call["env"],
                command["env"],
                node_rank=node_rank,
                nnodes=topology.nnodes,
                nproc=topology.nproc_per_node,
                local_rank=local,
                master=str(topology.master_addr or "127.0.0.1"),
                port=str(topology.master_port),
            ),
            launcher,
        )
        for local in range(topology.nproc_per_node)
    ]


# --- the drafter families ---------------------------------------------------------------------


def family_plans(baseline, family: str) -> dict:
    """A disaggregated plan of the family, at the family's own block size and layer count,
    on one node (the measured run's 3 + 1) and on two (8 capture servers on one node, 8
    trainers on the other)."""
    workload = {"drafter": family, "block_size": None}
    if family == "eagle3":
        workload["draft_layers"] = 1
    return {
        "1-node": edit(baseline, workload=workload),
        "2-nodes": edit(
            baseline,
            target={**B200, "count": 8},
            drafter={**B200, "count": 8},
            workload=workload,
            launch={"hosts": ["gpu-a", "gpu-b"]},
        ),
    }


def registered(whl, path: str, decorator: str) -> set[str]:
    """The names a wheel's modules register with `@<decorator>("name")`."""
    names: set[str] = set()
    with zipfile.ZipFile(whl) as archive:
        for member in archive.namelist():
            if re.fullmatch(path, member):
                text = archive.read(member).decode()
                names |= set(re.findall(rf'@{re.escape(decorator)}\("([a-z0-9_]+)"\)', text))
    return names


def class_defaults(whl, module: str, cls_name: str) -> dict:
    """The literal defaults of a pydantic class's `Field(default=...)`s in a wheel."""
    with zipfile.ZipFile(whl) as archive:
        tree = ast.parse(archive.read(module))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    out = {}
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.value, ast.Call):
            for kw in item.value.keywords:
                if kw.arg == "default":
                    out[item.target.id] = ast.literal_eval(kw.value)
    return out


@pytest.mark.parametrize("family", ["dflash2", "eagle3"])
@pytest.mark.parametrize("nodes", ["1-node", "2-nodes"])
def test_speculators_trains_each_family_as_its_trainer_reads_it(
    tmp_path, catalog, baseline, speculators_options, family, nodes
):
    plan = family_plans(baseline, family)[nodes]
    script = generate(plan, catalog, "speculators")
    whl = wheel(SPECULATORS)
    types = registered(whl, r"speculators/models/[a-z0-9_]+/core\.py", "SpeculatorModel.register")
    dflash2 = class_defaults(whl, "speculators/train/config/schema.py", "DFlash2Args")
    ready = f"{output_dir(plan)}/data/dataset_info.json"
    block = resolve(plan, catalog).block_size
    trained = 0
    for _node, calls in node_calls(tmp_path, script, ready):
        for call in calls:
            argv = call["argv"]
            if call["cmd"] == "python" and argv[0] == "scripts/launch_vllm.py":
                # launch_vllm.py appends the final layer: the hidden state DFlash2 and
                # every family's trainer reads as the target's output.
                assert "--no-include-last-layer" not in argv
            if call["cmd"] != "torchrun":
                continue
            words = argv[argv.index("speculators.train") + 1 :]
            check_flags(words, speculators_options["train"], "speculators.train")
            kind = words[words.index("--speculator-type") + 1]
            assert kind == family and kind in types
            if family == "eagle3":
                assert "--block-size" not in words and "--max-anchors" not in words
                # One layer over three taps, its own 32k head (physics/families.py).
                assert words[words.index("--num-layers") + 1] == "1"
                at = words.index("--target-layer-ids") + 1
                assert len(words[at : words.index("--epochs")]) == 3
                assert words[words.index("--draft-vocab-size") + 1] == "32000"
            else:
                assert int(words[words.index("--block-size") + 1]) == block
                assert family != "dflash2" or block == 8  # the family's own default
            if family == "dflash2":
                # The shape SpecForge's draft config carries, speculators' defaults too.
                for key, value in DFLASH2_CONFIG.items():
                    assert int(words[words.index("--" + key.replace("_", "-")) + 1]) == value
                    assert dflash2[key] == value
            trained += 1
    assert trained == len(script.layout.drafter_nodes)


@pytest.mark.parametrize("nodes", ["1-node", "2-nodes"])
@pytest.mark.parametrize("fmt", ["specforge", "slurm"])
def test_specforge_trains_dflash2_from_its_draft_config(
    tmp_path, monkeypatch, catalog, baseline, specforge, nodes, fmt
):
    plan = family_plans(baseline, "dflash2")[nodes]
    resolved = resolve(plan, catalog)
    script = generate(plan, catalog, fmt)
    doc = yaml.safe_load(script.files["run.yaml"])
    draft = json.loads(script.files["draft-config.json"])
    # The run: 0.2.0's schema (DFlash2 adds no run key over DFlash: PR #772's draft
    # architecture rides the draft config file).
    cfg = specforge.config.Config.model_validate(doc)
    assert cfg.model.draft_model_config == "draft-config.json"
    assert cfg.training.strategy == "dflash"  # PR #772: the architecture is the draft's
    assert draft["num_hidden_layers"] == plan.workload.draft_layers
    assert draft["dflash_config"]["target_layer_ids"] == list(resolved.layer_ids)
    # 0.2.0 knows no DFlash2DraftModel (its DFlash provider takes DFlashDraftModel only):
    # b780087e's, as recorded, and the script installs it and says so.
    with zipfile.ZipFile(wheel(SPECFORGE)) as archive:
        providers = archive.read("specforge/algorithms/dflash/providers.py").decode()
    assert 'DRAFT_ARCHITECTURE = "DFlashDraftModel"' in providers
    assert "DFlash2DraftModel" not in providers
    assert draft["architectures"] == [DFLASH2_ARCHITECTURE]
    assert set(draft["dflash_config"]) <= DFLASH2_CONFIG_KEYS
    assert draft["dflash_config"]["block_size"] == resolved.block_size == 8
    assert draft["sliding_window"] == resolved.shape.sliding_window
    assert draft["num_attention_heads"] * draft["head_dim"] == resolved.shape.q_dim
    assert draft["num_key_value_heads"] * draft["head_dim"] == resolved.shape.kv_dim
    assert specforge_requirement(plan) in script.text
    servers = 0
    for _node, calls in node_calls(tmp_path, script):
        for call in calls:
            argv = call["argv"]
            if call["cmd"] == "python" and "sglang.launch_server" in argv:
                assert argv[argv.index("--spec-capture-method") + 1] == "dflash"
                servers += 1
            if call["cmd"] == "specforge":
                written = call["cwd"] / "draft-config.json"
                assert json.loads(written.read_text()) == draft
                if cfg.deployment.disaggregated.managed_local is None:
                    rendered = specforge_plan(specforge, call, monkeypatch)
                    assert rendered["role"] in ("producer", "consumer")
    assert servers == (
        0 if nodes == "1-node" and fmt == "specforge" else len(script.layout.replicas)
    )


# --- what a format cannot run, refused in one line from its row -------------------------------

REFUSALS = [
    ("speculators", {"topology": "colocated"}, "workload.topology colocated"),
    ("kubernetes", {"topology": "colocated"}, "workload.topology colocated"),
    ("skypilot", {"topology": "colocated"}, "workload.topology colocated"),
    ("specforge-legacy", {"drafter": "dflash2"}, "workload.drafter dflash2"),
    ("specforge-legacy", {"drafter": "dspark"}, "workload.drafter dspark"),
    ("specforge", {"drafter": "dspark"}, "workload.drafter dspark"),
    ("speculators", {"drafter": "dspark"}, "workload.drafter dspark"),
    ("kubernetes", {"drafter": "dflash2"}, "workload.drafter dflash2"),
    ("skypilot", {"drafter": "dspark"}, "workload.drafter dspark"),
    ("specforge", {"drafter": "eagle3", "draft_layers": 1}, "workload.drafter eagle3"),
    ("slurm", {"drafter": "eagle3", "draft_layers": 1}, "workload.drafter eagle3"),
]


@pytest.mark.parametrize(("fmt", "workload", "what"), REFUSALS)
def test_a_combination_a_format_cannot_run_is_refused_in_one_line(
    catalog, baseline, fmt, workload, what
):
    plan = edit(
        baseline,
        target={**B200, "count": 4},
        drafter={**B200, "count": 4},
        workload=workload,
    )
    with pytest.raises(PlanError) as refused:
        generate(plan, catalog, fmt)
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith(f"launch.format {fmt} cannot run {what}: ")
    # The reason is the registry row's: one place says it.
    *_, why = formats.refusal(fmt, plan.workload.topology, plan.workload.drafter)
    assert line.endswith(why)
