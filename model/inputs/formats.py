"""The launch formats, each declared once: one row per format says which module writes it
and what the run it launches is (hidden-state transport and receive mode, capture engine,
store sizing, offline, nodes, file), so that the plan's validation, the projection's
diagnostics, the launch dispatcher, the CLI's --format and the app's picker all read the
same facts. Adding a format is one module in model/launch/ plus one row here.

The registry sits with the plan's inputs because the projection (model/core) and the
physics read it and may not import model/launch (pyproject.toml's layers); the format's
title (what it runs, in words) is its module's TITLE.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

# workload.receive: how a trainer receives hidden states from the Mooncake store
# (model/physics/pipeline.py RECEIVE_MODES says what each one costs, with its source); the
# plan's key (inputs/plan.py) and the mode a format's trainer runs.
Receive = Literal["host", "pinned", "device"]


@dataclass(frozen=True, slots=True)
class FormatRow:
    """One launch format: what its launch runs and what it refuses."""

    name: str  # launch.format, --format, the picker's entry
    # model/launch/<module>.py: defines NAME (= name) and render(ctx, template), and
    # render_offline(ctx, template) when the format writes the offline run.
    module: str
    # The workload.transport of the run it launches, and why; None: not projected (the
    # legacy trainer runs target and drafter colocated) or, own_command, the plan's own.
    transport: str | None
    transport_why: str
    # The workload.receive its trainer runs through the Mooncake store, and why; None: no
    # Mooncake receive, or, own_command, the plan's own.
    receive: Receive | None
    receive_why: str
    # The user's command runs the plan's own path and mode (the template): nothing refused,
    # no offline pair written for it.
    own_command: bool = False
    # The capture engine its targets run (the calibration's maturity key).
    engine: str = "sglang"
    # Whose Mooncake store sizing and on-disk format (physics/store.py, physics/storage.py)
    # the launched run follows.
    store_sizing: str = "specforge"
    # Hidden states sent per token besides the captured layers.
    extra_layers: int = 0
    # Why it cannot write the offline run (workload.mode = offline); None: it writes it.
    offline_refusal: str | None = None
    # Why it cannot run workload.topology = colocated (every GPU a target shard and a
    # drafter rank); None: it writes it.
    colocated_refusal: str | None = None
    # (workload.drafter, why it cannot train that family): the families it does not write.
    drafter_refusals: tuple[tuple[str, str], ...] = ()
    # Its launcher names the nodes (allocation, service, cluster): no host placeholders.
    names_nodes: bool = False
    # Its online launch runs Mooncake over TCP, so it refuses workload.receive = device.
    mooncake_tcp: bool = False
    # What it writes: a script (executable, .sh) or a document for a launcher.
    suffix: str = ".sh"
    executable: bool = True
    # Whose checkpoints its trainer writes (core/checkpoints.py LAYOUTS: the size, rotation
    # and resume of each).
    checkpoints: str = "specforge"
    # Its one-node online launch is SpecForge's managed_local, which cannot resume (a
    # second launch warm-starts: launch/checkpointing.py warm_lines).
    one_node_managed_local: bool = False


# SpecForge's formats pin the specforge 0.2.0 wheel (launch/common.py SPECFORGE_VERSION):
# its trainer (as main a6b6b023, 2026-08-08) receives each tensor into a fresh pageable host
# tensor and copies it to the device on the training stream; receive_buffers (PRs #840,
# #858: pinned the default, 2026-09-08) is in no release (PyPI's latest is 0.2.0).
SPECFORGE_RECEIVE = (
    "the specforge 0.2.0 it installs receives into pageable host memory on the training "
    "stream and ignores the DISAGG_RECEIVE_BUFFERS the launch writes (pinned receive, "
    "SpecForge's default since PR #858 of September 2026, is in no release yet)"
)
SPECFORGE_PATH = "SpecForge stages hidden states through its Mooncake store"


def _specforge(name: str, **facts: Any) -> FormatRow:
    """A format running SpecForge unified's online pipeline (over Mooncake, TCP), written
    by the module of its name."""
    row = FormatRow(name, name, "mooncake", SPECFORGE_PATH, "host", SPECFORGE_RECEIVE)
    return replace(row, mooncake_tcp=True, **facts)


_ONLINE_ONLY = "runs SpecForge's online capture servers and trainers"
_WRITE_OFFLINE_WITH = "write the offline run with --format specforge or slurm"
# SpecForge trains DFlash and DFlash2 (strategy dflash with a DFlashDraftModel or, PR #772,
# a DFlash2DraftModel draft config); its EAGLE-3 run needs what the planner
# does not write: a disaggregated run model.vocab_mapping_path (a t2d/d2t file built from
# the data, specforge 0.2.0 application/planning.py) and three aux_hidden_state_layer_ids.
_SPECFORGE_EAGLE3 = (
    "eagle3",
    "the planner writes SpecForge's DFlash-family settings; its EAGLE-3 run needs "
    "model.vocab_mapping_path (a t2d/d2t file built from the data) and three "
    "aux_hidden_state_layer_ids, which it does not write; use --format speculators",
)
# The DSpark a plan projects is SpecForge's MoE drafter (physics/families.py: 512 experts of
# 512 top 10 plus a shared one, 20.8 B parameters); no format's trainer builds it.
_DSPARK_MOE = (
    "dspark",
    "the DSpark projected is SpecForge's mixture-of-experts drafter (20.8 B parameters), "
    "whose MoE FFN (SpecForge PRs #799/#812) no SpecForge release or pinned commit has; "
    "specforge 0.2.0's DSparkDraftModel is dense",
)
_SPECULATORS_DSPARK = (
    "dspark",
    "the DSpark projected is SpecForge's mixture-of-experts drafter (20.8 B parameters), "
    "and speculators 0.9.0's dspark drafter is dense (it has no MoE draft)",
)
# A launcher carrying only run.yaml to its nodes (a ConfigMap, a task's run section)
# cannot hand SpecForge the draft config file DFlash2 and DSpark are built from.
_DRAFT_FILE = (
    "its nodes get SpecForge's run.yaml only, and DFlash2 is built from a draft config "
    "file it does not carry; use --format specforge or slurm"
)
_POD_COLOCATED = (
    "its node shell runs SpecForge's capture servers, producer and trainers apart; "
    "write the colocated run with --format specforge or slurm"
)


def _pod_refusals() -> dict[str, Any]:
    return {
        "colocated_refusal": _POD_COLOCATED,
        "drafter_refusals": (
            ("dflash2", _DRAFT_FILE),
            _DSPARK_MOE,
            _SPECFORGE_EAGLE3,
        ),
    }


# The rows, in the order the CLI, the picker and the error messages list them.
_ROWS: tuple[FormatRow, ...] = (
    _specforge(
        "specforge",
        drafter_refusals=(_DSPARK_MOE, _SPECFORGE_EAGLE3),
        one_node_managed_local=True,
    ),
    FormatRow(
        "speculators",
        "speculators",
        "mooncake",
        "speculators stages hidden states in host memory: files "
        "under /tmp on one node, its Mooncake backend across nodes "
        "(both projected with the Mooncake path's measured ceilings)",
        # vllm-project/speculators' Mooncake backend (#836) has no receive setting: its
        # trainer gets the tensors into host memory.
        "host",
        "speculators' trainer gets hidden states into host memory",
        engine="vllm",
        store_sizing="speculators",
        # vllm-project/speculators (0.9.0, and main as of December 2026): launch_vllm.py
        # serves the target and speculators.train trains, each on GPUs of its own.
        colocated_refusal="it serves the target with vLLM (scripts/launch_vllm.py) and "
        "trains on other GPUs (speculators.train), and has no mode running both on one GPU",
        drafter_refusals=(_SPECULATORS_DSPARK,),
        # launch_vllm.py appends the final layer, which its trainer reads as the
        # target's output.
        extra_layers=1,
        checkpoints="speculators",
    ),
    FormatRow(
        "specforge-legacy",
        "specforge_legacy",
        None,
        "the legacy trainer runs target and drafter colocated on "
        "every GPU, which the planner's target/drafter split does "
        "not describe",
        None,
        "the legacy trainer runs target and drafter colocated",
        offline_refusal="the legacy trainer (SpecForge 40d8feff scripts/train_dflash.py) "
        "reads raw conversations only and has no hidden-state input",
        drafter_refusals=tuple(
            (
                family,
                f"the legacy trainer (SpecForge 40d8feff scripts/train_dflash.py) "
                f"builds a DFlash drafter only, not {name}",
            )
            for family, name in (
                ("dflash2", "DFlash2"),
                ("dspark", "DSpark"),
                ("eagle3", "EAGLE-3"),
            )
        ),
        checkpoints="specforge-legacy",
    ),
    _specforge("slurm", names_nodes=True, drafter_refusals=(_DSPARK_MOE, _SPECFORGE_EAGLE3)),
    _specforge(
        "kubernetes",
        names_nodes=True,
        suffix=".yaml",
        executable=False,
        offline_refusal=f"the JobSet {_ONLINE_ONLY} as pods; {_WRITE_OFFLINE_WITH}",
        **_pod_refusals(),
    ),
    _specforge(
        "skypilot",
        names_nodes=True,
        suffix=".yaml",
        executable=False,
        offline_refusal=f"the task {_ONLINE_ONLY} on each node; {_WRITE_OFFLINE_WITH}",
        one_node_managed_local=True,
        **_pod_refusals(),
    ),
    FormatRow(
        "template",
        "template",
        None,
        "your command runs the plan's own workload.transport",
        None,
        "your command runs the plan's own workload.receive",
        own_command=True,
        checkpoints="template",
    ),
)

# The registry: name -> row, filled by register().
FORMATS: dict[str, FormatRow] = {}
DEFAULT = "specforge"  # launch.format when the plan names none


def register(row: FormatRow) -> None:
    """Add a format (its module lands with it: model/launch/<row.module>.py)."""
    if row.name in FORMATS:
        raise ValueError(f"launch format {row.name!r} is already registered")
    # The projection's transport-differs-from-launch diagnostic words a launch that stages
    # hidden states through a Mooncake store (the plan's other transport is direct).
    if row.transport not in (None, "mooncake"):
        raise ValueError(f"launch format {row.name!r}: transport {row.transport!r}")
    FORMATS[row.name] = row


for _row in _ROWS:
    register(_row)


def names() -> tuple[str, ...]:
    """The format names, in the registry's order."""
    return tuple(FORMATS)


def row_of(name: str) -> FormatRow:
    """The row of a format the plan validated (KeyError: not a registered format)."""
    return FORMATS[name]


def refusal(name: str, topology: str, drafter: str) -> tuple[str, str, str] | None:
    """Why format `name` cannot run a plan's topology or drafter family, as (plan key,
    value, why); None: it runs both."""
    row = FORMATS[name]
    if topology == "colocated" and row.colocated_refusal is not None:
        return "workload.topology", topology, row.colocated_refusal
    for family, why in row.drafter_refusals:
        if family == drafter:
            return "workload.drafter", drafter, why
    return None


def offline_names() -> tuple[str, ...]:
    """The formats whose launch writes the offline run (the template runs the user's
    command, whatever its mode)."""
    return tuple(name for name, row in FORMATS.items() if row.offline_refusal is None)


def offline_writers() -> tuple[str, ...]:
    """The formats that write the offline pair themselves (capture, then train)."""
    return tuple(name for name in offline_names() if not FORMATS[name].own_command)
