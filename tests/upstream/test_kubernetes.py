"""`launch --format kubernetes`: the JobSet against the upstream CRD (tests/k8s_schema.py),
its GPU requests, and each pod's shell run against stub commands with the environment
the pod would see."""

from __future__ import annotations

import copy
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.plan import default_plan
from dflash_plan.model.launch import generate
from k8s_schema import Pod, manifest, pods, public_ports, validate
from launch_shapes import shapes
from preflight_stubs import GETENT_ANY, PREFLIGHT_STUBS, PYTHON_PROBE, wanted_gpus
from support import edit

# Shapes the kubernetes format refuses as they stand, and the key the refusal names.
REFUSED = {"trainers-span-two": "launch.volume_claim", "32+128": "launch.volume_claim"}
TOOLS = ["mooncake_master", "python", "specforge", "curl", "sleep"]
ENV = (
    "CUDA_VISIBLE_DEVICES",
    "NODE_RANK",
    "MOONCAKE_MASTER_SERVER_ADDR",
    "MOONCAKE_METADATA_SERVER",
    "MOONCAKE_LOCAL_HOSTNAME",
    "MC_TCP_BIND_ADDRESS",
    "MOONCAKE_GLOBAL_SEGMENT_SIZE",
    "PET_RDZV_CONF",
)


def jobset(plan, catalog) -> dict:
    return manifest(generate(plan, catalog, "kubernetes").text)


@pytest.mark.parametrize("shape", list(shapes(default_plan())))
def test_every_shape_validates_or_is_refused_with_its_key(catalog, baseline, shape):
    plan = shapes(baseline)[shape]
    if shape in REFUSED:
        with pytest.raises(PlanError) as err:
            generate(plan, catalog, "kubernetes")
        assert err.value.key == REFUSED[shape] and len(str(err.value).splitlines()) == 1
        # With the volume every trainer pod mounts, it validates.
        plan = edit(plan, launch={"volume_claim": "dflash-work"})
    script = generate(plan, catalog, "kubernetes")
    doc = manifest(script.text)
    assert validate(doc) == []
    assert public_ports(doc) == []
    # Hosts the plan names are not where the pods run: the header says so.
    named = "# note: launch.hosts is not used" in script.text
    assert named == bool(plan.launch.hosts)
    every = pods(doc)
    assert sum(p.gpus for p in every) == plan.target.count + plan.drafter.count
    assert sum(p.gpus for p in every if p.job == "servers") == plan.target.count
    assert [p.job for p in every if not p.gpus] == ["store"]


def test_the_validator_rejects_what_the_server_would_drop_or_refuse(catalog, baseline):
    doc = jobset(baseline, catalog)
    assert validate(doc) == []
    pod = doc["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    bad = copy.deepcopy(doc)
    bad["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["gpus"] = 1
    assert any("spec.gpus: unknown field" in e for e in validate(bad))
    bad = copy.deepcopy(doc)
    bad["spec"]["successPolicy"]["operator"] = "Every"
    assert any("is not one of" in e for e in validate(bad))
    bad = copy.deepcopy(doc)
    bad["spec"]["replicatedJobs"][0]["dependsOn"] = [{"name": "servers", "status": "Ready"}]
    assert any("first ReplicatedJob" in e for e in validate(bad))
    bad = copy.deepcopy(doc)
    bad["metadata"]["name"] = "Qwen3_8B"
    assert any("DNS-1123" in e for e in validate(bad))
    bad = copy.deepcopy(doc)
    bad["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0][
        "resources"
    ]["limits"]["nvidia.com/gpu"] = "one"
    assert any("does not match" in e for e in validate(bad))
    pod["containers"][0]["ports"][0]["hostPort"] = 30000
    assert validate(doc) == [] and public_ports(doc) != []


def test_the_order_teardown_and_failure_policy(catalog, baseline):
    doc = jobset(baseline, catalog)
    spec = doc["spec"]
    assert [j["name"] for j in spec["replicatedJobs"]] == ["store", "servers", "trainers"]
    assert [j.get("dependsOn") for j in spec["replicatedJobs"]] == [
        None,
        [{"name": "store", "status": "Ready"}],
        [{"name": "servers", "status": "Ready"}],
    ]
    assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["trainers"]}
    assert spec["failurePolicy"] == {"maxRestarts": 0}
    assert spec["network"]["enableDNSHostnames"] is True
    for rjob in spec["replicatedJobs"][:2]:
        (container,) = rjob["template"]["spec"]["template"]["spec"]["containers"]
        assert "readinessProbe" in container  # what dependsOn Ready waits for


def test_gpu_type_goes_to_a_node_selector_and_mixed_types_need_it(catalog, baseline):
    plan = edit(baseline, launch={"gpu_product": {"rtx-pro-6000": "NVIDIA-RTX-PRO-6000"}})
    for p in pods(jobset(plan, catalog)):
        expected = {"nvidia.com/gpu.product": "NVIDIA-RTX-PRO-6000"} if p.gpus else None
        assert p.spec.get("nodeSelector") == expected
    mixed = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "h100-sxm"})
    with pytest.raises(PlanError, match=r"launch\.gpu_product\.b200") as err:
        generate(mixed, catalog, "kubernetes")
    assert err.value.key == "launch.gpu_product"
    mixed = edit(mixed, launch={"gpu_product": {"b200": "NVIDIA-B200", "h100-sxm": "H100"}})
    doc = jobset(mixed, catalog)
    assert validate(doc) == []
    assert {
        p.job: p.spec["nodeSelector"]["nvidia.com/gpu.product"] for p in pods(doc) if p.gpus
    } == {
        "servers": "NVIDIA-B200",
        "trainers": "H100",
    }


def test_bad_kubernetes_keys_are_one_line_errors(baseline):
    from dflash_plan.model.inputs.plan import plan_from_dict, plan_to_dict

    for key, value, good, allowed in (
        ("volume_claim", "My_Claim", "my-claim.v1", "a Kubernetes object name"),
        ("gpu_product", {"b200": "NVIDIA B200"}, {"b200": "NVIDIA-B200"}, "label value"),
        ("image", "a\nb", "registry.example/dflash:1", "one line"),
    ):
        doc = plan_to_dict(baseline)
        doc["launch"][key] = value
        with pytest.raises(PlanError, match=rf"launch\.{key}.*{allowed}") as err:
            plan_from_dict(doc, "plan.toml")
        assert len(str(err.value).splitlines()) == 1
        doc["launch"][key] = good
        assert getattr(plan_from_dict(doc, "plan.toml").launch, key) == good


def test_names_are_dns_labels_whatever_the_run_id(catalog, baseline):
    plan = edit(baseline, launch={"run_id": "9 Qwen/Qwen3_8B." + "x" * 80})
    doc = jobset(plan, catalog)
    assert validate(doc) == []
    assert doc["metadata"]["name"].startswith("dflash-9-qwen-qwen3-8b-x")


# --- each pod's shell, under stubs ----------------------------------------------------------


def stubs(root: Path) -> None:
    """Commands recording their name, arguments and environment, one file per call named
    by the time (so the files sort in call order); curl answers once `sleep` has run (the
    servers come up while the caller waits)."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name in TOOLS:
        extra = {
            "curl": '[ -e "$STUB_LOG/up" ] || exit 7\n',
            "sleep": 'touch "$STUB_LOG/up"\n',
        }.get(name, "")
        record = (
            '#!/bin/bash\nf="$STUB_LOG/${EPOCHREALTIME/./}.$$.' + name + '"\n'
            'printf "%s\\0" "$@" > "$f.args"\n'
            f'for v in {" ".join(ENV)}; do printf "%s=%s\\0" "$v" "${{!v-}}"; done > "$f.env"\n'
        )
        probe = PYTHON_PROBE if name == "python" else ""  # the pre-flight's question
        (bin_dir / name).write_text(
            "#!/bin/bash\n" + probe + record.removeprefix("#!/bin/bash\n") + extra
        )
        (bin_dir / name).chmod(0o755 | stat.S_IEXEC)
    for name, body in {**PREFLIGHT_STUBS, "getent": GETENT_ANY}.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755 | stat.S_IEXEC)


def run_pod(root: Path, pod: Pod) -> list[tuple[str, list[str], dict[str, str]]]:
    """Run the pod's command with its environment; the calls, in order."""
    log, work = root / "log", root / "work"
    for folder in (log, work):
        folder.mkdir(exist_ok=True)
    (log / "up").unlink(missing_ok=True)
    assert pod.argv[:2] == ["bash", "-c"]
    env = {
        **pod.env,
        "PATH": f"{root / 'bin'}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "STUB_GPU_NAME": wanted_gpus(pod.argv[2]),
    }
    result = subprocess.run(
        ["bash", "-c", "kill() { wait; }\n" + pod.argv[2] + "\nwait\n"],
        cwd=work,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    calls = []
    for args in sorted(log.glob("*.args")):
        pairs = (i.partition("=") for i in args.with_suffix(".env").read_text().split("\0"))
        calls.append(
            (
                args.stem.rsplit(".", 1)[-1],
                args.read_text().split("\0")[:-1],
                {k: v for k, _, v in pairs if k},
            )
        )
        args.with_suffix(".env").unlink()
        args.unlink()
    return calls


@pytest.mark.parametrize(
    "shape, volume", [("builtin", None), ("two-nodes-8+8", None), ("trainers-span-two", "w")]
)
def test_each_pod_starts_its_process_with_its_env_and_trainers_wait(
    tmp_path, catalog, baseline, shape, volume
):
    plan = shapes(baseline)[shape]
    if volume:
        plan = edit(plan, launch={"volume_claim": volume})
    script = generate(plan, catalog, "kubernetes")
    doc = manifest(script.text)
    every = pods(doc)
    store = next(p for p in every if p.job == "store")
    servers = [p for p in every if p.job == "servers"]
    trainers = [p for p in every if p.job == "trainers"]
    urls = [f"http://{s.hostname}:30000" for s in servers]
    stubs(tmp_path)
    ((name, argv, env),) = run_pod(tmp_path, store)
    assert name == "mooncake_master" and "--rpc_port=35551" in argv
    master = f"{store.hostname}:35551"
    for pod in servers:
        calls = run_pod(tmp_path, pod)
        # It waits for the store's metadata server, then starts its capture server.
        assert [c[0] for c in calls] == ["curl", "sleep", "curl", "python"]
        assert (
            calls[0][1][-1]
            == f"http://{store.hostname}:35880/metadata?key=dflash-plan-health-check"
        )
        _, argv, env = calls[-1]
        assert argv[argv.index("--port") + 1] == "30000"
        assert argv[argv.index("--tp-size") + 1] == str(plan.target.tp)
        assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, range(plan.target.tp)))
        assert (
            env["MOONCAKE_LOCAL_HOSTNAME"]
            == env["MC_TCP_BIND_ADDRESS"]
            == pod.env["MOONCAKE_LOCAL_HOSTNAME"]
        )
        assert env["MOONCAKE_MASTER_SERVER_ADDR"] == master
    for pod in trainers:
        calls = run_pod(tmp_path, pod)
        names = [c[0] for c in calls]
        first = names.index("specforge")
        # Every server answered /health before the first specforge process started.
        answered = [c[1][-1] for c in calls[:first] if c[0] == "curl"]
        assert answered[-len(urls) :] == [f"{u}/health" for u in urls] and "sleep" in names
        roles = [c for c in calls if c[0] == "specforge"]
        rank = pod.index
        config = f"run-node{rank}.yaml"
        consumer = ["train", "-c", config, "--role", "consumer", "--node-rank", str(rank)]
        expected = [consumer] if rank else [["train", "-c", config, "--role", "producer"], consumer]
        assert sorted(c[1] for c in roles) == sorted(expected)
        for _, argv, env in roles:
            assert env["MOONCAKE_MASTER_SERVER_ADDR"] == master
            if "consumer" in argv:
                assert env["NODE_RANK"] == str(rank)
                assert env["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, range(pod.gpus)))
                assert env["MOONCAKE_LOCAL_HOSTNAME"] == pod.env["MOONCAKE_LOCAL_HOSTNAME"]
                assert bool(env["PET_RDZV_CONF"]) == (len(trainers) > 1)
            else:
                assert env["CUDA_VISIBLE_DEVICES"] == ""
        run = yaml.safe_load((tmp_path / "work" / config).read_text())
        assert run == yaml.safe_load(script.files["run.yaml"])
        assert run["deployment"]["disaggregated"]["server_urls"] == urls
        if len(trainers) > 1:
            assert run["deployment"]["trainer"]["master_addr"] == trainers[0].hostname


def test_pods_request_the_host_memory_and_cpus_slurm_asks_for(catalog, baseline):
    # One node: slurm's --mem and --cpus-per-task cover that node's processes; the pods
    # that share it ask for the same between them (each rounded up on its own).
    import re

    sbatch = generate(baseline, catalog, "slurm").text
    mem_gib = int(re.search(r"#SBATCH --mem=(\d+)G", sbatch).group(1))
    cpus = int(re.search(r"#SBATCH --cpus-per-task=(\d+)", sbatch).group(1))
    requests = [
        p.spec["containers"][0]["resources"]["requests"] for p in pods(jobset(baseline, catalog))
    ]
    gib = sum(int(r.get("memory", "0Gi").removesuffix("Gi")) for r in requests)
    assert mem_gib <= gib <= mem_gib + len(requests)
    assert sum(r["cpu"] for r in requests) == cpus  # the store's master counts in both


def test_volume_claim_is_a_dns_subdomain_of_up_to_253_characters(baseline):
    """A PersistentVolumeClaim's name is a DNS-1123 subdomain (Kubernetes'
    ValidatePersistentVolumeClaim -> NameIsDNSSubdomain): up to 253 characters, as
    docs/limits.md says; the 200 of a one-line name cut it short."""
    from dflash_plan.model.inputs.plan import plan_from_dict, plan_to_dict

    longest = ".".join(["a" * 63] * 4)[:253]  # 4 labels of 63 + 3 dots = 255, cut to 253
    assert len(longest) == 253 and not longest.endswith(".")
    doc = plan_to_dict(baseline)
    doc["launch"]["volume_claim"] = longest
    assert plan_from_dict(doc, "plan.toml").launch.volume_claim == longest
    doc["launch"]["volume_claim"] = longest + "a"
    with pytest.raises(PlanError, match=r"launch\.volume_claim.*at most 253") as err:
        plan_from_dict(doc, "plan.toml")
    assert len(str(err.value).splitlines()) == 1
