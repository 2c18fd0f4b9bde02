"""What the planner's widgets tell the planner screen."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class FieldEdited(Message):
    """A field now holds a value (key: a key of tui.fields.FIELDS, or launch.format);
    edited_at: when it was typed (the Input's own message time), else now."""

    def __init__(self, key: str, value: Any, edited_at: float | None = None) -> None:
        self.key, self.value = key, value
        super().__init__()
        self.edited_at = self.time if edited_at is None else edited_at


class FieldInvalid(Message):
    """A field holds text that is not a value of its kind."""

    def __init__(self, key: str, reason: str) -> None:
        self.key, self.reason = key, reason
        super().__init__()
