"""A training run's own config, as plan settings that say where each came from.

Reads what decides the workload and the split from

- a SpecForge run config (`specforge train -c run.yaml`; sgl-project/SpecForge a6b6b02,
  specforge/config/schema.py: YAML, or JSON, with model/data/training/deployment sections);
- a speculators run config (`scripts/train.py --config run.yaml`; vllm-project/speculators
  c05b95b, src/speculators/train/config/schema.py: groups verifier/draft/data/dflash/
  trainer, optionally under a `train:` stage, resolution.py `_unwrap_stage`) or the
  `scripts/train.py` command line in a launch script (its flags are the same field names
  with dashes: `--max-anchors`, `--block-size`, ...).

Every setting carries its source: the file and line and the tool's key, or the tool's
default when the config leaves the key out (the run then used that default). Keys the
planner has no use for are listed as ignored, never an error; a value of the wrong kind
for a key it uses is a one-line PlanError naming the file and line.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..basics.errors import PlanError
from ..basics.tomlfile import read_text, toml_value
from ..basics.validation import short_repr
from . import targets

# Run configs are a few KB; the bound keeps a wrong path from being read whole.
MAX_CONFIG_BYTES = 1_048_576
# A YAML document's node graph is walked for line numbers; aliases can make a small file
# a huge graph ("billion laughs"), so the walk stops here.
MAX_YAML_NODES = 100_000
# An ignored key this close to a key the planner reads is named as a likely typo; stricter
# than errors.suggest (0.5), since here every other key of the config is also ignored.
SUGGEST_CUTOFF = 0.85


@dataclass(frozen=True, slots=True)
class Setting:
    """One plan key set from the run's config: its value and where it came from."""

    key: str
    value: Any
    source: str

    def describe(self) -> str:
        """'workload.num_anchors 512 from run.yaml:12 (training.num_anchors)'."""
        return f"{self.key} {_toml(self.value)} from {self.source}"


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What a run's config says about the plan: settings, the keys left out (with their
    lines), and notes on what the planner cannot take over as is."""

    path: str
    tool: str
    settings: tuple[Setting, ...]
    ignored: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def updates(self) -> dict[str, Any]:
        """Plan key -> value."""
        return {s.key: s.value for s in self.settings}

    def sets(self) -> list[str]:
        """The settings as `--set` edits (`workload.num_anchors=512`), for plan.load_plan."""
        return [f"{s.key}={_toml(s.value)}" for s in self.settings]


def _toml(value: Any) -> str:
    if isinstance(value, str):
        # The TOML serializer: a JSON string is not TOML (it spells a character outside
        # the BMP as a surrogate pair, which TOML refuses).
        return toml_value(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


# --- YAML with line numbers -------------------------------------------------------------


def _load_yaml(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The document and the 1-based line of every key (`a.b`, `a.list[0].c`)."""
    text = read_text(path, "a run config", MAX_CONFIG_BYTES)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise PlanError.at(where, f"not valid YAML: {problem}") from None
    except RecursionError:
        raise PlanError.at(str(path), "not valid YAML: nested too deeply") from None
    if doc is None:
        raise PlanError.at(str(path), "empty: no run config")
    if not isinstance(doc, dict):
        raise PlanError.at(
            str(path),
            f"a run config is a mapping of sections (model:, data:, training: ...), not a "
            f"{type(doc).__name__}",
        )
    lines: dict[str, int] = {}
    budget = [MAX_YAML_NODES]

    def walk(n: yaml.Node, prefix: str) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise PlanError.at(
                str(path),
                f"more than {MAX_YAML_NODES:,} YAML nodes (aliases expanding?): not a run config",
            )
        if isinstance(n, yaml.MappingNode):
            for key_node, value_node in n.value:
                name = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
                lines.setdefault(name, key_node.start_mark.line + 1)
                walk(value_node, name)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, f"{prefix}[{i}]")

    if node is not None:
        walk(node, "")
    return doc, lines


def _leaves(doc: Any, prefix: str = "") -> Iterator[str]:
    """Every leaf key of a document, dotted (lists are leaves)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict) and value:
                yield from _leaves(value, name)
            else:
                yield name


class _Reader:
    """Looks keys up in a document, records the ones used, builds Settings."""

    def __init__(
        self, path: Path, doc: dict[str, Any], lines: dict[str, int], tool: str, base: str = ""
    ) -> None:
        self.path, self.doc, self.lines, self.tool, self.base = path, doc, lines, tool, base
        self.settings: list[Setting] = []
        self.used: set[str] = set()
        self.wanted: set[str] = set()  # every key looked up, present or not
        self.notes: list[str] = []

    def where(self, key: str) -> str:
        full = f"{self.base}.{key}" if self.base else key
        line = self.lines.get(full)
        return f"{self.path.name}:{line}" if line else self.path.name

    def get(self, key: str) -> Any:
        self.wanted.add(key)
        node: Any = self.doc
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        self.used.add(key)
        return node

    def number(self, key: str, lo: int = 1) -> int | None:
        """The whole number at key (at least lo), None when absent; PlanError otherwise."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise PlanError.field(
                key, short_repr(value), f"must be a whole number of at least {lo}", self.where(key)
            )
        return value

    def layer_ids(self, key: str) -> tuple[int, ...] | None:
        value = self.get(key)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value)
        ):
            raise PlanError.field(
                key, short_repr(value), "must be a list of layer numbers", self.where(key)
            )
        return tuple(value)

    def text(self, key: str) -> str | None:
        value = self.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise PlanError.field(key, short_repr(value), "must be text", self.where(key))
        return value

    def put(self, plan_key: str, value: Any, key: str) -> None:
        self.settings.append(Setting(plan_key, value, f"{self.where(key)} ({key})"))

    def default(self, plan_key: str, value: Any, key: str, schema: str) -> None:
        self.settings.append(
            Setting(plan_key, value, f"{self.tool}'s default for {key} ({schema})")
        )

    def result(self) -> RunConfig:
        ignored = []
        for leaf in _leaves(self.doc):
            if leaf in self.used or any(leaf.startswith(u + ".") for u in self.used):
                continue
            ignored.append(f"{leaf} ({self.where(leaf)}){self._hint(leaf)}")
        return RunConfig(
            str(self.path), self.tool, tuple(self.settings), tuple(ignored), tuple(self.notes)
        )

    def _hint(self, leaf: str) -> str:
        """' (did you mean ...?)' when an ignored key is a near-miss of a key read here
        in the same section (a typo would otherwise leave the tool's default in force)."""
        section, _, name = leaf.rpartition(".")
        names = [
            w.rpartition(".")[2] for w in self.wanted - self.used if w.rpartition(".")[0] == section
        ]
        close = difflib.get_close_matches(name, names, n=1, cutoff=SUGGEST_CUTOFF)
        return f" (did you mean '{close[0]}'?)" if close else ""


def _target_model(spec: str) -> str | None:
    """A plan's workload.target_model for a repository id or a local model folder: the
    preset with that Hugging Face id, or the path of a local config.json; else None."""
    for key, preset in targets.PRESETS.items():
        if preset.hf_id and preset.hf_id.lower() == spec.lower().rstrip("/"):
            return key
    path = Path(spec)
    config = path if path.suffix == ".json" else path / "config.json"
    return str(config) if config.is_file() else None


# --- SpecForge --------------------------------------------------------------------------
_SF_SCHEMA = "specforge/config/schema.py"


def _draft_config(path: Path, spec: str | None) -> tuple[dict[str, Any], str] | None:
    """The drafter's config.json named by model.draft_model_config, when it is a local
    file (beside the run config, or as given); None for a hub id or a missing file."""
    if not spec:
        return None
    for candidate in (path.parent / spec, Path(spec)):
        file = candidate / "config.json" if candidate.is_dir() else candidate
        if file.is_file():
            try:
                doc = json.loads(read_text(file, "a drafter config.json"))
            except ValueError:
                raise PlanError.at(
                    str(file),
                    "not valid JSON (model.draft_model_config)",
                    key="model.draft_model_config",
                ) from None
            if isinstance(doc, dict):
                return doc, file.name
    return None


def _specforge(path: Path, doc: dict[str, Any], lines: dict[str, int]) -> RunConfig:
    r = _Reader(path, doc, lines, "SpecForge")
    strategy = r.text("training.strategy") or "eagle3"
    if strategy not in ("dflash", "domino", "dspark"):
        r.notes.append(
            f"training.strategy = {strategy!r}: the planner models DFlash; the "
            f"workload below is read as if it were"
        )
    for key, plan_key, default in (
        ("training.num_anchors", "workload.num_anchors", 512),
        ("training.num_epochs", "workload.epochs", 1),
        ("training.batch_size", "drafter.batch_size", 1),
        ("data.max_length", "workload.max_length", 2048),
    ):
        value = r.number(key)
        if value is None:
            r.default(plan_key, default, key, _SF_SCHEMA)
        else:
            r.put(plan_key, value, key)
    # Drafter shape: the config's override, else the draft config file, else SpecForge's
    # auto-generated default (schema.py: DFlash 1 layer, block 16).
    draft_spec = r.text("model.draft_model_config")
    draft = _draft_config(path, draft_spec)
    if draft_spec and draft is None:
        r.notes.append(
            f"model.draft_model_config {draft_spec!r} is not a local file: its "
            f"layers, block size and captured layers were not read"
        )
    for key, plan_key, draft_key, default in (
        ("model.draft_num_hidden_layers", "workload.draft_layers", "num_hidden_layers", 1),
        ("model.draft_block_size", "workload.block_size", "block_size", 16),
    ):
        value = r.number(key)
        if value is not None:
            r.put(plan_key, value, key)
        elif draft and isinstance(draft[0].get(draft_key), int):
            r.settings.append(
                Setting(
                    plan_key,
                    draft[0][draft_key],
                    f"{draft[1]} ({draft_key}, model.draft_model_config)",
                )
            )
        elif draft_spec is None:
            r.default(plan_key, default, key, _SF_SCHEMA)
    layer_ids = r.layer_ids("model.aux_hidden_state_layer_ids")
    if layer_ids is not None:
        r.put("workload.target_layer_ids", list(layer_ids), "model.aux_hidden_state_layer_ids")
    elif (
        draft
        and isinstance(draft[0].get("dflash_config"), dict)
        and isinstance(draft[0]["dflash_config"].get("target_layer_ids"), list)
    ):
        r.settings.append(
            Setting(
                "workload.target_layer_ids",
                list(draft[0]["dflash_config"]["target_layer_ids"]),
                f"{draft[1]} (dflash_config.target_layer_ids, model.draft_model_config)",
            )
        )
    target = r.text("model.target_model_path")
    if target:
        model = _target_model(target)
        if model:
            r.put("workload.target_model", model, "model.target_model_path")
        else:
            r.notes.append(
                f"model.target_model_path {target!r}: not a preset's repository "
                f"nor a local folder with config.json; the plan's model is kept"
            )
        r.put("launch.target_model_path", target, "model.target_model_path")
    for key, plan_key in (
        ("data.train_data_path", "launch.train_data_path"),
        ("data.chat_template", "launch.chat_template"),
        ("run_id", "launch.run_id"),
        ("output_dir", "launch.output_dir"),
    ):
        if (text := r.text(key)) is not None:
            r.put(plan_key, text, key)
    _specforge_topology(r)
    accumulation = r.number("training.accumulation_steps") or 1
    if accumulation > 1:
        r.notes.append(
            f"training.accumulation_steps = {accumulation}: one optimizer step "
            f"takes {accumulation} batches; the plan counts samples per batch"
        )
    max_steps = r.number("training.max_steps")
    if max_steps:
        r.notes.append(
            f"training.max_steps = {max_steps:,} stops the run after "
            f"{max_steps:,} optimizer steps, before num_epochs if the dataset "
            f"is larger than that many steps' samples"
        )
    return r.result()


def _specforge_topology(r: _Reader) -> None:
    """Drafter GPUs: the trainer's ranks (deployment.trainer, nnodes x nproc_per_node).
    Target GPUs: the capture servers the launcher starts itself (managed_local); external
    servers (server_urls) do not say how many GPUs they hold."""
    nodes = r.number("deployment.trainer.nnodes")
    per_node = r.number("deployment.trainer.nproc_per_node")
    if nodes is not None or per_node is not None:
        key = (
            "deployment.trainer.nproc_per_node"
            if per_node is not None
            else "deployment.trainer.nnodes"
        )
        r.settings.append(
            Setting(
                "drafter.count",
                (nodes or 1) * (per_node or 1),
                f"{r.where(key)} (deployment.trainer.nnodes x nproc_per_node)",
            )
        )
    backend = r.text("deployment.disaggregated.backend")
    if backend == "mooncake":
        r.put("workload.transport", "mooncake", "deployment.disaggregated.backend")
        _specforge_receive(r)
    elif backend:
        r.notes.append(
            f"deployment.disaggregated.backend = {backend!r}: neither of the "
            f"planner's transports; the plan's is kept"
        )
    servers = r.get("deployment.disaggregated.managed_local.capture_servers")
    key = "deployment.disaggregated.managed_local.capture_servers"
    if isinstance(servers, list) and servers:
        tps = [s.get("tp_size", 1) if isinstance(s, dict) else None for s in servers]
        if not all(isinstance(tp, int) and not isinstance(tp, bool) and tp > 0 for tp in tps):
            raise PlanError.at(
                r.where(key),
                "every server's tp_size must be a whole number of at least 1",
                key=key,
                shown=key,
            )
        r.put("target.count", sum(tps), key)
        if len(set(tps)) == 1:
            r.put("target.tp", tps[0], key)
        else:
            r.notes.append(f"capture servers of different tp_size {tps}: the plan has one")
    urls = r.get("deployment.disaggregated.server_urls")
    if isinstance(urls, list) and urls and not servers:
        r.notes.append(
            f"{len(urls)} external capture server(s) in server_urls: the config "
            f"does not say their GPUs; set target.count and target.tp"
        )


# SpecForge's trainer receive buffers (deployment.disaggregated.receive_buffers, PRs #840
# and #858, September 2026) as workload.receive.
_RECEIVE_BUFFERS = {"pageable": "host", "pinned": "pinned", "cuda": "device"}


def _specforge_receive(r: _Reader) -> None:
    key = "deployment.disaggregated.receive_buffers"
    value = r.get(key)
    if value is None:
        # Its default depends on the version the run used: say so rather than guess.
        r.notes.append(
            f"{key} not set: specforge 0.2.0 (which has no such key) receives into pageable "
            f"host memory (workload.receive = host), SpecForge since PR #858 (September "
            f"2026) into pinned buffers (pinned); the plan's is kept"
        )
        return
    if value not in _RECEIVE_BUFFERS:
        raise PlanError.field(
            key, short_repr(value), "must be pageable, pinned or cuda", r.where(key)
        )
    r.put("workload.receive", _RECEIVE_BUFFERS[value], key)


# --- speculators ------------------------------------------------------------------------
_SP_SCHEMA = "src/speculators/train/config/schema.py"
# field (flat dest, as a flag with dashes) -> (its group, plan key, the DFlash default)
_SP_FIELDS: dict[str, tuple[str, str, Any]] = {
    "max_anchors": ("data", "workload.num_anchors", 512),
    "block_size": ("dflash", "workload.block_size", 16),
    "num_layers": ("draft", "workload.draft_layers", 5),
    "target_layer_ids": ("draft", "workload.target_layer_ids", None),
    "epochs": ("trainer", "workload.epochs", 20),
    "total_seq_len": ("data", "workload.max_length", 8192),
    "verifier_name_or_path": ("verifier", "workload.target_model", None),
}
_SP_GROUPS = (
    "verifier",
    "draft",
    "data",
    "generation",
    "loss",
    "optimizer",
    "scheduler",
    "trainer",
    "logging",
    "dflash",
    "dspark",
    "peagle",
    "mtp",
    "backend",
)


def _speculators_fields(r: _Reader, values: dict[str, Any], keys: dict[str, str]) -> None:
    """Settings from flat field values (keys: field -> the key or flag it was read from)."""
    kind = values.get("speculator_type")
    if kind is not None and kind != "dflash":
        r.notes.append(
            f"speculator_type = {kind!r}: the planner models DFlash; the "
            f"workload below is read as if it were"
        )
    for name, (_, plan_key, default) in _SP_FIELDS.items():
        value = values.get(name)
        source = keys.get(name, name)
        if value is None:
            if default is not None:
                r.default(plan_key, default, source, _SP_SCHEMA)
            continue
        if name == "verifier_name_or_path":
            model = _target_model(str(value))
            if model:
                r.settings.append(Setting(plan_key, model, f"{r.where(source)} ({source})"))
                r.settings.append(
                    Setting("launch.target_model_path", str(value), f"{r.where(source)} ({source})")
                )
            else:
                r.notes.append(
                    f"{source} {value!r}: not a preset's repository nor a local "
                    f"folder with config.json; the plan's model is kept"
                )
            continue
        if name == "target_layer_ids":
            ok = (
                isinstance(value, list)
                and value
                and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value)
            )
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if not ok:
            kind = _FLAG_KIND.get(name, "a whole number of at least 1")
            raise PlanError.field(source, short_repr(value), f"must be {kind}", r.where(source))
        r.settings.append(
            Setting(
                plan_key,
                list(value) if isinstance(value, list) else value,
                f"{r.where(source)} ({source})",
            )
        )
    r.notes.append(
        "speculators packs samples into total_seq_len tokens per step: it has "
        "no per-GPU batch size, and max_length is the packed length"
    )


def _speculators_yaml(path: Path, doc: dict[str, Any], lines: dict[str, int]) -> RunConfig:
    base = "train" if isinstance(doc.get("train"), dict) else ""
    body = doc["train"] if base else doc
    r = _Reader(path, body, lines, "speculators", base)
    values: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for name, (group, _, _) in _SP_FIELDS.items():
        key = f"{group}.{name}"
        value = r.get(key)
        if value is not None:
            values[name], keys[name] = value, key
    if (kind := r.get("speculator_type")) is not None:
        values["speculator_type"] = kind
    _speculators_fields(r, values, keys)
    result = r.result()
    if base:
        others = [k for k in doc if k != "train"]
        if others:
            result = RunConfig(
                result.path,
                result.tool,
                result.settings,
                result.ignored + tuple(f"{k} (stage, not train)" for k in others),
                result.notes,
            )
    return result


def read_train_command(path: Path) -> RunConfig:
    """The speculators `scripts/train.py` invocation in a launch script: its flags, each
    with its line. Shell variables (`$EPOCHS`) are not resolved: such flags are listed as
    ignored, and the tool's default is not assumed for them."""
    path = Path(path)
    text = read_text(path, "a launch script", MAX_CONFIG_BYTES)
    raw = text.splitlines()
    # Join continuation lines, remembering where each joined line starts.
    joined: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, line in enumerate(raw, start=1):
        if not buffer:
            start = number
        if line.rstrip().endswith("\\"):
            buffer += line.rstrip()[:-1] + " "
            continue
        joined.append((start, buffer + line))
        buffer = ""
    if buffer:
        joined.append((start, buffer))
    variables = _shell_variables(joined)
    for start, command in joined:
        if "train.py" not in command or command.lstrip().startswith("#"):
            continue
        try:
            words = shlex.split(command, comments=True)
        except ValueError as err:
            raise PlanError.at(f"{path}:{start}", f"cannot split the command: {err}") from None
        at = next((i for i, w in enumerate(words) if w.endswith("train.py")), None)
        if at is None:
            continue
        config = _speculators_flags(path, raw, start, words[at + 1 :], variables)
        drafters = _torchrun_gpus(path, raw, start, words[:at], variables)
        if drafters is None:
            return config
        return RunConfig(
            config.path, config.tool, (*config.settings, drafters), config.ignored, config.notes
        )
    raise PlanError.at(
        str(path),
        "no scripts/train.py command (a speculators launch script runs "
        "`torchrun ... scripts/train.py --max-anchors ...`)",
    )


_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*)$")
_REFERENCE = re.compile(r"^\$(?:\{(\w+)\}|(\w+))$")


def _shell_variables(joined: list[tuple[int, str]]) -> dict[str, tuple[str, int]]:
    """Plain `NAME=value` assignments of a script (literal values only: nothing with
    `$`, backquotes or command substitution), each with its line; the last one wins."""
    found: dict[str, tuple[str, int]] = {}
    for line, command in joined:
        match = _ASSIGNMENT.match(command)
        if not match:
            continue
        try:
            words = shlex.split(match.group(2), comments=True)
        except ValueError:
            continue
        if len(words) == 1 and not any(c in words[0] for c in "$`"):
            found[match.group(1)] = (words[0], line)
        elif not words:
            found[match.group(1)] = ("", line)
    return found


def _speculators_flags(
    path: Path, raw: list[str], start: int, words: list[str], variables: dict[str, tuple[str, int]]
) -> RunConfig:
    lines: dict[str, int] = {}
    values: dict[str, Any] = {}
    keys: dict[str, str] = {}
    ignored: list[str] = []
    unresolved: set[str] = set()
    r = _Reader(path, {}, lines, "speculators")
    i = 0
    while i < len(words):
        flag, _, inline = words[i].partition("=")
        i += 1
        if not flag.startswith("--"):
            continue
        args = [inline] if inline else []
        while not inline and i < len(words) and not words[i].startswith("--"):
            args.append(words[i])
            i += 1
        name = flag[2:].replace("-", "_")
        line = next(
            (n for n in range(start, len(raw) + 1) if flag in raw[n - 1].split("#", 1)[0]), start
        )
        where = f"{path.name}:{line}"
        if name == "config":
            r.notes.append(
                f"{where}: --config {' '.join(args)}: read that file too "
                f"(its values yield to these flags)"
            )
            continue
        if name not in _SP_FIELDS and name != "speculator_type":
            ignored.append(f"{flag} ({where})")
            continue
        via, resolved = [], []
        for arg in args:
            ref = _REFERENCE.match(arg)
            variable = ref and (ref.group(1) or ref.group(2))
            if variable and variable in variables:
                value, at_line = variables[variable]
                resolved += value.split()  # an unquoted expansion is split into words
                via.append(f"{variable} at {path.name}:{at_line}")
            else:
                resolved.append(arg)
        if any("$" in arg for arg in resolved):
            ignored.append(
                f"{flag} {' '.join(args)} ({where}: a shell variable this "
                f"script does not set plainly, not read)"
            )
            unresolved.add(name)
            continue
        try:
            if name == "target_layer_ids":
                parsed: Any = [int(arg) for arg in resolved]
            elif name in ("verifier_name_or_path", "speculator_type"):
                parsed = resolved[0]
            else:
                parsed = int(resolved[0])
        except (ValueError, IndexError):
            value = short_repr(" ".join(resolved))
            reason = f"must be {_FLAG_KIND.get(name, 'a whole number')}"
            raise PlanError.at(
                where, reason, key=flag, shown=f"{flag} {value}", value=value
            ) from None
        keys[name] = flag + (f", {', '.join(via)}" if via else "")
        values[name] = parsed
        lines[keys[name]] = line
    _speculators_fields(r, values, keys)
    # A flag set through an unknown variable was given: the tool's default did not apply.
    dropped = {_SP_FIELDS[n][1] for n in unresolved if n in _SP_FIELDS}
    settings = tuple(s for s in r.settings if not (s.key in dropped and "default" in s.source))
    return RunConfig(str(path), "speculators", settings, tuple(ignored), tuple(r.notes))


def _torchrun_gpus(
    path: Path, raw: list[str], start: int, words: list[str], variables: dict[str, tuple[str, int]]
) -> Setting | None:
    """drafter.count from torchrun's --nnodes x --nproc_per_node before the script (the
    trainer's ranks are the drafter GPUs), when both are literal or plain variables."""
    found: dict[str, int] = {}
    lines: list[str] = []
    for i, word in enumerate(words):
        flag, _, inline = word.partition("=")
        name = flag.lstrip("-").replace("-", "_")
        if name not in ("nproc_per_node", "nnodes") or not flag.startswith("--"):
            continue
        value = inline or (words[i + 1] if i + 1 < len(words) else "")
        ref = _REFERENCE.match(value)
        if ref and (ref.group(1) or ref.group(2)) in variables:
            value = variables[ref.group(1) or ref.group(2)][0]
        if not value.isdigit() or int(value) < 1:
            return None
        found[name] = int(value)
        line = next((n for n in range(start, len(raw) + 1) if flag in raw[n - 1]), start)
        lines.append(f"{path.name}:{line}")
    if "nproc_per_node" not in found:
        return None
    return Setting(
        "drafter.count",
        found.get("nnodes", 1) * found["nproc_per_node"],
        f"{lines[0]} (torchrun --nnodes x --nproc_per_node)",
    )


_FLAG_KIND = {
    "target_layer_ids": "a list of layer numbers",
    "verifier_name_or_path": "a model",
    "speculator_type": "a speculator type",
}


def read_run_config(path: Path) -> RunConfig:
    """A SpecForge or speculators run config (YAML or JSON), told apart by its sections:
    SpecForge has model:/training:, speculators verifier:/draft:/trainer:/dflash: or a
    train: stage. A shell script (.sh) is read as a speculators command line."""
    path = Path(path)
    if path.suffix.lower() in (".sh", ".bash"):
        return read_train_command(path)
    doc, lines = _load_yaml(path)
    if "model" in doc or "training" in doc:
        return _specforge(path, doc, lines)
    if (
        isinstance(doc.get("train"), dict)
        or any(g in doc for g in _SP_GROUPS if g != "data")
        or "speculator_type" in doc
    ):
        return _speculators_yaml(path, doc, lines)
    raise PlanError.at(
        str(path),
        f"neither a SpecForge config (model:, data:, training:) nor a speculators one "
        f"(verifier:, draft:, data:, trainer:); top-level keys: "
        f"{', '.join(map(str, list(doc)[:8]))}",
    )
