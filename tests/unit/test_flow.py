"""physics/flow.py: the recipe's measured points come back out of the rule, the array form
(the search) is the scalar form (the projection and the launches), and the limits upstream
checks hold for every split."""

from __future__ import annotations

import numpy as np
from dflash_plan.model.physics import flow
from hypothesis import given
from hypothesis import strategies as st

# SpecForge's DFlash2 recipe (PR #869): 4 + 4 on one node and 8 + 8 on two, batch 2 x
# accumulation 4, its best watermarks and the starving ones (3 x the quantum on one node,
# 192/96 across nodes).
ONE_NODE_BEST, ONE_NODE_STARVED = (192, 96), 96
CROSS_NODE_BEST, CROSS_NODE_STARVED = (512, 256), 192


def test_the_recipes_points_come_back():
    # The recipe's step quantum: ranks x batch 2 x accumulation 4, one sample per
    # accumulated micro-batch sample (the planner's accumulation is 1: batch 8 per rank).
    assert flow.watermarks_of(4, 2 * 4, 4, False) == ONE_NODE_BEST
    assert flow.watermarks_of(8, 2 * 4, 8, True) == CROSS_NODE_BEST  # cross_node
    # Its reading: the loaders' leases (ranks x 8 workers x batch 2) plus one quantum is
    # where the producer starved.
    assert flow.loader_leases_of(4, 2) + 4 * 2 * 4 == ONE_NODE_STARVED
    assert flow.loader_leases_of(8, 2) + 8 * 2 * 4 == CROSS_NODE_STARVED


def test_one_node_or_across():
    # 8-GPU nodes: 4 + 4 fill one, 4 + 5 spill; two GPU types never share a node.
    assert not flow.cross_node_of(4, 4, 8, True)
    assert flow.cross_node_of(4, 5, 8, True)
    assert flow.cross_node_of(1, 1, 8, False)


@given(
    st.lists(st.tuples(st.integers(1, 64), st.integers(1, 256)), min_size=1, max_size=8),
    st.integers(1, 32),
    st.sampled_from([1, 2, 4, 8]),
    st.booleans(),
    st.booleans(),
)
def test_arrays_are_the_scalars_and_upstream_accepts_them(
    splits, batch, per_node, same_type, prefetching
):
    targets = np.array([t for t, _ in splits])
    drafters = np.array([d for _, d in splits])
    cross = flow.cross_node_of(targets, drafters, per_node, same_type)
    high, low = flow.watermarks_of(drafters, batch, targets, cross, prefetching)
    workers = flow.speculators_workers_of(np.minimum(drafters, per_node), cross)
    for i, (t, d) in enumerate(splits):
        c = bool(flow.cross_node_of(t, d, per_node, same_type))
        assert c == bool(cross[i])
        h, lo = flow.watermarks_of(d, batch, t, c, prefetching)
        assert (h, lo) == (high[i], low[i])
        # SpecForge: both at least the quantum, low <= high; every server keeps its lease.
        assert d * batch <= lo <= h and h >= t * flow.IN_FLIGHT_PER_SERVER
        w = flow.speculators_workers_of(min(d, per_node), c)
        assert w == workers[i]
        if c:  # every loader worker a Mooncake client: under the count that exhausted a node
            assert w * min(d, per_node) < flow.EXHAUSTING_CLIENTS_PER_NODE or w == 1
