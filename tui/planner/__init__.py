"""The planner: the screen that edits one plan, and its panels (inputs, results, launch)."""
