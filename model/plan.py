"""The plan: what the user chose. TOML in and out, and `--set key=value` edits."""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import (BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError,
                      model_validator)

from .errors import PlanError, suggest
from .tomlfile import parse_toml, read_toml, write_atomic
from .validation import explain

SCHEMA_VERSION = 1


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Workload(_Section):
    target_model: str = Field("qwen3-8b", min_length=1,
                              description="a preset key or the path of a config.json")
    samples: PositiveInt = 800_000
    avg_sample_tokens: PositiveInt = 2344
    epochs: PositiveInt = 6
    max_length: PositiveInt = 3072
    num_anchors: PositiveInt = 512
    block_size: PositiveInt | None = Field(None, description="None: the target's default (16)")
    draft_layers: PositiveInt = 5
    target_layer_ids: tuple[int, ...] | None = Field(
        None, description="captured target layers; None: 5 spread from 1 to n_layers - 3")

    @model_validator(mode="after")
    def _sample_fits(self) -> Workload:
        if self.avg_sample_tokens > self.max_length:
            raise ValueError(f"avg_sample_tokens ({self.avg_sample_tokens}) exceeds max_length "
                             f"({self.max_length})")
        if self.target_layer_ids is not None:
            if not self.target_layer_ids or min(self.target_layer_ids) < 0:
                raise ValueError("target_layer_ids must be a non-empty list of layer numbers >= 0")
        return self


class TargetPool(_Section):
    gpu: str = "rtx-pro-6000"
    count: PositiveInt = 3
    tp: PositiveInt = 1

    @model_validator(mode="after")
    def _tp_divides(self) -> TargetPool:
        if self.count % self.tp:
            raise ValueError(f"count {self.count} is not a multiple of tp {self.tp} "
                             f"(each replica takes tp GPUs)")
        return self

    @property
    def replicas(self) -> int:
        return self.count // self.tp


class DrafterPool(_Section):
    gpu: str = "rtx-pro-6000"
    count: PositiveInt = 1
    batch_size: PositiveInt = Field(2, description="samples per drafter GPU per step")


class Cost(_Section):
    reference_gpu: str | None = None
    ratio: dict[str, PositiveFloat] = Field(default_factory=dict)
    usd_per_gpu_hour: dict[str, PositiveFloat] = Field(default_factory=dict)


class Calibration(_Section):
    target: dict[str, PositiveFloat] = Field(default_factory=dict)
    drafter: dict[str, PositiveFloat] = Field(default_factory=dict)


class Launch(_Section):
    """How to start the real pipeline (the run's names and paths; the split comes from the
    plan). Every key is optional."""

    format: Literal["specforge", "speculators", "specforge-legacy", "slurm", "template"] = "specforge"
    run_id: str = Field("dflash-run", min_length=1)
    train_data_path: str = Field("./cache/dataset/train.jsonl", min_length=1)
    output_dir: str | None = Field(None, description="default: ./outputs/<run_id>")
    target_model_path: str | None = Field(None, description="default: the preset's repository")
    chat_template: str | None = None
    hosts: tuple[str, ...] = Field((), description="node host names, node 0 first")
    master_port: int = Field(29500, ge=1, le=65535)
    base_port: int = Field(30000, ge=1, le=65535, description="first capture server port")
    template: str | None = Field(None, description="command template with {placeholders}")


class Plan(_Section):
    schema_version: Literal[1] = SCHEMA_VERSION
    name: str = ""
    workload: Workload = Workload()
    target: TargetPool = TargetPool()
    drafter: DrafterPool = DrafterPool()
    cost: Cost = Cost()
    calibration: Calibration = Calibration()
    launch: Launch = Launch()

    def gpus_in_use(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.target.gpu, self.drafter.gpu)))

    def to_toml(self) -> str:
        return plan_to_toml(self)


# Allowed keys per table, for "did you mean" on typos.
KNOWN_KEYS: dict[tuple[str, ...], list[str]] = {
    (): list(Plan.model_fields),
    ("workload",): list(Workload.model_fields),
    ("target",): list(TargetPool.model_fields),
    ("drafter",): list(DrafterPool.model_fields),
    ("cost",): list(Cost.model_fields),
    ("calibration",): list(Calibration.model_fields),
    ("launch",): list(Launch.model_fields),
}


def plan_from_dict(doc: dict[str, Any], where: str, text: str | None = None) -> Plan:
    version = doc.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise PlanError(f"{where}: schema_version = {version!r}: this dflash-plan reads "
                        f"schema_version {SCHEMA_VERSION}")
    try:
        return Plan.model_validate(doc)
    except ValidationError as err:
        raise explain(err, where, text, known=KNOWN_KEYS) from None


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    doc = plan.model_dump(mode="json", exclude_none=True)
    if "target_layer_ids" in doc["workload"]:
        doc["workload"]["target_layer_ids"] = list(doc["workload"]["target_layer_ids"])
    doc["launch"]["hosts"] = list(doc["launch"]["hosts"])
    return doc


def plan_to_toml(plan: Plan) -> str:
    return tomli_w.dumps(plan_to_dict(plan))


def default_plan_text() -> str:
    return resources.files(__package__).joinpath("default_plan.toml").read_text(encoding="utf-8")


def default_plan() -> Plan:
    """The built-in plan: the user's measured run (shared reference situation.md)."""
    return plan_from_dict(parse_toml(default_plan_text(), "built-in plan"), "built-in plan")


def _parse_value(raw: str) -> Any:
    """A --set value: TOML syntax when it parses (7, 3.4, true, [1, 2]), else a bare string."""
    try:
        return parse_toml(f"v = {raw}", "--set")["v"]
    except PlanError:
        return raw


def apply_sets(doc: dict[str, Any], sets: list[str]) -> tuple[dict[str, Any], set[tuple[str, ...]]]:
    """A copy of doc with each `dotted.key=value` applied, and the keys that were set."""
    doc = copy.deepcopy(doc)
    touched: set[tuple[str, ...]] = set()
    for item in sets:
        key, sep, raw = item.partition("=")
        path = tuple(part.strip() for part in key.strip().split("."))
        if not sep or not all(path):
            raise PlanError(f"--set {item!r}: expected KEY=VALUE with a dotted key, "
                            f"e.g. target.count=7")
        node = doc
        for depth, part in enumerate(path[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise PlanError(f"--set {item}: '{'.'.join(path[:depth + 1])}' is a value, "
                                f"not a table")
            node = child
        node[path[-1]] = _parse_value(raw.strip())
        touched.add(path)
    return doc, touched


def load_plan(path: Path | None, sets: list[str] | None = None) -> Plan:
    """The plan in path (or the built-in plan), with --set edits applied and validated."""
    if path is None:
        doc, text, where = parse_toml(default_plan_text(), "built-in plan"), None, "built-in plan"
    else:
        doc, text = read_toml(path)
        where = str(path)
    if sets:
        doc, touched = apply_sets(doc, sets)
        try:
            return plan_from_dict(doc, where, text)
        except PlanError as err:
            # Point at --set when the bad key is one the user just set.
            message = str(err)
            for key in touched:
                dotted = ".".join(key)
                if f" {dotted} " in message or f"'{dotted}'" in message:
                    raise PlanError(f"--set {message.split(': ', 1)[1]}") from None
            raise
    return plan_from_dict(doc, where, text)


def save_plan(plan: Plan, path: Path) -> None:
    """Write the plan atomically (temporary file, then rename)."""
    write_atomic(Path(path), plan_to_toml(plan))


def check_names(plan: Plan, gpus: dict[str, Any]) -> None:
    """Every GPU a plan names must be in the catalog."""
    named: list[tuple[str, str]] = [("target.gpu", plan.target.gpu),
                                    ("drafter.gpu", plan.drafter.gpu)]
    if plan.cost.reference_gpu is not None:
        named.append(("cost.reference_gpu", plan.cost.reference_gpu))
    named += [(f"cost.ratio.{k}", k) for k in plan.cost.ratio]
    named += [(f"cost.usd_per_gpu_hour.{k}", k) for k in plan.cost.usd_per_gpu_hour]
    named += [(f"calibration.target.{k}", k) for k in plan.calibration.target]
    named += [(f"calibration.drafter.{k}", k) for k in plan.calibration.drafter]
    for key, gpu in named:
        if gpu not in gpus:
            raise PlanError(f"{key}: unknown GPU {gpu!r}{suggest(gpu, gpus)}; known: "
                            f"{', '.join(gpus)}")
