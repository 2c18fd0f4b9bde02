"""The one escaping layer for everything dflash-plan generates: shell words, shell comments,
quoted heredocs, YAML and TOML documents, and placeholders filled into a user's command
template. Launch scripts (every format in this package) and the probe (model/probe.py)
put a user's text (model path, plan name, hosts, paths, GPU keys and names) into what they
write only through these functions; tests/contracts/test_escaping.py writes every artifact with
generated hostile values, runs it in a sandbox and checks that nothing runs and every
value arrives exactly as typed."""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..basics.errors import PlanError
from ..basics.terminal import CONTROL_CHARS
from ..basics.validation import short_repr

HEREDOC = "DFLASH_PLAN_EOF"
WRAP_AT = 100

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Control characters (C0, DEL, C1) and line separators (the terminal's set, one
# definition), and what a YAML file may not hold at all (a kubernetes manifest's header is
# YAML comments).
_UNSAFE_IN_COMMENT = re.compile(f"[{CONTROL_CHARS}\ufffe\uffff]")


def q(value: object) -> str:
    """One shell word holding exactly `value` (single quotes, in which bash expands
    nothing). A NUL cannot be passed in an argument at all, so it is refused."""
    text = str(value)
    if "\0" in text:
        raise PlanError.at(
            repr(text), "a command-line value cannot hold a NUL character", value=repr(text)
        )
    return shlex.quote(text)


def comment(text: str) -> str:
    """One comment line (shell or YAML): control characters (a newline would end the
    comment and run the rest) and characters YAML refuses become spaces."""
    return "# " + comment_text(text)


def comment_text(text: str) -> str:
    return _UNSAFE_IN_COMMENT.sub(" ", text)


# What YAML's reader refuses anywhere in a stream, comments included (YAML 1.1's printable
# set; PyYAML's reader.NON_PRINTABLE).
_NOT_YAML = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def yaml_comments(text: str) -> str:
    """Comment lines (from comment()) made fit for a YAML file: a character YAML's reader
    refuses even in a comment (a C1 control, U+FFFE) becomes a space; comment() already
    replaced those that would end the line."""
    return _NOT_YAML.sub(" ", text)


def cmd(*parts: object, lead: int = 1) -> str:
    """A shell command line with every part quoted; a long one breaks before each option
    after its first `lead` words."""
    words = [q(p) for p in parts]
    if sum(len(w) + 1 for w in words) <= WRAP_AT:
        return " ".join(words)
    lines: list[str] = [" ".join(words[:lead])]
    for word in words[lead:]:
        if not word.startswith("--"):
            lines[-1] += " " + word
        else:
            lines.append(word)
    return " \\\n      ".join(lines)


def env(**variables: object) -> str:
    """NAME=value assignments (for `export` or a command's environment), values quoted."""
    for name in variables:
        if not _NAME.fullmatch(name):
            raise PlanError.at("internal", f"{name!r} is not an environment variable name")
    return " ".join(f"{name}={q(value)}" for name, value in variables.items())


def terminator(content: str, base: str = HEREDOC) -> str:
    """A heredoc terminator that no line of content equals (bash ends the heredoc at the
    first such line)."""
    lines = set(content.splitlines()) | set(content.split("\n"))
    end, n = base, 0
    while end in lines:
        n += 1
        end = f"{base}_{n}"
    return end


def feed(command: str, content: str, base: str = HEREDOC) -> str:
    """`command` (already quoted) reading content on its standard input through a quoted
    heredoc: bash expands nothing in it and the content arrives byte for byte (a final
    newline is added when it has none)."""
    if "\0" in content:
        raise PlanError.at("internal", "a heredoc cannot carry a NUL character")
    end = terminator(content, base)
    body = content if content.endswith("\n") else content + "\n"
    return f"{command} <<'{end}'\n{body}{end}"


def heredoc(name: str, content: str) -> str:
    """Write the file `name` holding content."""
    return feed(f"cat > {q(name)}", content)


# --- documents -----------------------------------------------------------------------------


def to_json(doc: dict[str, Any]) -> str:
    """JSON with every non-ASCII character escaped (fed through a quoted heredoc)."""
    import json

    return json.dumps(doc, indent=2) + "\n"


def to_yaml(doc: dict[str, Any], blocks: bool = False) -> str:
    """YAML from PyYAML's safe dumper (libyaml's emitter when PyYAML has it: the same
    output, several times faster); every string reads back as itself. `blocks`: a string
    of several lines as a literal block (`|`), where the emitter can keep it exact (it
    falls back to quotes where it cannot), so that a shell script reads as one."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    if blocks:

        class BlockDumper(dumper):  # type: ignore[misc,valid-type]
            pass

        def block(dumper: Any, value: str) -> Any:
            style = "|" if "\n" in value else None
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

        BlockDumper.add_representer(str, block)
        dumper = BlockDumper
    text: str = yaml.dump(
        doc, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    return text


def to_yaml_documents(docs: list[dict[str, Any]], blocks: bool = False) -> str:
    """Several YAML documents in one stream, each from to_yaml, separated by `---`."""
    return "---\n".join(to_yaml(doc, blocks) for doc in docs)


# --- a user's command template --------------------------------------------------------------


class TemplateShell:
    """Follows a command template's text as bash reads it, so that a value that needs
    quoting is filled in only where a quoted word holds it exactly: outside quotes,
    backquotes and heredoc bodies, and not after a backslash. (A value that needs no
    quoting, such as `0,1,2`, reads the same everywhere: in quotes too.) In a comment the
    value's control characters become spaces (a newline would end the comment)."""

    def __init__(self) -> None:
        # One frame per command substitution "$( ... )" opened inside double quotes (its
        # quoting starts afresh): [state, open parentheses].
        self.frames: list[list[Any]] = [["code", 0]]
        self.escaped = False
        self.arithmetic = 0  # open `((` (their `<<` is a shift)
        self.last = "\n"
        self.word: str | None = None  # the delimiter after `<<`, so far
        self.pending: list[tuple[str, bool]] = []  # heredocs opened on this line
        self.body: list[tuple[str, bool]] = []  # heredoc bodies being read
        self.line = ""

    @property
    def state(self) -> str:
        return "heredoc" if self.body else str(self.frames[-1][0])

    def read(self, text: str) -> None:
        for char in text:
            self._char(char)
            self.last = char

    def _char(self, c: str) -> None:
        if self.body:
            self._body(c)
            return
        frame = self.frames[-1]
        state = frame[0]
        if self.escaped:
            self.escaped = False
        elif state == "comment":
            if c == "\n":
                frame[0] = "code"
                self._newline()
        elif state == "single":
            frame[0] = "code" if c == "'" else state
        elif c == "\\":
            self.escaped = True
        elif state == "double":
            if c == '"':
                frame[0] = "code"
            elif c == "(" and self.last == "$":
                self.frames.append(["code", 1])
        elif state == "backtick":
            frame[0] = "code" if c == "`" else state
        elif self.word is None or not self._delimiter(c):
            self._code(c, frame)

    def _code(self, c: str, frame: list[Any]) -> None:
        if c in "'\"`":
            frame[0] = {"'": "single", '"': "double", "`": "backtick"}[c]
        elif c == "#" and (self.last.isspace() or self.last in ";&|()"):
            frame[0] = "comment"
        elif c == "(":
            frame[1] += 1
            self.arithmetic += self.last == "("
        elif c == ")":
            frame[1] -= 1
            if self.last == ")" and self.arithmetic:
                self.arithmetic -= 1
            if frame[1] <= 0 and len(self.frames) > 1:
                self.frames.pop()
        elif c == "<" and self.last == "<" and not self.arithmetic:  # `((1 << 2))` shifts
            self.word = ""
        elif c == "\n":
            self._newline()

    def _delimiter(self, c: str) -> bool:
        """Collect the heredoc delimiter after `<<`; True when c was part of it."""
        word = self.word or ""
        if c == "<" and not word:  # `<<<` is a here-string
            self.word = None
            return True
        if c in " \t-" and not word.strip(" \t-"):
            self.word = word + c
            return True
        if not (c.isspace() or c in ";&|()<>"):
            self.word = word + c
            return True
        strip = word.startswith("-")
        end = word.lstrip("-").strip(" \t")
        for quote in "'\"\\":
            end = end.replace(quote, "")
        if end:
            self.pending.append((end, strip))
        self.word = None
        return False

    def _newline(self) -> None:
        self.body, self.pending = self.body + self.pending, []
        self.line = ""

    def _body(self, c: str) -> None:
        if c != "\n":
            self.line += c
            return
        end, strip = self.body[0]
        if (self.line.lstrip("\t") if strip else self.line) == end:
            self.body.pop(0)
        self.line = ""

    def fill(self, value: object, name: str, where: str) -> str:
        """The placeholder {name} filled with value at this point of the template."""
        word, state, last, escaped = q(value), self.state, self.last, self.escaped
        # The filled word ends in a quote or a word character.
        self.last, self.escaped = "'", False
        if state == "comment":
            return comment_text(word)
        place = ""
        if last == "$" and state != "single":
            place = "after a $"  # it would be read as a variable
        elif word != str(value):
            place = {
                "single": "inside single quotes",
                "double": "inside double quotes",
                "backtick": "inside backquotes",
                "heredoc": "inside a heredoc",
            }.get(
                state,
                "after a backslash"
                if escaped
                else "in a heredoc delimiter"
                if self.word is not None
                else "",
            )
        if not place:
            self.line += word if self.body else ""
            return word
        raise PlanError.at(
            where,
            f"placeholder {{{name}}} sits {place}, where its value "
            f"{short_repr(str(value))} cannot be quoted; write the placeholder as "
            f"a word of its own, without quotes (dflash-plan quotes every value)",
            key="launch.template",
        )
