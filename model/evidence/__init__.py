"""The validation set: every public measurement predicted by the physics, and
`dflash-plan validate`. The model's ranges (core.scenarios) are read from it."""
