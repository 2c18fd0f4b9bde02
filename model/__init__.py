"""The dflash-plan performance model: pure computation, no user-interface imports.

Frozen pydantic models go in (a Plan, a Catalog), a Projection comes out. The subpackages
are layers, each importing only those below it (pyproject.toml's layers contract):
basics, inputs, physics, evidence, core, launch, explore; the data files sit in data/.
"""
