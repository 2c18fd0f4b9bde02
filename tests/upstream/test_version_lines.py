"""Each upstream line of the version matrix (model/launch/versions.py), checked by
upstream's own code or metadata:

- the line `pinned` by the wheels the harness downloads (tests/upstream.py): specforge 0.2.0's
  and speculators 0.9.0's METADATA pin the SGLang, torch and hs-connectors the line names and
  need its Python; tests/data/wheels/facts.toml (PyPI, 2026-12-03) holds the glibc of the
  SGLang wheels and the CUDA of torch and Mooncake. Its scripts are run against 0.2.0's
  schema, CLI and launch planner by test_upstream.py.
- the line `main-d23761c5` by a RECORDED rules table: SpecForge main at d23761c5 is a git
  commit no package index serves, and GitHub is not reachable where the tests run, so what
  its schema accepts is written down below from the files named (read 2026-12-03 through the
  code index), as the colocated commit b780087e is in test_colocated_families.py. Its
  run.yaml is checked against that table, and, without the one key 0.2.0 lacks
  (receive_buffers), against 0.2.0's own schema; SGLang 0.5.18's pins come from its PyPI
  metadata (facts.toml)."""

from __future__ import annotations

import copy
import re
import zipfile
from typing import Any

import pytest
import yaml
from dflash_plan.model.launch import generate, versions
from launch_shapes import shapes
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from support import edit
from test_upstream import SHAPES, node_calls
from upstream import (
    HS_CONNECTORS,
    SPECFORGE,
    SPECULATORS,
    cuda_majors_required,
    cudart_majors_needed,
    requirement_pins,
    wheel,
    wheel_facts,
    wheel_requires,
)

MAIN = versions.LINES["main-d23761c5"]
PINNED = versions.PINNED

# --- what sgl-project/SpecForge d23761c5 accepts, recorded from it -------------------------
D23761C5 = "d23761c504bb1093872692d2009854956b9eafa4"
# specforge/config/schema.py at D23761C5: the fields of each config model (StrictConfigModel:
# extra keys forbidden), by where they sit in run.yaml ("[]": each item of a list).
D23761C5_FIELDS: dict[str, set[str]] = {
    "": {
        "model",
        "data",
        "training",
        "tracking",
        "profiling",
        "runtime",
        "deployment",
        "run_id",
        "output_dir",
    },
    "model": {
        "target_model_path",
        "draft_model_config",
        "draft_checkpoint_path",
        "draft_num_hidden_layers",
        "draft_block_size",
        "target_backend",
        "shard_target_output",
        "input_modality",
        "trust_remote_code",
        "use_liger_kernel",
        "embedding_key",
        "lm_head_key",
        "vocab_mapping_path",
        "load_target_embedding",
        "aux_hidden_state_layer_ids",
        "torch_dtype",
        "cache_dir",
        "mask_token_id",
        "tokenizer_pad_token_id",
        "sglang_attention_backend",
        "sglang_mem_fraction_static",
        "sglang_disable_radix_cache",
        "sglang_context_length",
        "sglang_enable_nccl_nvls",
        "sglang_enable_symm_mem",
        "sglang_enable_torch_compile",
        "sglang_enable_dp_attention",
        "sglang_enable_dp_lm_head",
        "sglang_ep_size",
        "sglang_max_running_requests",
        "sglang_max_total_tokens",
        "sglang_dp_size",
        "sglang_moe_a2a_backend",
        "sglang_moe_runner_backend",
        "sglang_page_size",
        "sglang_quantization",
        "sglang_fp4_gemm_runner_backend",
        "sglang_mamba_radix_cache_strategy",
        "sglang_max_mamba_cache_size",
        "sglang_swa_full_tokens_ratio",
        "sglang_mamba_full_memory_ratio",
        "sglang_max_prefill_tokens",
        "sglang_linear_attn_prefill_backend",
        "sglang_fp8_gemm_backend",
        "sglang_disable_cuda_graph",
        "sglang_extra_args",
    },
    "data": {
        "train_data_path",
        "prompts_path",
        "hidden_states_path",
        "eval_data_path",
        "eval_hidden_states_path",
        "max_length",
        "chat_template",
        "is_preformatted",
        "train_only_last_turn",
        "build_dataset_num_proc",
        "dataloader_num_workers",
        "cache_dir",
        "cache_key",
        "max_prompts",
    },
    "runtime": {
        "producer_lease",
        "producer_concurrency",
        "in_flight_high_watermark",
        "in_flight_low_watermark",
        "resident_high_watermark_bytes",
        "resident_low_watermark_bytes",
        "feature_store_max_resident_bytes",
        "feature_store_max_quarantined_bytes",
    },
    "deployment": {"mode", "trainer", "disaggregated"},
    "deployment.trainer": {"nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port"},
    "deployment.disaggregated": {
        "control_dir",
        "consumer_state_dir",
        "inbox_server_url",
        "backend",
        "store_root",
        "store_id",
        "server_urls",
        "mooncake_metadata_server",
        "mooncake_master_server_addr",
        "mooncake_local_hostname",
        "mooncake_protocol",
        "mooncake_rdma_devices",
        "producer_segment_size",
        "client_buffer_size",
        "receive_buffers",
        "receive_pool_bytes",
        "idle_timeout_s",
        "peer_wait_timeout_s",
        "producer_hold_s",
        "shutdown_grace_s",
        "managed_local",
    },
    "deployment.disaggregated.managed_local": {
        "trainer_cuda_visible_devices",
        "mooncake",
        "capture_servers",
        "shutdown_grace_s",
    },
    "deployment.disaggregated.managed_local.mooncake": {
        "rpc_port",
        "metadata_port",
        "metrics_port",
        "local_hostname",
        "protocol",
        "rdma_devices",
        "global_segment_size_bytes",
        "local_buffer_size_bytes",
        "startup_timeout_s",
        "probe_timeout_s",
        "default_kv_lease_ttl_ms",
    },
    "deployment.disaggregated.managed_local.capture_servers[]": {
        "port",
        "cuda_visible_devices",
        "tp_size",
        "mem_fraction_static",
        "attention_backend",
        "startup_timeout_s",
        "gpu_put",
        "probe_timeout_s",
        "extra_args",
        "env",
    },
    "training": {
        "strategy",
        "num_epochs",
        "max_steps",
        "total_steps",
        "batch_size",
        "accumulation_steps",
        "fsdp_sharding",
        "learning_rate",
        "lr_scheduler",
        "warmup_ratio",
        "max_grad_norm",
        "optimizer_cpu_offload",
        "ttt_length",
        "attention_backend",
        "tp_size",
        "sp_ulysses_size",
        "sp_ring_size",
        "dist_timeout",
        "lk_loss_type",
        "kl_scale",
        "kl_decay",
        "trim_loss_positions",
        "mtp_objective_chunk_size",
        "num_anchors",
        "loss_decay_gamma",
        "objective_chunk_blocks",
        "loss_type",
        "dpace_alpha",
        "dflash2_selector_loss_alpha",
        "dflash2_selector_warmup_ratio",
        "dflash2_selector_ramp_ratio",
        "dflash2_selector_stop_gradient",
        "lambda_base_start",
        "lambda_base_decay_ratio",
        "dspark_ce_loss_alpha",
        "dspark_l1_loss_alpha",
        "dspark_confidence_head_alpha",
        "num_depths",
        "down_sample_ratio",
        "down_sample_ratio_min",
        "norm_before_residual",
        "save_interval",
        "eval_interval",
        "log_interval",
        "max_checkpoints",
        "compact_teacher",
        "compact_teacher_chunk_size",
        "resume_from",
        "role",
        "seed",
        "prompt_seed",
    },
}
# DisaggregatedDeploymentConfig.receive_buffers: Literal["pageable", "pinned", "cuda"].
D23761C5_RECEIVE_BUFFERS = ("pageable", "pinned", "cuda")
# SGLANG_CAPTURE_CONTEXT_HEADROOM (schema.py): managed-local capture servers need
# model.sglang_context_length >= data.max_length + 7.
D23761C5_CONTEXT_HEADROOM = 7
# docs/recipes/qwen3.8-27b-dflash2-disaggregated.md at D23761C5, "Required source
# revisions": the capture patch every capture host applies, and the measured Mooncake.
D23761C5_PATCH_TARGET = "v0.5.18"
D23761C5_MOONCAKE = ("mooncake-transfer-engine-cuda13", "0.3.13.post1")


def unknown_keys(doc: dict[str, Any], where: str = "") -> list[str]:
    """Keys of doc that D23761C5's schema does not have (it forbids extra keys)."""
    fields = D23761C5_FIELDS.get(where)
    if fields is None:  # a free-form value (env, extra_args) or a section not written
        return []
    out = []
    for key, value in doc.items():
        path = f"{where}.{key}" if where else key
        if key not in fields:
            out.append(path)
        elif isinstance(value, dict):
            out += unknown_keys(value, path)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                out += unknown_keys(item, f"{path}[]")
    return out


def d23761c5_rules(doc: dict[str, Any]) -> list[str]:
    """What D23761C5's validators (Config._validate_run_structure,
    DisaggregatedDeploymentConfig._validate_store, RuntimeConfig._validate_watermarks)
    refuse in an online disaggregated run.yaml as the launch writes it."""
    out = unknown_keys(doc)
    deployment = doc.get("deployment", {})
    dis = deployment.get("disaggregated") or {}
    trainer = deployment.get("trainer", {})
    training, model, data = doc.get("training", {}), doc.get("model", {}), doc.get("data", {})
    managed = dis.get("managed_local")
    receive = dis.get("receive_buffers", "pinned")
    if deployment.get("mode") != "disaggregated":
        out.append("online training requires deployment.mode=disaggregated")
    if dis.get("backend") != "mooncake":
        out.append("online disaggregated training requires backend=mooncake")
    if receive not in D23761C5_RECEIVE_BUFFERS:
        out.append(f"receive_buffers {receive!r}")
    tcp = managed is not None and managed.get("mooncake", {}).get("protocol", "tcp") != "rdma"
    if receive == "cuda" and tcp:
        out.append("receive_buffers=cuda needs an RDMA Mooncake transport")
    if managed is None and trainer.get("nnodes", 1) > 1 and not dis.get("consumer_state_dir"):
        out.append("multi-node online consumers require consumer_state_dir")
    if any(training.get(k, 1) != 1 for k in ("tp_size", "sp_ulysses_size", "sp_ring_size")):
        out.append("the disaggregated online consumer keeps training.tp_size/sp sizes at 1")
    if managed is not None:
        if trainer.get("nnodes", 1) != 1:
            out.append("managed_local requires deployment.trainer.nnodes=1")
        if training.get("resume_from") is not None:
            out.append("managed_local does not support resume")
        if len(managed["trainer_cuda_visible_devices"]) != trainer.get("nproc_per_node", 1):
            out.append("trainer_cuda_visible_devices count != nproc_per_node")
        context = model.get("sglang_context_length")
        if context is not None and context < data.get("max_length", 2048) + 7:
            out.append("managed_local sglang_context_length below max_length + 7")
    runtime = doc.get("runtime", {})
    if runtime.get("in_flight_low_watermark", 192) > runtime.get("in_flight_high_watermark", 256):
        out.append("in_flight_low_watermark > in_flight_high_watermark")
    return out


def with_overrides(doc: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """doc with a call's dotted `section.key=value` overrides applied (SpecForge's
    apply_overrides: the value parsed as YAML)."""
    out = copy.deepcopy(doc)
    for item in (a for a in argv if "=" in a and not a.startswith("-")):
        path, value = item.split("=", 1)
        *parents, last = path.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = yaml.safe_load(value)
    return out


def test_the_recorded_rules_refuse_what_d23761c5_refuses(catalog, baseline):
    good = yaml.safe_load(
        generate(baseline, catalog, "specforge", upstream=MAIN.name).files["run.yaml"]
    )
    assert d23761c5_rules(good) == []
    managed = good["deployment"]["disaggregated"]["managed_local"]
    bad = {
        "a key no model has": ("training", "deployment_mode", "x"),
        "a receive mode it lacks": ("deployment.disaggregated", "receive_buffers", "device"),
        "device receive over tcp": ("deployment.disaggregated", "receive_buffers", "cuda"),
        "a short context": ("model", "sglang_context_length", good["data"]["max_length"]),
        "two trainer nodes managed": ("deployment.trainer", "nnodes", 2),
    }
    for why, (where, key, value) in bad.items():
        doc = copy.deepcopy(good)
        node = doc
        for part in where.split("."):
            node = node[part]
        node[key] = value
        assert d23761c5_rules(doc), why
    assert managed["mooncake"].get("protocol", "tcp") == "tcp"


def main_plans(baseline) -> dict:
    every = {name: shapes(baseline)[name] for name in SHAPES}
    every["dflash2"] = edit(baseline, workload={"drafter": "dflash2"})
    every["pinned-receive"] = edit(
        baseline, workload={"transport": "mooncake", "receive": "pinned"}
    )
    return every


# The kubernetes format refuses DFlash2 (its pods get run.yaml only, not the draft config).
CASES = [
    (fmt, shape)
    for fmt in ("specforge", "slurm", "kubernetes")
    for shape in (*SHAPES, "dflash2", "pinned-receive")
    if (fmt, shape) != ("kubernetes", "dflash2")
]


@pytest.mark.parametrize(("fmt", "shape"), CASES)
def test_d23761c5_accepts_every_newer_line_run(tmp_path, catalog, baseline, specforge, shape, fmt):
    plan = main_plans(baseline)[shape]
    if fmt == "kubernetes":
        plan = edit(plan, launch={"volume_claim": "work"})
    script = generate(plan, catalog, fmt, upstream=MAIN.name)
    written = yaml.safe_load(script.files["run.yaml"])
    expected = {"host": "pageable", "pinned": "pinned", "device": "cuda"}[plan.workload.receive]
    assert written["deployment"]["disaggregated"]["receive_buffers"] == expected
    checked = 0
    for _node, calls in node_calls(tmp_path, script):
        for call in (c for c in calls if c["cmd"] == "specforge"):
            config = call["cwd"] / call["argv"][call["argv"].index("-c") + 1]
            doc = with_overrides(yaml.safe_load(config.read_text()), call["argv"])
            assert d23761c5_rules(doc) == [], call["argv"]
            # Everything but the key 0.2.0 lacks goes through 0.2.0's own schema, which
            # d23761c5's extends (the recorded fields hold every 0.2.0 key written).
            del doc["deployment"]["disaggregated"]["receive_buffers"]
            specforge.config.Config.model_validate(doc)
            checked += 1
    assert checked


def skypilot_setup(text: str) -> list[str]:
    (setup,) = [d["setup"] for d in yaml.safe_load_all(text) if d and "setup" in d]
    return setup.splitlines()


def test_the_newer_lines_setup_applies_the_patch_its_recipe_names(catalog, baseline):
    setup = skypilot_setup(generate(baseline, catalog, "skypilot", upstream=MAIN.name).text)
    assert MAIN.patch_target == D23761C5_PATCH_TARGET
    assert MAIN.pin("specforge").version == MAIN.pin("capture_patch").version == D23761C5
    assert setup[-1].endswith(
        f'apply_sglang_spec_capture_patch.sh" --target {D23761C5_PATCH_TARGET}'
    )
    assert (MAIN.pin("mooncake").package, MAIN.pin("mooncake").version) == D23761C5_MOONCAKE


def metadata(whl) -> str:
    with zipfile.ZipFile(whl) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


def requires_python(whl) -> SpecifierSet:
    (line,) = [x for x in metadata(whl).splitlines() if x.startswith("Requires-Python:")]
    return SpecifierSet(line.split(":", 1)[1].strip())


def glibc(facts: dict) -> str:
    """The glibc floor of a manylinux wheel, from its file name (manylinux_2_34: 2.34)."""
    (major, minor) = re.search(r"manylinux_(\d+)_(\d+)_", facts["file"]).groups()
    return f"{major}.{minor}"


def test_the_pinned_line_is_what_the_released_wheels_pin():
    assert PINNED.pin("specforge").version == SPECFORGE[1]
    assert PINNED.pin("speculators").version == SPECULATORS[1]
    assert PINNED.pin("hs_connectors").version == HS_CONNECTORS[1]
    specforge_pins = requirement_pins(wheel_requires(wheel(SPECFORGE)))
    assert specforge_pins["sglang"] == PINNED.pin("sglang").version
    assert specforge_pins["torch"] == PINNED.pin("torch").version
    speculators_pins = requirement_pins(wheel_requires(wheel(SPECULATORS)))
    assert speculators_pins["hs-connectors"] == PINNED.pin("hs_connectors").version
    # The Python the line names is the floor of both wheels: no lower one installs them.
    for pin in (SPECFORGE, SPECULATORS):
        floor = requires_python(wheel(pin))
        assert (
            PINNED.python in floor
            and f"{PINNED.python[:-1]}{int(PINNED.python[-1]) - 1}" not in floor
        )
    # The glibc the SGLang wheel is built for, and the CUDA of torch and of the Mooncake build.
    assert glibc(wheel_facts("sglang", PINNED.pin("sglang").version)) == PINNED.glibc
    torch = wheel_facts("torch", PINNED.pin("torch").version)["requires_dist"]
    assert cuda_majors_required(torch) == {PINNED.cuda_major}
    mooncake = PINNED.pin("mooncake")
    needed = wheel_facts(mooncake.package, mooncake.version)["needed"]
    assert set(cudart_majors_needed(needed).values()) == {PINNED.cuda_major}


def test_the_newer_line_is_what_sglang_0_5_18_pins():
    facts = wheel_facts("sglang", MAIN.pin("sglang").version)
    pins = requirement_pins(facts["requires_dist"])
    assert pins["torch"] == MAIN.pin("torch").version
    assert glibc(facts) == MAIN.glibc
    (cuda_python,) = [Requirement(r) for r in facts["requires_dist"] if r.startswith("cuda-python")]
    (floor,) = [s.version for s in cuda_python.specifier if s.operator == ">="]
    assert int(floor.split(".")[0]) == MAIN.cuda_major
    mooncake = MAIN.pin("mooncake")
    needed = wheel_facts(mooncake.package, mooncake.version)["needed"]
    assert set(cudart_majors_needed(needed).values()) == {MAIN.cuda_major}
