"""The plan: what the user chose. TOML in and out, and `--set key=value` edits."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import tomli_w
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from ..basics import recipe
from ..basics import validation as v
from ..basics.data import data_text
from ..basics.errors import PlanError
from ..basics.numbers import TypedNumber, looks_like_number
from ..basics.tomlfile import parse_toml, read_text, read_toml, write_atomic
from ..basics.validation import explain
from . import formats
from .formats import Receive

SCHEMA_VERSION: Final = 1

# Every number a plan holds, with its range (docs/limits.md).
GpuCount = Annotated[int, v.GPUS_PER_ROLE.before, v.GPUS_PER_ROLE.field("GPUs of this role")]
TpSize = Annotated[int, v.TP.before, v.TP.field("GPUs per target replica (tensor parallel)")]
BatchSize = Annotated[
    int, v.BATCH_SIZE.before, v.BATCH_SIZE.field("samples per drafter GPU per step")
]
SampleCount = Annotated[int, v.SAMPLES.before, v.SAMPLES.field("samples per epoch")]
SequenceTokens = Annotated[int, v.SEQUENCE_TOKENS.before, v.SEQUENCE_TOKENS.field("tokens")]
EpochCount = Annotated[int, v.EPOCHS.before, v.EPOCHS.field("epochs")]
AnchorCount = Annotated[int, v.ANCHORS.before, v.ANCHORS.field("anchors per sample")]
BlockSize = Annotated[int, v.BLOCK_SIZE.before, v.BLOCK_SIZE.field("drafted tokens per anchor")]
DraftLayers = Annotated[int, v.DRAFT_LAYERS.before, v.DRAFT_LAYERS.field("drafter layers")]
LayerId = Annotated[int, v.LAYER_ID.before, v.LAYER_ID.field("a target layer number")]
UsdPerGpuHour = Annotated[float, v.USD_PER_GPU_HOUR.before, v.USD_PER_GPU_HOUR.field("price")]
PriceRatio = Annotated[
    float, v.PRICE_RATIO.before, v.PRICE_RATIO.field("price relative to the reference GPU")
]
TokensPerS = Annotated[
    float, v.TOKENS_PER_S_PER_GPU.before, v.TOKENS_PER_S_PER_GPU.field("measured rate")
]
Port = Annotated[int, v.PORT.before, v.PORT.field("TCP port")]
MaxSequences = Annotated[
    int, v.MAX_SEQUENCES.before, v.MAX_SEQUENCES.field("sequences a decode engine holds in flight")
]
StorageTb = Annotated[float, v.STORAGE_TB.before, v.STORAGE_TB.field("space available")]
StorageReadGbPerS = Annotated[
    float, v.STORAGE_READ_GB_PER_S.before, v.STORAGE_READ_GB_PER_S.field("read bandwidth per node")
]
UsdPerTbMonth = Annotated[
    float, v.USD_PER_TB_MONTH.before, v.USD_PER_TB_MONTH.field("storage price")
]
Name = Annotated[str, BeforeValidator(v.one_line(v.NAME_CHARS))]
Text = Annotated[str, Field(max_length=v.TEXT_CHARS), AfterValidator(v.no_nul)]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# workload.mode: the online pipeline, or capture to storage then train (offline).
Mode = Literal["online", "offline"]
MODES: tuple[Mode, ...] = ("online", "offline")


# workload.drafter: the drafter family trained, named as upstream spells it.
Drafter = Literal["dflash", "dflash2", "dspark", "eagle3"]
DRAFTERS: tuple[Drafter, ...] = ("dflash", "dflash2", "dspark", "eagle3")

# workload.topology: the roles on GPUs of their own, or both roles on every GPU.
Topology = Literal["disaggregated", "colocated"]
TOPOLOGIES: tuple[Topology, ...] = ("disaggregated", "colocated")

# target.precision: the target's weights (and the GEMMs they run) in bf16, FP8 or NVFP4.
Precision = Literal["bf16", "fp8", "fp4"]
PRECISIONS: tuple[Precision, ...] = ("bf16", "fp8", "fp4")

# workload.receive (inputs/formats.py Receive says what it is).
RECEIVES: tuple[Receive, ...] = ("host", "pinned", "device")


class Workload(_Section):
    target_model: Text = Field(
        "qwen3-8b", min_length=1, description="a preset key or the path of a config.json"
    )
    samples: SampleCount = recipe.SAMPLES
    avg_sample_tokens: SequenceTokens = 2344
    epochs: EpochCount = recipe.EPOCHS
    max_length: SequenceTokens = recipe.MAX_LENGTH
    num_anchors: AnchorCount = recipe.NUM_ANCHORS
    block_size: BlockSize | None = Field(
        None,
        description="None: the drafter family's default (DFlash: the target's, 16; DFlash2 "
        f"8; DSpark and EAGLE-3 7); {v.BLOCK_SIZE.describe()}",
    )
    draft_layers: DraftLayers = recipe.DRAFT_LAYERS
    target_layer_ids: tuple[LayerId, ...] | None = Field(
        None,
        max_length=int(v.DRAFT_LAYERS.hi),
        description="captured target layers; None: one per drafter layer, spread from "
        f"1 to n_layers - 3; each {v.LAYER_ID.describe()}",
    )

    drafter: Drafter = Field(
        "dflash",
        description="the drafter family trained: dflash (DFlash), dflash2 (DFlash2: grouped "
        "dynamic convolutions and a low-rank top-k selector; the final hidden state is "
        "captured too), dspark (DSpark: a mixture-of-experts drafter) or eagle3 (EAGLE-3)",
    )
    topology: Topology = Field(
        "disaggregated",
        description="disaggregated: target GPUs and drafter GPUs apart, hidden states sent "
        "from one to the other; colocated: every GPU of the plan (target.count + "
        "drafter.count, one GPU type) holds a target replica's shard and a drafter rank and "
        "time-shares them, nothing sent (online only)",
    )
    transport: Literal["mooncake", "direct"] = Field(
        "mooncake",
        description="how hidden states reach the drafters: staged through host "
        "memory and a Mooncake store (SpecForge, speculators), or "
        "device to device (your own in-process pipeline)",
    )
    receive: Receive = Field(
        "pinned",
        description="how a trainer receives hidden states from the Mooncake store "
        "(transport mooncake only): host (pageable host memory, copied on the training "
        "stream: the trainer waits; SpecForge 0.2.0, speculators), pinned (pooled pinned "
        "buffers copied on a side stream, overlapped: SpecForge's default since September "
        "2026) or device (RDMA into GPU memory, overlapped; Mooncake over rdma)",
    )
    mode: Mode = Field(
        "online",
        description="online: the targets feed the drafters every epoch; offline: "
        "capture hidden states to storage once, then train every "
        "epoch from storage",
    )
    storage_dtype: Literal["bf16", "fp8"] = Field(
        "bf16", description="precision of hidden states written to storage (offline)"
    )
    regenerate: v.Flag = Field(
        False,
        description="first regenerate the answers with the target (decode), a phase before "
        "the capture and training ([regenerate] sets its GPUs)",
    )
    regenerate_output_tokens: SequenceTokens | None = Field(
        None,
        description="answer tokens generated per sample, the rest of the sample being its "
        "prompt; None: the whole sample (an upper bound on the phase: a decoded token costs "
        "more than a prefilled one); at most avg_sample_tokens",
    )

    @model_validator(mode="after")
    def _sample_fits(self) -> Workload:
        if self.avg_sample_tokens > self.max_length:
            raise ValueError(
                f"avg_sample_tokens ({self.avg_sample_tokens}) exceeds max_length "
                f"({self.max_length})"
            )
        out = self.regenerate_output_tokens
        if out is not None and out > self.avg_sample_tokens:
            raise ValueError(
                f"regenerate_output_tokens ({out}) exceeds avg_sample_tokens "
                f"({self.avg_sample_tokens}): a sample is its prompt plus its answer"
            )
        if self.target_layer_ids is not None and not self.target_layer_ids:
            raise ValueError("target_layer_ids must be a non-empty list of layer numbers >= 0")
        return self


class TargetPool(_Section):
    gpu: Name = "rtx-pro-6000"
    count: GpuCount = 3
    tp: TpSize = 1
    precision: Precision = Field(
        "bf16",
        description="the target's weights: bf16, fp8 (an FP8 checkpoint, on GPUs with FP8 "
        "tensor cores) or fp4 (an NVFP4 checkpoint, on GPUs with FP4 tensor cores: "
        "Blackwell); the capture's hidden states stay bf16",
    )

    @model_validator(mode="after")
    def _tp_divides(self) -> TargetPool:
        if self.count % self.tp:
            raise ValueError(
                f"count {self.count} is not a multiple of tp {self.tp} (each replica takes tp GPUs)"
            )
        return self

    @property
    def replicas(self) -> int:
        return self.count // self.tp


class DrafterPool(_Section):
    gpu: Name = "rtx-pro-6000"
    count: GpuCount = 1
    batch_size: BatchSize = 2


class Regenerate(_Section):
    """The GPUs that regenerate the answers (workload.regenerate). Every key is optional:
    unset, every GPU of the plan of the target's type (targets and, on the same type,
    drafters: training has not started, so all of them are free), at the target's TP."""

    gpu: Name | None = Field(None, description="None: the target's GPU type")
    count: GpuCount | None = Field(
        None, description="None: every GPU of the plan of this type (targets and drafters)"
    )
    tp: TpSize | None = Field(None, description="None: the target's tp")
    max_sequences: MaxSequences = Field(
        256, description="sequences in flight per replica at most (vLLM's max_num_seqs default)"
    )


class Cost(_Section):
    reference_gpu: Name | None = None
    ratio: dict[str, PriceRatio] = Field(default_factory=dict)
    usd_per_gpu_hour: dict[str, UsdPerGpuHour] = Field(default_factory=dict)
    provider: Name | None = Field(
        None,
        description="take prices and rental units from this provider's offers "
        "(dflash-plan prices); the plan's own figures still win",
    )
    kind: Literal["on-demand", "spot", "reserved"] = "on-demand"
    unit_gpus: dict[str, Annotated[int, Field(ge=1, le=1024)]] = Field(
        default_factory=dict,
        description="GPUs per rental unit of a GPU type (8 when only whole 8-GPU nodes are "
        "rented): cost counts the GPUs billed, in whole units; 1 to 1024",
    )


# The on-disk formats of offline hidden states (model/physics/storage.py says what each
# one stores besides the captured layers, with its source).
StorageFormat = Literal["specforge", "speculators", "deepspec"]


class Storage(_Section):
    """Where offline hidden states live. Every key is optional: None means not bounded
    (space, bandwidth) or not priced."""

    tb: StorageTb | None = Field(
        None, description="space available, TB (1e12 bytes); None: not checked"
    )
    read_gb_per_s_per_node: StorageReadGbPerS | None = Field(
        None, description="what one node reads from storage, GB/s; None: not a bound"
    )
    usd_per_tb_month: UsdPerTbMonth | None = Field(None, description="None: not priced")
    format: StorageFormat | None = Field(
        None,
        description="what is stored per token besides the captured layers; None: "
        "the launch format's (speculators for speculators, else specforge)",
    )
    billing: Literal["by-phase", "whole-run"] = Field(
        "by-phase",
        description="by-phase: the targets are rented for the capture only and "
        "the drafters for the training only; whole-run: the plan's "
        "GPUs are rented for both phases, each role idle in the other",
    )


class Measurement(_Section):
    """A measured rate with what it was measured on. Workload fields left out mean "this
    plan's workload"; `gpu_busy` records whether the GPUs ran at full utilisation near
    their power limit (which rules out a host-bound reading of a low rate)."""

    tokens_per_s: TokensPerS = Field(
        description=f"per GPU, dataset tokens per second; {v.TOKENS_PER_S_PER_GPU.describe()}"
    )
    target_model: Text | None = None
    avg_sample_tokens: SequenceTokens | None = None
    num_anchors: AnchorCount | None = Field(None, description="drafter measurements")
    batch_size: BatchSize | None = Field(None, description="drafter measurements")
    drafter: Drafter | None = Field(
        None,
        description="the drafter family trained (drafter measurements; a target's rate "
        "does not depend on it: the capture runs the whole forward whatever it keeps)",
    )
    gpu_busy: v.Flag | None = None
    bound: Literal["exact", "at_least"] = Field(
        "exact",
        description="at_least: the role kept up at this rate (e.g. its input "
        "queue stayed empty), so its capacity is at least this",
    )
    source: str = ""
    date: str | None = None


# A calibration entry: a bare rate on this plan's workload, one measurement, or several
# (other sample lengths or batches) for the same GPU.
# The branch is chosen by the value's shape, so that an error speaks of that branch only.
def _calibration_kind(value: Any) -> str:
    if isinstance(value, (dict, BaseModel)):
        return "(measurement)"
    return "(measurements)" if isinstance(value, (list, tuple)) else "(rate)"


CalibrationEntry = Annotated[
    Annotated[TokensPerS, Tag("(rate)")]
    | Annotated[Measurement, Tag("(measurement)")]
    | Annotated[tuple[Measurement, ...], Tag("(measurements)")],
    Discriminator(_calibration_kind),
]


class AcceptanceMeasurement(_Section):
    """A measured acceptance length (tau) of the user's own drafter after a number of
    sample passes (samples x epochs): it sets the acceptance curve's level for this plan
    (physics/acceptance.py); `calibrate` writes it from a run's logs."""

    tau: Annotated[float, Field(gt=1.0, le=64.0, description="mean accepted tokens per step")]
    sample_passes: Annotated[float, Field(gt=0, description="samples x epochs trained")]
    # The measurement's own scatter (a log's last reports' quartiles): the calibrated
    # range where it was measured. None: not known.
    tau_low: Annotated[float | None, Field(gt=1.0, le=64.0)] = None
    tau_high: Annotated[float | None, Field(gt=1.0, le=64.0)] = None
    source: str = ""
    date: str | None = None


class Calibration(_Section):
    target: dict[str, CalibrationEntry] = Field(default_factory=dict)
    drafter: dict[str, CalibrationEntry] = Field(default_factory=dict)
    # name (a run, a checkpoint) -> a measured tau at a number of sample passes
    acceptance: dict[str, AcceptanceMeasurement] = Field(default_factory=dict)


# serving.engine: the serving engine the drafter is served on (the engine factor's key).
ServingEngine = Literal["sglang", "vllm", "transformers"]
SERVING_ENGINES: tuple[ServingEngine, ...] = ("sglang", "vllm", "transformers")
# serving.regime: requests in flight per engine; low-batch = one at a time (concurrency 1).
ServingRegime = Literal["low-batch", "high-batch"]
SERVING_REGIMES: tuple[ServingRegime, ...] = ("low-batch", "high-batch")


class Serving(_Section):
    """Where the trained drafter serves: the engine and batch regime set its speedup from
    the acceptance length, the serving GPUs its break-even (the serving GPUs it saves)."""

    engine: ServingEngine = "sglang"
    regime: ServingRegime = "low-batch"
    gpu: Name | None = Field(None, description="None: the target's GPU type")
    # The user's choice: the break-even is in serving hours of this many GPUs (1: per GPU).
    count: GpuCount = 1
    engine_factor: Annotated[
        float | None,
        Field(gt=0, le=2.0, description="speedup per unit of tau; None: fitted per engine"),
    ] = None


# The launch formats' names, and what each one's launch runs, are the registry's
# (inputs/formats.py, one row per format; the plan sits below the launch code). These
# views of its built-in rows are what the tests and older callers name.
LAUNCH_FORMATS: tuple[str, ...] = formats.names()
# The formats whose launch writes the offline run (capture to storage, then train); the
# others refuse offline plans (their row's offline_refusal says why). The template runs the
# user's own command, whatever its mode.
OFFLINE_LAUNCH_FORMATS: tuple[str, ...] = formats.offline_names()
SPECFORGE_RECEIVE = formats.SPECFORGE_RECEIVE
# The receive mode (workload.receive) each launch format's trainer runs, and why; None: the
# plan's own (template: your command) or no Mooncake receive (the legacy trainer runs target
# and drafter colocated).
LAUNCH_RECEIVE: dict[str, tuple[Receive | None, str]] = {
    name: (row.receive, row.receive_why) for name, row in formats.FORMATS.items()
}


def launch_receive(plan: Plan, fmt: str | None = None) -> Receive | None:
    """The workload.receive of the run format fmt launches (the plan's own for the
    template; None: no Mooncake receive)."""
    row = formats.row_of(fmt or plan.launch.format)
    return plan.workload.receive if row.own_command else row.receive


def _launch_format(value: str) -> str:
    """A launch format of the registry."""
    if value not in formats.FORMATS:
        raise ValueError(f"choose one of {', '.join(formats.names())}")
    return value


LaunchFormat = Annotated[str, AfterValidator(_launch_format)]

# Kubernetes names the kubernetes format writes as they are (docs/limits.md): a
# PersistentVolumeClaim's name is a DNS-1123 subdomain, a node label's value at most 63
# letters, digits, `-`, `_` or `.` starting and ending with a letter or digit.
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def _dns_subdomain(value: str) -> str:
    if len(value) > v.K8S_NAME_CHARS or not _DNS_SUBDOMAIN.fullmatch(value):
        raise ValueError(
            f"must be a Kubernetes object name: at most {v.K8S_NAME_CHARS} lower-case "
            "letters, digits, '-' and '.', starting and ending with a letter or digit"
        )
    return value


def _label_value(value: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ValueError(
            "must be a Kubernetes label value: at most 63 letters, digits, '-', '_' and "
            "'.', starting and ending with a letter or digit"
        )
    return value


K8sName = Annotated[
    str, BeforeValidator(v.one_line(v.K8S_NAME_CHARS)), AfterValidator(_dns_subdomain)
]
LabelValue = Annotated[str, BeforeValidator(v.one_line(v.NAME_CHARS)), AfterValidator(_label_value)]


class Launch(_Section):
    """How to start the real pipeline (the run's names and paths; the split comes from the
    plan). Every key is optional."""

    format: LaunchFormat = formats.DEFAULT
    run_id: Name | None = Field(
        None, min_length=1, description="default: <target_model>-dflash (follows the model)"
    )
    train_data_path: Text = Field("./cache/dataset/train.jsonl", min_length=1)
    output_dir: Text | None = Field(None, description="default: ./outputs/<run_id>")
    target_model_path: Text | None = Field(None, description="default: the preset's repository")
    chat_template: Text | None = None
    hosts: tuple[Name, ...] = Field(
        (), max_length=int(v.GPUS_PER_ROLE.hi) * 2, description="node host names, node 0 first"
    )
    master_port: Port = 29500
    base_port: Annotated[int, v.PORT.before, v.PORT.field("first capture server port")] = 30000
    template: str | None = Field(
        None, max_length=v.TEMPLATE_CHARS, description="command template with {placeholders}"
    )
    # The kubernetes format (docs/launch.md).
    image: Name | None = Field(
        None, description="container image with the SpecForge stack (kubernetes)"
    )
    volume_claim: K8sName | None = Field(
        None, description="PersistentVolumeClaim every pod works in (kubernetes)"
    )
    gpu_product: dict[str, LabelValue] = Field(
        default_factory=dict,
        description="GPU key -> the nodes' nvidia.com/gpu.product label (kubernetes)",
    )


# Where a plan names a GPU type by its catalog key: single values, and tables keyed by GPU
# (core/resolve.py writes every name people use, 'B200', as the key).
GPU_FIELDS: tuple[tuple[str, str], ...] = (
    ("target", "gpu"),
    ("drafter", "gpu"),
    ("cost", "reference_gpu"),
    ("regenerate", "gpu"),
    ("serving", "gpu"),
)
GPU_TABLES: tuple[tuple[str, str], ...] = (
    ("cost", "ratio"),
    ("cost", "usd_per_gpu_hour"),
    ("cost", "unit_gpus"),
    ("calibration", "target"),
    ("calibration", "drafter"),
    ("launch", "gpu_product"),
)


# The checkpoint section's ranges (docs/limits.md), here rather than in validation.py,
# whose bytes key the shipped fit (basics/fitcache.py SOURCES).
CHECKPOINT_HOURS = v.Bound(0.01, 100_000, "hours", integer=False)
CHECKPOINTS_KEPT = v.Bound(1, 1_000, "checkpoints")
WRITE_GB_PER_S = v.Bound(0.001, 100_000, "GB/s", integer=False)
FAILURES_PER_GPU_HOUR = v.Bound(0, 1, "per GPU-hour", integer=False)
PREEMPTIONS_PER_NODE_MONTH = v.Bound(0, 1_000, "per node-month", integer=False)
CheckpointHours = Annotated[float, CHECKPOINT_HOURS.before, CHECKPOINT_HOURS.field("hours")]
CheckpointsKept = Annotated[
    int, CHECKPOINTS_KEPT.before, CHECKPOINTS_KEPT.field("checkpoints kept by rotation")
]
WriteGbPerS = Annotated[float, WRITE_GB_PER_S.before, WRITE_GB_PER_S.field("write bandwidth")]
FailuresPerGpuHour = Annotated[
    float, FAILURES_PER_GPU_HOUR.before, FAILURES_PER_GPU_HOUR.field("interruptions")
]
PreemptionsPerNodeMonth = Annotated[
    float, PREEMPTIONS_PER_NODE_MONTH.before, PREEMPTIONS_PER_NODE_MONTH.field("spot reclaims")
]


class Checkpoint(_Section):
    """When the trainer saves, how many it keeps, and the interruptions the interval is set
    against. Every None is computed from its named source (core/checkpoints.py)."""

    interval_hours: CheckpointHours | None = Field(
        None, description="hours between saves; None: the Young/Daly interval"
    )
    keep: CheckpointsKept | None = Field(
        None, description="checkpoints the rotation keeps; None: the trainer's rule"
    )
    write_gb_per_s: WriteGbPerS | None = Field(
        None, description="GB/s one save writes; None: a measured distributed save"
    )
    restart_hours: CheckpointHours | None = Field(
        None, description="hours from an interruption to training again; None: measured"
    )
    failures_per_gpu_hour: FailuresPerGpuHour | None = Field(
        None, description="hardware interruptions per GPU-hour; None: Llama 3's rate"
    )
    preemptions_per_node_month: PreemptionsPerNodeMonth | None = Field(
        None,
        description="spot offers (cost.kind = spot): reclaims per node per month; "
        "None: AWS's published interruption band",
    )


class Plan(_Section):
    schema_version: Literal[1] = SCHEMA_VERSION
    name: Name = ""
    workload: Workload = Workload()
    target: TargetPool = TargetPool()
    drafter: DrafterPool = DrafterPool()
    cost: Cost = Cost()
    calibration: Calibration = Calibration()
    launch: Launch = Launch()
    storage: Storage = Storage()
    regenerate: Regenerate = Regenerate()
    serving: Serving = Serving()
    checkpoint: Checkpoint = Checkpoint()

    def gpus_in_use(self) -> tuple[str, ...]:
        keys: tuple[str, ...] = (self.target.gpu, self.drafter.gpu)
        if self.workload.regenerate:
            keys += (self.regenerate.gpu or self.target.gpu,)
        return tuple(dict.fromkeys(keys))

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
    ("storage",): list(Storage.model_fields),
    ("regenerate",): list(Regenerate.model_fields),
    ("serving",): list(Serving.model_fields),
    ("checkpoint",): list(Checkpoint.model_fields),
}


def plan_from_dict(doc: dict[str, Any], where: str, text: str | None = None) -> Plan:
    version = doc.get("schema_version", SCHEMA_VERSION)
    # `true == 1` in Python: the type is checked too.
    if type(version) is not int or version != SCHEMA_VERSION:
        shown = v.short_repr(version)
        reason = f"this dflash-plan reads schema_version {SCHEMA_VERSION} (an integer)"
        raise PlanError.field("schema_version", shown, reason, where)
    try:
        return Plan.model_validate(doc)
    except ValidationError as err:
        raise explain(err, where, text, known=KNOWN_KEYS) from None


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    doc = plan.model_dump(mode="json", exclude_none=True)
    # A bf16 target is every plan written before target.precision: its files stay as they were.
    if doc["target"]["precision"] == "bf16":
        del doc["target"]["precision"]
    if "target_layer_ids" in doc["workload"]:
        doc["workload"]["target_layer_ids"] = list(doc["workload"]["target_layer_ids"])
    doc["launch"]["hosts"] = list(doc["launch"]["hosts"])
    # Plans written before the acceptance model stay as they were: the serving table and
    # the acceptance calibration are written only when set.
    if plan.serving == Serving():
        del doc["serving"]
    if not doc["calibration"]["acceptance"]:
        del doc["calibration"]["acceptance"]
    # Plans written before checkpoints were planned stay as they were.
    if not doc["checkpoint"]:
        del doc["checkpoint"]
    return doc


def plan_to_toml(plan: Plan, base_text: str | None = None) -> str:
    """The plan as TOML. With base_text (the plan file as the user wrote it), the user's
    document is kept, comments, key order and number spelling included, and only the
    values that differ from it are changed, added or removed."""
    text = tomli_w.dumps(plan_to_dict(plan))
    if not base_text:
        return text
    edited = _edit_document(plan, base_text)
    return text if edited is None else edited


def _edit_document(plan: Plan, base_text: str) -> str | None:
    """base_text edited to hold plan, or None when base_text is not a valid plan or the
    edit would not read back as plan (then the caller writes a fresh document)."""
    import tomlkit  # only for saving: keeps the other commands fast

    try:
        old = plan_from_dict(parse_toml(base_text, "base"), "base")
        document = tomlkit.parse(base_text.removeprefix("\ufeff"))
        _update(document, plan_to_dict(old), plan_to_dict(plan))
        edited = tomlkit.dumps(document)
        if plan_from_dict(parse_toml(edited, "edited"), "edited") != plan:
            return None
    except (PlanError, ValueError, RecursionError, tomlkit.exceptions.TOMLKitError):
        return None
    return edited


def _update(node: Any, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Change the tomlkit container node from holding old to holding new, touching only
    the keys whose values differ (a key left at its default stays absent)."""
    import tomlkit

    for key in old.keys() - new.keys():
        if key in node:
            del node[key]
    for key, value in new.items():
        before = old.get(key)
        if value == before:
            continue
        if isinstance(value, dict) and isinstance(before, dict):
            if key not in node:
                node[key] = tomlkit.table()
            _update(node[key], before, value)
        else:
            node[key] = value


def default_plan_text() -> str:
    # A file beside this module (package data; importlib.resources costs 15 ms to import).
    return data_text("default_plan.toml")


def default_plan() -> Plan:
    """The built-in plan: the user's measured run (model/default_plan.toml)."""
    return plan_from_dict(parse_toml(default_plan_text(), "built-in plan"), "built-in plan")


def _parse_value(raw: str) -> Any:
    """A --set value. Text that looks like a number stays text, marked as typed: a number's
    check reads it as the app's fields do (model/numbers.py: 1e6 is a whole number, a comma
    is refused with its reason) and a text key keeps it as written (run_id=007). Else TOML
    syntax when it parses (true, [1, 2], "text"), else a bare string."""
    if looks_like_number(raw):
        return TypedNumber(raw)
    try:
        return parse_toml(f"v = {raw}", "--set")["v"]
    except PlanError:
        return raw


def apply_sets(
    doc: dict[str, Any], sets: list[str], gpu_key: Callable[[str], str | None] | None = None
) -> tuple[dict[str, Any], set[tuple[str, ...]]]:
    """A copy of doc with each `dotted.key=value` applied, and the keys that were set.
    gpu_key: the catalog key of a GPU as people write it (Catalog.find), so that
    `cost.ratio.B200=3` sets the plan's b200 ratio rather than a second one."""
    doc = copy.deepcopy(doc)
    touched: set[tuple[str, ...]] = set()
    for item in sets:
        key, sep, raw = item.partition("=")
        path = tuple(part.strip() for part in key.strip().split("."))
        if not sep or not all(path):
            raise PlanError.flag(
                "--set",
                v.short_repr(item),
                "expected KEY=VALUE with a dotted key, e.g. target.count=7",
            )
        if gpu_key is not None and len(path) == 3 and path[:2] in GPU_TABLES:
            path = (*path[:2], gpu_key(path[2]) or path[2])
        node = doc
        for depth, part in enumerate(path[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise PlanError.flag(
                    "--set",
                    v.short_repr(item),
                    f"'{'.'.join(path[: depth + 1])}' is a value, not a table",
                    ".".join(path[: depth + 1]),
                )
            node = child
        node[path[-1]] = _parse_value(raw.strip())
        touched.add(path)
    return doc, touched


def load_plan(
    path: Path | None,
    sets: list[str] | None = None,
    gpu_key: Callable[[str], str | None] | None = None,
) -> Plan:
    """The plan in path (or the built-in plan), with --set edits applied (apply_sets)
    and validated."""
    if path is None:
        doc, text, where = parse_toml(default_plan_text(), "built-in plan"), None, "built-in plan"
    else:
        doc, text = read_toml(path)
        where = str(path)
    if sets:
        doc, touched = apply_sets(doc, sets, gpu_key)
        try:
            return plan_from_dict(doc, where, text)
        except PlanError as err:
            # Point at --set when the bad key is one the user just set.
            for key in touched:
                dotted = ".".join(key)
                # The error is on a key that was set, inside it, or on its table.
                mine = err.key is not None and (
                    (err.key + ".").startswith(dotted + ".") or dotted.startswith(err.key + ".")
                )
                if mine:
                    raise err.moved("--set") from None
            raise
    return plan_from_dict(doc, where, text)


def save_plan(plan: Plan, path: Path, base_text: str | None = None) -> None:
    """Write the plan atomically (temporary file, then rename; through a symbolic link).

    The user's comments and key order survive: the document edited is base_text (pass
    the text the plan was loaded from, e.g. for "save as"), else the file already at path
    when it is a valid plan; pass base_text="" for a fresh document. Raises SaveError (a
    PlanError and an OSError) when the file cannot be written."""
    path = Path(path)
    if base_text is None:
        try:
            base_text = read_text(path)
        except PlanError:
            base_text = ""
    write_atomic(path, plan_to_toml(plan, base_text))
