"""The upstream versions every launch format installs, as one dated table per upstream line:
what was pinned, from where, when it was last checked against PyPI and upstream's code, and
when that check goes stale (upstream moves monthly). The renderers, `doctor` and the tests
read the pins from here and from nowhere else."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from ..basics.errors import PlanError
from ..inputs.plan import Plan

# A check of the pins holds this long: SpecForge, SGLang and vLLM each publish about monthly
# (PyPI: sglang 0.5.14 to 0.5.23 and vllm 0.22 to 0.34 between the 0.2.0 wheel and
# 2026-12-03), so three months is about three upstream releases behind.
STALE_AFTER_DAYS = 90

# Where a pin comes from (Pin.source): an exact wheel from PyPI, a floor on PyPI (that
# version or newer: upstream names no exact one), or a git repository whose commit the
# pin's version is.
PYPI = "pypi"
PYPI_FLOOR = "pypi>="
SPECFORGE_REPO = "https://github.com/sgl-project/SpecForge"
SPECULATORS_REPO = "https://github.com/vllm-project/speculators"


@dataclass(frozen=True, slots=True)
class Pin:
    """One upstream package a launch installs or runs: `package` is its distribution name
    (what `pip show` names) or, for a file taken from a checkout, `<repo name>:<path>`;
    `version` a wheel version or a git commit; `source` PYPI (the exact wheel), PYPI_FLOOR
    (that version or newer) or the git repository the commit is of."""

    package: str
    version: str
    source: str

    @property
    def is_wheel(self) -> bool:
        return self.source in (PYPI, PYPI_FLOOR)

    @property
    def is_file(self) -> bool:
        """A script taken from a checkout (no installed distribution to ask for)."""
        return ":" in self.package

    @property
    def requirement(self) -> str:
        """The pip requirement installing it (a file from a checkout: the checkout)."""
        if self.is_wheel:
            return f"{self.package}{'>=' if self.source == PYPI_FLOOR else '=='}{self.version}"
        return f"{self.package.split(':')[0]} @ git+{self.source}@{self.version}"

    @property
    def short(self) -> str:
        """`specforge 0.2.0`, `specforge@b780087e`: for a script's header line."""
        if self.is_wheel:
            floor = ">=" if self.source == PYPI_FLOOR else ""
            return f"{self.package} {floor}{self.version}"
        return f"{self.package}@{self.version[:8]}"


@dataclass(frozen=True)
class UpstreamLine:
    """The pins of one upstream line (`pinned`: the released wheels the scripts were
    checked with), the node they need (Python, glibc, CUDA major: the pinned wheels'
    floors) and the dates of their check. `roles` names each pin's part (parallel to
    `pins`), so that a format takes its pins by role."""

    name: str
    pins: tuple[Pin, ...]
    python: str  # minimum Python, e.g. "3.11"
    glibc: str  # minimum glibc, e.g. "2.34"
    cuda_major: int
    checked: date
    stale_after: date
    roles: tuple[str, ...] = ()
    summary: str = ""  # what the line is, one sentence
    # The SGLang tag SpecForge's capture patch targets (its --target).
    patch_target: str = ""
    # What the line's SpecForge runs that the launch renders differently
    # (RECEIVE_BUFFERS_KEY, DFLASH2_ON_MAIN).
    features: frozenset[str] = frozenset()

    def pin(self, role: str) -> Pin:
        return self.pins[self.roles.index(role)]


# A line's features: its SpecForge schema has deployment.disaggregated.receive_buffers
# (PRs #840/#858), so run.yaml carries the plan's receive mode and the run receives as the
# plan says; its SpecForge trains DFlash2 (PR #772 on main), so a DFlash2 run needs no
# other commit.
RECEIVE_BUFFERS_KEY = "receive_buffers"
DFLASH2_ON_MAIN = "dflash2"


def _line(
    name: str,
    summary: str,
    checked: date,
    pins: dict[str, Pin],
    *,
    python: str,
    glibc: str,
    cuda_major: int,
    patch_target: str,
    features: frozenset[str] = frozenset(),
) -> UpstreamLine:
    return UpstreamLine(
        name,
        tuple(pins.values()),
        python,
        glibc,
        cuda_major,
        checked,
        checked + timedelta(days=STALE_AFTER_DAYS),
        tuple(pins),
        summary,
        patch_target,
        features,
    )


# --- the pinned line: the released wheels the launch scripts are checked with -----------

# specforge 0.2.0 (PyPI's newest, checked 2026-12-03) pins sglang==0.5.14, torch==2.11.0
# and transformers==5.8.1 and needs Python >= 3.11 (its wheel's METADATA); torch 2.11.0's
# Linux wheels require cuda-toolkit==13.0.2 (tests/data/wheels/facts.toml, checked
# 2026-12-02); sglang 0.5.14's wheels are manylinux_2_34 (glibc 2.34). Mooncake's wheels
# are built per CUDA major: mooncake-transfer-engine 0.3.13.post1 links libcudart.so.12,
# its -cuda13 build libcudart.so.13 (readelf -d of mooncake/store.so and engine.so;
# facts.toml), and SpecForge names the same rule (specforge/runtime/data_plane/
# mooncake_store.py: -cuda13 "for CUDA >= 13").
PINNED = _line(
    "pinned",
    "the released wheels: specforge 0.2.0 (sglang 0.5.14, torch 2.11.0), speculators 0.9.0",
    date(2026, 12, 3),
    {
        "specforge": Pin("specforge", "0.2.0", PYPI),
        "sglang": Pin("sglang", "0.5.14", PYPI),
        "torch": Pin("torch", "2.11.0", PYPI),
        "mooncake": Pin("mooncake-transfer-engine-cuda13", "0.3.13.post1", PYPI),
        # The spec-capture patch to the installed SGLang, applied by the script of a
        # SpecForge checkout (no wheel carries patch or script): main at a6b6b023
        # (2026-08-08), from which the 0.2.0 wheel was built.
        "capture_patch": Pin(
            "SpecForge:scripts/apply_sglang_spec_capture_patch.sh",
            "a6b6b0230009d15ec2a97a57384e6f53f0f96946",
            SPECFORGE_REPO,
        ),
        # SpecForge at this commit of its colocated-training pull requests (#783/#784,
        # opened 2026-08-25, over a main that has PR #772's DFlash2 of 2026-08-19; read
        # 2026-12-03 through the code index, which dates no commit): the colocated online
        # run (deployment.mode local_colocated with train_data_path, training.tp_size
        # target islands, fsdp_sharding HYBRID_SHARD) and DFlash2 (a DFlash2DraftModel
        # draft config, training.dflash2_*). No release carries the colocated run, and
        # main did not yet either: PyPI's newest specforge is 0.2.0, and it and main at
        # d23761c5 (September 2026, the DFlash2 recipe of PR #869) refuse online
        # local_colocated ("colocated online training is no longer supported"); 0.2.0 has
        # no DFlash2DraftModel. One commit for both keeps DFlash2's receive path the one
        # the format's row projects (pageable: the branch predates PR #840's
        # receive_buffers).
        "specforge_pr": Pin(
            "specforge", "b780087e75e02df7316dd6798d56c293cafdc929", SPECFORGE_REPO
        ),
        # The last sgl-project/SpecForge commit with scripts/train_dflash.py (2026-07-14;
        # its child d5883d5b "refactor: consolidate training on unified runtime" deletes
        # it); it pins sglang==0.5.14 and torch==2.11.0 as 0.2.0 does.
        "specforge_legacy": Pin(
            "specforge", "40d8feffdc7ef77a38278802301981897bb6f250", SPECFORGE_REPO
        ),
        # speculators 0.9.0 (PyPI's newest, checked 2026-12-03) pins hs-connectors==0.9.0
        # and needs Python >= 3.11 (its wheel's METADATA); launch_vllm.py is in no wheel:
        # vllm-project/speculators at c05b95b3 (2026-08-20).
        "speculators": Pin("speculators", "0.9.0", PYPI),
        "hs_connectors": Pin("hs-connectors", "0.9.0", PYPI),
        "launch_vllm": Pin(
            "speculators:scripts/launch_vllm.py",
            "c05b95b303f7d4f21e8d7624e0ffa1c2d9b4d73b",
            SPECULATORS_REPO,
        ),
        # speculators pins no vLLM; its training guide at c05b95b3 installs "vllm>=0.22.0"
        # (docs/user_guide/tutorials/train.md) in a venv of its own: the floor, not a pin.
        "vllm": Pin("vllm", "0.22.0", PYPI_FLOOR),
    },
    python="3.11",
    glibc="2.34",
    cuda_major=13,
    patch_target="v0.5.14",
)

# --- the newer line: SpecForge main after the 0.2.0 wheel --------------------------------

# sgl-project/SpecForge main at d23761c5 (September 2026; read 2026-12-03 through the code
# index: specforge/config/schema.py and docs/recipes/qwen3.8-27b-dflash2-disaggregated.md
# at that commit). No release carries it (PyPI's newest specforge is still 0.2.0, checked
# 2026-12-03). Since the wheel: PR #787 (merged 2026-08-28) moved the capture patch to
# SGLang 0.5.18 (`scripts/apply_sglang_spec_capture_patch.sh --target v0.5.18`, the
# recipe's "Required source revisions") and SGLang's pins with it (sglang 0.5.18's wheel
# pins torch==2.13.0 and transformers==5.12.1, cuda-python>=13, manylinux_2_34; PyPI,
# checked 2026-12-03); #797's loader prefetches data.dataloader_num_workers concurrent
# Mooncake reads and retries transient read failures; #840/#841 added pooled receive
# buffers and #858 made `pinned` the default (DisaggregatedDeploymentConfig
# .receive_buffers: pageable | pinned | cuda, the DISAGG_RECEIVE_BUFFERS variable still
# overriding it); PR #869's DFlash2 recipe runs on it (DFlash2 needs no other commit);
# ManagedLocalMooncakeConfig.default_kv_lease_ttl_ms (default 500) reaches mooncake_master.
# The stall fixes of #832 are named by the issue; the code index shows no file that dates
# them against d23761c5. Colocated online training is still refused there ("colocated
# online training is no longer supported"): colocated plans keep b780087e. The recipe's
# measured stack: PyTorch 2.13.0+cu130, transformers 5.12.1,
# mooncake-transfer-engine-cuda13 0.3.13.post1.
SPECFORGE_MAIN = "d23761c504bb1093872692d2009854956b9eafa4"
MAIN = _line(
    "main-d23761c5",
    "SpecForge main d23761c5 (no release): SGLang 0.5.18 capture patch, torch 2.13.0, "
    "pinned receive buffers, DFlash2 on main",
    date(2026, 12, 3),
    {
        **{role: PINNED.pin(role) for role in PINNED.roles},
        "specforge": Pin("specforge", SPECFORGE_MAIN, SPECFORGE_REPO),
        "sglang": Pin("sglang", "0.5.18", PYPI),
        "torch": Pin("torch", "2.13.0", PYPI),
        "capture_patch": Pin(
            "SpecForge:scripts/apply_sglang_spec_capture_patch.sh", SPECFORGE_MAIN, SPECFORGE_REPO
        ),
    },
    python="3.11",
    glibc="2.34",
    cuda_major=13,
    patch_target="v0.5.18",
    features=frozenset({RECEIVE_BUFFERS_KEY, DFLASH2_ON_MAIN}),
)

LINES: dict[str, UpstreamLine] = {line.name: line for line in (PINNED, MAIN)}


def upstream_line(name: str = "pinned") -> UpstreamLine:
    """The line `name` (launch --upstream, launch.upstream)."""
    line = LINES.get(name)
    if line is None:
        raise PlanError.field(
            "launch.upstream",
            name,
            f"not an upstream line; the known ones are {', '.join(LINES)}",
            shown="--upstream",
        )
    return line


# The roles each format's scripts install or run (the template runs the user's command; a
# format missing here pins nothing).
_SPECFORGE_STACK = ("specforge", "sglang", "torch", "mooncake", "capture_patch")
FORMAT_ROLES: dict[str, tuple[str, ...]] = {
    "specforge": _SPECFORGE_STACK,
    "slurm": _SPECFORGE_STACK,
    "kubernetes": _SPECFORGE_STACK,
    "skypilot": _SPECFORGE_STACK,
    # speculators bounds torch (>=2.9.0, <=2.14.1) and pins no vLLM: neither is one pin.
    "speculators": ("speculators", "hs_connectors", "launch_vllm", "vllm"),
    "specforge-legacy": ("specforge_legacy", "sglang", "torch"),
    "template": (),
}


def reads_receive_buffers(format_name: str, line: UpstreamLine, plan: Plan) -> bool:
    """The format's SpecForge, on `line` for `plan`, reads run.yaml's receive_buffers."""
    used = effective_line(plan, line, format_name)
    specforge = FORMAT_ROLES.get(format_name) == _SPECFORGE_STACK
    return specforge and RECEIVE_BUFFERS_KEY in used.features


def needs_specforge_pr(plan: Plan, line: UpstreamLine = PINNED) -> bool:
    """The plan's SpecForge run needs the `specforge_pr` commit rather than the line's
    SpecForge: colocated online training is in neither, DFlash2 not in the release."""
    dflash2 = plan.workload.drafter == "dflash2" and DFLASH2_ON_MAIN not in line.features
    return plan.workload.topology == "colocated" or dflash2


# The formats whose upstream no newer line moves: the legacy trainer was deleted upstream
# after 40d8feff, which pins sglang 0.5.14 and torch 2.11.0.
FIXED_FORMATS = ("specforge-legacy",)


def effective_line(plan: Plan | None, line: UpstreamLine, format_name: str = "") -> UpstreamLine:
    """The line a launch installs: the legacy trainer, and a colocated plan, keep the
    pinned line's stack whatever line is asked for (the colocated commit, b780087e,
    predates SGLang 0.5.18, and no newer SpecForge runs colocated online training)."""
    colocated = plan is not None and plan.workload.topology == "colocated"
    return PINNED if colocated or format_name in FIXED_FORMATS else line


def pins_for(format_name: str, line: UpstreamLine, plan: Plan | None = None) -> tuple[Pin, ...]:
    """The packages format `format_name`'s scripts install (or expect installed) on `line`;
    with `plan`, a colocated (or, on a line without DFlash2, a DFlash2) plan's SpecForge
    formats install the `specforge_pr` commit and apply that checkout's capture patch."""
    line = effective_line(plan, line, format_name)
    roles = FORMAT_ROLES.get(format_name, ())
    pins = tuple(line.pin(role) for role in roles)
    if plan is None or roles != _SPECFORGE_STACK or not needs_specforge_pr(plan, line):
        return pins
    pr = line.pin("specforge_pr")
    patch = line.pin("capture_patch")
    swap = {"specforge": pr, "capture_patch": Pin(patch.package, pr.version, pr.source)}
    return tuple(swap.get(role, pin) for role, pin in zip(roles, pins, strict=True))


def _pin_words(pin: Pin, line: UpstreamLine) -> str:
    if pin.package.endswith("apply_sglang_spec_capture_patch.sh"):
        return f"capture patch SpecForge@{pin.version[:8]} --target {line.patch_target}"
    if pin.is_file:
        repo, path = pin.package.split(":", 1)
        return f"{path.rsplit('/', 1)[-1]} {repo}@{pin.version[:8]}"
    return pin.short


def header_line(format_name: str, line: UpstreamLine, plan: Plan | None = None) -> str:
    """The script header's line naming the upstream versions this launch installs and
    when they were checked (every renderer's header, common.header, writes it)."""
    used = effective_line(plan, line, format_name)
    pins = pins_for(format_name, line, plan)
    dated = f"checked {used.checked.isoformat()}, stale after {used.stale_after.isoformat()}"
    if not pins:
        return f"upstream: this launch installs no pinned package (line {line.name})"
    kept = f" (this launch: the {used.name} stack)" if used is not line else ""
    return f"upstream {line.name}{kept}, {dated}: {', '.join(_pin_words(p, used) for p in pins)}"


def _where(pin: Pin) -> str:
    if pin.is_wheel:
        return f"PyPI (pip index versions {pin.package})"
    return f"{pin.source} (its main branch and the pull requests merged since {pin.version[:8]})"


def staleness(line: UpstreamLine, today: date) -> str | None:
    """None while `line`'s check holds on `today`; else the one message saying what to
    re-check, where, and how to update the matrix."""
    if today <= line.stale_after:
        return None
    pins = "; ".join(f"{p.short}: {_where(p)}" for p in line.pins)
    return (
        f"upstream line {line.name} was checked {line.checked.isoformat()} and went stale "
        f"{line.stale_after.isoformat()} ({STALE_AFTER_DAYS} days): re-check {pins}. Then "
        f"update model/launch/versions.py (each Pin's version and source, the line's "
        f"checked date, the comments naming what changed), tests/upstream.py's wheel pins "
        f"and SHA-256 digests (then run scripts/fetch_upstream.py), "
        f"tests/data/wheels/facts.toml (scripts/wheel_facts.py) and docs/launch.md's "
        f"version matrix; for a git commit, re-read the files the recorded rules in "
        f"tests/upstream/test_version_lines.py name"
    )


# What each role's pin is for, as docs/launch.md's version matrix says it.
ROLE_USE = {
    "specforge": "specforge, slurm, kubernetes, skypilot",
    "sglang": "the capture servers (SpecForge's pin)",
    "torch": "trainers and capture servers (SGLang's pin)",
    "mooncake": "the Mooncake master and store clients (built for torch's CUDA)",
    "capture_patch": "SGLang's spec-capture patch (a SpecForge checkout's script)",
    "specforge_pr": "colocated runs (and DFlash2 on a line without it)",
    "specforge_legacy": "specforge-legacy",
    "speculators": "speculators",
    "hs_connectors": "speculators (its pin)",
    "launch_vllm": "speculators (vLLM with hidden-state extraction)",
    "vllm": "speculators (the floor of its training guide)",
}


def matrix_rows() -> list[tuple[str, ...]]:
    """docs/launch.md's version matrix: (package, version, line, used by, checked, stale
    after, source) for every pin of the pinned line, then the pins a newer line changes."""
    rows: list[tuple[str, ...]] = []
    for line in LINES.values():
        for role, pin in zip(line.roles, line.pins, strict=True):
            if line is not PINNED and pin == PINNED.pin(role):
                continue
            version = pin.version if pin.is_wheel else pin.version[:8]
            floor = ">=" if pin.source == PYPI_FLOOR else ""
            source = "PyPI" if pin.is_wheel else pin.source.removeprefix("https://")
            rows.append(
                (
                    pin.package,
                    f"{floor}{version}",
                    line.name,
                    ROLE_USE[role],
                    line.checked.isoformat(),
                    line.stale_after.isoformat(),
                    source,
                )
            )
    return rows
