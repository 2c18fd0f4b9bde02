"""The GPU catalog: hardware.toml, validated, plus the user's own additions."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..basics import validation as v
from ..basics.errors import PlanError
from ..basics.tomlfile import line_of, read_toml
from ..basics.validation import explain

LinkKind = Literal["nvlink", "pcie", "infinity-fabric"]

# Catalog keys go into plans, --set arguments and launch scripts: lower-case letters,
# digits, dots and dashes, starting with a letter or digit (nothing a shell interprets).
KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9.-]*")
KEY_CHARS = 64

# Every figure of a GPU, with its range (docs/limits.md).
Tflops = Annotated[float, v.TFLOPS.before, v.TFLOPS.field("dense, per GPU")]
MemoryGb = Annotated[float, v.MEMORY_GB.before, v.MEMORY_GB.field("usable memory")]
MemoryTbPerS = Annotated[
    float, v.MEMORY_TB_PER_S.before, v.MEMORY_TB_PER_S.field("memory bandwidth")
]
HostMemoryGb = Annotated[float, v.HOST_MEMORY_GB.before, v.HOST_MEMORY_GB.field("host RAM")]
LinkGbPerS = Annotated[
    float, v.LINK_GB_PER_S.before, v.LINK_GB_PER_S.field("one direction, per GPU")
]
NetworkGbitPerS = Annotated[
    float,
    v.NETWORK_GBIT_PER_S.before,
    v.NETWORK_GBIT_PER_S.field("cross-node NIC bandwidth per GPU"),
]
GpusPerNode = Annotated[int, v.GPUS_PER_NODE.before, v.GPUS_PER_NODE.field("GPUs per node")]
DomainGpus = Annotated[
    int, v.NVLINK_DOMAIN_GPUS.before, v.NVLINK_DOMAIN_GPUS.field("GPUs sharing one NVLink domain")
]
TdpW = Annotated[float, v.TDP_W.before, v.TDP_W.field("board power")]
UsdPerGpuHour = Annotated[
    float, v.USD_PER_GPU_HOUR.before, v.USD_PER_GPU_HOUR.field("catalog price")
]
Efficiency = Annotated[
    float, v.EFFICIENCY.before, v.EFFICIENCY.field("achieved share of the dense bf16 peak")
]
SoftmaxSpeedup = Annotated[
    float,
    v.SOFTMAX_SPEEDUP.before,
    v.SOFTMAX_SPEEDUP.field("softmax exponent throughput vs matmul"),
]
GpuName = Annotated[str, BeforeValidator(v.one_line(v.NAME_CHARS))]


class Link(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    kind: LinkKind
    gb_per_s: LinkGbPerS = Field(
        description=f"GPU-to-GPU bandwidth, one direction, GB/s; {v.LINK_GB_PER_S.describe()}"
    )


MaturityFactor = Annotated[float, Field(gt=0, le=2)]


class Maturity(BaseModel):
    """How far one engine's software on this GPU falls short of what the physics and the
    GPU's kernel family predict, dated: a new GPU's kernels lag and catch up."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    role: Literal["target", "drafter", "decode"]
    engine: str = Field(
        description="capture engine (sglang, vllm) for the target role, "
        "training stack (pytorch) for the drafter, serving engine (vllm, sglang, trtllm) "
        "for decode (the regeneration; a target entry of the same engine applies when "
        "there is no decode entry)"
    )
    factor: MaturityFactor = Field(description="central factor on the rate")
    low: MaturityFactor
    high: MaturityFactor
    date: dt.date = Field(description="when the source said it")
    expires: dt.date = Field(description="after this date the figure is flagged stale")
    source: str = Field(max_length=v.TEXT_CHARS)

    @model_validator(mode="after")
    def _ordered(self) -> Maturity:
        if not self.low <= self.factor <= self.high:
            raise ValueError(
                f"low {self.low:g} <= factor {self.factor:g} <= high {self.high:g} must hold"
            )
        if self.expires <= self.date:
            raise ValueError(f"expires {self.expires} must come after date {self.date}")
        return self


class Gpu(BaseModel):
    """One GPU type. Compute figures are dense, per GPU."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    key: str
    name: GpuName
    bf16_tflops: Tflops
    fp8_tflops: Tflops | None = None
    # Only GPUs with FP4 tensor cores list it: a target in fp4 needs them.
    fp4_tflops: Tflops | None = None
    memory_gb: MemoryGb
    mem_bw_tb_s: MemoryTbPerS
    link: Link
    gpus_per_node: GpusPerNode
    nvlink_domain_gpus: DomainGpus | None = None
    network_gbps_per_gpu: NetworkGbitPerS
    tdp_w: TdpW
    usd_per_gpu_hour: UsdPerGpuHour | None = None
    prefill_efficiency: Efficiency
    training_efficiency: Efficiency
    matmul_ceiling: Efficiency | None = None
    softmax_speedup: SoftmaxSpeedup = 1.0
    host_link_gb_per_s: LinkGbPerS | None = Field(
        None,
        description="GPU-host copy bandwidth, one direction, GB/s; default: the GPU "
        "link when it is PCIe",
    )
    host_memory_gb: HostMemoryGb | None = Field(
        None,
        description="host RAM of one node, GB (the Mooncake store's segments and "
        "buffers live there); None: unknown, not checked",
    )
    arch: str = Field(
        "",
        description="kernel family (e.g. sm100, sm120, sm90): a measured "
        "shortfall may belong to it",
    )
    source: str = Field("", max_length=v.TEXT_CHARS)
    maturity: tuple[Maturity, ...] = Field(
        (), description="software maturity per role and engine (dated, with a source)"
    )

    def maturity_of(self, role: str, engine: str) -> Maturity | None:
        return next((m for m in self.maturity if m.role == role and m.engine == engine), None)

    def supports(self, precision: str) -> bool:
        """Whether the GPU has tensor cores for a target precision (hardware.toml lists
        its fp8_tflops / fp4_tflops); bf16 runs everywhere."""
        peak = {"fp8": self.fp8_tflops, "fp4": self.fp4_tflops}
        return precision not in peak or peak[precision] is not None

    @property
    def bf16_flop_per_s(self) -> float:
        return self.bf16_tflops * 1e12

    @property
    def mem_bytes_per_s(self) -> float:
        return self.mem_bw_tb_s * 1e12

    @property
    def link_bytes_per_s(self) -> float:
        return self.link.gb_per_s * 1e9

    @property
    def host_link_bytes_per_s(self) -> float:
        """Device-host copies (hidden states are staged through host memory)."""
        if self.host_link_gb_per_s is not None:
            return self.host_link_gb_per_s * 1e9
        return self.link_bytes_per_s

    @property
    def network_bytes_per_s(self) -> float:
        return self.network_gbps_per_gpu * 1e9 / 8

    @property
    def fast_domain_gpus(self) -> int:
        """GPUs that reach each other over the GPU link (a node, or an NVL72 rack)."""
        return self.nvlink_domain_gpus or self.gpus_per_node

    @property
    def efficiency_ceiling(self) -> float:
        """The most any efficiency can be: the measured matmul ceiling, else the peak."""
        return self.matmul_ceiling or 1.0


GPU_FIELDS = [name for name in Gpu.model_fields if name != "key"]


def parse_gpus(
    doc: Mapping[str, object],
    where: str,
    text: str | None = None,
    base: Mapping[str, Gpu] | None = None,
) -> dict[str, Gpu]:
    """GPU tables of a TOML document. A table whose key is in base only changes the fields
    it names (so `[b200] usd_per_gpu_hour = 6.1` is a complete override file)."""
    gpus: dict[str, Gpu] = {}
    for key, table in doc.items():
        line = None
        if len(key) > KEY_CHARS or not KEY_PATTERN.fullmatch(key) or not isinstance(table, Mapping):
            line = line_of(text, (key,)) if text else None
        place = f"{where}:{line}" if line else where
        if len(key) > KEY_CHARS or not KEY_PATTERN.fullmatch(key):
            raise PlanError.at(
                place,
                f"GPU key {v.short_repr(key)}: use lower-case letters, "
                f"digits, '.' and '-', starting with a letter or digit, at most "
                f"{KEY_CHARS} characters (e.g. my-gpu)",
                key=key,
            )
        if not isinstance(table, Mapping):
            raise PlanError.at(
                place,
                f"'{key}' must be a table [{key}] of GPU fields, got {v.short_repr(table)}",
                key=key,
            )
        fields = dict(table)
        if "key" in fields:
            line = line_of(text, (key, "key")) if text else None
            raise PlanError.at(
                f"{where}:{line}" if line else where,
                f"not a GPU field; the table name [{key}] is the GPU's key",
                key=f"{key}.key",
                shown=f"{key}.key",
            )
        if base and key in base:
            fields = {**base[key].model_dump(exclude={"key"}, exclude_none=True), **fields}
        try:
            gpus[key] = Gpu.model_validate({**fields, "key": key})
        except ValidationError as err:
            raise explain(
                err,
                where,
                text,
                prefix=(key,),
                known={(key,): GPU_FIELDS, (key, "link"): ["kind", "gb_per_s"]},
            ) from None
    return gpus


def load_gpu_file(path: Path, base: Mapping[str, Gpu]) -> dict[str, Gpu]:
    """A user's hardware file: GPU tables that add to the catalog or change entries of it."""
    doc, text = read_toml(path)
    return {**base, **parse_gpus(doc, str(path), text, base)}
