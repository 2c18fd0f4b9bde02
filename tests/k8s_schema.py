"""The checks Kubernetes runs on a JobSet before any pod starts, offline: the upstream CRD's
openAPIV3Schema (tests/data/jobset, pinned) with the API server's structural pruning (a
field the schema does not name is an error here, where the server would drop it
silently), the object names' DNS rules, and the JobSet webhook's own rules. Also the pods
a JobSet makes, with the command and environment each one runs."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CRD = Path(__file__).parent / "data" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # DNS-1123 label
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}
# What the API server itself accepts in an object's root metadata (ObjectMeta's writable
# fields a manifest sets).
ROOT_METADATA = {"name", "namespace", "labels", "annotations", "generateName"}


@functools.cache
def schema(version: str = "v1alpha2") -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load(CRD.read_text(), Loader=loader)
    (found,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    result: dict[str, Any] = found["schema"]["openAPIV3Schema"]
    return result


def check_schema(value: Any, node: dict[str, Any], path: str, errors: list[str]) -> None:
    """A structural schema's checks: type, enum, required, bounds, patterns, list-map keys;
    an object's field its schema does not name is an error (pruned by the server) unless
    x-kubernetes-preserve-unknown-fields allows it."""
    if node.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errors.append(f"{path}: {value!r} is not an integer or a string")
        elif isinstance(value, str) and not re.search(node.get("pattern", ""), value):
            errors.append(f"{path}: {value!r} does not match {node['pattern']}")
        return
    if "anyOf" in node and "type" not in node:
        if not any(_ok(value, option) for option in node["anyOf"]):
            errors.append(f"{path}: {value!r} matches none of {node['anyOf']}")
        return
    kind = node.get("type")
    if kind is None:
        return
    expected = TYPES[kind]
    if not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool)):
        errors.append(f"{path}: {value!r} is not of type {kind}")
        return
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{path}: {value!r} is not one of {node['enum']}")
    if "pattern" in node and not re.search(node["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {node['pattern']}")
    if "minimum" in node and value < node["minimum"]:
        errors.append(f"{path}: {value} is below {node['minimum']}")
    if "maximum" in node and value > node["maximum"]:
        errors.append(f"{path}: {value} is above {node['maximum']}")
    if kind == "array":
        if "maxItems" in node and len(value) > node["maxItems"]:
            errors.append(f"{path}: more than {node['maxItems']} items")
        for i, item in enumerate(value):
            check_schema(item, node["items"], f"{path}[{i}]", errors)
        keys = node.get("x-kubernetes-list-map-keys")
        if keys:
            seen = [tuple(item.get(k) for k in keys) for item in value]
            if len(seen) != len(set(seen)):
                errors.append(f"{path}: duplicate {'/'.join(keys)} in a list map")
    elif kind == "object":
        for key in node.get("required", []):
            if key not in value:
                errors.append(f"{path}: required field {key!r} is missing")
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        for key, item in value.items():
            where = f"{path}.{key}"
            if properties is not None and key in properties:
                check_schema(item, properties[key], where, errors)
            elif isinstance(extra, dict):
                check_schema(item, extra, where, errors)
            elif not node.get("x-kubernetes-preserve-unknown-fields") and (
                properties is not None or extra is None
            ):
                errors.append(f"{where}: unknown field (the API server would drop it)")


def _ok(value: Any, node: dict[str, Any]) -> bool:
    errors: list[str] = []
    check_schema(value, node, "", errors)
    return not errors


def validate(doc: dict[str, Any]) -> list[str]:
    """Every error the API server and the JobSet webhook (v0.12.0,
    pkg/webhooks/jobset_webhook.go) would report for this JobSet."""
    errors: list[str] = []
    if doc.get("apiVersion") != "jobset.x-k8s.io/v1alpha2" or doc.get("kind") != "JobSet":
        errors.append(f"not a v1alpha2 JobSet: {doc.get('apiVersion')} {doc.get('kind')}")
    body = {k: v for k, v in doc.items() if k != "metadata"}
    check_schema(body, {**schema(), "required": []}, "", errors)
    meta = doc.get("metadata", {})
    errors += [f"metadata.{k}: unknown field" for k in set(meta) - ROOT_METADATA]
    name = meta.get("name", "")
    # A JobSet's name is a DNS-1123 subdomain; it is also a label value (<= 63).
    if not DNS_LABEL.fullmatch(name) or len(name) > 63:
        errors.append(f"metadata.name: {name!r} is not a DNS-1123 label")
    spec = doc.get("spec", {})
    jobs = spec.get("replicatedJobs", [])
    names: list[str] = []
    for i, rjob in enumerate(jobs):
        where = f"spec.replicatedJobs[{i}]"
        if i == 0 and "dependsOn" in rjob:
            errors.append(f"{where}: DependsOn can't be set for the first ReplicatedJob")
        for dep in rjob.get("dependsOn", []):
            if dep["name"] not in names:
                errors.append(f"{where}: cannot depend on replicatedJob {dep['name']}")
        names.append(rjob["name"])
        job = rjob["template"]["spec"]
        longest_job = f"{name}-{rjob['name']}-{rjob.get('replicas', 1) - 1}"
        if not DNS_1035.fullmatch(longest_job) or len(longest_job) > 63:
            errors.append(f"{where}: job name {longest_job!r} is not a DNS-1035 label")
        if job.get("completionMode") == "Indexed" and "completions" in job:
            pod = f"{longest_job}-{job['completions'] - 1}-abcde"
            if not DNS_1035.fullmatch(pod) or len(pod) > 63:
                errors.append(f"{where}: pod name {pod!r} is not a DNS-1035 label")
    if spec.get("startupPolicy", {}).get("startupPolicyOrder") == "InOrder" and any(
        "dependsOn" in j for j in jobs
    ):
        errors.append("spec: StartupPolicy and DependsOn APIs are mutually exclusive")
    for target in spec.get("successPolicy", {}).get("targetReplicatedJobs", []):
        if target not in names:
            errors.append(f"spec.successPolicy: {target!r} is not a replicatedJob")
    subdomain = spec.get("network", {}).get("subdomain")
    if subdomain is not None and (not DNS_1035.fullmatch(subdomain) or len(subdomain) > 63):
        errors.append(f"spec.network.subdomain: {subdomain!r} is not a DNS-1035 label")
    return errors


@dataclass
class Pod:
    job: str  # the replicated job
    index: int  # JOB_COMPLETION_INDEX
    hostname: str  # its DNS name in the JobSet's headless service
    argv: list[str]
    env: dict[str, str]  # as the container sees it (with what Kubernetes injects)
    gpus: int
    spec: dict[str, Any]


def pod_ip(job: int, index: int) -> str:
    return f"10.1.{job}.{index}"


def pods(doc: dict[str, Any]) -> list[Pod]:
    """The pods the JobSet makes, in start-up order: each replicated job's Indexed Job
    (replicas 1) has `completions` pods, hostname `<jobset>-<job>-0-<index>`."""
    name = doc["metadata"]["name"]
    subdomain = doc["spec"]["network"].get("subdomain", name)
    out = []
    for j, rjob in enumerate(doc["spec"]["replicatedJobs"]):
        assert rjob.get("replicas", 1) == 1
        job = rjob["template"]["spec"]
        spec = job["template"]["spec"]
        (container,) = spec["containers"]
        for index in range(job.get("completions", 1)):
            host = f"{name}-{rjob['name']}-0-{index}"
            env = {"JOB_COMPLETION_INDEX": str(index), "HOSTNAME": host}
            for item in container.get("env", []):
                if "value" in item:
                    env[item["name"]] = item["value"]
                else:
                    assert item["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
                    env[item["name"]] = pod_ip(j, index)
            limits = container.get("resources", {}).get("limits", {})
            out.append(
                Pod(
                    rjob["name"],
                    index,
                    f"{host}.{subdomain}",
                    container["command"] + container.get("args", []),
                    env,
                    int(limits.get("nvidia.com/gpu", 0)),
                    spec,
                )
            )
    return out


def public_ports(doc: dict[str, Any]) -> list[str]:
    """Anything that would publish a port outside the cluster network."""
    found = []
    for pod in pods(doc):
        if pod.spec.get("hostNetwork"):
            found.append(f"{pod.hostname}: hostNetwork")
        for c in pod.spec["containers"]:
            found += [f"{pod.hostname}: hostPort" for p in c.get("ports", []) if "hostPort" in p]
    text = yaml.safe_dump(doc)
    found += [kind for kind in ("LoadBalancer", "NodePort") if kind in text]
    return found


def manifest(text: str) -> dict[str, Any]:
    """The one YAML document of a kubernetes launch file (after its comment header)."""
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    assert len(docs) == 1, f"{len(docs)} documents"
    result: dict[str, Any] = docs[0]
    return result
