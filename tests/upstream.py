"""The pinned upstream code the launch scripts are checked against, loaded without its GPU
dependencies: the wheels are fetched once, before the tests, by scripts/fetch_upstream.py
(`pip download --no-deps`, checked against the SHA-256 digests pinned here) into a cache
outside the clone (wheel_cache()), and only modules that import nothing heavy are loaded.
The tests never reach the network: a wheel missing from the cache, or one that does not
match its digest, fails them in one line naming the command to run; it never skips them."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import importlib
import os
import re
import sys
import tomllib
import types
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

# name, version, SHA-256 of the py3-none-any wheel on the package index
SPECFORGE = (
    "specforge",
    "0.2.0",
    "fbc79517adf483c6a8beea52561b1a8c8c8a99a54c820b47d2033a73966b55b0",
)
SPECULATORS = (
    "speculators",
    "0.9.0",
    "f0de7571274ce996d769ce81240379728dcb38701f77d2d34cfd0d670d1b4481",
)
HS_CONNECTORS = (
    "hs-connectors",
    "0.9.0",
    "122f2c323397793c70c5bfc8c0adb1b4dd69995a2507b163509142d61fa3b920",
)
SKYPILOT = (
    "skypilot",
    "0.14.1",
    "8201f566a051677713e288231c7a994e9ebb5ea79bea9bc36eeeffb654543d02",
)


PINS = (SPECFORGE, SPECULATORS, HS_CONNECTORS, SKYPILOT)
# The wheels' folder: the user's cache (platformdirs), or this variable's folder.
CACHE_VARIABLE = "DFLASH_PLAN_WHEEL_CACHE"
FETCH = ".venv/bin/python scripts/fetch_upstream.py"


def wheel_cache() -> Path:
    """Where scripts/fetch_upstream.py puts the pinned wheels and the tests read them:
    outside the clone (nothing fetched is committed), shared by every checkout."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    import platformdirs

    return Path(platformdirs.user_cache_dir("dflash-plan")) / "upstream-wheels"


def wheel_name(pin: tuple[str, str, str]) -> str:
    name, version, _ = pin
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def locked(cache: Path) -> Iterator[None]:
    """The cache to this worker alone (the workers share it)."""
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def wheel(pin: tuple[str, str, str]) -> Path:
    """The pinned wheel, from the wheel cache (scripts/fetch_upstream.py fills it)."""
    name, version, digest = pin
    target = wheel_cache() / wheel_name(pin)
    if not target.is_file():
        pytest.fail(
            f"upstream wheel {name}=={version} is not in {target.parent}: run {FETCH}",
            pytrace=False,
        )
    if sha256(target) != digest:
        pytest.fail(
            f"{target}: not the pinned {name}=={version} (SHA-256 {digest}): run {FETCH}",
            pytrace=False,
        )
    return target


def extract(whl: Path, members: list[str], root: Path) -> Path:
    with zipfile.ZipFile(whl) as archive:
        for member in members:
            archive.extract(member, root)
    return root


@dataclass
class SpecForge:
    config: Any  # specforge.config (schema: Config, load_config, apply_overrides)
    launch_plan: Any  # specforge.launch_plan (build_launch_plan)
    cli: Any  # specforge.cli (main: the argument parser and override handling)


def load_specforge(cache: Path) -> SpecForge:
    """specforge.config, launch_plan and cli from the wheel, under a bare `specforge`
    package: the real __init__ and the training stack (torch, sglang) are never imported.
    `specforge.application` is replaced by a stand-in that resolves no algorithm, which
    build_launch_plan accepts for every deployment except managed-local."""
    whl = wheel(SPECFORGE)
    root = cache / "specforge-0.2.0"
    files = [
        "specforge/config/__init__.py",
        "specforge/config/schema.py",
        "specforge/launch_plan.py",
        "specforge/cli.py",
    ]
    with locked(cache):  # two workers extracting at once raced on the folders
        if not all((root / f).exists() for f in files):
            extract(whl, files, root)
    for name in [m for m in sys.modules if m == "specforge" or m.startswith("specforge.")]:
        del sys.modules[name]
    package = types.ModuleType("specforge")
    package.__path__ = [str(root / "specforge")]
    sys.modules["specforge"] = package
    application = types.ModuleType("specforge.application")
    application.resolve_run = lambda cfg: types.SimpleNamespace(config=cfg, algorithm=None)
    application.bind_run = None  # only used to start training, never with --plan
    sys.modules["specforge.application"] = application
    try:
        return SpecForge(
            importlib.import_module("specforge.config"),
            importlib.import_module("specforge.launch_plan"),
            importlib.import_module("specforge.cli"),
        )
    except ImportError as err:
        pytest.fail(
            f"specforge {SPECFORGE[1]}: its schema/launch plan no longer load "
            f"without the GPU stack: {err}",
            pytrace=False,
        )


# --- wheels too large to download: their facts, recorded (tests/data/wheels/) ---------------

WHEEL_FACTS = Path(__file__).parent / "data" / "wheels" / "facts.toml"
# The environment a launch's nodes run in (Linux, x86_64): the markers of a Requires-Dist.
LINUX = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64"}


def wheel_facts(name: str, version: str) -> dict[str, Any]:
    """The recorded facts of NAME==VERSION's wheel (tests/data/wheels/facts.toml)."""
    entries = tomllib.loads(WHEEL_FACTS.read_text())["wheel"]
    for entry in entries:
        if (entry["name"], entry["version"]) == (name, version):
            return dict(entry)
    pytest.fail(
        f"{WHEEL_FACTS}: no facts for {name}=={version}; record them with "
        f"scripts/wheel_facts.py (tests/data/wheels/README.md)",
        pytrace=False,
    )


def requirement_pins(requires: list[str]) -> dict[str, str]:
    """name -> the exact version a Requires-Dist list pins (`==`), on a Linux node."""
    pins = {}
    for line in requires:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({**LINUX, "extra": ""}):
            continue
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if exact:
            pins[req.name] = exact[0]
    return pins


def cuda_majors_required(requires: list[str]) -> set[int]:
    """The CUDA majors a Requires-Dist list pulls on Linux: `cuda-toolkit==X.*`, and the
    `-cuXX` suffix of NVIDIA's per-CUDA packages (nvidia-nccl-cu13)."""
    majors = set()
    for name, version in requirement_pins(requires).items():
        if name == "cuda-toolkit":
            majors.add(int(version.split(".")[0]))
        suffix = re.fullmatch(r"nvidia-.*-cu(\d+)", name)
        if suffix:
            majors.add(int(suffix.group(1)))
    return majors


def cudart_majors_needed(needed: dict[str, list[str]]) -> dict[str, int]:
    """Shared object -> the major of the CUDA runtime it links (NEEDED libcudart.so.N)."""
    majors = {}
    for member, libraries in needed.items():
        for library in libraries:
            found = re.fullmatch(r"libcudart\.so\.(\d+)", library)
            if found:
                majors[member] = int(found.group(1))
    return majors


def wheel_requires(whl: Path) -> list[str]:
    """The Requires-Dist lines of a downloaded wheel's METADATA."""
    with zipfile.ZipFile(whl) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    return [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]


# --- speculators: read, not imported (its config imports torch) -----------------------------


@dataclass(frozen=True)
class Option:
    flag: str
    choices: tuple[str, ...] | None = None
    kind: str = "str"  # str, int, float, bool, list


def _annotation_option(flag: str, node: ast.expr | None) -> Option:
    text = ast.unparse(node) if node is not None else "str"
    if "Literal[" in text:
        literal = text[text.index("Literal[") + 8 :]
        literal = literal[: literal.index("]")]
        values = tuple(ast.literal_eval(f"({literal},)"))
        return Option(flag, tuple(str(v) for v in values))
    for kind in ("list", "bool", "int", "float"):
        if text.startswith(kind) or f"| {kind}" in text:
            return Option(flag, kind=kind)
    return Option(flag)


def train_config_options(whl: Path) -> dict[str, Option]:
    """Every field of speculators' TrainConfig argument groups, as the flag its resolver
    builds (`foo_bar` -> `--foo-bar`, speculators/train/config/resolution.py)."""
    with zipfile.ZipFile(whl) as archive:
        tree = ast.parse(archive.read("speculators/train/config/schema.py"))
    options: dict[str, Option] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for item in cls.body:
            if (
                isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and not item.target.id.startswith("_")
            ):
                flag = "--" + item.target.id.replace("_", "-")
                options[flag] = _annotation_option(flag, item.annotation)
    return options


def backend_options(whl: Path, method: str) -> dict[str, Option]:
    """Flags hs_connectors' backends add to the trainer (add_train_args) or to
    launch_vllm.py (add_launch_args), read from hs_connectors/transfer.py."""
    with zipfile.ZipFile(whl) as archive:
        tree = ast.parse(archive.read("hs_connectors/transfer.py"))
    helpers: dict[str, ast.FunctionDef] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in (f for f in cls.body if isinstance(f, ast.FunctionDef)):
            helpers[f"{cls.name}.{fn.name}"] = fn
    options: dict[str, Option] = {}

    def visit(fn: ast.FunctionDef) -> None:
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            name = ast.unparse(call.func)
            if name in helpers:
                visit(helpers[name])
            elif name == "_add_argument_if_absent":
                flag = ast.literal_eval(call.args[1])
                keywords = {k.arg: k.value for k in call.keywords}
                choices = keywords.get("choices")
                kind = ast.unparse(keywords["type"]) if "type" in keywords else "str"
                options[flag] = Option(
                    flag, tuple(ast.literal_eval(choices)) if choices else None, kind
                )

    for key, fn in helpers.items():
        if key.endswith(f".{method}"):
            visit(fn)
    return options


def prepare_data_options(whl: Path) -> dict[str, Option]:
    """`speculators prepare-data` options (speculators/cli/prepare_data.py)."""
    return typer_options(whl, "speculators/cli/prepare_data.py", "prepare_data")


def typer_options(whl: Path, module: str, command: str) -> dict[str, Option]:
    """A speculators command's options: the typer parameters of its function (a
    parameter's flag is its name with dashes unless typer.Option names it)."""
    with zipfile.ZipFile(whl) as archive:
        tree = ast.parse(archive.read(module))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == command)
    options: dict[str, Option] = {}
    for arg in fn.args.args:
        flags = ["--" + arg.arg.replace("_", "-")]
        for call in (n for n in ast.walk(arg.annotation) if isinstance(n, ast.Call)):
            named = [
                a.value
                for a in call.args
                if isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and a.value.startswith("--")
            ]
            if named:
                flags = [f for spec in named for f in spec.split("/")]
        text = ast.unparse(arg.annotation)
        kind = "list" if "list[" in text else "bool" if "Annotated[bool" in text else "str"
        for flag in flags:
            options[flag] = Option(flag, kind=kind)
    return options


# --- SkyPilot: its task schema, loaded without the client (which imports ~70 packages) -------


@dataclass
class SkyPilot:
    task_schema: dict  # sky.utils.schemas.get_task_schema()
    resources_schema: dict  # get_resources_schema(), which Resources.from_yaml_config checks
    validator: Any  # sky.utils.validator.get_schema_validator(): SkyPilot's jsonschema class
    group_fields: set[str]  # a job group header's keys (dag_utils._JOB_GROUP_HEADER_FIELDS)
    group_required: set[str]  # dag_utils._JOB_GROUP_REQUIRED_HEADER_FIELDS
    task_name_regex: str  # sky/task.py _VALID_NAME_REGEX (Task.validate_name)
    cluster_name_regex: str  # constants.CLUSTER_NAME_VALID_REGEX (check_cluster_name_is_valid)

    def check(self, doc: dict) -> None:
        """SkyPilot's validation of one task document (Task.from_yaml_config: the task
        schema, then its resources'), as common_utils.validate_schema runs it (None-valued
        keys dropped); raises jsonschema.ValidationError."""
        task = {k: v for k, v in doc.items() if v is not None}
        self.validator(self.task_schema).validate(task)
        if task.get("resources") is not None:
            self.validator(self.resources_schema).validate(task["resources"])

    def check_name(self, name: str) -> None:
        """SkyPilot's rules for a name used as a task's (Task.validate_name), a cluster's
        (common_utils.check_cluster_name_is_valid) and a job group's (dag_utils
        _load_job_group): each fullmatches its regex, as upstream matches it."""
        assert re.fullmatch(self.task_name_regex, name), f"task name {name!r}"
        assert re.fullmatch(self.cluster_name_regex, name), f"cluster name {name!r}"
        assert name and all(c.isalnum() or c in "-_" for c in name), f"job group {name!r}"

    def check_group(self, docs: list[dict]) -> None:
        """A job group's rules (dag_utils._load_job_group, which warns and ignores an
        unknown header key: refused here): its header's keys, `execution: parallel` (what
        makes a YAML a job group), names of letters, digits, `-` and `_`, unique task
        names, primary tasks among them."""
        header, tasks = docs[0], docs[1:]
        assert self.group_required <= set(header) <= self.group_fields, header
        assert header["execution"] == "parallel" and tasks
        names = [t["name"] for t in tasks]
        for name in (header["name"], *names):
            assert name and all(c.isalnum() or c in "-_" for c in name), name
        assert len(set(names)) == len(names)
        assert set(header.get("primary_tasks", [])) <= set(names)


def load_skypilot(cache: Path) -> SkyPilot:
    """sky.utils.schemas from the pinned wheel, under bare `sky` packages (the real
    `sky/__init__` starts the client). Of its imports, sky.skylet.constants and
    sky.utils.kubernetes_enums load as they are; of sky.skylet.autostop_lib (which imports
    the logging and process machinery) only AutostopWaitFor is taken. Strict, as the API
    server validates once its plugins are loaded: unknown fields are rejected at every
    level (a client passes them through to the server)."""
    whl = wheel(SKYPILOT)
    root = cache / f"skypilot-{SKYPILOT[1]}"
    files = [
        "sky/utils/schemas.py",
        "sky/utils/validator.py",
        "sky/utils/kubernetes_enums.py",
        "sky/skylet/constants.py",
        "sky/skylet/autostop_lib.py",
        "sky/setup_files/dependencies.py",
        "sky/server/daemons.py",
        "sky/utils/dag_utils.py",
        "sky/task.py",
    ]
    with locked(cache):
        if not all((root / f).exists() for f in files):
            extract(whl, files, root)
    saved = {m: sys.modules[m] for m in list(sys.modules) if m == "sky" or m.startswith("sky.")}
    for name in saved:
        del sys.modules[name]
    try:
        for package in ("sky", "sky.utils", "sky.skylet", "sky.setup_files"):
            module = types.ModuleType(package)
            module.__path__ = [str(root / package.replace(".", "/"))]
            sys.modules[package] = module
        sys.modules["sky"].__version__ = SKYPILOT[1]  # type: ignore[attr-defined]
        autostop = types.ModuleType("sky.skylet.autostop_lib")
        tree = ast.parse((root / "sky/skylet/autostop_lib.py").read_text())
        cls = next(
            n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AutostopWaitFor"
        )
        autostop.__dict__.update({"enum": __import__("enum"), "List": list})
        exec(
            compile(ast.Module(body=[cls], type_ignores=[]), "autostop_lib.py", "exec"),
            autostop.__dict__,
        )
        sys.modules["sky.skylet.autostop_lib"] = autostop
        # The config schema (a task's `config:` block) names the API server's daemons by id:
        # the ids of sky/server/daemons.py's INTERNAL_REQUEST_DAEMONS, read, not imported.
        tree = ast.parse((root / "sky/server/daemons.py").read_text())
        ids = [
            k.value.value
            for call in ast.walk(tree)
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "InternalRequestDaemon"
            for k in call.keywords
            if k.arg == "id" and isinstance(k.value, ast.Constant)
        ]
        daemons = types.ModuleType("sky.server.daemons")
        daemons.INTERNAL_REQUEST_DAEMONS = [  # type: ignore[attr-defined]
            types.SimpleNamespace(id=i) for i in ids
        ]
        sys.modules["sky.server"] = types.ModuleType("sky.server")
        sys.modules["sky.server.daemons"] = daemons
        schemas = importlib.import_module("sky.utils.schemas")
        validator = importlib.import_module("sky.utils.validator")
        schemas._allow_additional_properties = lambda: False
        dag_utils = ast.parse((root / "sky/utils/dag_utils.py").read_text())
        group = {
            t.id: ast.literal_eval(node.value)
            for node in dag_utils.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name) and t.id.startswith("_JOB_GROUP_")
        }
        # sky/task.py imports the whole client: its name regex is read, not imported.
        task = ast.parse((root / "sky/task.py").read_text())
        (task_regex,) = [
            ast.literal_eval(node.value)
            for node in task.body
            if isinstance(node, ast.Assign)
            and [ast.unparse(t) for t in node.targets] == ["_VALID_NAME_REGEX"]
        ]
        return SkyPilot(
            schemas.get_task_schema(),
            schemas.get_resources_schema(),
            validator.get_schema_validator(),
            group["_JOB_GROUP_HEADER_FIELDS"],
            group["_JOB_GROUP_REQUIRED_HEADER_FIELDS"],
            task_regex,
            importlib.import_module("sky.skylet.constants").CLUSTER_NAME_VALID_REGEX,
        )
    except (ImportError, StopIteration, AttributeError, KeyError, ValueError) as err:
        pytest.fail(
            f"skypilot {SKYPILOT[1]}: its task schema no longer loads without the client: {err!r}",
            pytrace=False,
        )
    finally:
        for name in [m for m in sys.modules if m == "sky" or m.startswith("sky.")]:
            del sys.modules[name]
        sys.modules.update(saved)
