"""The GPU catalog: hardware.toml, validated, plus the user's own additions."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from .errors import PlanError
from .tomlfile import parse_toml, read_toml
from .validation import explain

LinkKind = Literal["nvlink", "pcie", "infinity-fabric"]


class Link(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: LinkKind
    gb_per_s: PositiveFloat = Field(description="GPU-to-GPU bandwidth, one direction, GB/s")


class Gpu(BaseModel):
    """One GPU type. Compute figures are dense, per GPU."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    name: str
    bf16_tflops: PositiveFloat
    fp8_tflops: PositiveFloat | None = None
    memory_gb: PositiveFloat = Field(description="usable memory")
    mem_bw_tb_s: PositiveFloat
    link: Link
    gpus_per_node: PositiveInt
    nvlink_domain_gpus: PositiveInt | None = None
    network_gbps_per_gpu: PositiveFloat
    tdp_w: PositiveFloat
    usd_per_gpu_hour: PositiveFloat | None = None
    prefill_efficiency: float = Field(gt=0, le=1)
    training_efficiency: float = Field(gt=0, le=1)
    matmul_ceiling: float | None = Field(default=None, gt=0, le=1)
    softmax_speedup: float = Field(default=1.0, ge=1)
    source: str = ""

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


def parse_gpus(doc: Mapping[str, object], where: str, text: str | None = None,
               base: Mapping[str, Gpu] | None = None) -> dict[str, Gpu]:
    """GPU tables of a TOML document. A table whose key is in base only changes the fields
    it names (so `[b200] usd_per_gpu_hour = 6.1` is a complete override file)."""
    gpus: dict[str, Gpu] = {}
    for key, table in doc.items():
        if not isinstance(table, Mapping):
            raise PlanError(f"{where}: '{key}' must be a table [{key}] of GPU fields, "
                            f"got {table!r}")
        fields = dict(table)
        if base and key in base:
            fields = {**base[key].model_dump(exclude={"key"}, exclude_none=True), **fields}
        try:
            gpus[key] = Gpu(key=key, **fields)
        except ValidationError as err:
            raise explain(err, where, text, prefix=(key,),
                          known={(key,): GPU_FIELDS, (key, "link"): ["kind", "gb_per_s"]}) from None
    return gpus


def builtin_gpus() -> dict[str, Gpu]:
    text = resources.files(__package__).joinpath("hardware.toml").read_text(encoding="utf-8")
    return parse_gpus(parse_toml(text, "hardware.toml"), "hardware.toml", text)


def load_gpu_file(path: Path, base: Mapping[str, Gpu]) -> dict[str, Gpu]:
    """A user's hardware file: GPU tables that add to the catalog or change entries of it."""
    doc, text = read_toml(path)
    return {**base, **parse_gpus(doc, str(path), text, base)}
