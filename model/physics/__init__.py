"""One GPU's work, memory and rate on a role, the pipeline of a split, and every constant
fitted for them from the public measurements. Imports inputs and basics."""

# The fits of the GPUs' efficiencies solve the case rates (caserates registers them with
# fitting when it loads): loaded with the package, before any catalog is built.
from . import caserates as _caserates  # noqa: F401

# The decode model registers its rate with fitting, whose decode fit solves it.
from . import decode as _decode  # noqa: F401
