"""Everything dflash-plan generates (every launch format of the registry, the probe for
each role, a command template), written from plans whose every text field holds a
generated hostile value (quotes, newlines, backquotes, `$(...)`, `${...}`, the heredoc
terminators the code uses, backslashes, `;`, `&&`, non-ASCII, a leading `-`), then run with
bash in a sandbox whose GPU tools and commands are stubs that record their arguments and
environment. Nothing a value holds may run, and every value must reach the commands, the
YAML and the TOML the script writes exactly as typed (model/launch/escape.py)."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.plan import Plan, plan_from_dict, plan_to_dict
from dflash_plan.model.inputs.targets import PRESETS
from dflash_plan.model.launch import FORMATS, TEMPLATE_PLACEHOLDERS, generate
from dflash_plan.model.launch.escape import HEREDOC
from dflash_plan.model.launch.probe import ROLES, probe_script, read_probe_dir
from dflash_plan.model.launch.template import template_values
from dflash_plan.model.physics.fitting import builtin_gpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from k8s_schema import manifest, pods
from k8s_schema import validate as validate_manifest
from preflight_stubs import GETENT_ANY, PREFLIGHT_STUBS, PYTHON_PROBE
from support import edit

MARKS = ("MARK1", "MARK2", "MARK3")
# Pieces a hostile value is made of; the terminators also stand on lines of their own.
PIECES = [
    "$(touch MARK1)",
    "`touch MARK2`",
    "'; touch MARK3; '",
    '"; touch MARK3; "',
    "${HOME}",
    "$HOME",
    "${PATH:0:1}",
    "$((1+1))",
    "'",
    '"',
    "\\",
    "\\'",
    "\n",
    "\r\n",
    "\t",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "#",
    "*",
    "?",
    "~",
    "!",
    "{",
    "}",
    "%",
    "%j",
    "=",
    "-",
    "--x",
    " ",
    "é",
    "日本語",
    "\u2028",
    "\x7f",
    "\x01",
    "\U0001f600",
    HEREDOC,
    "DFLASH_PROBE_EOF",
    "DFLASH_PROBE_PY",
    f"{HEREDOC}_1",
    f"\n{HEREDOC}\n",
    "\nDFLASH_PROBE_PY\n",
    "\n---\n",
    ": x",
    "- y",
    "null",
    "yes",
    "1e3",
    "0x10",
    "[a]",
    "{b: c}",
    '"""',
    "'''",
]
CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\0")
TEXT = (
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(CHARS, max_size=3)), min_size=1, max_size=5)
    .map("".join)
    .filter(bool)
)
# Names (plan name, run_id, hosts, GPU keys and names) are one line by the plan's rules.
LINE = TEXT.map(lambda s: "".join(c for c in s if ord(c) >= 32 and ord(c) != 127)).filter(bool)
NODE_TOOLS = [
    "python",
    "python3",
    "specforge",
    "torchrun",
    "mooncake_master",
    "curl",
    "srun",
    "speculators",
    "go",
    "nvidia-smi",
]
ENV = (
    "MOONCAKE_LOCAL_HOSTNAME",
    "MC_TCP_BIND_ADDRESS",
    "MOONCAKE_MASTER_SERVER_ADDR",
    "CUDA_VISIBLE_DEVICES",
    "NODE_RANK",
)
PER_NODE = 2  # the sandbox's GPU: two per node, so two nodes stay small


@dataclass
class Case:
    plan: Plan
    catalog: Catalog
    path: str  # the model path the commands must receive
    nodes: int
    hosts: tuple[str, ...] = field(default_factory=tuple)


@st.composite
def cases(draw: st.DrawFn, nodes: tuple[int, ...] = (1, 2)) -> Case:
    """A plan with hostile text in every field the schema lets a user type, and the
    catalog a user's hardware file and config.json would give it."""
    n = draw(st.sampled_from(nodes))
    key, gpu_name, model = draw(LINE), draw(LINE), draw(TEXT)
    model_path = draw(st.none() | TEXT)
    hosts = tuple(draw(st.lists(LINE, min_size=n, max_size=n)))
    gpu = builtin_gpus()["b200"].model_copy(
        update={"key": key, "name": gpu_name, "gpus_per_node": PER_NODE}
    )
    # A config.json target: the model folder comes from the path the user typed.
    target = PRESETS["qwen3-8b"].model_copy(update={"key": model, "path": model, "hf_id": None})
    catalog = Catalog(gpus={**builtin_gpus(), key: gpu}, models={**PRESETS, model: target})
    plan = Plan.model_validate(
        {
            "name": draw(LINE),
            "workload": {"target_model": model},
            "target": {"gpu": key, "count": 1 if n == 1 else PER_NODE},
            "drafter": {"gpu": key, "count": 1 if n == 1 else PER_NODE},
            # Text that never reaches a script, there to show it does not.
            "cost": {"ratio": {key: 1.5}, "reference_gpu": key},
            "calibration": {
                "target": {
                    key: {
                        "tokens_per_s": 5000.0,
                        "source": draw(TEXT),
                        "target_model": model,
                        "date": draw(TEXT),
                    }
                }
            },
            "launch": {
                "run_id": draw(LINE),
                "train_data_path": draw(TEXT),
                "output_dir": draw(st.none() | TEXT),
                "target_model_path": model_path,
                "chat_template": draw(st.none() | TEXT),
                "hosts": list(hosts),
                "template": TEMPLATE,
                "image": draw(LINE),
            },
        }
    )
    return Case(plan, catalog, model_path or model, n, hosts)


# Every placeholder as a word of its own after its name; one in a comment, and the
# placeholders whose values need no quoting also inside double quotes.
TEMPLATE = (
    "go "
    + " ".join(f"{k} {{{k}}}" for k in TEMPLATE_PLACEHOLDERS)
    + "\n# note: {target_model} {train_data_path} {output_dir} {chat_template} {host}"
    + '\ngo quoted "{tp}" "{node_rank}"'
)


# nvidia-smi's answers to the pre-flight (its name query and its header), for the GPU
# names of the case (written by stubs()); the probe's own query goes on to the record.
SMI_PREFLIGHT = (
    'case "$*" in "") echo "CUDA Version: 13.0"; exit 0 ;; '
    "--query-gpu=name,memory.free*) for i in $(seq 1 16); do "
    'echo "NVIDIA $(cat "$STUB_LOG/../gpu-names"), 1000000"; done; exit 0 ;; esac\n'
)


def gpu_names(plan: Plan, catalog: Catalog) -> str:
    """The plan's GPU names as one line of a good node's nvidia-smi."""
    gpus = {plan.target.gpu, plan.drafter.gpu}
    return " ".join(" ".join(catalog.gpus[g].name.split()) for g in sorted(gpus))


def stubs(root: Path, gpus: str = "") -> Path:
    """Commands that record their arguments and environment, one file per call, then
    succeed (the trainer also prints a SpecForge step line for the probe to read).
    `gpus`: the GPU names nvidia-smi shows the pre-flight."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (root / "gpu-names").write_text(gpus)
    step = (
        "step 10: {'loss': 2.0, 'perf/optimizer_step_time_s': 0.7, "
        "'perf/data_wait_time_s': 0.5, 'perf/train_compute_time_s': 0.125, "
        "'perf/durable_ack_time_s': 0.0, 'perf/global_samples_per_second': 20.0}"
    )
    for name in NODE_TOOLS:
        # The trainer runs out of memory at batch 2: the probe's ceiling search stops there.
        extra = (
            f'echo "{step}"\nfor a in "$@"; do [ "$a" != training.batch_size=2 ] || exit 1; done\n'
            if name == "specforge"
            else ""
        )
        extra += "echo '0, 100, 980.0, 1000.0'\n" if name == "nvidia-smi" else ""
        # Every service answers, except the master a SkyPilot node running only capture
        # servers watches to know when the run is over.
        extra += 'case "$*" in *dflash-plan-run-alive*) exit 7 ;; esac\n' if name == "curl" else ""
        (bin_dir / name).write_text(
            '#!/bin/bash\ntrap "" TERM\nf="$STUB_LOG/' + name + '.${EPOCHREALTIME/./}.$$"\n'
            'printf "%s\\0" "$@" > "$f.args"\n'
            # the environment the checks read, with builtins only (a stub starts often)
            f'for v in {" ".join(ENV)}; do printf "%s=%s\\0" "$v" "${{!v-}}"; done '
            '> "$f.env"\n' + extra
        )
    (bin_dir / "scontrol").write_text("#!/bin/bash\nprintf 'h0\\nh1\\nh2\\n'\n")
    # A node the pre-flight finds good (tests/preflight_stubs.py); its GPU questions and
    # Python's are answered before the record (they load nothing).
    for name, body in {**PREFLIGHT_STUBS, "getent": GETENT_ANY}.items():
        if name != "nvidia-smi":
            (bin_dir / name).write_text(body)
    for name, answer in (("nvidia-smi", SMI_PREFLIGHT), ("python", PYTHON_PROBE)):
        text = (bin_dir / name).read_text().removeprefix("#!/bin/bash\n")
        (bin_dir / name).write_text("#!/bin/bash\n" + answer + text)
    for path in bin_dir.iterdir():
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


@dataclass
class Call:
    argv: list[str]
    env: dict[str, str]


def run(root: Path, text: str, node_rank: int | None = None, **extra: str) -> dict[str, list[Call]]:
    """Run the script in root/work; the calls of each stub, in order."""
    work, log = root / "work", root / "log"
    for folder in (work, log):
        folder.mkdir(exist_ok=True)
    # The legacy format runs from a SpecForge checkout that has its trainer.
    (work / "scripts").mkdir(exist_ok=True)
    (work / "scripts" / "train_dflash.py").touch()
    env = {
        "PATH": f"{root / 'bin'}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "HOME": str(root / "home"),
        "SLURM_JOB_NODELIST": "h[0-2]",
        "DFLASH_FABRIC_IP": fabric(node_rank or 0),
        **extra,
    }
    if node_rank is not None:
        env["NODE_RANK"] = str(node_rank)
    # The scripts stop their background services with `kill`; here it waits for them, so
    # that every stub finishes its record.
    result = subprocess.run(
        ["bash", "-c", "kill() { wait; }\n" + text + "\nwait\n"],
        cwd=work,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    ran = [p for p in root.rglob("*") if p.name in MARKS]
    assert not ran, f"a hostile value ran as a command: {ran}"
    calls: dict[str, list[Call]] = {}
    for args in sorted(log.glob("*.args")):
        env_file = args.with_suffix(".env")
        pairs = (item.partition("=") for item in env_file.read_bytes().decode().split("\0"))
        calls.setdefault(args.name.split(".")[0], []).append(
            Call(args.read_bytes().decode().split("\0")[:-1], {k: v for k, _, v in pairs})
        )
        args.unlink()
        env_file.unlink()
    return calls


def preflight_steps(root: Path, steps: list[Call]) -> list[Call]:
    """Run the pre-flight steps among the recorded srun steps (`bash -c PROGRAM preflight
    NODE HOST...`, each as its node would), and return the other steps."""
    import shlex

    rest = []
    for step in steps:
        if "preflight" not in step.argv:
            rest.append(step)
            continue
        command = step.argv[step.argv.index("bash") :]
        run(root, shlex.join(command), DFLASH_FABRIC_IP=step.env.get("DFLASH_FABRIC_IP", ""))
    assert len(rest) < len(steps)  # the pre-flight ran first
    return rest


def fabric(node: int) -> str:
    """The fabric address the sandbox gives node `node` (DFLASH_FABRIC_IP)."""
    return f"10.0.0.{node}"


def after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def read_yaml(root: Path) -> dict[str, Any]:
    """The run file the script wrote (one per node when nodes share the folder: all the
    same)."""
    docs = [yaml.safe_load(f.read_text()) for f in sorted((root / "work").glob("run*.yaml"))]
    assert docs and all(d == docs[0] for d in docs)
    doc: dict[str, Any] = docs[0]
    return doc


def expected_out(plan: Plan) -> str:
    return plan.launch.output_dir or f"./outputs/{plan.launch.run_id}"


def check_specforge_yaml(
    doc: dict[str, Any], case: Case, run_id: str, out: str, train: str
) -> None:
    plan = case.plan
    assert doc["model"]["target_model_path"] == case.path
    assert doc["data"]["train_data_path"] == train
    assert doc["data"]["chat_template"] == (plan.launch.chat_template or "qwen")
    assert doc["run_id"] == run_id and doc["output_dir"] == out
    assert doc["deployment"]["disaggregated"]["control_dir"] == f"{out}/control"


SANDBOX = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("fmt", FORMATS)
@SANDBOX
@given(case=cases())
def test_every_launch_format_keeps_hostile_values_inert_and_exact(fmt, case):
    script = generate(case.plan, case.catalog, fmt)
    plan = case.plan
    out = expected_out(plan)
    train = plan.launch.train_data_path
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stubs(root, gpu_names(case.plan, case.catalog))
        if fmt == "skypilot":
            check_skypilot(case, script, root, out, train)
        elif fmt == "kubernetes":
            check_kubernetes(case, script.text, root, script.files["run.yaml"], out, train)
        elif fmt == "slurm" or case.nodes == 1:
            check_one_run(fmt, case, script.text, root, run(root, script.text), out, train)
        else:
            for rank in range(case.nodes):
                check_node(
                    fmt, case, root, run(root, script.text, node_rank=rank), rank, out, train
                )
        if fmt in ("specforge", "slurm"):
            assert read_yaml(root) == yaml.safe_load(script.files["run.yaml"])


def check_one_run(
    fmt: str, case: Case, text: str, root: Path, calls: dict[str, list[Call]], out: str, train: str
) -> None:
    plan = case.plan
    if fmt == "specforge":
        check_specforge_yaml(read_yaml(root), case, plan.launch.run_id, out, train)
        assert [c.argv for c in calls["specforge"]] == [["train", "-c", "run.yaml"]]
    elif fmt == "specforge-legacy":
        (trainer,) = calls["torchrun"]
        check_legacy(trainer.argv, case, out, train)
    elif fmt == "speculators":
        check_speculators(calls, case, out, train, node=0)
    elif fmt == "slurm":
        # sbatch reads its directives unquoted: the job name keeps only safe characters.
        for line in text.splitlines():
            if line.startswith("#SBATCH"):
                assert re.fullmatch(r"#SBATCH --[a-z-]+(=[A-Za-z0-9._%-]+)?", line), line
        check_specforge_yaml(read_yaml(root), case, plan.launch.run_id, out, train)
        steps = [c.argv for c in preflight_steps(root, calls["srun"])]
        servers = [s for s in steps if "sglang.launch_server" in s]
        assert servers and all(after(s, "--model-path") == case.path for s in servers)
        assert any("consumer" in s for s in steps)
    elif fmt == "template":
        check_template(calls, case, node=0)


def check_node(
    fmt: str, case: Case, root: Path, calls: dict[str, list[Call]], node: int, out: str, train: str
) -> None:
    """One node of a two-node run: node 0 holds the targets, node 1 the drafters."""
    plan, head = case.plan, case.hosts[1]
    if fmt == "specforge":
        doc = read_yaml(root)
        check_specforge_yaml(doc, case, plan.launch.run_id, out, train)
        dis = doc["deployment"]["disaggregated"]
        assert dis["server_urls"] == [
            f"http://{case.hosts[0]}:{30000 + i}" for i in range(PER_NODE)
        ]
        assert dis["mooncake_master_server_addr"] == f"{head}:35551"
        assert dis["consumer_state_dir"] == f"/tmp/specforge/{plan.launch.run_id}/consumer-state"
        every = [
            c for name in ("python", "specforge", "mooncake_master") for c in calls.get(name, [])
        ]
        assert every and all(
            c.env["MOONCAKE_LOCAL_HOSTNAME"] == fabric(node) == c.env["MC_TCP_BIND_ADDRESS"]
            for c in every
        )
        assert all(c.env["MOONCAKE_MASTER_SERVER_ADDR"] == f"{head}:35551" for c in every)
        if node == 0:
            assert [after(c.argv, "--model-path") for c in calls["python"]] == [case.path] * 2
            assert (
                calls["curl"][0].argv[-1] == f"http://{head}:35880/metadata?key="
                "dflash-plan-health-check"
            )
        else:
            urls = [c.argv[-1] for c in calls["curl"]]
            assert urls == [f"http://{case.hosts[0]}:{30000 + i}/health" for i in range(PER_NODE)]
            consumers = [c for c in calls["specforge"] if "consumer" in c.argv]
            assert [c.argv for c in consumers] == [
                ["train", "-c", f"run-node{node}.yaml", "--role", "consumer", "--node-rank", "0"]
            ]
            assert consumers[0].env["NODE_RANK"] == "0"
    elif fmt == "specforge-legacy":
        (trainer,) = calls["torchrun"]
        check_legacy(trainer.argv, case, out, train)
        assert after(trainer.argv, "--master_addr") == case.hosts[0]
    elif fmt == "speculators":
        every = [c for cs in calls.values() for c in cs]
        assert every and all(c.env["MOONCAKE_LOCAL_HOSTNAME"] == fabric(node) for c in every)
        check_speculators(calls, case, out, train, node)
    elif fmt == "template":
        check_template(calls, case, node)


def check_skypilot(case: Case, script: Any, root: Path, out: str, train: str) -> None:
    """The task YAML reads back (its comment header stays comments), and every node's `run`
    shell, run as SkyPilot runs it (its rank and every node's address in the environment),
    starts what the specforge format starts with every value exact."""
    text = script.text
    head, _, _ = text.partition("\nname: ")
    assert all(line.startswith("# ") for line in head.splitlines())
    task = yaml.safe_load(text)
    assert set(task) == {"name", "num_nodes", "resources", "setup", "run"}
    assert re.fullmatch(r"[A-Za-z0-9-]+", task["name"])
    (accelerator,) = (
        task["resources"]["accelerators"]
        if isinstance(task["resources"]["accelerators"], dict)
        else [task["resources"]["accelerators"].rsplit(":", 1)[0]]
    )
    gpu = case.catalog.gpus[case.plan.target.gpu]
    assert accelerator == (re.sub(r"\s+", "", gpu.name) or gpu.key)
    ips = [f"10.9.0.{i}" for i in range(task["num_nodes"])]
    for rank in range(task["num_nodes"]):
        calls = run(
            root,
            task["run"],
            SKYPILOT_NODE_RANK=str(rank),
            SKYPILOT_NODE_IPS="\n".join(ips),
            DFLASH_FABRIC_IP="",
        )
        doc = read_yaml(root)
        assert doc == yaml.safe_load(script.files["run.yaml"])
        check_specforge_yaml(doc, case, case.plan.launch.run_id, out, train)
        if case.nodes == 1:
            assert [c.argv for c in calls["specforge"]] == [["train", "-c", "run.yaml"]]
            continue
        every = [c for cs in calls.values() for c in cs if c.env.get("MOONCAKE_LOCAL_HOSTNAME")]
        assert every and all(c.env["MOONCAKE_LOCAL_HOSTNAME"] == ips[rank] for c in every)
        if rank == 0:
            assert [after(c.argv, "--model-path") for c in calls["python"]] == [case.path] * 2
        else:
            (consumer,) = [c for c in calls["specforge"] if "consumer" in c.argv]
            assert consumer.argv[:7] == [
                "train",
                "-c",
                "run-node1.yaml",
                "--role",
                "consumer",
                "--node-rank",
                "0",
            ]
            urls = [f"http://{ips[0]}:{30000 + i}" for i in range(PER_NODE)]
            assert (
                f"deployment.disaggregated.server_urls={json.dumps(urls)}".replace(" ", "")
                in consumer.argv
            )


def check_kubernetes(
    case: Case, text: str, root: Path, run_yaml: str, out: str, train: str
) -> None:
    """The manifest validates against the JobSet CRD and each pod's shell, run with the
    pod's environment, passes every value exactly."""
    doc = manifest(text)
    assert validate_manifest(doc) == []
    every = pods(doc)
    assert {p.spec["containers"][0]["image"] for p in every} == {case.plan.launch.image}
    # The pods of one replicated job run one shell, told apart by their index only: the
    # first and the last of each job carry every value the others do.
    last = {p.job: p.index for p in every}
    for pod in (p for p in every if p.index in (0, last[p.job])):
        calls = run(root, pod.argv[2], **pod.env)
        if pod.job == "servers":
            (server,) = calls["python"]
            assert after(server.argv, "--model-path") == case.path
        elif pod.job == "trainers":
            assert ["train", "-c", "run-node0.yaml", "--role", "producer"] in [
                c.argv for c in calls["specforge"]
            ]
    doc = read_yaml(root)
    assert doc == yaml.safe_load(run_yaml)
    check_specforge_yaml(doc, case, case.plan.launch.run_id, out, train)


def check_legacy(argv: list[str], case: Case, out: str, train: str) -> None:
    assert after(argv, "--target-model-path") == case.path
    assert after(argv, "--train-data-path") == train
    assert after(argv, "--chat-template") == (case.plan.launch.chat_template or "qwen")
    assert after(argv, "--output-dir") == out


def check_speculators(
    calls: dict[str, list[Call]], case: Case, out: str, train: str, node: int
) -> None:
    head = case.hosts[0]
    if node == 0:
        (vllm,) = calls["python"]
        assert vllm.argv[:2] == ["scripts/launch_vllm.py", case.path]
        serve = vllm.argv[vllm.argv.index("--") + 1 :]
        template = case.plan.launch.chat_template
        if template is None:
            assert "--chat-template" not in serve
        else:
            assert after(serve, "--chat-template") == template
        if case.nodes > 1:
            assert after(vllm.argv, "--mooncake-master") == f"{head}:35551"
            assert after(vllm.argv, "--data-parallel-address") == head
    if node == case.nodes - 1:
        (prepare,) = calls["speculators"]
        assert after(prepare.argv, "--model") == case.path
        assert after(prepare.argv, "--data") == train
        assert after(prepare.argv, "--output") == f"{out}/data"
        (trainer,) = calls["torchrun"]
        assert after(trainer.argv, "--verifier-name-or-path") == case.path
        assert after(trainer.argv, "--data-path") == f"{out}/data"
        assert after(trainer.argv, "--save-path") == f"{out}/checkpoints"


def check_template(calls: dict[str, list[Call]], case: Case, node: int) -> None:
    from dflash_plan.model.launch.common import context

    values = template_values(context(case.plan, case.catalog), node)
    first, quoted = calls["go"]
    assert first.argv == [w for k in TEMPLATE_PLACEHOLDERS for w in (k, str(values[k]))]
    assert quoted.argv == ["quoted", str(values["tp"]), str(values["node_rank"])]


@settings(SANDBOX, max_examples=20)
@given(case=cases(nodes=(1,)), role=st.sampled_from(ROLES))
def test_the_probe_keeps_hostile_values_inert_and_exact(case, role):
    plan = case.plan
    gpu = plan.target.gpu
    probe = probe_script(plan, case.catalog, gpu, role, minutes=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stubs(root)
        (root / "data.jsonl").write_text("{}\n")
        out = root / "out"
        calls = run(root, probe.text, PROBE_OUT=str(out), PROBE_DATASET=str(root / "data.jsonl"))
        manifest = tomllib.loads((out / "manifest.toml").read_text())
        assert manifest["target_model"] == plan.workload.target_model
        assert manifest["gpu"] == gpu and manifest["role"] == role
        assert manifest["max_batch_size"] == (0 if role == "target" else 1)
        doc = yaml.safe_load((out / "run.yaml").read_text())
        assert doc["model"]["target_model_path"] == case.path
        assert doc["run_id"] == f"probe-{gpu}"
        assert doc["data"]["chat_template"] == (plan.launch.chat_template or "qwen")
        assert calls["specforge"][0].argv[:3] == ["train", "-c", "run.yaml"]
        reading = read_probe_dir(out)
        assert {p.measurement.target_model for p in reading.points} == {plan.workload.target_model}
        result = tomllib.loads((out / "probe.toml").read_text())
        assert result["gpu"] == gpu


# --- the escaping layer's own rules ------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(value=TEXT)
def test_a_heredoc_carries_any_text_byte_for_byte(value):
    from dflash_plan.model.launch.escape import heredoc

    content = f"{value}\n{HEREDOC}\n{value}"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["bash", "-c", heredoc("f", content)], cwd=tmp, check=True)
        # A final newline is added only where the content has none.
        assert Path(tmp, "f").read_bytes().decode() == content.removesuffix("\n") + "\n"


@settings(max_examples=200, deadline=None)
@given(value=TEXT)
def test_yaml_and_toml_read_back_any_text(value):
    from dflash_plan.model.basics.tomlfile import to_toml, toml_value
    from dflash_plan.model.launch.escape import to_yaml

    doc = {"a": value, "b": [value], "c": {"d": value}}
    assert yaml.safe_load(to_yaml(doc)) == doc
    # Several lines as a literal block where the emitter can (a manifest's pod shells).
    assert yaml.safe_load(to_yaml({**doc, "e": f"{value}\n{value}"}, blocks=True)) == {
        **doc,
        "e": f"{value}\n{value}",
    }
    assert tomllib.loads(to_toml(doc)) == doc
    assert tomllib.loads(f"v = {toml_value(value)}")["v"] == value
    assert json.loads(json.dumps(value)) == value


@pytest.mark.parametrize(
    "template, where",
    [
        ('go "{target_model}"', "inside double quotes"),
        ("go '{target_model}'", "inside single quotes"),
        ("go `echo {target_model}`", "inside backquotes"),
        ("go \\{target_model}", "after a backslash"),
        ("go ${target_model}", "after a $"),
        ("cat <<EOF\n{target_model}\nEOF", "inside a heredoc"),
    ],
)
def test_a_placeholder_the_template_quotes_itself_is_refused(catalog, baseline, template, where):
    # `"{target_model}"` filled with 'x $(touch X)' would run touch: the shell drops the
    # single quotes inside double quotes.
    plan = baseline.model_copy(
        update={
            "launch": baseline.launch.model_copy(
                update={"template": template, "target_model_path": "m $(touch X)"}
            )
        }
    )
    with pytest.raises(
        PlanError, match=f"placeholder {{target_model}} sits {re.escape(where)}"
    ) as err:
        generate(plan, catalog, "template")
    assert len(str(err.value).splitlines()) == 1 and err.value.key == "launch.template"


PATH_WITH_QUOTES = "m/$(touch MARK1) 'q'\nz"


@pytest.mark.parametrize(
    "template, argv",
    [
        ("go \"{tp}\" '{target_devices}'", ["1", "0,1,2"]),  # values that need no quoting
        ('go "$(dirname {target_model})"', ["m"]),  # a command substitution quotes afresh
        ("cat <<'EOF'\n\"{{x}}\" '\nEOF\ngo {target_model}", [PATH_WITH_QUOTES]),
        ("go {target_model} # {target_model}", [PATH_WITH_QUOTES]),
    ],
)
def test_a_placeholder_where_its_quoting_holds_is_filled(
    tmp_path, catalog, baseline, template, argv
):
    plan = baseline.model_copy(
        update={
            "launch": baseline.launch.model_copy(
                update={"template": template, "target_model_path": PATH_WITH_QUOTES}
            )
        }
    )
    text = generate(plan, catalog, "template").text
    stubs(tmp_path, gpu_names(plan, catalog))
    (go,) = run(tmp_path, text)["go"]
    assert go.argv == argv


def test_a_nul_in_a_path_is_a_clear_error(baseline):
    # No path or name can hold one, and no command-line argument can carry one.
    doc = plan_to_dict(baseline)
    doc["launch"]["train_data_path"] = "data\0.jsonl"
    with pytest.raises(PlanError, match=r"launch\.train_data_path.*NUL") as err:
        plan_from_dict(doc, "plan.toml")
    assert len(str(err.value).splitlines()) == 1


@pytest.mark.parametrize("fmt", ["specforge", "speculators", "slurm"])
@SANDBOX
@given(case=cases())
def test_every_offline_launch_keeps_hostile_values_inert_and_exact(fmt, case):
    # The offline run (capture to storage, then train): every value reaches the capture
    # and the trainer exactly as typed, and nothing runs. An absolute output_dir is made
    # relative so that the capture's marker lands inside the sandbox.
    out_dir = case.plan.launch.output_dir
    if out_dir is not None and out_dir.startswith("/"):
        out_dir = "." + out_dir
    plan = edit(
        case.plan,
        workload={"mode": "offline"},
        storage={"format": "speculators" if fmt == "speculators" else "specforge"},
        launch={"output_dir": out_dir},
    )
    script = generate(plan, case.catalog, fmt)
    out, train = expected_out(plan), plan.launch.train_data_path
    hs = f"{out}/hidden_states"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stubs(root, gpu_names(plan, case.catalog))
        nodes = [None] if case.nodes == 1 or fmt == "slurm" else list(range(case.nodes))
        seen = set()
        for rank in nodes:
            calls = run(root, script.text, node_rank=rank)
            if fmt == "slurm":
                # srun records each step; the steps' commands follow `env` and its settings.
                for step in preflight_steps(root, calls["srun"]):
                    words = step.argv[step.argv.index("env") + 1 :]
                    while re.fullmatch(r"[A-Z_]+=.*", words[0]):
                        words = words[1:]
                    calls.setdefault(words[0], []).append(Call(words[1:], step.env))
            if fmt in ("specforge", "slurm"):
                for c in calls.get("torchrun", []):
                    assert after(c.argv, "--target-model-path") == case.path
                    assert after(c.argv, "--data-path") == train
                    assert after(c.argv, "--output-path") == hs
                    assert after(c.argv, "--chat-template") == (plan.launch.chat_template or "qwen")
                    seen.add("capture")
                for c in calls.get("specforge", []):
                    doc = read_yaml(root)
                    assert doc["model"]["target_model_path"] == case.path
                    assert doc["data"]["hidden_states_path"] == hs
                    assert doc["output_dir"] == out and doc["run_id"] == plan.launch.run_id
                    assert c.argv[:2] == ["train", "-c"]
                    seen.add("train")
            else:
                for c in calls.get("python", []):
                    assert c.argv[:2] == ["scripts/launch_vllm.py", case.path]
                for c in calls.get("speculators", []):
                    if c.argv[0] == "prepare-data":
                        assert after(c.argv, "--data") == train
                        assert after(c.argv, "--output") == f"{out}/data"
                    else:
                        assert after(c.argv, "--preprocessed-data") == f"{out}/data"
                        assert after(c.argv, "--output") == hs
                        seen.add("capture")
                for c in calls.get("torchrun", []):
                    assert after(c.argv, "--verifier-name-or-path") == case.path
                    assert after(c.argv, "--hidden-states-path") == hs
                    seen.add("train")
        assert seen == {"capture", "train"}
