"""The drafter families a plan can train (workload.drafter), one row each, and the drafter
shape a family implies on a target.

Every number of a row is what the family's upstream code or its published configuration
fixes; what a row leaves None follows the target (or the workload), as upstream builds it
from the target's config. docs/model.md, "Drafter families", names the sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.targets import TargetModel
from .work import DrafterShape


@dataclass(frozen=True, slots=True)
class Experts:
    """A mixture-of-experts FFN in every drafter layer: routed experts (a softmax router
    of hidden x count picks `per_token` of them) beside one always-on shared expert whose
    output a sigmoid gate (hidden x 1) scales. Every expert is a SwiGLU MLP."""

    count: int
    width: int
    per_token: int
    shared_width: int

    def total_params(self, hidden: int) -> int:
        return (
            self.count * 3 * hidden * self.width
            + 3 * hidden * self.shared_width
            + self.router_params(hidden)
        )

    def active_params(self, hidden: int) -> int:
        return (
            self.per_token * 3 * hidden * self.width
            + 3 * hidden * self.shared_width
            + self.router_params(hidden)
        )

    def router_params(self, hidden: int) -> int:
        return hidden * self.count + hidden  # the router and the shared expert's gate

    @property
    def active_width(self) -> int:
        """FFN width one token runs through (activations per token)."""
        return self.per_token * self.width + self.shared_width


@dataclass(frozen=True, slots=True)
class Family:
    """One drafter family. None: the target's value (or the workload's), as upstream takes
    it from the target's config."""

    key: str  # as upstream spells it (workload.drafter; a test holds both lists equal)
    name: str  # as people write it
    block_size: int | None  # None: the target's default (model.default_block_size)
    layers: int | None = None  # a fixed layer count; None: workload.draft_layers
    captured_layers: int | None = None  # a fixed tap count; None: one per drafter layer
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    sliding_window: int | None = None  # every drafter layer's attention window
    conv_kernel: int = 0  # grouped dynamic convolutions: taps (0: none)
    conv_group: int = 0  # channels per group sharing one dynamic kernel
    selector_rank: int = 0  # low-rank top-k candidate selector (0: none)
    markov_rank: int = 0  # low-rank previous-token (Markov) logit head (0: none)
    experts: Experts | None = None
    final_state: bool = False  # the target's final hidden state captured beside the taps
    draft_vocab: int | None = None  # a trainable LM head over a reduced vocabulary
    fused_input: bool = False  # attention reads [token embedding, fused state]: 2 x hidden
    every_token: bool = False  # trains every position (test-time training), no anchors
    source: str = ""


FAMILIES: dict[str, Family] = {
    # DFlash: Qwen3-style layers of the target's shape, the captured layers fused by one
    # K*H -> H linear; block 16 (z-lab/dflash dflash/model.py @ 07ebd93d, SpecForge
    # specforge/modeling/draft/dflash.py @ a6b6b023; the target's row may set another
    # default, gpt-oss: 10).
    "dflash": Family(
        "dflash",
        "DFlash",
        block_size=None,
        source="z-lab/dflash dflash/model.py @ 07ebd93d; SpecForge modeling/draft/dflash.py",
    ),
    # DFlash2: DFlash's backbone at a fixed attention shape (32 Q / 8 KV heads of 128,
    # sliding window 2048 in every layer), a grouped dynamic depthwise convolution (2 taps,
    # 16-channel groups) before and after every attention and MLP, and a rank-256 selector
    # that re-ranks the head's top 16; block 8; the target's final hidden state captured
    # as a sixth tensor. Shapes: SpecForge specforge/modeling/draft/dflash2.py @ 5943b2f6
    # (PR #772) and z-lab/dflash dflash/model.py @ 07ebd93d (GroupedDynamicCausalConv,
    # CandidateSelector); the fixed values: the published z-lab/Qwen3.8-27B-DFlash2
    # config.json; the sixth tensor: SpecForge docs/recipes/qwen3.8-27b-dflash2-
    # disaggregated.md (PR #869: 6 BF16 tensors of tokens x 5120 per sample).
    "dflash2": Family(
        "dflash2",
        "DFlash2",
        block_size=8,
        n_heads=32,
        n_kv_heads=8,
        head_dim=128,
        sliding_window=2048,
        conv_kernel=2,
        conv_group=16,
        selector_rank=256,
        final_state=True,
        source="SpecForge modeling/draft/dflash2.py @ 5943b2f6 (PR #772); "
        "z-lab/Qwen3.8-27B-DFlash2 config.json",
    ),
    # DSpark (the MoE drafter of SpecForge's Qwen3.8-27B report): the DSpark skeleton
    # (5 full-attention layers, 32 Q / 8 KV heads of 128, a rank-256 Markov head, a
    # confidence head) with every FFN an MoE of 512 routed experts of width 512, top 10,
    # plus a 2048-wide shared expert; block 7. 20.8 B total, 1.08 B active on the
    # 5120-wide target. SpecForge docs/reports/qwen38-dspark-moe-3ep-report.md @ 6365249f
    # (section 3.1); the Markov head: specforge/modeling/draft/dspark.py @ a6b6b023
    # (VanillaMarkovHead); block 7: configs/*-dspark.json @ a6b6b023.
    "dspark": Family(
        "dspark",
        "DSpark",
        block_size=7,
        n_heads=32,
        n_kv_heads=8,
        head_dim=128,
        markov_rank=256,
        experts=Experts(count=512, width=512, per_token=10, shared_width=2048),
        source="SpecForge docs/reports/qwen38-dspark-moe-3ep-report.md @ 6365249f",
    ),
    # EAGLE-3: one Llama decoder layer of the target's shape whose attention reads the
    # token embedding and the fused state side by side (q/k/v from 2 x hidden), three
    # captured layers fused by a 3H -> H linear, a trainable LM head over a 32k draft
    # vocabulary (t2d/d2t maps are buffers), trained on every position over 7 unrolled
    # test-time-training steps; the target's final hidden state is stored beside the
    # taps (the loss reads the target's distribution). SpecForge
    # specforge/modeling/draft/llama3_eagle.py (LlamaForCausalLMEagle3),
    # algorithms/eagle3/model.py (length 7) and eagle3/data.py (aux_hidden_state +
    # hidden_state) @ a6b6b023; configs/*-eagle3.json (draft_vocab_size 32000).
    "eagle3": Family(
        "eagle3",
        "EAGLE-3",
        block_size=7,
        layers=1,
        captured_layers=3,
        final_state=True,
        draft_vocab=32_000,
        fused_input=True,
        every_token=True,
        source="SpecForge modeling/draft/llama3_eagle.py @ a6b6b023",
    ),
}

DEFAULT_FAMILY = "dflash"


def family(key: str) -> Family:
    return FAMILIES[key]


def default_block_size(key: str, model: TargetModel) -> int:
    """The block a family drafts when workload.block_size is None."""
    return FAMILIES[key].block_size or model.default_block_size


def eagle3_layer_ids(model: TargetModel) -> tuple[int, ...]:
    """EAGLE-3's captured layers: low, middle and high (SpecForge
    algorithms/model_providers.py @ a6b6b023: [1, n // 2 - 1, n - 4])."""
    n = model.n_layers
    return (1, n // 2 - 1, n - 4)


def drafter_shape(
    model: TargetModel,
    layers: int,
    block_size: int,
    captured_layers: int,
    key: str = DEFAULT_FAMILY,
) -> DrafterShape:
    """The drafter family `key` trains on `model`: its own attention shape where the family
    fixes one, the target's otherwise; its extra modules as parameter counts."""
    f = FAMILIES[key]
    hidden = model.hidden
    head_dim = f.head_dim or model.head_dim
    q_dim = (f.n_heads or model.n_heads) * head_dim
    kv_dim = (f.n_kv_heads or model.n_kv_heads) * head_dim
    conv_params = conv_io = 0
    if f.conv_kernel:
        # Two convolutions per layer (around attention and around the MLP), each: a
        # [2 sides, taps, hidden] base kernel and a hidden -> 2 x taps x groups linear
        # giving the dynamic kernel of both sides; each side reads and writes the hidden.
        groups = hidden // f.conv_group
        conv_params = 2 * (2 * f.conv_kernel * hidden + hidden * 2 * f.conv_kernel * groups)
        conv_io = 2 * (2 * 2 * hidden + 2 * f.conv_kernel * groups)
    head_params = head_matmul = 0
    if f.selector_rank:
        # Predecessor and successor codebooks (vocab x rank each, gathered) and the
        # hidden -> rank projection (a matmul per drafted position).
        head_params += 2 * model.vocab * f.selector_rank + hidden * f.selector_rank
        head_matmul += hidden * f.selector_rank
    if f.markov_rank:
        # markov_w1 (an embedding, gathered) and markov_w2 (rank -> vocab, a matmul per
        # drafted position); the confidence head (hidden -> 1) with it.
        head_params += 2 * model.vocab * f.markov_rank + hidden + 1
        head_matmul += f.markov_rank * model.vocab + hidden
    vocab = model.vocab
    if f.draft_vocab is not None:
        # Its own LM head, trained; the logits span the draft vocabulary only.
        vocab = f.draft_vocab
        head_params += hidden * f.draft_vocab
    intermediate = model.intermediate
    ffn_total = ffn_active = 3 * hidden * model.intermediate
    if f.experts is not None:
        intermediate = f.experts.active_width
        ffn_total = f.experts.total_params(hidden)
        ffn_active = f.experts.active_params(hidden)
    return DrafterShape(
        layers=f.layers or layers,
        hidden=hidden,
        intermediate=intermediate,
        q_dim=q_dim,
        kv_dim=kv_dim,
        head_dim=head_dim,
        vocab=vocab,
        captured_layers=f.captured_layers or captured_layers,
        target_hidden=hidden,
        block_size=block_size,
        family=f.key,
        attention_input=2 * hidden if f.fused_input else hidden,
        sliding_window=f.sliding_window,
        ffn_params_total=ffn_total,
        ffn_params_active=ffn_active,
        conv_params_per_layer=conv_params,
        conv_io_per_layer=conv_io,
        head_params=head_params,
        head_matmul_params=head_matmul,
        # The frozen embedding and LM head keep the target's vocabulary beside a draft one.
        frozen_vocab=model.vocab if f.draft_vocab is not None else None,
        final_state=f.final_state,
        every_token=f.every_token,
    )
