"""The editable fields of the planner: which plan key each input edits and how its text
is read. Pure data and parsing (no textual), shared by the planning state and the widgets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.basics.numbers import NumberError, parse_number, parse_whole
from ..model.inputs.plan import (
    DRAFTERS,
    MODES,
    PRECISIONS,
    SERVING_ENGINES,
    SERVING_REGIMES,
    TOPOLOGIES,
)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    key: str  # dotted plan key, or a role-relative key (price.*, measured.*)
    label: str
    # "int", "optional-int", "optional-float", "gpu", "model", "choice", "switch" (no/yes
    # for a true/false key), "text", "optional-text"
    kind: str
    unit: str = ""
    choices: tuple[str, ...] = ()  # a "choice" field's values
    labels: tuple[str, ...] = ()  # how its picker names them (empty: as the values)

    @property
    def options(self) -> list[tuple[str, str]]:
        """A choice field's picker entries: (label, value)."""
        return list(zip(self.labels or self.choices, self.choices, strict=True))

    @property
    def widget_id(self) -> str:
        return self.key.replace(".", "-")

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "optional-int", "optional-float")


# A true/false key's choices, as a field shows them.
SWITCH = ("no", "yes")

# The drafter families as upstream spells them (SpecForge, speculators, z-lab/dflash).
DRAFTER_LABELS = {"dflash": "DFlash", "dflash2": "DFlash2", "dspark": "DSpark", "eagle3": "EAGLE-3"}

SECTIONS: tuple[tuple[str, tuple[FieldSpec, ...]], ...] = (
    (
        "",
        (
            FieldSpec("name", "plan", "text"),
            # Which GPUs run which role: the first choice of a plan (issue 32), and what the
            # pools below mean (colocated, every GPU runs both).
            FieldSpec("workload.topology", "topology", "choice", choices=TOPOLOGIES),
        ),
    ),
    (
        "Target pool",
        (
            FieldSpec("target.gpu", "GPU", "gpu"),
            FieldSpec("target.count", "GPUs", "int"),
            FieldSpec("target.tp", "TP size", "int"),
            # The target's weights: an FP8 or NVFP4 export prefills faster (the recipe's
            # B300 servers run NVFP4); a GPU without those tensor cores refuses it.
            FieldSpec(
                "target.precision",
                "weights",
                "choice",
                choices=PRECISIONS,
                labels=("bf16", "FP8", "NVFP4"),
            ),
        ),
    ),
    (
        "Drafter pool",
        (
            FieldSpec("drafter.gpu", "GPU", "gpu"),
            FieldSpec("drafter.count", "GPUs", "int"),
            FieldSpec("drafter.batch_size", "batch/GPU", "int", "samples"),
        ),
    ),
    (
        "Workload",
        (
            FieldSpec("workload.target_model", "target", "model"),
            FieldSpec(
                "workload.drafter",
                "drafter",
                "choice",
                choices=DRAFTERS,
                labels=tuple(DRAFTER_LABELS[d] for d in DRAFTERS),
            ),
            # Anchors first after the model: the drafter's work scales with them, and the
            # answer to a GPU question can turn on them (the recipe uses 512).
            FieldSpec("workload.num_anchors", "anchors", "int", "recipe 512"),
            FieldSpec("workload.samples", "samples", "int"),
            FieldSpec("workload.avg_sample_tokens", "avg tokens", "int", "per sample"),
            FieldSpec("workload.epochs", "epochs", "int"),
            FieldSpec("workload.max_length", "max length", "int", "tokens"),
            FieldSpec("workload.mode", "mode", "choice", choices=MODES),
        ),
    ),
    (
        "Cost",
        (
            FieldSpec("cost.reference_gpu", "reference", "gpu"),
            FieldSpec("price.target.ratio", "target", "optional-float", "x ref"),
            FieldSpec("price.target.usd", "target", "optional-float", "$/GPU-h"),
            FieldSpec("price.drafter.ratio", "drafter", "optional-float", "x ref"),
            FieldSpec("price.drafter.usd", "drafter", "optional-float", "$/GPU-h"),
        ),
    ),
    (
        "Measured tok/s per GPU",
        (
            FieldSpec("measured.target", "target", "optional-float"),
            FieldSpec("measured.drafter", "drafter", "optional-float"),
        ),
    ),
    # Offline hidden states (workload.mode = "offline"); empty: not bounded, not priced.
    (
        "Storage (offline)",
        (
            FieldSpec("workload.storage_dtype", "precision", "choice", choices=("bf16", "fp8")),
            FieldSpec("storage.tb", "space", "optional-float", "TB"),
            FieldSpec("storage.read_gb_per_s_per_node", "read", "optional-float", "GB/s/node"),
            FieldSpec("storage.usd_per_tb_month", "price", "optional-float", "$/TB-month"),
        ),
    ),
    # The phase before capture and training (model/core/phases.py); empty: the whole sample
    # is generated, on every GPU of the target's type.
    (
        "Regenerate answers",
        (
            FieldSpec("workload.regenerate", "regenerate", "switch", choices=SWITCH),
            FieldSpec("workload.regenerate_output_tokens", "answer", "optional-int", "tokens"),
            FieldSpec("regenerate.count", "GPUs", "optional-int", "of target type"),
        ),
    ),
    # Where the trained drafter serves (model/core/acceptance.py): the engine and batch
    # regime set its speedup from tau, the serving GPUs (of the target's type) its
    # break-even; a factor of the user's own replaces the engine's fitted one.
    (
        "Serving",
        (
            FieldSpec("serving.engine", "engine", "choice", choices=SERVING_ENGINES),
            FieldSpec("serving.regime", "batch", "choice", choices=SERVING_REGIMES),
            FieldSpec("serving.count", "GPUs", "int", "serving"),
            FieldSpec("serving.engine_factor", "factor", "optional-float", "x per tau"),
            # The break-even at a request rate instead of per GPU (model/core/serving.py).
            FieldSpec("serving.requests_per_s", "rate", "optional-float", "requests/s"),
            FieldSpec("serving.output_tokens", "output", "optional-int", "tokens/req"),
        ),
    ),
)

# Edited on the Launch tab: the command of the `template` launch format.
TEMPLATE = FieldSpec("launch.template", "template", "optional-text")

FIELDS: dict[str, FieldSpec] = {f.key: f for _, fields in SECTIONS for f in fields}
FIELDS[TEMPLATE.key] = TEMPLATE


class FieldError(ValueError):
    """Text that is not a value of the field's kind; the message says what is allowed."""


def parse(spec: FieldSpec, text: str) -> Any:
    """The value typed into a field; None for an empty optional field. Numbers are read by
    the same reader as the command line's `--set` (model/basics/numbers.py)."""
    raw = text.strip()
    if spec.kind in ("int", "optional-int"):
        optional = spec.kind == "optional-int"
        if not raw:
            if optional:
                return None
            raise FieldError("enter a whole number")
        try:
            value = parse_whole(raw)
        except NumberError as err:
            raise FieldError(str(err)) from None
        if value < 1:
            raise FieldError("must be at least 1" + (" (leave empty for the default)" * optional))
        return value
    if spec.kind == "switch":
        if raw not in SWITCH:
            raise FieldError("choose no or yes")
        return raw == "yes"
    if spec.kind == "optional-float":
        if not raw:
            return None
        try:
            number = float(parse_number(raw))
        except NumberError as err:
            raise FieldError(str(err)) from None
        except OverflowError:
            raise FieldError(f"'{raw}' is out of range") from None
        if not number > 0 or number == float("inf"):
            raise FieldError("must be a number above 0 (leave empty for none)")
        return number
    if spec.kind == "optional-text":
        return raw or None
    return raw


def plan_path(key: str, doc: dict[str, Any]) -> tuple[str, ...]:
    """The plan-file path a field edits, resolving role-relative keys against the draft."""
    parts = key.split(".")
    if parts[0] == "price":
        gpu = doc["target"]["gpu"] if parts[1] == "target" else doc["drafter"]["gpu"]
        return ("cost", "ratio" if parts[2] == "ratio" else "usd_per_gpu_hour", gpu)
    if parts[0] == "measured":
        gpu = doc[parts[1]]["gpu"]
        return ("calibration", parts[1], gpu)
    return tuple(parts)


def field_for(plan_key: str | None, doc: dict[str, Any]) -> str | None:
    """The field that edits a dotted plan key (as a PlanError names it), or None."""
    if not plan_key:
        return None
    if plan_key in FIELDS:
        return plan_key
    parts = plan_key.split(".")
    if parts[0] == "cost" and len(parts) >= 2 and parts[1] in ("ratio", "usd_per_gpu_hour"):
        view = "ratio" if parts[1] == "ratio" else "usd"
        gpu = parts[2] if len(parts) > 2 else doc["target"]["gpu"]
        role = "drafter" if gpu == doc["drafter"]["gpu"] != doc["target"]["gpu"] else "target"
        return f"price.{role}.{view}"
    if parts[0] == "calibration" and len(parts) >= 2 and parts[1] in ("target", "drafter"):
        return f"measured.{parts[1]}"
    for length in range(len(parts) - 1, 1, -1):  # a sub-key of a field's key
        prefix = ".".join(parts[:length])
        if prefix in FIELDS:
            return prefix
    return None


def get(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = doc
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def put(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set (or, for None, remove) the value at path in a plan dict."""
    node = doc
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


def show(value: Any) -> str:
    """A value as a field shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return SWITCH[value]
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e6 else f"{value:.0f}"
    return str(value)
