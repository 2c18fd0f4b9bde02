"""Lint and type checks, as CI runs them: ruff (lint and format), mypy (strict on the
whole package) and the import contracts (the model never imports a UI library; the
headless CLI never imports textual; model/'s layers import only downwards).

The package maps two top-level folders (model/, tui/) into one import namespace
(dflash_plan.model, dflash_plan.tui), rooted in dflash_plan/. mypy and import-linter find
packages by folder, so the checks run on a temporary tree that links the two folders and
the root's files under dflash_plan/.
Exit status: non-zero when any check fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    failed = []
    folders = ["dflash_plan", "model", "tui", "tests", "scripts"]
    ruff = [sys.executable, "-m", "ruff", "check", *folders]
    if subprocess.run(ruff, cwd=ROOT).returncode:
        failed.append("ruff")
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "dflash_plan"
        package.mkdir()
        for root_file in (ROOT / "dflash_plan").glob("*.py"):
            (package / root_file.name).symlink_to(root_file)
        for name in ("model", "tui"):
            (package / name).symlink_to(ROOT / name, target_is_directory=True)
        env = {**os.environ, "MYPYPATH": tmp, "PYTHONPATH": tmp}
        config = str(ROOT / "pyproject.toml")
        mypy = [sys.executable, "-m", "mypy", "--config-file", config, "-p", "dflash_plan"]
        if subprocess.run(mypy, cwd=tmp, env=env).returncode:
            failed.append("mypy")
        contracts = [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
            config,
        ]
        if subprocess.run(contracts, cwd=tmp, env=env).returncode:
            failed.append("import contracts")
    if failed:
        print(f"lint: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    print("lint: ruff, mypy and the import contracts pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
