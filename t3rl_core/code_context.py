"""Whether a place in a text stands inside code (a slice, a mapping's entry, a lambda's parameters)
rather than in prose: `x[i:n@self.w]` is code, `alice:pw@db` in a sentence is user information. Read by
the secret rules of `t3rl_core.secret` and `t3rl_core.secret_prose` alike, below both of them.
"""

from __future__ import annotations

# What code opens and closes around a slice or a mapping's entry.
_OPENERS = {"[": "]", "(": ")", "{": "}"}


def in_code(text: str, user: int) -> bool:
    """The user information whose user begins at `user` stands where code has a slice or a mapping's
    entry (`x[i:n@self.w]`, `f(a[i:j@m.T])`, `{k:v@m for k in d}`, `lambda a, x:x@W`), not in a string:
    on its line before it, an opener left open that code makes (a brace, or a bracket right after a
    name: a subscript), or a lambda's parameters, with no quote between. A call's parenthesis is not
    one: no code writes `a:b` as a call's argument (`connect(alice:V@db)` is user information)."""
    line = text.rfind("\n", 0, user) + 1
    lam = text.rfind("lambda", line, user)
    if lam >= 0 and ":" not in text[lam:user] and (lam == line or not text[lam - 1].isalnum()):
        return True
    depth = {"]": 0, ")": 0, "}": 0}
    for at in range(user - 1, line - 1, -1):
        char = text[at]
        if char in "'\"":
            return False
        if char in depth:
            depth[char] += 1
        elif char in _OPENERS:
            closer = _OPENERS[char]
            if depth[closer]:
                depth[closer] -= 1
            elif char == "{" or (
                char == "[" and at > line and (text[at - 1].isalnum() or text[at - 1] in "_])")
            ):
                return True
    return False
