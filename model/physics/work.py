"""Work per role from the architecture: FLOPs and memory traffic.

Target side: per token (prefill through every layer, as the capture servers run it).
Drafter side: per sample (anchors x block drafted positions, independent of the sample's
length except for the attention over the target context).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..basics.units import BF16_BYTES, FP32_BYTES
from ..inputs.targets import TargetModel

# Exponentials of attention cost about as much time as its two matmuls at head_dim 128 on
# current GPUs (FlashAttention-4's analysis of Blackwell); the matmul work per score grows
# with head_dim, the exponential does not. B300's doubled exponent units halve this part.
SOFTMAX_TIME_PER_MATMUL_TIME_AT_HEAD_DIM_128 = 1.0

# AdamW mixed precision: bf16 weights (2), replicated; fp32 master (4), Adam m (4) and v (4)
# and the bf16 gradient (2) sharded over the drafter ranks (FSDP SHARD_GRAD_OP).
REPLICATED_BYTES_PER_PARAM = BF16_BYTES
SHARDED_BYTES_PER_PARAM = 4 + 4 + 4 + BF16_BYTES
# Per optimizer step every sharded state byte is read once and written once.
OPTIMIZER_TRAFFIC_PER_STATE_BYTE = 2
# Logit traffic per element: written and read in the forward, again in the recomputation,
# and the gradient written and read (bf16 logits, fp32 inside the loss).
LOGIT_TRAFFIC_BYTES = 4 * FP32_BYTES
# A training checkpoint keeps the bf16 weights and, per parameter, the fp32 master copy
# and Adam's m and v: SpecForge's DSpark MoE report (docs/reports/qwen38-dspark-moe-3ep-
# report.md @ 6365249f) saves 41.6 GB of weights (20.8 B x 2) and 4 x 62.5 GB of optimizer
# shards (20.8 B x 12), 272 GiB per checkpoint.
CHECKPOINT_BYTES_PER_PARAM = BF16_BYTES + 3 * FP32_BYTES


def mean_causal_context(tokens: float, window: int | None = None) -> float:
    """Average number of earlier tokens a position attends to in a causal sequence.

    Full attention: half the sequence. A sliding window w caps each position's context at
    w, so the mean is w - w^2 / (2 S) once S > w (continuous approximation).
    """
    if window is None or tokens <= window:
        return tokens / 2
    return window - window * window / (2 * tokens)


def softmax_factor(head_dim: int, softmax_speedup: float) -> float:
    """Attention time as a multiple of its matmul-FLOP time, softmax exponentials included."""
    share = SOFTMAX_TIME_PER_MATMUL_TIME_AT_HEAD_DIM_128 * 128 / head_dim
    return 1 + share / softmax_speedup


def layer_io_elements(hidden: int, q_dim: int, kv_dim: int, ffn_width: int) -> int:
    """Activation elements one token moves through one layer: every linear layer reads its
    input and writes its output once; attention reads q, k, v and writes its output."""
    linears = (hidden + q_dim) + 2 * (hidden + kv_dim) + (q_dim + hidden)
    mlp = 2 * (hidden + ffn_width) + (ffn_width + hidden)
    attention = (q_dim + 2 * kv_dim) + q_dim
    return linears + mlp + attention


@dataclass(frozen=True, slots=True)
class TargetWork:
    """Prefill work per token on the target (the whole forward, as capture servers run it)."""

    layers_run: int
    linear_flop_per_token: float
    attention_flop_per_token: float
    head_dim: int
    weight_bytes_per_forward: float
    tokens_per_forward: float
    activation_bytes_per_token: float
    hidden_state_bytes_per_token: float

    @property
    def flop_per_token(self) -> float:
        return self.linear_flop_per_token + self.attention_flop_per_token

    @property
    def bytes_per_token(self) -> float:
        return (
            self.weight_bytes_per_forward / self.tokens_per_forward
            + self.activation_bytes_per_token
        )

    def time_flop(self, softmax_speedup: float) -> float:
        """FLOPs to charge at the matmul rate, attention's softmax time included."""
        return self.linear_flop_per_token + self.attention_flop_per_token * softmax_factor(
            self.head_dim, softmax_speedup
        )


def target_work(
    model: TargetModel,
    layer_ids: tuple[int, ...],
    sample_tokens: float,
    transferred_layers: int | None = None,
) -> TargetWork:
    """`transferred_layers`: hidden states sent per token, when more than the captured
    layers (speculators also sends the final layer)."""
    # The capture servers run the whole forward: SpecForge's SGLang capture patch prefills
    # every layer and samples one token (max_new_tokens 1), and speculators' vLLM path
    # captures the last layer too (docs/model.md). The LM head runs for one position per
    # sample only, under 0.01 % of the FLOPs at thousands of tokens: left out.
    layers_run = model.n_layers
    linear = 2.0 * model.layer_params_active * layers_run
    attention = 0.0
    for layer in range(layers_run):
        window = model.sliding_window if layer in model.sliding_layers else None
        attention += 4.0 * mean_causal_context(sample_tokens, window) * model.q_dim
    io = layer_io_elements(model.hidden, model.q_dim, model.kv_dim, model.ffn_width)
    kv_write = 2 * model.kv_dim
    return TargetWork(
        layers_run=layers_run,
        linear_flop_per_token=linear,
        attention_flop_per_token=attention,
        head_dim=model.head_dim,
        # Every weight of the layers run is read once per forward pass (all experts: a
        # forward of thousands of tokens touches each of them).
        weight_bytes_per_forward=BF16_BYTES * model.layer_params_total * layers_run,
        tokens_per_forward=sample_tokens,
        activation_bytes_per_token=BF16_BYTES * (io + kv_write) * layers_run,
        hidden_state_bytes_per_token=BF16_BYTES
        * (transferred_layers or len(layer_ids))
        * model.hidden,
    )


@dataclass(frozen=True, slots=True)
class DrafterShape:
    """A drafter on its target (physics/families.py builds one per family): Qwen3-style
    layers, the captured hidden states fused into the drafter's width, and the family's
    extra modules as parameter counts. The defaults are DFlash's: the target's own layer."""

    layers: int
    hidden: int
    intermediate: int  # the FFN width one token runs through (MoE: the active experts)
    q_dim: int
    kv_dim: int
    head_dim: int
    vocab: int  # the logits' vocabulary (a reduced draft vocabulary where the family has one)
    captured_layers: int
    target_hidden: int
    block_size: int
    family: str = "dflash"
    attention_input: int = 0  # q/k/v input width; 0: hidden
    sliding_window: int | None = None  # every layer's window; None: full attention
    ffn_params_total: int | None = None  # per layer; None: a dense SwiGLU of intermediate
    ffn_params_active: int | None = None  # per layer and token; None: as total
    conv_params_per_layer: int = 0  # DFlash2's grouped dynamic convolutions
    conv_io_per_layer: int = 0  # activation elements they read and write per position
    head_params: int = 0  # trainable parameters beside the layers (selector, Markov head)
    head_matmul_params: int = 0  # of them, those a drafted position multiplies through
    frozen_vocab: int | None = None  # the target's vocabulary; None: vocab
    final_state: bool = False  # the target's final hidden state captured beside the taps
    every_token: bool = False  # trains every position (EAGLE-3's test-time training)

    @property
    def attention_params(self) -> int:
        width = self.attention_input or self.hidden
        return width * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden

    @property
    def layer_params(self) -> int:
        """Every parameter of one layer (all experts)."""
        ffn = self.ffn_params_total
        if ffn is None:
            ffn = 3 * self.hidden * self.intermediate
        return self.attention_params + ffn + self.conv_params_per_layer

    @property
    def layer_params_active(self) -> int:
        """The parameters one token multiplies through in one layer (the routed experts)."""
        ffn = self.ffn_params_active
        if ffn is None:
            ffn = 3 * self.hidden * self.intermediate
        return self.attention_params + ffn + self.conv_params_per_layer

    @property
    def projection_params(self) -> int:
        """The K*H -> H linear that fuses the captured hidden states (no bias)."""
        return self.captured_layers * self.target_hidden * self.hidden

    @property
    def trainable_params(self) -> int:
        return self.layers * self.layer_params + self.projection_params + self.head_params

    @property
    def active_params(self) -> int:
        """Trainable parameters one drafted position runs through (below the total for
        an MoE drafter)."""
        return self.layers * self.layer_params_active + self.projection_params + self.head_params

    @property
    def frozen_params(self) -> int:
        """The target's embedding and LM head, both needed on every drafter GPU."""
        return 2 * (self.frozen_vocab or self.vocab) * self.hidden

    @property
    def state_tensors(self) -> int:
        """Hidden-state tensors a drafter reads per token: the captured layers, and the
        target's final hidden state where the family captures it."""
        return self.captured_layers + int(self.final_state)

    @property
    def checkpoint_bytes(self) -> float:
        """A training checkpoint as saved: bf16 weights, and per parameter the fp32 master
        copy and Adam's two moments."""
        return CHECKPOINT_BYTES_PER_PARAM * self.trainable_params


@dataclass(frozen=True, slots=True)
class DrafterWork:
    """Training work per sample on a drafter GPU (forward + backward; optimizer as traffic)."""

    anchors: int
    positions: int
    layer_flop: float
    lm_head_flop: float
    attention_flop: float
    context_kv_flop: float
    projection_flop: float
    head_dim: int
    bytes_per_sample: float
    head_flop: float = 0.0  # the family's head beside the LM head (selector, Markov)

    @property
    def flop_per_sample(self) -> float:
        return (
            self.layer_flop
            + self.lm_head_flop
            + self.head_flop
            + self.attention_flop
            + self.context_kv_flop
            + self.projection_flop
        )

    def time_flop(self, softmax_speedup: float) -> float:
        return (
            self.flop_per_sample
            - self.attention_flop
            + self.attention_flop * softmax_factor(self.head_dim, softmax_speedup)
        )


def drafter_layer_io(shape: DrafterShape) -> int:
    """Activation elements one drafted position moves through one drafter layer: the
    linears and attention (layer_io_elements), a wider attention input (EAGLE-3 reads two
    hidden-wide vectors) and the family's convolutions."""
    io = layer_io_elements(shape.hidden, shape.q_dim, shape.kv_dim, shape.intermediate)
    if shape.attention_input:
        io += 3 * (shape.attention_input - shape.hidden)  # q, k and v each read it
    return io + shape.conv_io_per_layer


def drafter_work(
    shape: DrafterShape, num_anchors: int, sample_tokens: float, batch_size: int, drafter_gpus: int
) -> DrafterWork:
    # A sample cannot hold more anchors than tokens; EAGLE-3 trains every position,
    # unrolled over its test-time-training steps (the block).
    anchors = int(sample_tokens) if shape.every_token else min(num_anchors, int(sample_tokens))
    positions = anchors * shape.block_size
    # fwd + bwd of a trainable matmul: 3 x 2 FLOPs per weight per position (the routed
    # experts a token runs through, for an MoE drafter).
    layer = 6.0 * positions * shape.layers * shape.layer_params_active
    # Frozen LM head: forward, its recomputation and the input gradient, 3 x 2 FLOPs per
    # weight per position. SpecForge runs the LM head and cross-entropy in chunks of 128
    # anchor blocks under non-reentrant activation checkpointing, so each chunk's logits
    # are computed twice (dflash_family_model.py, core/chunking.py; docs/model.md).
    lm_head = 6.0 * positions * shape.hidden * shape.vocab
    # The family's trainable head beside it (DFlash2's selector projection, DSpark's Markov
    # head), fwd + bwd per drafted position.
    head = 6.0 * positions * shape.head_matmul_params
    # Each drafted position attends to the target context before its anchor (half the
    # sample on average; a sliding window caps it) plus its own block; fwd + bwd = 3 x the
    # 4 FLOPs per score element.
    context = mean_causal_context(sample_tokens, shape.sliding_window) + shape.block_size
    attention = 12.0 * positions * shape.layers * context * shape.q_dim
    # The fused context is projected to keys and values in every drafter layer (EAGLE-3's
    # context is its own positions: in the layer FLOPs already).
    context_kv = 0.0
    if not shape.every_token:
        context_kv = 6.0 * sample_tokens * shape.layers * 2 * shape.hidden * shape.kv_dim
    projection = 6.0 * sample_tokens * shape.projection_params
    io = drafter_layer_io(shape)
    weights_per_pass = BF16_BYTES * (shape.trainable_params + shape.frozen_params)
    optimizer = (
        OPTIMIZER_TRAFFIC_PER_STATE_BYTE
        * SHARDED_BYTES_PER_PARAM
        * shape.trainable_params
        / drafter_gpus
    )
    bytes_per_sample = (
        2 * weights_per_pass / batch_size  # weights read in forward and backward
        + optimizer / batch_size  # one optimizer step per micro-batch
        + positions * shape.vocab * LOGIT_TRAFFIC_BYTES
        + 3 * BF16_BYTES * positions * shape.layers * io  # saved, re-read, gradient written
        + BF16_BYTES * sample_tokens * shape.state_tensors * shape.target_hidden
    )
    return DrafterWork(
        anchors=anchors,
        positions=positions,
        layer_flop=layer,
        lm_head_flop=lm_head,
        attention_flop=attention,
        context_kv_flop=context_kv,
        projection_flop=projection,
        head_dim=shape.head_dim,
        bytes_per_sample=bytes_per_sample,
        head_flop=head,
    )
