"""`python -m dflash_plan`: the `dflash-plan` command."""

from __future__ import annotations

import sys

from dflash_plan.tui.cli import main

if __name__ == "__main__":
    sys.exit(main())
