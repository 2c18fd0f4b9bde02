"""Memory needed per GPU of each role, item by item, against the GPU's usable memory."""

from __future__ import annotations

from dataclasses import dataclass

from .targets import TargetModel
from .units import BF16_BYTES, BYTES_PER_GB
from .work import (LOGIT_BYTES_STORED, REPLICATED_BYTES_PER_PARAM, SHARDED_BYTES_PER_PARAM,
                   DrafterShape, DrafterWork, layer_io_elements)


@dataclass(frozen=True, slots=True)
class MemoryFit:
    items_gb: tuple[tuple[str, float], ...]
    available_gb: float

    @property
    def needed_gb(self) -> float:
        return sum(gb for _, gb in self.items_gb)

    @property
    def fits(self) -> bool:
        return self.needed_gb <= self.available_gb

    @property
    def share(self) -> float:
        return self.needed_gb / self.available_gb


def target_memory(model: TargetModel, tp: int, max_length: int, captured_layers: int,
                  available_gb: float) -> MemoryFit:
    """One target GPU: its weight shard, the KV cache and activations of one max-length
    sample (the serving engine reserves at least that), and the captured hidden states."""
    weights = BF16_BYTES * model.total_params / tp
    kv = BF16_BYTES * 2 * model.kv_dim * model.n_layers * max_length / tp
    ffn_width = (model.experts_per_token * model.moe_intermediate if model.is_moe
                 else model.intermediate)
    # Live activations of one layer at a time, for the whole sequence (no chunked prefill).
    activations = BF16_BYTES * max_length * layer_io_elements(
        model.hidden, model.q_dim, model.kv_dim, ffn_width) / tp
    captured = BF16_BYTES * max_length * captured_layers * model.hidden
    return MemoryFit(items_gb=(("weights", weights / BYTES_PER_GB),
                               ("KV cache", kv / BYTES_PER_GB),
                               ("activations", activations / BYTES_PER_GB),
                               ("captured states", captured / BYTES_PER_GB)),
                     available_gb=available_gb)


def drafter_memory(shape: DrafterShape, work: DrafterWork, sample_tokens: float,
                   batch_size: int, drafter_gpus: int, available_gb: float) -> MemoryFit:
    """One drafter GPU: weights, sharded master copy/Adam state/gradients, the frozen
    embedding and LM head, and the activations of a micro-batch (fp32 logits dominate)."""
    params = shape.trainable_params
    weights = REPLICATED_BYTES_PER_PARAM * params
    optimizer = SHARDED_BYTES_PER_PARAM * params / drafter_gpus
    frozen = BF16_BYTES * shape.frozen_params
    io = layer_io_elements(shape.hidden, shape.q_dim, shape.kv_dim, shape.intermediate)
    per_sample = (work.positions * shape.vocab * LOGIT_BYTES_STORED
                  + BF16_BYTES * work.positions * shape.layers * io
                  + BF16_BYTES * sample_tokens * (shape.captured_layers * shape.target_hidden
                                                  + shape.layers * 2 * shape.kv_dim))
    return MemoryFit(items_gb=(("weights", weights / BYTES_PER_GB),
                               ("optimizer state", optimizer / BYTES_PER_GB),
                               ("embedding + LM head", frozen / BYTES_PER_GB),
                               ("activations + logits", batch_size * per_sample / BYTES_PER_GB)),
                     available_gb=available_gb)
