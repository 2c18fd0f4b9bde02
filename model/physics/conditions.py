"""What a plan's training conditions do to the acceptance curve where no public series
isolates them: the physical bound on tau, the block size's effect on the tokens a verify
step can accept, and the rules that widen the range where the evidence is silent (each
rule named, so a projection says which condition widened it).

The curve (physics/acceptance.py) is fitted on series measured under given conditions
(drafter family, block size, anchors, data regenerated or not, target size); the rules
here take those measured conditions and the plan's. They widen the range, they do not
move the central value, except where physics does: tau cannot exceed the tokens one
verify step can accept, and a block of b tokens accepts what the first b positions of a
longer block would (the per-position acceptance read off the measured block).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..basics.arrays import Number, maximum, minimum, where

# Condition names, as `acceptance.widened_by` and the project text give them.
FAMILY = "drafter family"
BLOCK = "block size"
ANCHORS = "anchors"
POLICY = "off-policy data"
ON_POLICY = "on-policy data"
TARGET = "target size"

# A target within this many octaves (factors of 2) of a measured target counts as measured:
# the public series span 4 B and 8 B targets of one model line (Qwen3).
TARGET_OCTAVES_MEASURED = 1.0

# Bisection steps for the per-position acceptance (2**-60: below a float's resolution).
_BISECTIONS = 60


@dataclass(frozen=True, slots=True)
class Measured:
    """The conditions a family's fitted series were measured under (measurements.toml)."""

    block_sizes: tuple[int, ...] = ()
    on_policy: tuple[bool, ...] = ()
    target_params: tuple[float, ...] = ()
    # The least share of a sample's positions the measured runs' anchors covered (1: every
    # position; see anchor_coverage); 1.0 where no run states its anchors.
    coverage: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "block_sizes": list(self.block_sizes),
            "on_policy": list(self.on_policy),
            "target_params": list(self.target_params),
            "coverage": self.coverage,
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Measured:
        return Measured(
            tuple(int(b) for b in d["block_sizes"]),
            tuple(bool(p) for p in d["on_policy"]),
            tuple(float(t) for t in d["target_params"]),
            float(d["coverage"]),
        )


def max_tau(family: str, block_size: int) -> float:
    """The most tokens one verify step can accept: a DFlash-family block of b positions
    (the anchor's own token and b - 1 drafts) accepts at most b; EAGLE-3 drafts
    `block_size` tokens over its test-time-training steps, plus the target's bonus token."""
    return float(block_size + 1 if family == "eagle3" else block_size)


def _geometric(alpha: Number, block: int) -> Number:
    """Expected tokens per verify step when each drafted position is accepted with
    probability alpha given the one before was: (1 - alpha**b) / (1 - alpha)."""
    return where(alpha < 1.0, (1.0 - alpha**block) / (1.0 - minimum(alpha, 1.0 - 1e-15)), block)


def per_position_acceptance(tau: Number, block: int) -> Number:
    """The alpha at which a block of `block` positions accepts tau tokens per step
    (bisection on the geometric sum; tau at or above the block: alpha 1)."""
    lo = tau * 0.0
    hi = lo + 1.0
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        low_side = _geometric(mid, block) < tau
        lo = where(low_side, mid, lo)
        hi = where(low_side, hi, mid)
    return (lo + hi) / 2


def block_tau(tau: Number, measured_block: int, block: int) -> Number:
    """tau of a block of `block` positions, from tau measured with `measured_block`, at
    the same per-position acceptance (Leviathan et al. 2023's geometric acceptance: the
    positions past a shorter block are the ones it cannot accept)."""
    if block == measured_block:
        return tau
    return _geometric(per_position_acceptance(tau, measured_block), block)


def nearest_block(measured: Iterable[int], block: int) -> int | None:
    blocks = sorted(measured)
    return min(blocks, key=lambda b: (abs(b - block), b)) if blocks else None


def anchor_coverage(anchors: int, block_size: int, sample_tokens: float) -> float:
    """The share of a sample's positions its anchors' blocks cover (random anchor
    sampling: each anchor trains the block of positions after it), 1 at most; 1 where
    the anchors or the sample length are not known (0)."""
    if anchors <= 0 or sample_tokens <= 0:
        return 1.0
    return min(1.0, anchors * block_size / sample_tokens)


def target_octaves(target_params: float, measured: Iterable[float]) -> float:
    """How many factors of 2 the target lies from the nearest measured target beyond
    TARGET_OCTAVES_MEASURED (0: within them, or either size unknown)."""
    sizes = [m for m in measured if m > 0]
    if target_params <= 0 or not sizes:
        return 0.0
    nearest = min(abs(math.log2(target_params / m)) for m in sizes)
    return max(0.0, nearest - TARGET_OCTAVES_MEASURED)


def widen(
    low: Number, high: Number, central: Number, by_low: Number, by_high: Number
) -> tuple[Number, Number]:
    """The range's ends moved out by these shares of the central gain (tau - 1)."""
    gain = maximum(central - 1.0, 0.0)
    return low - gain * by_low, high + gain * by_high
