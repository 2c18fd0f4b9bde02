"""What the planner's widgets tell the planner screen."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class FieldEdited(Message):
    """A field now holds a value (key: a key of tui.fields.FIELDS, or launch.format)."""

    def __init__(self, key: str, value: Any) -> None:
        self.key, self.value = key, value
        super().__init__()


class FieldInvalid(Message):
    """A field holds text that is not a value of its kind."""

    def __init__(self, key: str, reason: str) -> None:
        self.key, self.reason = key, reason
        super().__init__()

