"""Characters a page, a chat, a word processor or a Windows editor puts into a command line where plain
ASCII was typed: `—config-dir` (a dash made of `--`), `seed=3` joined to the next override by a no-break
space, an invisible zero-width space, a carriage return at each line's end of a script saved with CRLF.

Each went on to a misleading answer: Hydra's `token recognition error at: '—'`, `t3rl ls –help` as "no
config group '–help'", `+experiment=quickstart\\r` as "spaces around '='" with a fix that looked the same,
a no-break space as a value with a space to quote, and `--out plans/x\\r` made a directory whose name ends
in a carriage return. The table below declares every such character and what it stands for; a command line
holding one is refused before any command reads it (exit 2), each character named, with the line retyped
as it was meant. An argument naming a path that exists as given is left alone.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from launch.config.errors import Problem

# What each character stands for where it was pasted: a dash at an argument's start for `-` or `--` (inside a
# value it may be meant, and is answered by the override's own reading), a space the shell did not split at,
# or nothing at all.
DASH, SPACE, NOTHING = "-", " ", ""
PASTED = {
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d", DASH),
    **dict.fromkeys("\u00a0\u2007\u2009\u200a\u202f\u205f\u3000\t\n\v\f", SPACE),
    **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff\u00ad\r", NOTHING),
}
# Why each kind is there, for the message.
_WHY = {
    DASH: "a page, chat or word processor makes one of '-' or '--'",
    SPACE: "a space pasted from a page or a table, which the shell does not split at",
    NOTHING: "invisible, pasted with the text",
}
# A carriage return's own why, and what ends it: the script's line ends converted.
_CR = "\r"
_CRLF_WHY = "a script saved with Windows line ends (CRLF) passes one at the end of each line"
_CRLF_FIX = "and convert the script: sed -i 's/\\r$//' SCRIPT, or dos2unix SCRIPT"
# Control characters have no Unicode name.
_CONTROLS = {"\t": "tab", "\n": "line break", "\v": "vertical tab", "\f": "form feed", _CR: "carriage return"}
_DASHES = "".join(c for c, stands in PASTED.items() if stands == DASH)
_LEADING = re.compile(f"^[-{re.escape(_DASHES)}]+")


def holds_pasted(args: Sequence[str]) -> bool:
    """Whether an argument holds a character of the table or another control character (cheap: plain
    ASCII text, the usual case, is one test an argument)."""
    return not all(arg.isascii() and arg.isprintable() for arg in args) and any(
        _pasted(c) for arg in args for c in arg
    )


def pasted_refusal(args: Sequence[str]) -> Problem | None:
    """The problem of `t3rl ARGS`, with the line retyped as its fix, when an argument holds a character of
    the table (or another control character); None when none does."""
    if not holds_pasted(args):
        return None
    from launch.config.errors import Problem  # lazy: only for a line to refuse
    from launch.config.override_fixes import shell_word  # lazy: see above
    from launch.config.secrets import scrub_text  # lazy: see above

    words: list[str] = []
    found: dict[str, str] = {}
    for arg in args:
        if _is_path(arg):
            words.append(arg)
            continue
        here: dict[str, str] = {}
        retyped = _retyped(arg, here)
        # a credential typed in it is shown masked (its marked form, `sk-…<U+200B>`, has no credential shape)
        masked = scrub_text(retyped)
        found.update(
            {c: shown if masked == retyped else masked for c, shown in here.items() if c not in found}
        )
        # a pasted space stood where the shell would have split (a space typed inside quotes is kept)
        words.extend([arg] if retyped == arg else [word for word in retyped.split(SPACE) if word])
    if not found:
        return None
    first = next(iter(found.values()))
    named = "; ".join(f"{_name(c)} in '{shown}'" for c, shown in found.items())
    line = " ".join(["t3rl", *(shell_word(word) for word in words)])
    script = f" ({_CRLF_FIX})" if _CR in found else ""
    return Problem(first, f"the command line holds {named}", "the command line", f"{line}{script}")


def _retyped(arg: str, found: dict[str, str]) -> str:
    """`arg` with each character of the table replaced by what it stands for (each noted in `found`, with
    the argument it was in, the character shown by its code); a dash only at the argument's start."""
    shown = "".join(f"<U+{ord(c):04X}>" if _pasted(c) else c for c in arg)
    head = ""
    leading = _LEADING.match(arg)
    if leading is not None and any(c in _DASHES for c in leading.group()):
        found.update(dict.fromkeys((c for c in leading.group() if c in _DASHES), shown))
        arg = arg[leading.end() :]
        # `—m` was `-m`, `—config-dir` `--config-dir`
        head = "-" if len(arg.partition("=")[0]) == 1 else "--"
    key, equals, value = arg.partition("=")
    written = bool(equals) and _written_text(value)
    out = []
    for index, c in enumerate(arg):
        meant = written and index > len(key) and unicodedata.category(c) != "Cc"
        if _pasted(c) and PASTED.get(c) != DASH and not meant:
            found.setdefault(c, shown)
            out.append(PASTED.get(c, NOTHING))
        else:
            out.append(c)
    return head + "".join(out)


def _written_text(value: str) -> bool:
    """A value holding letters or signs beyond ASCII (Persian, Chinese, an emoji) is text in a language:
    its joiners and spaces are the language's own (Persian's zero-width non-joiner, an ideographic space,
    an emoji's zero-width joiner), not pasted into what was typed in ASCII."""
    return any(not c.isascii() and not _pasted(c) for c in value)


def _pasted(c: str) -> bool:
    return c in PASTED or unicodedata.category(c) == "Cc"


def _name(c: str) -> str:
    """The character by its code and Unicode name, and why it is in a command line."""
    name = _CONTROLS.get(c) or unicodedata.name(c, "control character").lower()
    why = _CRLF_WHY if c == _CR else _WHY[PASTED[c]] if c in PASTED else "no command line of t3rl holds one"
    return f"U+{ord(c):04X} ({name}: {why})"


def _is_path(arg: str) -> bool:
    """Whether `arg` (or the value of `--option=arg`) names a path that exists: a file name may hold any
    of these characters."""
    value = arg.partition("=")[2] if arg.startswith("-") else arg
    try:
        return any(os.path.lexists(p) for p in {arg, value} if p)
    except (ValueError, OSError):  # a NUL byte, a name too long: no path
        return False
