"""The pinned upstream code the launch scripts are checked against, loaded without its GPU
dependencies: the wheels come from the package index (`pip download --no-deps`, checked
against pinned SHA-256 digests), and only modules that import nothing heavy are loaded.
A wheel that cannot be fetched or loaded fails the tests: it never skips them."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import importlib
import subprocess
import sys
import tempfile
import types
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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


@contextmanager
def locked(cache: Path) -> Iterator[None]:
    """The cache to this worker alone (the workers share it)."""
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def wheel(cache: Path, pin: tuple[str, str, str]) -> Path:
    """The pinned wheel, downloaded once into the pytest cache (workers share it)."""
    name, version, digest = pin
    stem = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    target = cache / stem
    with locked(cache):
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                result = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        "--no-deps",
                        "--only-binary=:all:",
                        "--disable-pip-version-check",
                        "-q",
                        "--dest",
                        tmp,
                        f"{name}=={version}",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                got = Path(tmp) / stem
                if result.returncode or not got.exists():
                    pytest.fail(
                        f"cannot download the pinned upstream {name}=={version}: "
                        f"{result.stderr.strip()[-500:]}",
                        pytrace=False,
                    )
                got.replace(target)
    actual = hashlib.sha256(target.read_bytes()).hexdigest()
    if actual != digest:
        pytest.fail(f"{target}: SHA-256 {actual}, pinned {digest}", pytrace=False)
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
    whl = wheel(cache, SPECFORGE)
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
