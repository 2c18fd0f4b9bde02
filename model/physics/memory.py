"""Memory needed per GPU of each role, item by item, against the GPU's usable memory.

Capacities are GiB: vendors print HBM and GDDR sizes in binary units (an "80 GB" H100
shows 81,559 MiB in nvidia-smi, a "96 GB" RTX PRO 6000 97,887 MiB), so every figure here
is GiB (2^30 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..basics.units import BF16_BYTES, BYTES_PER_GIB, FP32_BYTES
from ..inputs.targets import TargetModel
from . import fitting
from .work import (
    REPLICATED_BYTES_PER_PARAM,
    SHARDED_BYTES_PER_PARAM,
    DrafterShape,
    DrafterWork,
    layer_io_elements,
)

# SpecForge computes the LM head and loss in slices of 128 anchor blocks per batch row
# (objective_chunk_blocks), checkpointed: one slice of logits is live at a time.
OBJECTIVE_CHUNK_BLOCKS = 128
# Bytes held per logit of the live slice: bf16 logits, their gradient, and the fp32
# log-softmax cross-entropy computes internally.
LOGIT_SLICE_BYTES = BF16_BYTES + BF16_BYTES + FP32_BYTES
# Three fitted constants, computed by fitting.py from measurements.toml at the end of this
# module (their fits call drafter_memory): RUNTIME_RESERVE_GIB, ACTIVATION_IO_MULTIPLE and
# TRAINER_RUNTIME_RESERVE_GIB.


@dataclass(frozen=True, slots=True)
class MemoryFit:
    items_gb: tuple[tuple[str, float], ...]       # GiB per item
    available_gb: float                           # GiB
    band: tuple[float, float] = (1.0, 1.0)        # the estimate's spread, as factors

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


def target_memory(model: TargetModel, tp: int, max_length: int, captured_layers: int,
                  available_gb: float) -> MemoryFit:
    """One target GPU: its weight shard, the KV cache and activations of one max-length
    sample (single-pass prefill: capture servers run --chunked-prefill-size -1), the
    captured hidden states, and the runtime's own reserve."""
    weights = BF16_BYTES * model.total_params / tp
    kv = BF16_BYTES * 2 * model.kv_dim * model.n_layers * max_length / tp
    ffn_width = (model.experts_per_token * model.moe_intermediate if model.is_moe
                 else model.intermediate)
    # Live activations of one layer at a time, for the whole sequence.
    activations = BF16_BYTES * max_length * layer_io_elements(
        model.hidden, model.q_dim, model.kv_dim, ffn_width) / tp
    captured = BF16_BYTES * max_length * captured_layers * model.hidden
    return MemoryFit(items_gb=(("weights", weights / BYTES_PER_GIB),
                               ("KV cache", kv / BYTES_PER_GIB),
                               ("activations", activations / BYTES_PER_GIB),
                               ("captured states", captured / BYTES_PER_GIB),
                               ("runtime reserve", RUNTIME_RESERVE_GIB)),
                     available_gb=available_gb)


def capture_server_memory_gib(mem_fraction_static: float, available_gb: float) -> float:
    """What an SGLang capture server holds: its static pool (weights and KV, a fraction of
    the GPU) plus what lives outside it."""
    return mem_fraction_static * available_gb + RUNTIME_RESERVE_GIB


def drafter_memory(shape: DrafterShape, work: DrafterWork, sample_tokens: float,
                   batch_size: int, drafter_gpus: int, available_gb: float,
                   optimizer: bool = True, *, activation_io_multiple: float | None = None,
                   reserve_gib: float | None = None) -> MemoryFit:
    """One drafter GPU: bf16 weights, the sharded fp32 master copy, Adam state and
    gradients (FSDP SHARD_GRAD_OP), the frozen embedding and LM head, activations of a
    micro-batch, one checkpointed slice of logits, and the runtime reserve. The fitted
    multiple and reserve may be given (the fits solve for them); by default the module's."""
    multiple = ACTIVATION_IO_MULTIPLE if activation_io_multiple is None else activation_io_multiple
    if reserve_gib is None:
        reserve_gib = TRAINER_RUNTIME_RESERVE_GIB if optimizer else RUNTIME_RESERVE_GIB
    params = shape.trainable_params
    weights = REPLICATED_BYTES_PER_PARAM * params
    state = SHARDED_BYTES_PER_PARAM * params / drafter_gpus if optimizer else 0.0
    frozen = BF16_BYTES * shape.frozen_params
    io = layer_io_elements(shape.hidden, shape.q_dim, shape.kv_dim, shape.intermediate)
    per_sample = (multiple * BF16_BYTES * work.positions * shape.layers * io
                  + BF16_BYTES * sample_tokens * (shape.captured_layers * shape.target_hidden
                                                  + shape.layers * 2 * shape.kv_dim))
    slice_positions = min(work.positions, OBJECTIVE_CHUNK_BLOCKS * shape.block_size)
    logits = LOGIT_SLICE_BYTES * batch_size * slice_positions * shape.vocab
    items = [("weights", weights / BYTES_PER_GIB)]
    if optimizer:
        items.append(("optimizer state", state / BYTES_PER_GIB))
    items += [("embedding + LM head", frozen / BYTES_PER_GIB),
              ("activations", batch_size * per_sample / BYTES_PER_GIB),
              ("logit slice", logits / BYTES_PER_GIB),
              ("runtime reserve", reserve_gib)]
    return MemoryFit(items_gb=tuple(items), available_gb=available_gb)


# What a CUDA process holds beyond its tensors: the CUDA context and kernels (about 0.5-1
# GiB), NCCL buffers and the caching allocator's fragmentation. Fitted (fitting.py) on an
# SGLang capture server at mem_fraction_static 0.5 of an H200: 78 GB, its static pool plus
# this.
RUNTIME_RESERVE_GIB: float = fitting.value("RUNTIME_RESERVE_GIB")
# Activations saved per drafted position and layer, as a multiple of the elements every
# linear layer and attention reads and writes once (layer_io_elements): autograd also
# keeps norm inputs in fp32, the SwiGLU intermediates and the attention's block-sparse
# context. Fitted on SpecForge's single-GPU trainer benchmark at batch 8 (87 GB).
ACTIVATION_IO_MULTIPLE: float = fitting.value("ACTIVATION_IO_MULTIPLE")
# A trainer inside the pipeline holds more than its tensors: CUDA context and NCCL (as
# above), FSDP's unsharded gradients during accumulation, prefetched batches and the
# caching allocator's held blocks. Fitted on SpecForge's in-pipeline trainer at batch 2
# (45 GB).
TRAINER_RUNTIME_RESERVE_GIB: float = fitting.value("TRAINER_RUNTIME_RESERVE_GIB")
