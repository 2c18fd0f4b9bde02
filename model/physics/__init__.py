"""One GPU's work, memory and rate on a role, the pipeline of a split, and every constant
fitted for them from the public measurements. Imports inputs and basics."""
