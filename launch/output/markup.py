"""rich's console markup read without rich: what rich prints of a markup string when it styles nothing
(a pipe, a file), and the escape that makes any text print as it is.

A tag is `[` + a lower-case letter, `#`, `/` or `@` + anything but `[` up to the first `]`; backslashes
before a tag escape it in pairs (an odd count makes the tag text), and `\\[` outside a tag prints `[`.
Markup this module does not read exactly as rich does (an explicit closing tag that is not the very name
of an open one, which rich compares after normalising styles; a `[/]` with nothing open, an error in
rich; `@` handler tags) is handed to rich's own parser, so the text is rich's in every case.
"""

from __future__ import annotations

import re

TAG = re.compile(r"(\\*)\[([a-z#/@][^\[]*?)]")
# The control characters rich removes from text it prints (bell, backspace, vertical tab, form feed,
# carriage return).
REMOVED = dict.fromkeys(map(ord, "\a\b\v\f\r"))


# The other control characters rich prints as they are: ESC (and the C1 CSI) begins a terminal's
# control sequence (the screen cleared, the cursor moved up over earlier lines, the window's title, OSC
# 52's clipboard), and text a model or a sandbox cell wrote (`t3rl rollouts show`) must not drive the
# terminal that shows it. Printed as their Control Pictures (ESC as ␛), C1 as the replacement character.
# The bidirectional controls (embeddings, overrides, isolates, marks: U+202E shows the rest of its line
# reversed, so a cell's `reward 0.0` can read as another line) are printed as the replacement character
# too: what t3rl prints of a rollout reads in the order it was written.
# A pattern string, compiled through re's cache once text that is not all printable is shown.
_CONTROLS = "[\x00-\x06\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"


def pictured(text: str) -> str:
    """`text` with each control character of `_CONTROLS` as its picture; printable text (what t3rl
    prints most) is returned as it is."""
    if text.isprintable():
        return text
    return re.sub(_CONTROLS, _picture, text)


def _picture(match: re.Match[str]) -> str:
    code = ord(match[0])
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"


def removed(text: str) -> str:
    """`text` without the characters of `REMOVED`. `str.translate` reads every character through the
    mapping (~650 instructions each in text that is not all ASCII: a plan's printed commands, 1.8 M);
    text holding none of them is returned as it is."""
    return text.translate(REMOVED) if any(chr(c) in text for c in REMOVED) else text


def escape(text: str) -> str:
    """`text` as markup that prints as `text` (rich.markup.escape's result, without importing rich)."""
    escaped = TAG.sub(lambda m: m[1] * 2 + "\\[" + m[2] + "]", text)
    # A single trailing backslash would escape a tag printed right after this text.
    return escaped + "\\" if escaped.endswith("\\") and not escaped.endswith("\\\\") else escaped


def plain(markup: str) -> str:
    """The text rich prints of `markup` when it styles nothing: its tags dropped, its escapes undone,
    `REMOVED` removed (rich's emoji codes left as text, as t3rl's consoles print them:
    launch.config.secret_rich)."""
    if "[" not in markup:
        return removed(markup)
    pieces, opened, at = [], [], 0
    for match in TAG.finditer(markup):
        pieces.append(markup[at : match.start()].replace("\\[", "["))
        at = match.end()
        backslashes, tag = match[1], match[2]
        pieces.append("\\" * (len(backslashes) // 2))
        if len(backslashes) % 2:
            pieces.append(f"[{tag}]")
            continue
        name = tag.partition("=")[0]
        closed = name[1:].strip() if name.startswith("/") else None
        if name.startswith("@"):
            return _by_rich(markup)
        if closed is None:
            opened.append(name)
        elif closed == "" and opened:
            opened.pop()
        elif closed and closed in opened:
            del opened[len(opened) - 1 - opened[::-1].index(closed)]
        else:
            return _by_rich(markup)
    pieces.append(markup[at:].replace("\\[", "["))
    return removed("".join(pieces))


def _by_rich(markup: str) -> str:
    """What rich prints of `markup` (or its MarkupError), read by rich's own parser."""
    from rich.markup import render  # lazy: rich, only for markup outside what `plain` reads itself

    return render(markup, emoji=False).plain
