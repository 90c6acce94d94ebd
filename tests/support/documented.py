"""The shell commands the docs write, for the tests that run them as written.

`commands(page, section)` reads a page's fenced shell blocks (or one `## section`'s): a line starting with
`groundwatch` is a command, continuation lines joined, `&&` chains split, `# comments` and `[optional parts]`
dropped. `as_written(command, replace, variables)` is that command's words for a test's run: a documented port
replaced by the test's service's, `$FLINK` by the flags the page sets it to. `groundwatch_bin()` is the installed
`groundwatch` command, which a user types.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["ROOT", "as_written", "commands", "groundwatch_bin"]

ROOT = Path(__file__).resolve().parents[2]


def groundwatch_bin() -> str:
    """The `groundwatch` this interpreter's environment installed (else the one on PATH)."""
    beside = Path(sys.executable).with_name("groundwatch")
    return str(beside) if beside.exists() else shutil.which("groundwatch") or "groundwatch"


def commands(page: Path, section: str | None = None) -> list[list[str]]:
    """The page's commands, or those of its `## section` (up to the next `## ` heading: a `# ` line inside a
    section is a shell comment)."""
    text = page.read_text(encoding="utf-8")
    if section is not None:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start:end] if end > 0 else text[start:]
    found = []
    for block in re.findall(r"```(?:sh|bash|shell|console)?\n(.*?)```", text, re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            for part in line.split("&&"):
                part = part.strip()
                while (dropped := re.sub(r"\[[^\[\]]*\]", " ", part)) != part:  # [--optional [flags]]
                    part = dropped
                if part.startswith("groundwatch "):
                    found.append(shlex.split(part, comments=True))
    return found


def as_written(command: list[str], replace: dict[str, str], variables: dict[str, list[str]] | None = None):
    """The words after `groundwatch` (a trailing `&` dropped), each `replace` key within a word replaced (a
    documented port by a test's), each `$VARIABLE` word by its words (`$FLINK`, the flags the page sets it to)."""
    words = []
    for word in command[1:]:
        for old, new in replace.items():
            word = word.replace(old, new)
        words += (variables or {}).get(word, [word])
    return words[:-1] if words[-1:] == ["&"] else words
