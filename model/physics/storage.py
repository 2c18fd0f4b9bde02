"""Offline hidden states on storage: bytes per token each on-disk format writes, and the
rate at which storage feeds the drafters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

from ..basics.units import BF16_BYTES
from ..inputs.formats import row_of
from ..inputs.plan import StorageFormat

FP8_BYTES = 1
DTYPE_BYTES = {"bf16": BF16_BYTES, "fp8": FP8_BYTES}


@dataclass(frozen=True, slots=True)
class Format:
    """What a format stores per token besides the captured layers."""

    name: str
    extra_layers: int  # hidden states stored beside the captured ones
    other_bytes_per_token: int  # token ids, masks
    source: str
    fp8_scale_bytes_per_token: int = 0  # what fp8 storage adds per token (its scales)


FORMATS: dict[str, Format] = {
    # SpecForge's DFlash offline reader reads input_ids, loss_mask and hidden_states (the
    # captured layers) per sample, no last hidden state (build_offline_reader in
    # specforge/algorithms/common/dflash_family_data.py, the specforge 0.2.0 wheel); its
    # writer, scripts/prepare_hidden_states.py (SpecForge a6b6b023), saves the dataset's ids
    # and mask as they come: int64 (loss_mask is torch.long in
    # specforge/data/preprocessing.py, input_ids through set_format("torch")), 16 bytes of
    # 40,976 per token.
    "specforge": Format(
        "specforge",
        0,
        8 + 8,
        "SpecForge 0.2.0 dflash_family_data.build_offline_reader: "
        "input_ids, loss_mask (int64), hidden_states",
    ),
    # speculators' trainer reads the last captured layer as the target's final hidden state:
    # launch_vllm.py appends layer n to the ids training is given (pipelines.md 0, 3.1); its
    # training guide's 268 MB per 8,192-token Llama-3.1-8B sample is 4 layers x 4,096 x 2
    # bytes x 8,192. Token ids as int64 and the loss mask as bool (under 0.01 %).
    "speculators": Format(
        "speculators",
        1,
        8 + 1,
        "speculators launch_vllm.py --include-last-layer (c05b95b3): the "
        "captured layers, the last layer, token ids and loss mask",
        # hs-connectors 0.9.0 fp8_hidden_states_connector.py: hidden_states_scales, one
        # float32 per token.
        fp8_scale_bytes_per_token=4,
    ),
    # DeepSpec's estimator (scripts/data/estimate_target_cache_size.py, deepseek-ai/DeepSpec
    # 40c413ea): input_ids int32, attention_mask and loss_mask one byte each, the captured
    # layers and target_last_hidden_states in bf16.
    "deepspec": Format(
        "deepspec",
        1,
        4 + 1 + 1,
        "DeepSpec scripts/data/estimate_target_cache_size.py (40c413ea): "
        "captured layers, the last hidden state, int32 ids, two byte masks",
    ),
}
assert set(FORMATS) == set(get_args(StorageFormat))


def storage_format(name: str | None, launch_format: str) -> Format:
    """The plan's storage format; None follows the launch format."""
    if name is None:
        name = row_of(launch_format).store_sizing
    return FORMATS[name]


def stored_bytes_per_token(
    hidden: int, captured_layers: int, dtype: str, fmt: Format, final_state: bool = False
) -> float:
    """Bytes one token occupies on storage: (captured + extra layers) x hidden x dtype bytes,
    plus the format's ids and masks (and its scales, stored fp8). `final_state`: the
    drafter family reads the target's final hidden state (DFlash2's sixth tensor); a
    format's extra layer is that same tensor, so it is stored once."""
    scales = fmt.fp8_scale_bytes_per_token if dtype == "fp8" else 0
    extra = max(fmt.extra_layers, int(final_state))
    return (
        (captured_layers + extra) * hidden * DTYPE_BYTES[dtype] + fmt.other_bytes_per_token + scales
    )


def nodes_of(gpus: Any, gpus_per_node: int) -> Any:
    """Nodes a role's GPUs occupy (whole nodes); a count or an array of counts."""
    return -(-gpus // gpus_per_node)


def storage_tokens_per_s(
    read_gb_per_s_per_node: float | None, nodes: Any, bytes_per_token: float
) -> Any:
    """Tokens per second storage delivers to the drafters' nodes; None: not bounded."""
    if read_gb_per_s_per_node is None:
        return None
    return read_gb_per_s_per_node * 1e9 * nodes / bytes_per_token
