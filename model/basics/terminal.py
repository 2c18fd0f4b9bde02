"""Text from a file or a flag made safe to show on a terminal: the one definition of the
characters a terminal acts on instead of showing.

A plan's paths, a price catalog's cells, a `--source` flag can hold any character. Shown
raw, ESC starts an escape sequence (colours, cursor moves, an OSC 8 hyperlink, an OSC 52
write to the clipboard), a C1 control is the same in one character (U+009B is CSI,
U+009D is OSC), BEL rings, CR rewrites the line, and a line or paragraph separator breaks
it. Rich and Textual pass all of these through, so every text that did not come from
dflash-plan itself goes through `terminal_safe` before it is printed or drawn.
"""

from __future__ import annotations

import re

# C0 controls (ESC, BEL, CR, TAB, LF ...), DEL, C1 controls (NEL U+0085 among them), and
# Unicode's line and paragraph separators. A character class body: escape.py adds to it.
CONTROL_CHARS = "\x00-\x1f\x7f-\x9f\u2028\u2029"
_CONTROL = re.compile(f"[{CONTROL_CHARS}]")


def terminal_safe(text: str, keep: str = "") -> str:
    """text with each control character written as its escape (ESC as `\\x1b`, U+2028
    as `\\u2028`): the reader sees what the file holds and the terminal acts on none of
    it. keep: control characters left as they are ("\\n" in text of several lines)."""

    def escaped(match: re.Match[str]) -> str:
        char = match.group()
        return char if char in keep else repr(char)[1:-1]

    return _CONTROL.sub(escaped, text)


def without_controls(text: str) -> str:
    """text with its control characters left out: for a value that is kept (a recovered
    plan's name, which a plan file may not hold with controls), not only shown."""
    return _CONTROL.sub("", text)
