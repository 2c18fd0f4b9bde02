"""The dflash-plan performance model: pure computation, no user-interface imports.

Frozen pydantic models go in (a Plan, a Catalog), a Projection comes out.
"""
