"""What a drafter GPU holds, item by item, with the fitted activation multiple and runtime
reserve given: the formula the fits solve for them (fitting.py) and memory.py evaluates
at their fitted values. Capacities are GiB (2^30 bytes)."""

from __future__ import annotations

from dataclasses import dataclass

from ..basics.units import BF16_BYTES, BYTES_PER_GIB, FP32_BYTES
from .work import (
    REPLICATED_BYTES_PER_PARAM,
    SHARDED_BYTES_PER_PARAM,
    DrafterShape,
    DrafterWork,
    drafter_layer_io,
)

# SpecForge computes the LM head and loss in slices of 128 anchor blocks per batch row
# (objective_chunk_blocks), checkpointed: one slice of logits is live at a time.
OBJECTIVE_CHUNK_BLOCKS = 128
# Bytes held per logit of the live slice: bf16 logits, their gradient, and the fp32
# log-softmax cross-entropy computes internally.
LOGIT_SLICE_BYTES = BF16_BYTES + BF16_BYTES + FP32_BYTES


@dataclass(frozen=True, slots=True)
class MemoryFit:
    items_gb: tuple[tuple[str, float], ...]  # GiB per item
    available_gb: float  # GiB
    band: tuple[float, float] = (1.0, 1.0)  # the estimate's spread, as factors

    @property
    def needed_gb(self) -> float:
        return sum(gb for _, gb in self.items_gb)

    @property
    def needed_range_gb(self) -> tuple[float, float]:
        needed = self.needed_gb
        return needed * self.band[0], needed * self.band[1]

    @property
    def fits(self) -> bool:
        """Fits at the pessimistic end of the estimate."""
        return self.needed_range_gb[1] <= self.available_gb

    @property
    def fits_central(self) -> bool:
        return self.needed_gb <= self.available_gb

    @property
    def share(self) -> float:
        return self.needed_gb / self.available_gb


def drafter_footprint(
    shape: DrafterShape,
    work: DrafterWork,
    sample_tokens: float,
    batch_size: int,
    drafter_gpus: int,
    available_gb: float,
    optimizer: bool,
    activation_io_multiple: float,
    reserve_gib: float,
) -> MemoryFit:
    """One drafter GPU: bf16 weights, the sharded fp32 master copy, Adam state and
    gradients (FSDP SHARD_GRAD_OP; every expert of an MoE drafter), the frozen embedding
    and LM head, activations of a micro-batch, one checkpointed slice of logits, and the
    runtime reserve."""
    multiple = activation_io_multiple
    params = shape.trainable_params
    weights = REPLICATED_BYTES_PER_PARAM * params
    state = SHARDED_BYTES_PER_PARAM * params / drafter_gpus if optimizer else 0.0
    frozen = BF16_BYTES * shape.frozen_params
    io = drafter_layer_io(shape)
    per_sample = (
        multiple * BF16_BYTES * work.positions * shape.layers * io
        + BF16_BYTES
        * sample_tokens
        * (shape.state_tensors * shape.target_hidden + shape.layers * 2 * shape.kv_dim)
    )
    slice_positions = min(work.positions, OBJECTIVE_CHUNK_BLOCKS * shape.block_size)
    logits = LOGIT_SLICE_BYTES * batch_size * slice_positions * shape.vocab
    items = [("weights", weights / BYTES_PER_GIB)]
    if optimizer:
        items.append(("optimizer state", state / BYTES_PER_GIB))
    items += [
        ("embedding + LM head", frozen / BYTES_PER_GIB),
        ("activations", batch_size * per_sample / BYTES_PER_GIB),
        ("logit slice", logits / BYTES_PER_GIB),
        ("runtime reserve", reserve_gib),
    ]
    return MemoryFit(items_gb=tuple(items), available_gb=available_gb)
