"""A Kubernetes JobSet (jobset.x-k8s.io/v1alpha2, checked against the JobSet v0.12.0 CRD)
running SpecForge unified as the `specforge` and `slurm` formats do across nodes: a
Mooncake store pod, one pod per capture server and one trainer pod per drafter node of
the layout, each with its own GPUs. JobSet's headless service names the pods; the trainers
start once the capture servers are ready and the JobSet ends when the trainers do."""

from __future__ import annotations

import math
from typing import Any

from ..basics.errors import PlanError
from . import preflight, specforge
from .checkpointing import resumed
from .common import (
    MOONCAKE_METADATA_PORT,
    MOONCAKE_RPC_PORT,
    Context,
    LaunchScript,
    devices,
    header,
    name_label,
    read_node_rank,
    run_id,
    stack_install,
)
from .escape import cmd, feed, to_yaml
from .layout import Replica
from .slurm import PRODUCER_PROCESSES, SERVER_EXTRA_PROCESSES
from .versions import PINNED, UpstreamLine, upstream_line

NAME = "kubernetes"
TITLE = "Kubernetes JobSet running SpecForge unified"
API_VERSION = "jobset.x-k8s.io/v1alpha2"
# The image docs/launch.md's Dockerfile builds (SGLang 0.5.14 with SpecForge's
# spec-capture patch, specforge 0.2.0, mooncake); launch.image names the one pushed.
DEFAULT_IMAGE = f"dflash-specforge:{upstream_line().pin('specforge').version}"


def image_stack(line: UpstreamLine) -> str:
    """What a newer line's image holds instead of the Dockerfile's pinned stack."""
    if line is PINNED:
        return ""
    return (
        f" (upstream line {line.name}: FROM lmsysorg/sglang:{line.patch_target}-cu130, "
        f"{stack_install(line)}, that SpecForge checkout's "
        f"scripts/apply_sglang_spec_capture_patch.sh --target {line.patch_target})"
    )


def default_image(line: UpstreamLine) -> str:
    """The image a line's Dockerfile builds: tagged by its SpecForge (0.2.0, or the commit
    for a line of a git SpecForge)."""
    version = line.pin("specforge").version
    return DEFAULT_IMAGE if line is PINNED else f"dflash-specforge:{version[:8]}"


# GPU feature discovery's label for the GPU's product name (nvidia-smi's, spaces as `-`).
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
WORKSPACE = "/workspace"  # where launch.volume_claim is mounted: every pod's working dir
STORE, SERVERS, TRAINERS = "store", "servers", "trainers"
# Kubernetes names: a pod's is `<jobset>-<replicated job>-<job index>-<pod index>-<5
# random>`, a DNS-1035 label of at most 63 characters (the JobSet webhook checks it).
NAME_CHARS = 63
POD_SUFFIX_CHARS = len("-abcde")


def jobset_name(ctx: Context, largest_index: int) -> str:
    """The JobSet's name: the run id as a DNS-1035 label (lower case, `-` for anything
    else, starting with a letter), short enough for its longest pod name."""
    longest = max(len(f"-{job}-0-{largest_index}") for job in (STORE, SERVERS, TRAINERS))
    return name_label(run_id(ctx.plan), NAME_CHARS - POD_SUFFIX_CHARS - longest, lower=True)


def pod_host(name: str, job: str, index: int) -> str:
    """A pod's DNS name in the JobSet's headless service (`<job name>-<index>.<subdomain>`;
    the subdomain is the JobSet's name)."""
    return f"{name}-{job}-0-{index}.{name}"


def env_list(**variables: object) -> list[dict[str, Any]]:
    """Container env entries; a value of None takes the pod's own IP (downward API)."""
    return [
        {"name": k, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
        if v is None
        else {"name": k, "value": str(v)}
        for k, v in variables.items()
    ]


def node_selector(ctx: Context, gpu: str) -> dict[str, str]:
    product = ctx.plan.launch.gpu_product.get(gpu)
    return {GPU_PRODUCT_LABEL: product} if product else {}


def replicated_job(
    name: str,
    pods: int,
    container: dict[str, Any],
    *,
    cpus: int,
    memory_gib: int = 0,
    gpus: int = 0,
    selector: dict[str, str] | None = None,
    claim: str | None = None,
    after: str | None = None,
) -> dict[str, Any]:
    """One replicated job: one Indexed Job of `pods` pods (each its index in
    JOB_COMPLETION_INDEX and the DNS name `<jobset>-<name>-0-<index>`), none restarted."""
    volumes, mounts = [], []
    requests: dict[str, object] = {"cpu": cpus}
    if memory_gib:
        requests["memory"] = f"{memory_gib}Gi"
    container["resources"] = {"requests": requests}
    if gpus:
        # NCCL and SGLang's TP ranks share memory through /dev/shm, 64 MiB in a pod.
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
        requests[GPU_RESOURCE] = gpus
        container["resources"]["limits"] = {GPU_RESOURCE: gpus}  # GPUs: limits = requests
    if claim:
        volumes.append({"name": "workspace", "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": "workspace", "mountPath": WORKSPACE})
        container["workingDir"] = WORKSPACE
    if mounts:
        container["volumeMounts"] = mounts
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if selector:
        pod["nodeSelector"] = selector
    if volumes:
        pod["volumes"] = volumes
    job: dict[str, Any] = {"name": name, "replicas": 1}
    if after:
        job["dependsOn"] = [{"name": after, "status": "Ready"}]
    job["template"] = {
        "spec": {
            "completionMode": "Indexed",
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "template": {"spec": pod},
        }
    }
    return job


def container(
    ctx: Context,
    name: str,
    shell: str,
    env: list[dict[str, Any]],
    ports: dict[str, int],
    ready: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "image": ctx.plan.launch.image or default_image(ctx.line),
        "command": ["bash", "-c", shell],
    }
    if env:
        out["env"] = env
    # Container ports only: pods reach each other on the cluster network; nothing is
    # published outside it (no hostPort, no NodePort or LoadBalancer service).
    if ports:
        out["ports"] = [{"name": k, "containerPort": v} for k, v in ports.items()]
    if ready:
        out["readinessProbe"] = {**ready, "periodSeconds": 10}
    return out


def trainer_shell(ctx: Context, trainers: int, yaml_text: str) -> str:
    """What each trainer pod runs: its trainer rank is its pod index; rank 0 also runs the
    producer. Every rank waits until every capture server answers /health."""
    consumer = cmd("specforge", "train", "-c") + ' "run-node$node_rank.yaml" '
    consumer += cmd("--role", "consumer", "--node-rank") + ' "$node_rank"'
    producer = f"{cmd('specforge', 'train', '-c', specforge.node_config(0))} "
    producer += f"{cmd('--role', 'producer')} > producer.log 2>&1 &"
    return "\n".join(
        [
            "set -euo pipefail",
            "# The SpecForge CLI rejects a partial torch.distributed environment.",
            "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
            "# Background services stop with this script.",
            "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
            "# This pod's trainer rank: its index in the Indexed Job.",
            'NODE_RANK="${JOB_COMPLETION_INDEX:?not a pod of an Indexed Job}"',
            read_node_rank(trainers),
            'export NODE_RANK="$node_rank"',
            # One file per pod: pods sharing a volume do not rewrite each other's.
            feed('cat > "run-node$node_rank.yaml"', yaml_text),
            'read -r -a urls <<< "$DFLASH_SERVER_URLS"',
            'for url in "${urls[@]}"; do until curl -sf "$url/health" >/dev/null; do '
            "sleep 5; done; done",
            'if [ "$node_rank" = 0 ]; then',
            f"  CUDA_VISIBLE_DEVICES= {producer}",
            "fi",
            *resumed(ctx, consumer),
        ]
    )


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, layout = ctx.plan, ctx.layout
    d_nodes, per_node = specforge.trainer_nodes(ctx)
    servers, trainers, tp = len(layout.replicas), len(d_nodes), p.target.tp
    target_gpu, drafter_gpu = ctx.resolved.target_gpu.key, ctx.resolved.drafter_gpu.key
    selectors = {gpu: node_selector(ctx, gpu) for gpu in (target_gpu, drafter_gpu)}
    if target_gpu != drafter_gpu and not all(selectors.values()):
        missing = [gpu for gpu, sel in selectors.items() if not sel]
        raise PlanError.said(
            f"target.gpu = {target_gpu!r}, drafter.gpu = {drafter_gpu!r}: pods of two GPU "
            f"types need a node label each to land on their own nodes; set "
            f"launch.gpu_product.{missing[0]} to those nodes' {GPU_PRODUCT_LABEL} label "
            f"(e.g. NVIDIA-B200)",
            "launch.gpu_product",
            where="target.gpu",
        )
    claim = p.launch.volume_claim
    if trainers > 1 and not claim:
        raise PlanError.said(
            f"drafter.count = {p.drafter.count}: {trainers} trainer pods share SpecForge's "
            f"control_dir and output_dir, which need a volume every pod mounts; set "
            f"launch.volume_claim to a ReadWriteMany PersistentVolumeClaim's name",
            "launch.volume_claim",
            where="drafter.count",
        )
    name = jobset_name(ctx, max(servers, trainers) - 1)
    store = pod_host(name, STORE, 0)
    urls = [f"http://{pod_host(name, SERVERS, i)}:{p.launch.base_port}" for i in range(servers)]
    doc = specforge.config(ctx, managed_local=False, server_urls=urls, head=store)
    if trainers > 1:
        doc["deployment"]["trainer"]["master_addr"] = pod_host(name, TRAINERS, 0)
    yaml_text = to_yaml(doc)
    mooncake = {
        **specforge.mooncake_env(store),
        # Mooncake publishes and binds this pod's address (see FABRIC_IP_FUNCTION).
        "MOONCAKE_LOCAL_HOSTNAME": None,
        "MC_TCP_BIND_ADDRESS": None,
    }
    # In a pod the device plugin's GPUs count from 0.
    replica = Replica(0, tuple(range(tp)), p.launch.base_port)
    metadata_url = f"http://{store}:{MOONCAKE_METADATA_PORT}/metadata"
    trainer_env: dict[str, object] = {
        **specforge.consumer_env(ctx, d_nodes[0], 0),
        "CUDA_VISIBLE_DEVICES": devices(tuple(range(per_node))),
    }
    del trainer_env["NODE_RANK"]  # the pod's index, set by its shell
    # Requests as slurm's --mem and --cpus-per-task count them: one CPU per process (a
    # server's TP schedulers, tokenizer manager and detokenizer; each trainer rank, and on
    # rank 0 the producer and its tokenizing workers, in every trainer pod's template).
    segment, weights, rank = specforge.host_memory_gib(ctx)
    server_cpus, server_gib = tp + SERVER_EXTRA_PROCESSES, math.ceil(segment + weights)
    trainer_cpus, trainer_gib = per_node + PRODUCER_PROCESSES, math.ceil(per_node * rank)
    jobs = [
        replicated_job(
            STORE,
            1,
            container(
                ctx,
                STORE,
                f"set -euo pipefail\nexec {cmd(*specforge.mooncake_master(ctx), lead=2)}",
                [],
                {"rpc": MOONCAKE_RPC_PORT, "metadata": MOONCAKE_METADATA_PORT},
                {"tcpSocket": {"port": MOONCAKE_METADATA_PORT}},
            ),
            cpus=1,
        ),
        replicated_job(
            SERVERS,
            servers,
            container(
                ctx,
                "capture-server",
                "set -euo pipefail\n"
                + specforge.wait_for_metadata(metadata_url)
                + f"\nexec {cmd(*specforge.capture_server(ctx, replica), lead=3)}",
                env_list(**specforge.server_env(ctx, replica), **mooncake),
                {"http": p.launch.base_port},
                {"httpGet": {"path": "/health", "port": p.launch.base_port}},
            ),
            cpus=server_cpus,
            memory_gib=server_gib,
            gpus=tp,
            selector=selectors[target_gpu],
            claim=claim,
            after=STORE,
        ),
        replicated_job(
            TRAINERS,
            trainers,
            container(
                ctx,
                "trainer",
                trainer_shell(ctx, trainers, yaml_text),
                env_list(**trainer_env, **mooncake, DFLASH_SERVER_URLS=" ".join(urls)),
                {"torch": p.launch.master_port} if trainers > 1 else {},
            ),
            cpus=trainer_cpus,
            memory_gib=trainer_gib,
            gpus=per_node,
            selector=selectors[drafter_gpu],
            claim=claim,
            after=SERVERS,
        ),
    ]
    # Each pod checks itself before its command loads anything (preflight.py).
    hosts = (store, pod_host(name, SERVERS, 0), pod_host(name, TRAINERS, 0))
    for job, block in zip(jobs, preflight.pod_blocks(ctx, NAME, hosts, trainers), strict=True):
        command = job["template"]["spec"]["template"]["spec"]["containers"][0]["command"]
        command[2] = block + "\n" + command[2]
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            "network": {
                "enableDNSHostnames": True,
                "subdomain": name,
                "publishNotReadyAddresses": True,
            },
            # Done when every trainer pod is: the store and the servers are then deleted.
            "successPolicy": {"operator": "All", "targetReplicatedJobs": [TRAINERS]},
            # A failed pod fails the run: a restart would find control_dir already there.
            "failurePolicy": {"maxRestarts": 0},
            "replicatedJobs": jobs,
        },
    }
    gpus = servers * tp + trainers * per_node
    notes = [
        f"kubectl apply -f this file (the namespace is kubectl's); pods: 1 Mooncake store "
        f"(no GPU), {servers} capture server(s) x {tp} {GPU_RESOURCE}, {trainers} "
        f"trainer(s) x {per_node}: {gpus} GPUs, the plan's; start-up order store, "
        f"servers, trainers (dependsOn Ready, and the trainers wait for /health); the "
        f"JobSet completes, and stops the store and servers, when every trainer does",
        f"image {p.launch.image or default_image(ctx.line)}"
        + (
            ""
            if p.launch.image
            else ": the image docs/launch.md's Dockerfile builds; set launch.image to "
            "where you pushed it" + image_stack(ctx.line)
        ),
        f"working directory: the claim {claim!r} mounted at {WORKSPACE} in every GPU pod "
        f"(train_data_path and output_dir are read and written there)"
        if claim
        else "no launch.volume_claim: train_data_path must be in the image and "
        "output_dir (the checkpoints) stays in the trainer pod; set launch.volume_claim "
        "to keep it",
    ]
    notes.append(
        f"requests per capture-server pod: {server_cpus} CPU, {server_gib} GiB (its Mooncake "
        f"segment and buffer {segment:.0f} GiB and the target weights it loads through host "
        f"memory {weights:.1f} GiB); per trainer pod: {trainer_cpus} CPU, {trainer_gib} GiB "
        f"({per_node} rank(s) x their buffer and two fetched batches {rank:.1f} GiB); the "
        f"processes' own runtime comes on top, and no memory limit is set: a namespace's "
        f"default limit (LimitRange) must not be below these"
    )
    if p.launch.hosts:
        notes.append("launch.hosts is not used: the JobSet names its pods")
    if not any(selectors.values()):
        notes.append(
            f"pods go to any node with free {GPU_RESOURCE}; to pin a GPU type set "
            f"launch.gpu_product.<gpu key> to the nodes' {GPU_PRODUCT_LABEL} label"
        )
    notes += specforge.memory_notes(ctx)
    text = header(ctx, TITLE, notes, ports=False, fmt=NAME) + "\n" + to_yaml(manifest, blocks=True)
    return LaunchScript(NAME, text, {"run.yaml": yaml_text}, tuple(notes), layout)
