"""Every generated script, run against stub commands, checked by the pinned upstream code:
SpecForge's own schema, override handling, argument parser and launch planner (the
specforge 0.2.0 wheel), speculators' trainer and prepare-data options and hs-connectors'
backend options (the 0.9.0 wheels), and flag tables for what no wheel carries (named
upstream commits). See docs/launch.md."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import pytest
import yaml
from dflash_plan.model.launch import generate
from dflash_plan.model.launch.common import output_dir
from hypothesis import example, given, settings
from hypothesis import strategies as st
from k8s_schema import manifest, pods
from launch_shapes import shapes
from preflight_stubs import PREFLIGHT_STUBS, PYTHON_PROBE, wanted_gpus
from upstream import (
    HS_CONNECTORS,
    SPECFORGE,
    cuda_majors_required,
    cudart_majors_needed,
    requirement_pins,
    wheel,
    wheel_facts,
    wheel_name,
    wheel_requires,
)

SHAPES = ("builtin", "b200-6+2-tp2", "two-nodes-shared", "trainers-span-two")
SLURM_HOSTS = ("h0", "h1", "h2")

# vllm-project/speculators scripts/launch_vllm.py at c05b95b3 (no wheel carries it): its own
# flags; the backend flags come from the hs-connectors wheel.
LAUNCH_VLLM_FLAGS = {
    "--hidden-states-backend",
    "--target-layer-ids",
    "--include-last-layer",
    "--no-include-last-layer",
    "--dry-run",
    "--trust-remote-code",
}
# vLLM `serve` flags the script passes after `--` (vLLM engine arguments).
VLLM_SERVE_FLAGS = {
    "--data-parallel-size",
    "--tensor-parallel-size",
    "--port",
    "--max-model-len",
    "--data-parallel-size-local",
    "--data-parallel-address",
    "--data-parallel-rpc-port",
    "--headless",
    "--data-parallel-start-rank",
    "--trust-remote-code",
    # the template vLLM renders conversations with (vllm/entrypoints/openai/cli_args.py
    # BaseFrontendArgs.chat_template: "The file path to the chat template, or the template
    # in single-line form"), which prepare-data's render endpoint applies server-side
    "--chat-template",
}
# sgl-project/SpecForge 40d8feff (the commit the legacy format pins: the last with the
# script) scripts/train_dflash.py and specforge/args.py (SGLangBackendArgs): the legacy
# trainer was removed in d5883d5b, so no wheel holds it.
LEGACY_FLAGS = {
    "--accumulation-steps",
    "--attention-backend",
    "--batch-size",
    "--block-size",
    "--build-dataset-num-proc",
    "--cache-dir",
    "--chat-template",
    "--dataloader-num-workers",
    "--dpace-alpha",
    "--dspark-ce-loss-alpha",
    "--dspark-confidence-head-alpha",
    "--dspark-l1-loss-alpha",
    "--loss-type",
    "--dist-timeout",
    "--draft-config-path",
    "--embedding-key",
    "--eval-data-path",
    "--eval-interval",
    "--is-preformatted",
    "--learning-rate",
    "--lm-head-key",
    "--log-interval",
    "--loss-decay-gamma",
    "--mask-token-id",
    "--max-grad-norm",
    "--max-length",
    "--num-anchors",
    "--num-draft-layers",
    "--num-epochs",
    "--output-dir",
    "--resume",
    "--save-interval",
    "--seed",
    "--target-model-backend",
    "--target-model-path",
    "--tp-size",
    "--train-data-path",
    "--trust-remote-code",
    "--warmup-ratio",
    "--sglang-attention-backend",
    "--sglang-mem-fraction-static",
    "--sglang-context-length",
    "--sglang-ep-size",
}


def test_a_wheel_not_fetched_fails_in_one_line_naming_the_fetch(monkeypatch, tmp_path):
    """The tests read the wheels and never download them (scripts/fetch_upstream.py does)."""
    monkeypatch.setenv("DFLASH_PLAN_WHEEL_CACHE", str(tmp_path))
    fetch = r"run \.venv/bin/python scripts/fetch_upstream\.py"
    with pytest.raises(pytest.fail.Exception, match=rf"specforge==0\.2\.0 is not in .*: {fetch}$"):
        wheel(SPECFORGE)
    (tmp_path / wheel_name(SPECFORGE)).write_bytes(b"a truncated download")
    with pytest.raises(
        pytest.fail.Exception, match=rf"not the pinned specforge==0\.2\.0 .*: {fetch}$"
    ):
        wheel(SPECFORGE)
    assert not [p for p in tmp_path.iterdir() if p.name != wheel_name(SPECFORGE)]


@pytest.fixture(scope="session")
def build_target_layer_ids():
    """SpecForge's own layer derivation, the one function taken out of
    specforge/modeling/draft/dflash.py (the module imports torch)."""
    whl = wheel(SPECFORGE)
    with zipfile.ZipFile(whl) as archive:
        tree = ast.parse(archive.read("specforge/modeling/draft/dflash.py"))
    fn = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "build_target_layer_ids"
    )
    namespace: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "dflash.py", "exec"), namespace)
    return namespace["build_target_layer_ids"]


# --- running a script against stubs -----------------------------------------------------------

# Bash builtins only (the stubs run hundreds of times); TERM is ignored so that a script
# stopping its background services cannot cut a record short; .args is written last.
RECORD = (
    '#!/bin/bash\ntrap "" TERM\nf="$STUB_LOG/${0##*/}.${EPOCHREALTIME/./}.$$"\n'
    'pwd > "$f.cwd"\n'
    'for v in $(compgen -e); do printf "%s=%s\\0" "$v" "${!v}"; done > "$f.env"\n'
    'printf "%s\\0" "$@" > "$f.args"\n'
)
# srun runs its command in place (options dropped), so steps reach the other stubs; a step
# on host hN finds the fabric address 10.0.0.N.
SRUN = (
    '#!/bin/bash\nwhile [[ "$1" == -* ]]; do if [[ "$1" == -w ]]; then '
    'export DFLASH_FABRIC_IP="10.0.0.${2#h}"; shift; fi; shift; done\nexec "$@"\n'
)


def fabric(node: int) -> str:
    """The fabric address the sandbox gives node `node` (DFLASH_FABRIC_IP)."""
    return f"10.0.0.{node}"


def run(
    tmp_path: Path,
    text: str,
    node_rank: int | None = None,
    ready: str | tuple[str, ...] | None = None,
    shell: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
) -> list[dict]:
    """Run the script with every external command stubbed; each call's argv, env and cwd.
    `ready`: a file another node would have written (the prepared dataset); `shell`: more
    of the environment the script starts in."""
    bin_dir, log, work = tmp_path / "bin", tmp_path / "log", tmp_path / f"work{node_rank}"
    for folder in (bin_dir, log, work):
        folder.mkdir(exist_ok=True)
    for name in (ready,) if isinstance(ready, str) else ready or ():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).touch()
    stubs = {
        name: RECORD
        for name in ("python", "specforge", "torchrun", "mooncake_master", "curl", "speculators")
    }
    # curl finds every service up, except the Mooncake master that a SkyPilot node running
    # only capture servers watches to know when the run is over.
    stubs["curl"] = RECORD + 'case "$*" in *dflash-plan-run-alive*) exit 7 ;; esac\n'
    # getent ahostsv4 NAME: the address SKY_HOSTS (NAME=ADDRESS lines) gives NAME.
    # Else the plan's and Slurm's host names nodeN and hN are 10.0.0.N, an address is itself,
    # another name 10.0.0.200 (unless STUB_UNRESOLVED names it).
    stubs["getent"] = (
        '#!/bin/bash\nwhile IFS== read -r name addr; do [ "$name" = "$2" ] && '
        '{ echo "$addr STREAM $2"; exit 0; }; done <<< "${SKY_HOSTS:-}"\n'
        'case "$2" in node[0-9]*) echo "10.0.0.${2#node} STREAM $2" ;; '
        'h[0-9]*) echo "10.0.0.${2#h} STREAM $2" ;; [0-9]*.*) echo "$2 STREAM $2" ;; '
        '*) for n in ${STUB_UNRESOLVED:-}; do [ "$n" = "$2" ] && exit 2; done; '
        'echo "10.0.0.200 STREAM $2" ;; esac\n'
    )
    stubs["srun"] = SRUN
    stubs.update(PREFLIGHT_STUBS)
    stubs["python"] = "#!/bin/bash\n" + PYTHON_PROBE + RECORD.removeprefix("#!/bin/bash\n")
    stubs.update(extra or {})  # a test's own stubs
    stubs["scontrol"] = "#!/bin/bash\nprintf '%s\\n' " + " ".join(SLURM_HOSTS) + "\n"
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    # The legacy format runs from a SpecForge checkout that has its trainer.
    (work / "scripts").mkdir(exist_ok=True)
    (work / "scripts" / "train_dflash.py").touch()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "HOME": str(tmp_path),
        "SLURM_JOB_NODELIST": "h[0-2]",
        "DFLASH_FABRIC_IP": fabric(node_rank or 0),
        "STUB_GPU_NAME": wanted_gpus(text),
        **(shell or {}),
    }
    if node_rank is not None:
        env["NODE_RANK"] = str(node_rank)
    # The scripts stop their background services with `kill` on exit; here `kill` waits
    # for them instead, so that every stub finishes its record.
    done = subprocess.run(
        ["bash", "-c", "kill() { wait; }\n" + text],
        cwd=work,
        env=env,
        check=False,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"the script failed ({done.returncode}): {done.stderr[-2000:]}"
    calls = []
    for args in sorted(log.glob("*.args")):
        stem = str(args)[:-5]
        environ = dict(
            item.split("=", 1)
            for item in Path(stem + ".env").read_text().split("\0")
            if "=" in item
        )
        calls.append(
            {
                "cmd": args.name.split(".")[0],
                "t_us": int(args.name.split(".")[1]),  # when it started (EPOCHREALTIME)
                "argv": args.read_text().split("\0")[:-1],
                "env": environ,
                "cwd": Path(Path(stem + ".cwd").read_text().strip()),
                "started": int(args.name.split(".")[1]),  # EPOCHREALTIME, microseconds
            }
        )
        for suffix in (".args", ".env", ".cwd"):
            Path(stem + suffix).unlink()
    return calls


def node_calls(
    tmp_path: Path,
    script,
    ready: str | tuple[str, ...] | None = None,
    extra: dict[str, str] | None = None,
) -> list[tuple[int, list[dict]]]:
    """Each node's calls (`extra`: more stubs, e.g. recording ones)."""
    if script.format == "kubernetes":
        # Each pod's command, in the environment the pod sees (tests/k8s_schema.py).
        every = pods(manifest(script.text))
        return [
            (i, run(tmp_path, pod.argv[2], i, shell=pod.env, extra=extra))
            for i, pod in enumerate(every)
        ]
    if script.format == "slurm":
        return [(-1, run(tmp_path, script.text, extra=extra))]
    if script.layout.nodes == 1:
        return [(0, run(tmp_path, script.text, extra=extra))]
    return [
        (n, run(tmp_path, script.text, n, ready, extra=extra)) for n in range(script.layout.nodes)
    ]


# --- SpecForge ------------------------------------------------------------------------------


def specforge_plan(specforge, call: dict, monkeypatch) -> dict | None:
    """SpecForge's own CLI on the recorded call, with --plan: its parser, config loader,
    overrides and launch planner, in the call's environment and folder."""
    argv = call["argv"]
    monkeypatch.chdir(call["cwd"])
    with monkeypatch.context() as patch:
        patch.setattr(os, "environ", dict(call["env"]))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                assert specforge.cli.main([argv[0], "--plan", *argv[1:]]) == 0
            except ValueError as err:
                # Managed-local plans need the resolved algorithm (the training stack).
                assert "requires a resolved algorithm registration" in str(err), err
                return None
    return json.loads(out.getvalue())


@pytest.mark.parametrize("fmt", ["specforge", "slurm", "kubernetes"])
@pytest.mark.parametrize("shape", SHAPES)
def test_specforge_accepts_every_script(
    tmp_path, monkeypatch, catalog, baseline, specforge, build_target_layer_ids, shape, fmt
):
    plan = shapes(baseline)[shape]
    if fmt == "kubernetes":  # several trainer pods share a volume
        plan = plan.model_copy(
            update={"launch": plan.launch.model_copy(update={"volume_claim": "work"})}
        )
    script = generate(plan, catalog, fmt)
    config_path = None
    model = catalog.models[plan.workload.target_model]
    layers = build_target_layer_ids(model.n_layers, plan.workload.draft_layers)
    # The YAML as written, through SpecForge's schema (extra keys forbidden).
    written = specforge.config.Config.model_validate(yaml.safe_load(script.files["run.yaml"]))
    for _node, calls in node_calls(tmp_path, script):
        servers = [c for c in calls if c["cmd"] == "python"]
        trainers = [c for c in calls if c["cmd"] == "specforge"]
        for call in trainers:
            config_path = call["cwd"] / call["argv"][call["argv"].index("-c") + 1]
            overrides = [a for a in call["argv"] if "=" in a]
            cfg = specforge.config.load_config(str(config_path), overrides)
            assert cfg.model.draft_num_hidden_layers == plan.workload.draft_layers
            rendered = specforge_plan(specforge, call, monkeypatch)
            argv = call["argv"]
            role = argv[argv.index("--role") + 1] if "--role" in argv else "auto"
            if rendered is None:
                assert cfg.deployment.disaggregated.managed_local is not None
                continue
            assert rendered["role"] == role
            host = call["env"]["MOONCAKE_LOCAL_HOSTNAME"]
            head = cfg.deployment.disaggregated.mooncake_master_server_addr.split(":")[0]
            if role == "producer":
                worker_env = rendered["worker_env"]
                assert call["env"]["CUDA_VISIBLE_DEVICES"] == ""
            else:
                (command,) = rendered["commands"] or [{"env": rendered["worker_env"], "argv": []}]
                worker_env = command["env"]
                gpus = call["env"]["CUDA_VISIBLE_DEVICES"].split(",")
                if command["argv"]:
                    nproc = command["argv"][command["argv"].index("--nproc_per_node") + 1]
                    assert int(nproc) == len(gpus)
                node_servers = {
                    d
                    for s in servers
                    if s["env"]["MOONCAKE_LOCAL_HOSTNAME"] == host
                    for d in s["env"]["CUDA_VISIBLE_DEVICES"].split(",")
                }
                assert not node_servers & set(gpus), "the trainer shares GPUs with servers"
            assert worker_env["MOONCAKE_METADATA_SERVER"] == f"http://{head}:35880/metadata"
            assert worker_env["MOONCAKE_MASTER_SERVER_ADDR"] == f"{head}:35551"
            state = cfg.deployment.disaggregated.consumer_state_dir
            assert state.startswith("/tmp/") and not state.startswith(cfg.output_dir)
        for server in servers:
            argv, env = server["argv"], server["env"]
            i = argv.index("--spec-capture-aux-layer-ids")
            ids = [int(a) for a in argv[i + 1 : argv.index("--host")]]
            assert ids == layers
            assert env["MOONCAKE_MASTER_SERVER_ADDR"].endswith(":35551")
            assert env["MOONCAKE_METADATA_SERVER"].endswith(":35880/metadata")
            assert int(env["MOONCAKE_GLOBAL_SEGMENT_SIZE"]) >= 1 << 30
            # The node's fabric address, found on the node (here DFLASH_FABRIC_IP).
            assert env["MOONCAKE_LOCAL_HOSTNAME"] == env["MC_TCP_BIND_ADDRESS"]
            # (a pod's: its IP, 10.1.<job>.<index> in tests/k8s_schema.py)
            assert env["MOONCAKE_LOCAL_HOSTNAME"].startswith(("10.0.0.", "10.1."))
            tp = int(argv[argv.index("--tp-size") + 1])
            assert len(env["CUDA_VISIBLE_DEVICES"].split(",")) == tp
            fraction = float(argv[argv.index("--mem-fraction-static") + 1])
            assert fraction == written.model.sglang_mem_fraction_static
    assert config_path is not None
    doc = yaml.safe_load(config_path.read_text())
    assert doc == yaml.safe_load(script.files["run.yaml"])


# --- speculators ----------------------------------------------------------------------------


def check_flags(words: list[str], options: dict, where: str) -> None:
    """Every --flag is an upstream option; a value is one of its choices and parses."""
    i = 0
    while i < len(words):
        flag = words[i]
        assert flag.startswith("--"), f"{where}: stray argument {flag!r}"
        assert flag in options, f"{where}: {flag} is not an upstream option"
        option = options[flag]
        values = []
        i += 1
        while i < len(words) and not words[i].startswith("--"):
            values.append(words[i])
            i += 1
        if option.kind == "list":
            assert values, f"{where}: {flag} needs values"
            continue
        if option.kind == "bool" or flag in ("--trust-remote-code", "--overwrite"):
            assert len(values) <= 1
            continue
        assert len(values) == 1, f"{where}: {flag} takes one value, got {values}"
        if option.choices:
            assert values[0] in option.choices, f"{where}: {flag} {values[0]}"
        if option.kind == "int":
            int(values[0])
        if option.kind == "float":
            float(values[0])


@pytest.mark.parametrize("shape", SHAPES)
def test_speculators_accepts_every_script(tmp_path, catalog, baseline, speculators_options, shape):
    plan = shapes(baseline)[shape]
    script = generate(plan, catalog, "speculators")
    seen = set()
    ready = f"{output_dir(plan)}/data/dataset_info.json"
    for node, calls in node_calls(tmp_path, script, ready):
        for call in calls:
            argv = call["argv"]
            if call["cmd"] == "torchrun":
                words = argv[argv.index("speculators.train") + 1 :]
                check_flags(words, speculators_options["train"], "speculators.train")
                assert "--no-include-last-layer" not in words
                seen.add("train")
            elif call["cmd"] == "speculators":
                assert argv[0] == "prepare-data"
                check_flags(argv[1:], speculators_options["prepare"], "prepare-data")
                seen.add("prepare")
            elif call["cmd"] == "python" and argv[:2] == ["-m", "http.server"]:
                # The first trainer node's liveness server: flags the stdlib's takes.
                assert script.layout.nodes > 1 and argv[2:6:2] == ["--bind", "--directory"]
                assert (
                    len(argv) == 7
                    and argv[-1] == "35890"
                    and {"--bind", "--directory"} <= http_server_flags()
                )
                seen.add("alive")
            elif call["cmd"] == "python":
                assert argv[0] == "scripts/launch_vllm.py"
                split = argv.index("--")
                own = {
                    **speculators_options["launch"],
                    **{
                        f: speculators_options["launch"].get(f, _plain(f))
                        for f in LAUNCH_VLLM_FLAGS
                    },
                }
                check_flags(argv[2:split], own, "launch_vllm.py")
                check_flags(
                    argv[split + 1 :], {f: _plain(f) for f in VLLM_SERVE_FLAGS}, "vllm serve"
                )
                seen.add("vllm")
            if script.layout.nodes > 1 and call["cmd"] in ("torchrun", "python"):
                assert call["env"]["MOONCAKE_LOCAL_HOSTNAME"] == fabric(node)
    assert seen == {"train", "prepare", "vllm"} | ({"alive"} if script.layout.nodes > 1 else set())


def http_server_flags() -> set[str]:
    """The options `python -m http.server --help` lists (this Python's stdlib)."""
    out = subprocess.run(
        [sys.executable, "-m", "http.server", "--help"], capture_output=True, text=True, check=True
    ).stdout
    return set(re.findall(r"--[a-z-]+", out))


def _plain(flag: str):
    from upstream import Option

    kind = (
        "list"
        if flag == "--target-layer-ids"
        else (
            "bool"
            if flag
            in (
                "--headless",
                "--dry-run",
                "--include-last-layer",
                "--no-include-last-layer",
                "--trust-remote-code",
            )
            else "str"
        )
    )
    return Option(flag, kind=kind)


@pytest.mark.parametrize("mode", ["online", "offline"])
@pytest.mark.parametrize("shape", ["builtin", "two-nodes-8+8"])
def test_speculators_renders_the_data_with_the_plans_chat_template(
    tmp_path, catalog, baseline, shape, mode
):
    # prepare-data has no template option: vLLM renders each conversation
    # (speculators/data_generation/preprocessing.py: "With a render endpoint the chat
    # template is applied server-side"), so the plan's template goes to vLLM.
    from dflash_plan.model.launch.common import capture_done
    from support import edit

    template = "./templates/my chat.jinja"
    plan = edit(shapes(baseline)[shape], launch={"chat_template": template})
    if mode == "offline":
        plan = offline(plan, "speculators")
    script = generate(plan, catalog, "speculators")
    t_nodes = script.layout.target_nodes
    ready = (
        f"{output_dir(plan)}/data/dataset_info.json",
        *(f"{capture_done(plan)}.{i}" for i in range(len(t_nodes))),
    )
    servers = [
        c["argv"]
        for _, calls in node_calls(tmp_path, script, ready)
        for c in calls
        if c["cmd"] == "python" and c["argv"][0] == "scripts/launch_vllm.py"
    ]
    assert len(servers) == len(t_nodes)
    for argv in servers:
        serve = argv[argv.index("--") + 1 :]
        assert serve[serve.index("--chat-template") + 1] == template
    # Unset: vLLM renders with the model's own template.
    plan = edit(plan, launch={"chat_template": None})
    assert "--chat-template" not in generate(plan, catalog, "speculators").text


def test_speculators_warns_of_a_template_name_vllm_reads_as_a_file(catalog, baseline):
    # vLLM's load_chat_template opens the value as a file, and takes it as the template
    # itself only when it holds one of "{}\n": "qwen" (SpecForge's name) must be a file.
    from support import edit

    text = generate(edit(baseline, launch={"chat_template": "qwen"}), catalog, "speculators").text
    assert "--chat-template qwen" in text
    assert "warning: vLLM reads 'qwen' as a file name" in text
    for fine in ("{{ messages }}", "./qwen.jinja"):
        text = generate(edit(baseline, launch={"chat_template": fine}), catalog, "speculators").text
        assert "--chat-template" in text and "vLLM reads" not in text


# --- legacy and template ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_legacy_flags_are_the_legacy_trainers(tmp_path, catalog, baseline, shape):
    plan = shapes(baseline)[shape]
    try:
        script = generate(plan, catalog, "specforge-legacy")
    except Exception as err:  # e.g. drafters not filling whole nodes
        assert "specforge-legacy" in str(err)
        return
    for _, calls in node_calls(tmp_path, script):
        (call,) = [c for c in calls if c["cmd"] == "torchrun"]
        words = call["argv"][call["argv"].index("scripts/train_dflash.py") + 1 :]
        flags = {w for w in words if w.startswith("--")}
        assert flags <= LEGACY_FLAGS, flags - LEGACY_FLAGS


@pytest.mark.parametrize("shape", SHAPES)
def test_template_on_every_shape(tmp_path, catalog, baseline, shape):
    from support import edit

    plan = edit(
        shapes(baseline)[shape],
        launch={
            "template": "torchrun --nnodes {nnodes} --node_rank {node_rank} --master_addr "
            "{master_addr} --devices {drafter_devices} train.py"
        },
    )
    script = generate(plan, catalog, "template")
    for node, calls in node_calls(tmp_path, script):
        (call,) = calls
        argv = call["argv"]
        assert argv[argv.index("--master_addr") + 1] == script.layout.hosts[0]
        assert argv[argv.index("--node_rank") + 1] == str(node)


# --- the consumer as torchrun's workers see it ----------------------------------------------


def torchrun_worker_env(
    inherited: dict,
    command_env: dict,
    *,
    node_rank: int,
    nnodes: int,
    nproc: int,
    local_rank: int,
    master: str,
    port: str,
) -> dict:
    """A trainer worker's environment: what torchrun inherits (the consumer's environment
    with SpecForge's command env on top, `_spawn` in specforge/launch_plan.py: None unsets)
    plus what torchrun's local elastic agent sets for each worker
    (torch/distributed/elastic/agent/server/local_elastic_agent.py, _start_workers). It
    sets no NODE_RANK: a worker sees the one it inherits."""
    env = dict(inherited)
    for key, value in command_env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env.update(
        LOCAL_RANK=str(local_rank),
        RANK=str(node_rank * nproc + local_rank),
        GROUP_RANK=str(node_rank),
        ROLE_RANK=str(node_rank * nproc + local_rank),
        ROLE_NAME="default",
        LOCAL_WORLD_SIZE=str(nproc),
        WORLD_SIZE=str(nnodes * nproc),
        GROUP_WORLD_SIZE=str(nnodes),
        ROLE_WORLD_SIZE=str(nnodes * nproc),
        MASTER_ADDR=master,
        MASTER_PORT=port,
        TORCHELASTIC_RESTART_COUNT="0",
        TORCHELASTIC_MAX_RESTARTS="0",
        TORCHELASTIC_RUN_ID="none",
    )
    return env


def consumer_workers(specforge, call: dict, monkeypatch) -> list[tuple[dict, list[str]]]:
    """(environment, argv) of every trainer worker the recorded consumer call starts on
    its node, from SpecForge's own plan of that call."""
    cfg = specforge.config.load_config(
        str(call["cwd"] / call["argv"][call["argv"].index("-c") + 1]),
        [a for a in call["argv"] if "=" in a],
    )
    topology = cfg.deployment.trainer
    argv = call["argv"]
    if cfg.deployment.disaggregated.managed_local is not None:
        # Managed-local: SpecForge's supervisor starts `torchrun --standalone` with the
        # consumer's device list and its child marker (build_launch_plan; its plan needs
        # the training stack, so the environment is put together here from the same
        # functions).
        ml = cfg.deployment.disaggregated.managed_local
        command_env = {
            **specforge.launch_plan._managed_local_environment(cfg),
            "CUDA_VISIBLE_DEVICES": ",".join(ml.trainer_cuda_visible_devices),
            specforge.launch_plan._MANAGED_CHILD_ENV: "1",
        }
        node_rank, worker_argv = (
            0,
            ["train", "--config", argv[argv.index("-c") + 1], "--role", "consumer"],
        )
    else:
        rendered = specforge_plan(specforge, call, monkeypatch)
        if not rendered["commands"]:
            # One rank, no torchrun: the consumer process is the worker (SpecForge's plan of
            # kind "worker"), its in-process overrides on top of its environment.
            env = dict(call["env"])
            for key, value in rendered["worker_env"].items():
                if value is None:
                    env.pop(key, None)
                else:
                    env[key] = value
            return [(env, argv[1:])]
        (command,) = rendered["commands"]
        command_env = command["env"]
        launcher = command["argv"]
        node_rank = (
            int(launcher[launcher.index("--node_rank") + 1]) if ("--node_rank" in launcher) else 0
        )
        worker_argv = launcher[launcher.index("specforge.cli") + 1 :]
    master = str(topology.master_addr or "127.0.0.1")
    return [
        (
            torchrun_worker_env(
                call["env"],
                command_env,
                node_rank=node_rank,
                nnodes=topology.nnodes,
                nproc=topology.nproc_per_node,
                local_rank=local,
                master=master,
                port=str(topology.master_port),
            ),
            worker_argv,
        )
        for local in range(topology.nproc_per_node)
    ]


@pytest.mark.parametrize(
    "shape", ["builtin", "two-nodes-8+8", "two-nodes-shared", "trainers-span-two"]
)
def test_every_consumer_worker_passes_specforges_node_rank_check(
    tmp_path, monkeypatch, catalog, baseline, specforge, shape
):
    # Every node of the plan, started as a cluster would start it: with NODE_RANK set to the
    # node's index (on one node too, where a cluster may export it). Each trainer worker
    # torchrun would start runs SpecForge's own CLI (--plan) in its environment:
    # _resolved_node_rank reads NODE_RANK there (--node-rank is not passed to workers) and
    # must give the rank the node's consumer was started with.
    plan = shapes(baseline)[shape]
    script = generate(plan, catalog, "specforge")
    checked = 0
    for node in range(script.layout.nodes):
        if script.layout.nodes == 1:
            # A one-node script reads no NODE_RANK; a cluster may export one all the same.
            calls = run(tmp_path, script.text, shell={"NODE_RANK": "1"})
        else:
            calls = run(tmp_path, script.text, node)
        for call in [c for c in calls if c["cmd"] == "specforge" and "producer" not in c["argv"]]:
            argv = call["argv"]
            cfg = specforge.config.load_config(str(call["cwd"] / argv[argv.index("-c") + 1]), [])
            outer = int(argv[argv.index("--node-rank") + 1]) if "--node-rank" in argv else 0
            # The call itself (the node rank SpecForge's launcher resolves; None is rank 0).
            resolve = specforge.launch_plan._resolved_node_rank
            given = outer if "--node-rank" in argv else None
            assert (resolve(cfg, given, call["env"]) or 0) == outer
            for env, worker_argv in consumer_workers(specforge, call, monkeypatch):
                assert (resolve(cfg, None, env) or 0) == outer
                if cfg.deployment.disaggregated.managed_local is None:
                    worker_call = {**call, "argv": worker_argv, "env": env}
                    rendered = specforge_plan(specforge, worker_call, monkeypatch)
                    assert rendered["kind"] == "worker" and rendered["role"] == "consumer"
                checked += 1
    assert checked == plan.drafter.count


@pytest.mark.parametrize("shape", ["builtin", "trainers-span-two"])
@pytest.mark.parametrize("fmt", ["specforge", "slurm", "kubernetes", "skypilot"])
def test_every_trainer_worker_sees_its_receive_buffers(
    tmp_path, monkeypatch, catalog, baseline, specforge, skypilot, fmt, shape
):
    # SpecForge's launcher reads receive_buffers from DISAGG_RECEIVE_BUFFERS in every
    # trainer process (PR #858; the pinned 0.2.0 ignores it, and its schema forbids the
    # config key, which the run.yaml therefore leaves out). Every torchrun worker of every
    # node, as SpecForge's own launch plan starts it, must see the plan's receive mode.
    from support import edit

    plan = edit(shapes(baseline)[shape], workload={"transport": "mooncake", "receive": "pinned"})
    if fmt == "kubernetes":  # several trainer pods share a volume
        plan = edit(plan, launch={"volume_claim": "work"})
    script = generate(plan, catalog, fmt)
    if fmt == "skypilot":
        nodes = sky_nodes(tmp_path, sky_tasks(skypilot, script.text), "qwen3-8b-dflash")
    else:
        nodes = node_calls(tmp_path, script)
    workers = 0
    for _node, calls in nodes:
        for call in calls:
            if call["cmd"] != "specforge" or "producer" in call["argv"]:
                continue
            for env, _argv in consumer_workers(specforge, call, monkeypatch):
                assert env["DISAGG_RECEIVE_BUFFERS"] == "pinned"
                workers += 1
    assert workers == plan.drafter.count


# --- the producer's flow control ------------------------------------------------------------


@pytest.fixture(scope="session")
def online_flow_window():
    """SpecForge's producer check of its in-flight watermarks against the consumer's
    optimizer-step quantum: `_online_flow_window` from specforge/training/disaggregated.py
    (the module imports the training stack, so the function is taken out alone) with
    FlowControlLimits from specforge/runtime/control_plane/flow_control.py (standard
    library only), both from the pinned wheel."""
    whl = wheel(SPECFORGE)
    with zipfile.ZipFile(whl) as archive:
        flow = archive.read("specforge/runtime/control_plane/flow_control.py")
        tree = ast.parse(archive.read("specforge/training/disaggregated.py"))
    module = types.ModuleType("specforge_flow_control")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(flow, "flow_control.py", "exec"), module.__dict__)
    namespace = module.__dict__
    fn = next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_online_flow_window"
    )
    # Its one import is FlowControlLimits, given here.
    fn.body = [s for s in fn.body if not isinstance(s, ast.ImportFrom)]
    namespace["os"] = os
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "disaggregated.py", "exec"), namespace)
    return namespace["_online_flow_window"]


@pytest.mark.parametrize("fmt", ["specforge", "slurm"])
@pytest.mark.parametrize("shape", ["builtin", "two-nodes-8+8", "32+128", "8+8-batch32"])
def test_the_producer_accepts_the_in_flight_limits(
    monkeypatch, catalog, baseline, specforge, online_flow_window, shape, fmt
):
    from dflash_plan.model.launch.common import context, sample_feature_bytes
    from dflash_plan.model.launch.specforge import server_segment_gib

    plan = shapes(baseline)[shape]
    script = generate(plan, catalog, fmt)
    # SpecForge's schema (low <= high) and its producer's check (both >= the quantum).
    cfg = specforge.config.Config.model_validate(yaml.safe_load(script.files["run.yaml"]))
    for name in ("DISAGG_IN_FLIGHT_HIGH_WATERMARK", "DISAGG_IN_FLIGHT_LOW_WATERMARK"):
        monkeypatch.delenv(name, raising=False)
    high, low = online_flow_window(cfg)
    trainer = cfg.deployment.trainer
    quantum = (
        trainer.nnodes
        * trainer.nproc_per_node
        * cfg.training.batch_size
        * cfg.training.accumulation_steps
    )
    assert low >= quantum and high >= low
    # The Mooncake segments hold the samples the producer may have in flight.
    ctx = context(plan, catalog)
    servers = plan.target.replicas
    held = server_segment_gib(ctx) * (1 << 30) * servers / sample_feature_bytes(ctx.resolved)
    assert held >= high
    # Both shapes span two nodes or more: the recipe's cross-node 512/256 at 64 = 8 x / 4 x.
    if shape in ("32+128", "8+8-batch32"):
        assert quantum == 256 and (high, low) == (8 * 256, 4 * 256)
        assert f"up to {high} samples in flight" in script.text


# SpecForge's DFlash2 recipe (docs/recipes/qwen3.8-27b-dflash2-disaggregated.md, PR #869),
# its measured best watermarks and the optimizer-step quantum they were measured at (batch
# 2 x accumulation 4 x 4 ranks on one node, x 8 ranks on the two-node 8 + 8), and the
# smallest read lease that did not expire under cross-node reads (500 ms and 3 s did).
RECIPE_ONE_NODE = (192, 96, 2 * 4 * 4)
RECIPE_CROSS_NODE = (512, 256, 2 * 4 * 8)
RECIPE_LEASE_MS = 10_000
# SpecForge's runtime.producer_lease: requests each capture server holds (schema default).
PRODUCER_LEASE = 8
# speculators: 12 workers x 4 ranks = 48 Mooncake clients exhausted a node (PR #1046's
# review); its Mooncake smoke test runs 2 workers per rank.
EXHAUSTING_CLIENTS, TESTED_WORKERS = 48, 2


@pytest.mark.parametrize("counts, nodes", [((1, 1), 1), ((4, 4), 1), ((8, 8), 2), ((32, 128), 20)])
def test_flow_control_follows_the_measured_rule(
    monkeypatch, tmp_path, catalog, baseline, specforge, online_flow_window, counts, nodes
):
    """Issue 34's four plans (B200, batch 2): the watermarks, the lease and the loader
    settings every format writes are the recipe's rule, SpecForge's own schema and producer
    check accept them, and the projection's store memory is sized from the same values."""
    from dflash_plan.model.core.projection import project
    from dflash_plan.model.launch.common import context, sample_feature_bytes
    from support import edit

    targets, drafters = counts
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": targets},
        drafter={"gpu": "b200", "count": drafters},
    )
    ctx = context(plan, catalog)
    assert ctx.layout.nodes == nodes
    cross = nodes > 1
    quantum = drafters * plan.drafter.batch_size
    high_at, low_at, recipe_quantum = RECIPE_CROSS_NODE if cross else RECIPE_ONE_NODE
    want_high = max(quantum * high_at // recipe_quantum, targets * PRODUCER_LEASE)
    want_low = want_high * low_at // high_at
    projection = project(plan, catalog)
    flow = projection.flow_control
    assert flow is not None
    assert (flow.high_watermark, flow.low_watermark) == (want_high, want_low)
    assert flow.lease_ms == (RECIPE_LEASE_MS if cross else None)
    lease = f"--default_kv_lease_ttl={RECIPE_LEASE_MS}"
    for fmt in ("specforge", "slurm", "kubernetes", "skypilot"):
        if fmt == "slurm" and not cross:
            continue  # one node: nothing to schedule across, the plain script covers it
        # Several pods share the control folder through a ReadWriteMany claim.
        claim = {"volume_claim": "shared"} if fmt == "kubernetes" else {}
        script = generate(edit(plan, launch=claim), catalog, fmt)
        text = script.text + "".join(script.files.values())
        assert (lease in text) == cross, fmt
        assert f"in_flight_high_watermark: {want_high}" in text, fmt
        assert f"in_flight_low_watermark: {want_low}" in text, fmt
        if cross:
            assert "MC_TCP_BIND_ADDRESS" in text, fmt
        if "run.yaml" in script.files:
            cfg = specforge.config.Config.model_validate(yaml.safe_load(script.files["run.yaml"]))
            for name in ("DISAGG_IN_FLIGHT_HIGH_WATERMARK", "DISAGG_IN_FLIGHT_LOW_WATERMARK"):
                monkeypatch.delenv(name, raising=False)
            assert online_flow_window(cfg) == (want_high, want_low)
            assert cfg.deployment.disaggregated.client_buffer_size == flow.trainer_buffer_bytes
    # The store memory holds the high watermark spread over the servers, at the longest
    # sample, a quarter to spare.
    sample = sample_feature_bytes(ctx.resolved)
    per_server = max(PRODUCER_LEASE, -(-want_high // targets))
    segment = max(1, -(-int(per_server * sample * 1.25) // 2**30))
    assert projection.store_memory is not None
    assert projection.store_memory.segment_gib == flow.segment_gib == segment
    # speculators: across nodes every loader worker is a Mooncake client: the tested 2 per
    # rank, a node's clients under the count that exhausted threads; one node, files.
    words = generate(plan, catalog, "speculators").text.split()
    if cross:
        workers = int(words[words.index("--num-workers") + 1])
        assert workers == TESTED_WORKERS and 8 * workers < EXHAUSTING_CLIENTS
        assert lease in words
    else:
        assert "--num-workers" not in words and lease not in words


# --- SkyPilot ---------------------------------------------------------------------------------


def sky_tasks(skypilot, text: str) -> list[dict]:
    """The task documents of a SkyPilot YAML (its header is comments), checked by SkyPilot's
    rules: one task, or a job group (a header document, then its tasks)."""
    docs = list(yaml.safe_load_all(text))
    if len(docs) > 1:
        skypilot.check_group(docs)
        docs = docs[1:]
    for doc in docs:
        skypilot.check(doc)
    return docs


def sky_ips(nodes: int) -> list[str]:
    """The cluster network addresses the sandbox's SkyPilot gives the plan's nodes."""
    return [f"10.9.0.{i}" for i in range(nodes)]


def sky_nodes(
    tmp_path: Path,
    tasks: list[dict],
    group: str,
    only: set[int] | None = None,
    extra: dict[str, str] | None = None,
) -> list[tuple[int, list[dict]]]:
    """Every node's `run` shell (or those of the plan's nodes in `only`), as SkyPilot starts
    it: SKYPILOT_NODE_RANK, _NUM_NODES and _NODE_IPS (its task's nodes, one address a line)
    set, and in a job group every node's name `TASK-i.GROUP` resolving to its address (the
    getent stub reads SKY_HOSTS); bash -c in the task's folder (shared here). A job group's
    tasks take the plan's nodes in order."""
    ips = sky_ips(sum(t["num_nodes"] for t in tasks))
    names, offsets = [], []
    for task in tasks:
        offsets.append(len(names))
        names += [f"{task['name']}-{i}.{group}" for i in range(task["num_nodes"])]
    hosts = "\n".join(f"{n}={ip}" for n, ip in zip(names, ips, strict=True))
    return [
        (
            offset + node,
            run(
                tmp_path,
                task["run"],
                shell={
                    "SKYPILOT_NODE_RANK": str(node),
                    "SKYPILOT_NUM_NODES": str(task["num_nodes"]),
                    "SKYPILOT_NODE_IPS": "\n".join(ips[offset : offset + task["num_nodes"]]),
                    "SKY_HOSTS": hosts,
                    "DFLASH_FABRIC_IP": "",  # the address comes from SkyPilot
                },
                extra=extra,
            ),
        )
        for task, offset in zip(tasks, offsets, strict=True)
        for node in range(task["num_nodes"])
        if only is None or offset + node in only
    ]


MIXED = "b200-targets+h100-drafters"


def sky_shapes(baseline) -> dict:
    from support import edit

    return {
        **shapes(baseline),
        MIXED: edit(
            baseline,
            target={"gpu": "b200", "count": 8},
            drafter={"gpu": "h100-sxm", "count": 8},
        ),
    }


SKY_SHAPES = (
    "builtin",
    "b200-6+2-tp2",
    "two-nodes-shared",
    "trainers-span-two",
    "two-nodes-8+8",
    "32+128",
    "8+8-batch32",
    MIXED,
)


@pytest.mark.parametrize("shape", SKY_SHAPES)
def test_skypilot_accepts_every_task_and_every_node_starts_in_order(
    tmp_path, monkeypatch, catalog, baseline, skypilot, specforge, shape
):

    plan = sky_shapes(baseline)[shape]
    script = generate(plan, catalog, "skypilot")
    tasks = sky_tasks(skypilot, script.text)  # SkyPilot's own schemas and rules, strict
    layout = script.layout
    sky_names = {"rtx-pro-6000": "RTXPRO6000", "b200": "B200", "h100-sxm": "H100"}
    requested = 0
    for task, gpu in zip(tasks, (plan.target.gpu, plan.drafter.gpu), strict=False):
        # Nothing opened to the internet: the nodes talk on the cluster network.
        assert "ports" not in task["resources"]
        name, per_node = task["resources"]["accelerators"].split(":")
        assert name == sky_names[gpu]
        requested += int(per_node) * task["num_nodes"]
    assert sum(t["num_nodes"] for t in tasks) == layout.nodes
    assert requested >= plan.target.count + plan.drafter.count
    if shape in ("builtin", "two-nodes-8+8", MIXED):
        assert requested == plan.target.count + plan.drafter.count
    if shape == MIXED:
        assert [t["name"] for t in tasks] == ["targets", "trainers"]
    ips = sky_ips(layout.nodes)
    started = {"python": 0, "mooncake_master": 0, "producer": 0, "consumer": 0}
    # 20 nodes of 32 + 128: the first, the first trainer node and the last one (all take
    # 7 s on two loaded cores; the others repeat these).
    only = {0, layout.drafter_nodes[0], layout.nodes - 1} if layout.nodes > 3 else None
    for node, calls in sky_nodes(tmp_path, tasks, "qwen3-8b-dflash", only):
        calls.sort(key=lambda c: c["started"])
        if layout.nodes == 1:
            # managed-local: SpecForge starts the master, the servers and the trainer.
            (call,) = calls
            assert call["argv"] == ["train", "-c", "run.yaml"] and "NODE_RANK" not in call["env"]
            config = yaml.safe_load((call["cwd"] / "run.yaml").read_text())
            assert config == yaml.safe_load(script.files["run.yaml"])
            specforge.config.Config.model_validate(config)
            assert specforge_plan(specforge, call, monkeypatch) is None  # managed-local
            started["consumer"] += 1
            continue
        head = ips[layout.drafter_nodes[0]]
        metadata = [
            c["started"]
            for c in calls
            if c["cmd"] == "curl" and "dflash-plan-health-check" in c["argv"][-1]
        ]
        health = [c["started"] for c in calls if c["cmd"] == "curl" and "/health" in c["argv"][-1]]
        for call in calls:
            cmd, argv, env = call["cmd"], call["argv"], call["env"]
            if cmd in ("python", "specforge", "mooncake_master"):
                # Each node publishes the address SkyPilot gave it, never a host name.
                assert env["MOONCAKE_LOCAL_HOSTNAME"] == ips[node] == env["MC_TCP_BIND_ADDRESS"]
            if cmd == "mooncake_master":
                assert ips[node] == head
                started[cmd] += 1
            elif cmd == "python":
                # A capture server starts once the master's metadata server answers.
                assert metadata and min(metadata) < call["started"]
                assert env["MOONCAKE_METADATA_SERVER"] == f"http://{head}:35880/metadata"
                started[cmd] += 1
            elif cmd == "specforge":
                # Producer and trainers start once every capture server answers.
                assert len(health) == len(layout.replicas)
                assert max(health) < call["started"]
                role = argv[argv.index("--role") + 1]
                started[role] += 1
                rendered = specforge_plan(specforge, call, monkeypatch)
                assert rendered is not None and rendered["role"] == role
                config = yaml.safe_load((call["cwd"] / argv[argv.index("-c") + 1]).read_text())
                assert config == yaml.safe_load(script.files["run.yaml"])
                cfg = specforge.config.load_config(
                    str(call["cwd"] / argv[argv.index("-c") + 1]), [a for a in argv if "=" in a]
                )
                dis = cfg.deployment.disaggregated
                assert dis.mooncake_master_server_addr == f"{head}:35551"
                assert dis.server_urls == [
                    f"http://{ips[r.node]}:{r.port}" for r in layout.replicas
                ]
                if cfg.deployment.trainer.nnodes > 1:
                    assert cfg.deployment.trainer.master_addr == head
        servers = [c for c in calls if c["cmd"] == "python"]
        # (background servers start in any order)
        assert sorted(c["env"]["CUDA_VISIBLE_DEVICES"] for c in servers) == sorted(
            ",".join(map(str, r.devices)) for r in layout.targets_on(node)
        )
        if node not in layout.drafter_nodes:
            # The node stops its servers once the master is gone (the trainers are done).
            assert [c for c in calls if "dflash-plan-run-alive" in c["argv"][-1]]
            assert not [c for c in calls if c["cmd"] == "specforge"]
        else:
            (consumer,) = [c for c in calls if "consumer" in c["argv"]]
            argv = consumer["argv"]
            assert consumer["env"]["NODE_RANK"] == argv[argv.index("--node-rank") + 1]
    multi = layout.nodes > 1
    if only:
        assert started["mooncake_master"] == started["producer"] == 1
        return
    assert started == {
        "python": len(layout.replicas) if multi else 0,
        "mooncake_master": 1 if multi else 0,
        "producer": 1 if multi else 0,
        "consumer": len(layout.drafter_nodes),
    }


def test_the_skypilot_validator_rejects_unknown_fields(catalog, baseline, skypilot):
    import jsonschema
    from support import edit

    text = generate(shapes(baseline)["two-nodes-8+8"], catalog, "skypilot").text
    (task,) = sky_tasks(skypilot, text)
    for bad in (
        {**task, "bogus": 1},
        {**task, "resources": {**task["resources"], "bogus": 1}},
        {**task, "num_nodes": "2"},
        {**task, "envs": {"not a name": "x"}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            skypilot.check(bad)
    mixed = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "h100-sxm"})
    docs = list(yaml.safe_load_all(generate(mixed, catalog, "skypilot").text))
    skypilot.check_group(docs)
    for header in ({**docs[0], "bogus": 1}, {**docs[0], "primary_tasks": ["nope"]}):
        with pytest.raises(AssertionError):
            skypilot.check_group([header, *docs[1:]])


@settings(max_examples=200, deadline=None)
@given(st.text())
@example("2026-08-run")  # a digit first: no cluster name
@example("a---b___c")  # three separators: no task name
@example("x" * 62 + "-y")  # a dash left last by the cut
def test_a_skypilot_name_from_any_run_id_passes_skypilots_rules(skypilot, text):
    from dflash_plan.model.launch.common import name_label
    from dflash_plan.model.launch.skypilot import NAME_CHARS

    name = name_label(text, NAME_CHARS)
    skypilot.check_name(name)
    assert len(name) <= NAME_CHARS and name == name_label(text, NAME_CHARS)


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("run_id", ["2026-08-run", "a---b__c", "q" * 62 + "--z"])
def test_every_name_in_a_skypilot_launch_passes_skypilots_rules(
    catalog, baseline, skypilot, run_id, mixed
):
    from support import edit

    plan = sky_shapes(baseline)[MIXED if mixed else "two-nodes-8+8"]
    text = generate(edit(plan, launch={"run_id": run_id}), catalog, "skypilot").text
    docs = list(yaml.safe_load_all(text))
    sky_tasks(skypilot, text)
    names = [d["name"] for d in docs] + re.findall(r"sky launch -c (\S+)", text)
    assert names
    for name in names:
        skypilot.check_name(name)


def pip_pins(shell: str) -> dict[str, str]:
    """name -> version of every NAME==VERSION a shell's `pip install` lines install."""
    import shlex

    words = [w for line in shell.splitlines() if "pip install" in line for w in shlex.split(line)]
    return dict(w.split("==", 1) for w in words if "==" in w)


def test_the_skypilot_setup_installs_a_mooncake_built_for_torchs_cuda(catalog, baseline, skypilot):
    # The torch the setup's specforge pins (its wheel's METADATA), that torch's CUDA (its
    # Linux wheel's Requires-Dist) and the CUDA runtime the Mooncake build links (NEEDED of
    # the store and the engine), recorded in tests/data/wheels/facts.toml.
    (task,) = sky_tasks(skypilot, generate(shapes(baseline)["builtin"], catalog, "skypilot").text)
    pins = pip_pins(task["setup"])
    assert pins["specforge"] == SPECFORGE[1]
    torch = requirement_pins(wheel_requires(wheel(SPECFORGE)))["torch"]
    (cuda,) = cuda_majors_required(wheel_facts("torch", torch)["requires_dist"])
    (mooncake,) = [n for n in pins if n.startswith("mooncake-transfer-engine")]
    needed = wheel_facts(mooncake, pins[mooncake])["needed"]
    # SpecForge imports mooncake.store (specforge/runtime/data_plane/mooncake_store.py).
    assert "mooncake/store.so" in needed
    linked = cudart_majors_needed(needed)
    assert set(linked) == set(needed)
    assert set(linked.values()) == {cuda}, (
        f"{mooncake}=={pins[mooncake]} links libcudart {linked}; torch {torch} is CUDA {cuda}"
    )
    # The image docs/launch.md's Dockerfile builds (the kubernetes format's) installs the same.
    docs = (Path(__file__).parents[2] / "docs" / "launch.md").read_text()
    dockerfile = docs[
        docs.index("```dockerfile") : docs.index("```", docs.index("```dockerfile") + 3)
    ]
    assert pip_pins(dockerfile.replace("\\\n", " ")) == pins


# --- offline mode: capture to storage, then train -------------------------------------------

# sgl-project/SpecForge a6b6b023 scripts/prepare_hidden_states.py (parse_args): no wheel
# carries the script; the specforge 0.2.0 wheel is built from this tree (its schema differs
# from a6b6b023's in two docstrings only). Flag -> type.
PREPARE_HIDDEN_STATES_FLAGS = {
    "--target-model-path": "str",
    "--strategy": "str",
    "--draft-model-config": "str",
    "--trust-remote-code": "bool",
    "--data-path": "str",
    "--max-length": "int",
    "--chat-template": "str",
    "--is-preformatted": "bool",
    "--num-samples": "int",
    "--build-dataset-num-proc": "int",
    "--tp-size": "int",
    "--batch-size": "int",
    "--cache-dir": "str",
    "--output-path": "str",
    "--dist-timeout": "int",
    "--num-io-threads": "int",
    "--num-workers": "int",
    "--io-queue-size": "int",
    "--file-group-size": "int",
    "--compress": "bool",
    "--compression-level": "int",
    "--sglang-attention-backend": "str",
    "--sglang-mem-fraction-static": "float",
    "--sglang-context-length": "int",
    "--sglang-enable-nccl-nvls": "bool",
    "--sglang-enable-symm-mem": "bool",
    "--sglang-enable-torch-compile": "bool",
    "--sglang-enable-dp-attention": "bool",
    "--sglang-enable-dp-lm-head": "bool",
    "--sglang-ep-size": "int",
}


def offline(plan, fmt: str, dtype: str = "bf16"):
    from support import edit

    return edit(plan, workload={"mode": "offline", "storage_dtype": dtype}, launch={"format": fmt})


@pytest.fixture(scope="session")
def dflash_capture():
    """SpecForge's DFlash offline capture as the 0.2.0 wheel defines it: the layers it
    reads from the draft config (resolve_dflash_capture_layers in
    specforge/algorithms/model_providers.py, taken out alone: the module imports torch)
    and what it stores per sample (the OfflineCaptureLayout of
    specforge/algorithms/dflash/providers.py)."""
    whl = wheel(SPECFORGE)
    with zipfile.ZipFile(whl) as archive:
        providers = ast.parse(archive.read("specforge/algorithms/model_providers.py"))
        dflash = ast.parse(archive.read("specforge/algorithms/dflash/providers.py"))
    fn = next(
        n
        for n in providers.body
        if isinstance(n, ast.FunctionDef) and n.name == "resolve_dflash_capture_layers"
    )
    namespace: dict = {"Config": object, "Any": object, "List": list}  # its annotations
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "model_providers.py", "exec"), namespace)
    (layout,) = [
        n
        for n in ast.walk(dflash)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "OfflineCaptureLayout"
    ]
    stored = {k.arg: ast.literal_eval(k.value) for k in layout.keywords}
    return namespace["resolve_dflash_capture_layers"], stored


def check_prepare_flags(words: list[str]) -> dict[str, str]:
    """Every word a prepare_hidden_states.py flag with a value of its type; the values."""
    values, i = {}, 0
    while i < len(words):
        flag = words[i]
        assert flag in PREPARE_HIDDEN_STATES_FLAGS, f"{flag} is not a prepare_hidden_states flag"
        kind = PREPARE_HIDDEN_STATES_FLAGS[flag]
        if kind == "bool":
            values[flag], i = "", i + 1
            continue
        value = words[i + 1]
        assert not value.startswith("--"), f"{flag} has no value"
        {"int": int, "float": float, "str": str}[kind](value)
        values[flag], i = value, i + 2
    assert {"--target-model-path", "--data-path"} <= set(values)  # required=True
    return values


@pytest.mark.parametrize("fmt", ["specforge", "slurm"])
@pytest.mark.parametrize("shape", SHAPES)
def test_specforge_offline_captures_then_trains_as_upstream_reads_it(
    tmp_path,
    monkeypatch,
    catalog,
    baseline,
    specforge,
    build_target_layer_ids,
    dflash_capture,
    shape,
    fmt,
):
    from dflash_plan.model.basics.errors import PlanError
    from dflash_plan.model.launch.common import capture_done, hidden_states_dir

    resolve_layers, stored = dflash_capture
    plan = offline(shapes(baseline)[shape], fmt)
    if shape == "two-nodes-shared":
        # 8 + 2 targets: one torchrun cannot span them.
        with pytest.raises(PlanError, match="the targets land 8 \\+ 2 on 2 nodes"):
            generate(plan, catalog, fmt)
        return
    script = generate(plan, catalog, fmt)
    model = catalog.models[plan.workload.target_model]
    layers = build_target_layer_ids(model.n_layers, plan.workload.draft_layers)
    # What the capture stores is what physics/storage.py counts: no last hidden state,
    # two integer tensors beside the captured layers.
    assert stored["capture_method"] == "dflash" and stored["last_hidden_feature"] is None
    assert [name for name, _ in stored["passthrough"]] == ["input_ids", "loss_mask"]
    from dflash_plan.model.physics.storage import FORMATS

    assert FORMATS["specforge"].extra_layers == 0
    assert FORMATS["specforge"].other_bytes_per_token == 8 * len(stored["passthrough"])
    out = Path(hidden_states_dir(plan))
    replicas, trainers = 0, 0
    for _node, calls in node_calls(tmp_path, script, ready=capture_done(plan)):
        order = [c["cmd"] for c in sorted(calls, key=lambda c: c["t_us"])]
        assert order == sorted(order, key=lambda c: c != "torchrun"), "capture before training"
        for call in calls:
            argv, env = call["argv"], call["env"]
            assert not {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"} & set(env)
            if call["cmd"] == "torchrun":
                words = argv[argv.index("scripts/prepare_hidden_states.py") + 1 :]
                values = check_prepare_flags(words)
                assert values["--strategy"] == "dflash"
                draft = json.loads((call["cwd"] / values["--draft-model-config"]).read_text())
                assert resolve_layers(None, draft, None) == layers
                assert draft["architectures"] == ["DFlashDraftModel"]
                assert draft.get("draft_vocab_size", draft.get("vocab_size")) == model.vocab
                assert int(values["--tp-size"]) == plan.target.tp
                assert Path(values["--output-path"]) == out
                assert int(values["--max-length"]) == plan.workload.max_length
                gpus = env["CUDA_VISIBLE_DEVICES"].split(",")
                assert int(argv[argv.index("--nproc_per_node") + 1]) == len(gpus)
                replicas += len(gpus) // plan.target.tp
                # The first capture node marks the capture done once torchrun returns (an
                # sbatch script waits for its capture steps instead).
                first = "--node_rank" not in argv or argv[argv.index("--node_rank") + 1] == "0"
                if first and fmt == "specforge":
                    assert (call["cwd"] / capture_done(plan)).exists()
                if "--master_addr" in argv:
                    head = script.layout.target_nodes[0]
                    expected = SLURM_HOSTS[head] if fmt == "slurm" else script.layout.hosts[head]
                    assert argv[argv.index("--master_addr") + 1] == expected
            elif call["cmd"] == "specforge":
                cfg_path = call["cwd"] / argv[argv.index("-c") + 1]
                cfg = specforge.config.load_config(str(cfg_path), [a for a in argv if "=" in a])
                if cfg.deployment.trainer.nnodes > 1:
                    head = script.layout.drafter_nodes[0]
                    expected = SLURM_HOSTS[head] if fmt == "slurm" else script.layout.hosts[head]
                    assert cfg.deployment.trainer.master_addr == expected
                assert cfg.mode == "offline" and cfg.deployment.mode == "local_colocated"
                assert Path(cfg.data.hidden_states_path) == out
                assert cfg.data.max_length == plan.workload.max_length
                assert cfg.model.draft_num_hidden_layers == plan.workload.draft_layers
                rendered = specforge_plan(specforge, call, monkeypatch)
                assert rendered["role"] == "all"
                if rendered["kind"] == "worker":  # one process: SpecForge runs it in place
                    nproc = "1"
                else:
                    (command,) = rendered["commands"]
                    nproc = command["argv"][command["argv"].index("--nproc_per_node") + 1]
                assert int(nproc) == len(env["CUDA_VISIBLE_DEVICES"].split(","))
                rank = int(argv[argv.index("--node-rank") + 1]) if "--node-rank" in argv else 0
                assert env["NODE_RANK"] == str(rank)
                resolve = specforge.launch_plan._resolved_node_rank
                assert (resolve(cfg, None, env) or 0) == rank
                trainers += int(nproc)
    assert replicas == plan.target.replicas and trainers == plan.drafter.count


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
@pytest.mark.parametrize("shape", SHAPES)
def test_speculators_offline_captures_then_trains_as_upstream_reads_it(
    tmp_path, catalog, baseline, speculators_options, cache, shape, dtype
):
    from dflash_plan.model.launch.common import capture_done, hidden_states_dir, output_dir

    plan = offline(shapes(baseline)[shape], "speculators", dtype)
    script = generate(plan, catalog, "speculators")
    with zipfile.ZipFile(wheel(HS_CONNECTORS)) as archive:
        transfer = archive.read("hs_connectors/transfer.py").decode()
        fp8 = archive.read("hs_connectors/fp8_hidden_states_connector.py").decode()
    backends = set(re.findall(r'@HiddenStatesBackend\.register\("([a-z0-9_]+)"\)', transfer))
    # fp8 files carry one float32 scale per token besides the hidden states.
    assert "hidden_states_scales - fp32 [seq_len, 1, 1]" in fp8
    from dflash_plan.model.physics.storage import FORMATS

    assert FORMATS["speculators"].fp8_scale_bytes_per_token == 4
    t_nodes = script.layout.target_nodes
    markers = tuple(f"{capture_done(plan)}.{i}" for i in range(len(t_nodes)))
    ready = (f"{output_dir(plan)}/data/dataset_info.json", *markers)
    hs = hidden_states_dir(plan)
    shares, seen = set(), []
    for node, calls in node_calls(tmp_path, script, ready):
        kinds = []
        for call in sorted(calls, key=lambda c: c["t_us"]):
            argv = call["argv"]
            if call["cmd"] == "python":
                split = argv.index("--")
                own = {
                    **speculators_options["launch"],
                    **{
                        f: speculators_options["launch"].get(f, _plain(f))
                        for f in LAUNCH_VLLM_FLAGS
                    },
                }
                check_flags(argv[2:split], own, "launch_vllm.py")
                check_flags(
                    argv[split + 1 :], {f: _plain(f) for f in VLLM_SERVE_FLAGS}, "vllm serve"
                )
                backend = argv[argv.index("--hidden-states-backend") + 1]
                assert backend in backends and backend == {"bf16": "file", "fp8": "fp8"}[dtype]
                assert "--no-include-last-layer" not in argv  # the format counts the last
                gpus = call["env"]["CUDA_VISIBLE_DEVICES"].split(",")
                assert int(argv[argv.index("--data-parallel-size") + 1]) * plan.target.tp == len(
                    gpus
                )
                kinds.append("vllm")
            elif call["cmd"] == "speculators" and argv[0] == "prepare-data":
                check_flags(argv[1:], speculators_options["prepare"], "prepare-data")
                kinds.append("prepare")
            elif call["cmd"] == "speculators":
                assert argv[0] == "generate-offline-data"
                check_flags(argv[1:], speculators_options["generate"], "generate-offline-data")
                assert argv[argv.index("--output") + 1] == hs
                world = int(argv[argv.index("--world-size") + 1])
                shares.add(int(argv[argv.index("--rank") + 1]))
                assert world == len(t_nodes)
                assert (call["cwd"] / markers[t_nodes.index(max(node, 0))]).exists()
                kinds.append("capture")
            elif call["cmd"] == "torchrun":
                words = argv[argv.index("speculators.train") + 1 :]
                check_flags(words, speculators_options["train"], "speculators.train")
                assert words[words.index("--hidden-states-path") + 1] == hs
                assert words[words.index("--on-missing") + 1] == "raise"
                assert "--vllm-endpoint" not in words
                kinds.append("train")
        # On a node, the capture finishes before the training starts (vLLM starts in the
        # background: the script waits for its health check instead).
        steps = [k for k in kinds if k != "vllm"]
        assert steps == sorted(steps, key=["prepare", "capture", "train"].index)
        seen += kinds
    assert shares == set(range(len(t_nodes)))
    assert {"vllm", "prepare", "capture", "train"} == set(seen)


@pytest.mark.parametrize(
    "fmt, dtype, field",
    [
        ("slurm", "fp8", "workload.storage_dtype"),
        ("specforge-legacy", "bf16", "workload.mode"),
        ("kubernetes", "bf16", "workload.mode"),
        ("skypilot", "bf16", "workload.mode"),
        ("specforge", "fp8", "workload.storage_dtype"),
    ],
)
def test_an_offline_launch_upstream_cannot_run_is_refused_in_one_line(
    catalog, baseline, fmt, dtype, field
):
    from dflash_plan.model.basics.errors import PlanError

    plan = offline(baseline, fmt, dtype)
    with pytest.raises(PlanError) as err:
        generate(plan, catalog, fmt)
    message = str(err.value)
    assert "\n" not in message and fmt.split("-")[0] in message.lower()
    assert err.value.key == field
