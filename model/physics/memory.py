"""Memory needed per GPU of each role, item by item, against the GPU's usable memory.

Capacities are GiB: vendors print HBM and GDDR sizes in binary units (an "80 GB" H100
shows 81,559 MiB in nvidia-smi, a "96 GB" RTX PRO 6000 97,887 MiB), so every figure here
is GiB (2^30 bytes).
"""

from __future__ import annotations

from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..inputs.hardware import Gpu
from ..inputs.targets import TargetModel
from . import fitting
from .fitting import Case
from .footprint import MemoryFit, drafter_footprint
from .work import (
    DrafterShape,
    DrafterWork,
    layer_io_elements,
)

# Three fitted constants, computed by fitting.py from measurements.toml at the end of this
# module (their fits solve footprint.py's formula): RUNTIME_RESERVE_GIB, ACTIVATION_IO_MULTIPLE and
# TRAINER_RUNTIME_RESERVE_GIB.


def target_memory(
    model: TargetModel, tp: int, tokens: int, captured_layers: int, available_gb: float
) -> MemoryFit:
    """One target GPU: its weight shard, the KV cache and activations of `tokens` in one
    forward (the projection: one max-length sample, single-pass prefill as capture servers
    run --chunked-prefill-size -1; a launch script: its in-flight batch), the captured
    hidden states, and the runtime's own reserve."""
    weights = BF16_BYTES * model.total_params / tp
    kv = BF16_BYTES * 2 * model.kv_dim * model.n_layers * tokens / tp
    # Live activations of one layer at a time, for the whole sequence.
    activations = (
        BF16_BYTES
        * tokens
        * layer_io_elements(model.hidden, model.q_dim, model.kv_dim, model.ffn_width)
        / tp
    )
    captured = BF16_BYTES * tokens * captured_layers * model.hidden
    return MemoryFit(
        items_gb=(
            ("weights", weights / BYTES_PER_GIB),
            ("KV cache", kv / BYTES_PER_GIB),
            ("activations", activations / BYTES_PER_GIB),
            ("captured states", captured / BYTES_PER_GIB),
            ("runtime reserve", RUNTIME_RESERVE_GIB),
        ),
        available_gb=available_gb,
    )


def capture_server_memory_gib(mem_fraction_static: float, available_gb: float) -> float:
    """What an SGLang capture server holds: its static pool (weights and KV, a fraction of
    the GPU) plus what lives outside it."""
    return mem_fraction_static * available_gb + RUNTIME_RESERVE_GIB


def drafter_memory(
    shape: DrafterShape,
    work: DrafterWork,
    sample_tokens: float,
    batch_size: int,
    drafter_gpus: int,
    available_gb: float,
    optimizer: bool = True,
    *,
    activation_io_multiple: float | None = None,
    reserve_gib: float | None = None,
) -> MemoryFit:
    """One drafter GPU's memory (footprint.py), at the fitted multiple and reserve unless
    they are given."""
    multiple = ACTIVATION_IO_MULTIPLE if activation_io_multiple is None else activation_io_multiple
    if reserve_gib is None:
        reserve_gib = _reserve_gib(optimizer)
    return drafter_footprint(
        shape,
        work,
        sample_tokens,
        batch_size,
        drafter_gpus,
        available_gb,
        optimizer,
        multiple,
        reserve_gib,
    )


def _reserve_gib(optimizer: bool) -> float:
    """A trainer in the pipeline (with optimizer state) holds more than a bare process."""
    return TRAINER_RUNTIME_RESERVE_GIB if optimizer else RUNTIME_RESERVE_GIB


def case_drafter_memory(case: Case, gpu: Gpu) -> MemoryFit:
    """A drafter-memory case of the validation set at the fitted values."""
    return fitting.case_drafter_memory(
        case, gpu, ACTIVATION_IO_MULTIPLE, _reserve_gib("drafter_gpus" in case)
    )


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


def colocated_memory(target: MemoryFit, drafter: MemoryFit) -> MemoryFit:
    """One colocated GPU (physics/colocated.py): the target's shard, its KV, activations
    and captured states, and the drafter rank's weights, optimizer state (sharded over
    every GPU of the plan: `drafter` is sized so), activations and logit slice, in one
    process: one runtime reserve, the trainer's (the larger). Its band is the wider of the
    two roles'."""
    reserve = "runtime reserve"
    items = tuple((f"target {n}", gb) for n, gb in target.items_gb if n != reserve) + tuple(
        (n if n == reserve else f"drafter {n}", gb) for n, gb in drafter.items_gb
    )
    band = (min(target.band[0], drafter.band[0]), max(target.band[1], drafter.band[1]))
    return MemoryFit(items_gb=items, available_gb=target.available_gb, band=band)
