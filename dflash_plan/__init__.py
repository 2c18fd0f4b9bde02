"""dflash-plan: the model (dflash_plan.model, the folder model/) and its front ends
(dflash_plan.tui, the folder tui/), mapped into one namespace by pyproject.toml."""
