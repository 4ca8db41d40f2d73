"""Credentials in configs: a reference to where the value lives, never the value itself.

A `Secret` field takes `env:NAME` (an environment variable; `${oc.env:NAME}` is read as the same) or
`file:PATH` (a file holding the value, e.g. a mounted secret). Configs, run dirs, caches, logs and error
messages only ever carry that reference; `reveal()` reads the value, as a pydantic `SecretStr`, in the
process that sends it. A literal credential given to such a field is refused without being repeated.

Every value revealed is kept in `revealed()` for this process's own masking, and, when the process runs
under a t3rl launcher that tees its output (the environment names the launcher's socket in
`T3RL_SECRET_SINK`), sent to that launcher before `reveal()` returns: the launcher masks it in the log
and on the terminal from the next line on, whatever the variable or file is called.

URLs get the same rule: `mask_url` hides the password of `scheme://user:password@host`; `mask_text`
hides that and every credential known by its shape (t3rl_core.secret_shapes), and is what every file
and line t3rl writes passes through.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from t3rl_core.code_context import in_code
from t3rl_core.secret_name_words import is_hash
from t3rl_core.secret_names import looks_like_credential
from t3rl_core.secret_pieces import (
    mask_base64_text,
    mask_escaped_names,
    mask_folded,
    mask_values,
    mask_wrapped_base64,
)
from t3rl_core.secret_shapes import folded_credentials_in, mask_issued, mask_shapes

if TYPE_CHECKING:
    from collections.abc import Iterator

    # pydantic is imported where a Secret is validated or revealed, not with this module: the URL
    # masking below also runs where configs are composed, which must not pay for pydantic
    # (launch.config.compose_ahead).
    from pydantic import GetCoreSchemaHandler, SecretStr
    from pydantic_core import core_schema  # lazy: pydantic, only when a model holding a Secret is built

MASK = "***"
# ENV_NAME and _OC_ENV are strings, compiled by `re` (and cached) when first used, not on import: a cold
# `t3rl validate +experiment=stage2_bfcl` never uses them.
# Environment-variable names as shells accept them.
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
# `scheme://user:password@`: the password is group 2 (a user name alone is not a credential). It runs to
# the last `@` before the path, as a URL's user information does (urllib, libpq): a password holding
# `@` (`p@ss`) is one password, not `p` and a host. A quote or `<>` ends the URL (minified JSON).
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*):([^/\s\"'<>]+)@")
# The same URL written with its `/` escaped, as some JSON encoders write them (`postgres:\/\/bob:V@db`),
# or percent-encoded as a query's value (`?dsn=postgres%3A%2F%2Fbob%3AV%40db`): the password is group 2
# (up to the `@` or `%40`, never over a `/` or `%2F`: a port and a path are not one). A pattern string,
# compiled when text holds such a scheme's end.
_ENCODED_USERINFO = (
    r"(?i)([a-z][a-z0-9+.-]*(?::\\+/\\+/|%3A%2F%2F)[^/@\s:%\\'\"<>]*(?::|%3A))"
    r"((?:(?!%2F)[^/@\s'\"<>\\&])+?)(?=@|%40)"
)
# `user:password@host` without a scheme (`--db alice:V@db:5432/app`, `DATABASE=alice:V@db.example.com`,
# as database tools and ORMs take it), read back from each `@` (a pattern string, compiled on first use):
# the password ends the text searched, the user starts after a space, a quote, `=` or a bracket, or
# after `//` (a URL without its scheme, as HTML writes one: `//alice:V@db.example.com/app`), with a
# letter. The host after the `@` must look like one (`_BARE_HOST`), and the user be no scheme that takes
# no `//` (`_NOT_USERS`): `mailto:alice@example.com`, a docker image's `name:tag@sha256:…` and
# `a[i:n@W]` in a cell's code are not one.
_BARE_PASSWORD = r"[^\s@/'\"<>:]{1,256}"
_BARE_USERINFO = (
    r"(?:(?<=[\s'\"=(\[,;{<>])|(?<=//))([A-Za-z][A-Za-z0-9._~%+-]{0,63}):(" + _BARE_PASSWORD + r")\Z"
)
# A dotted name, `localhost`, or any name with a port (`db:5432`), then no more of a name.
_BARE_HOST = (
    r"(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|[A-Za-z0-9-]+(?=:[0-9]))(?::[0-9]{1,5})?"
    r"(?![A-Za-z0-9_.@:-])"
)
_NOT_USERS = frozenset({"mailto", "sip", "sips", "xmpp", "tel", "urn", "news", "data"})
# A bare name as the host (`alice:V@db`, `alice:V@db/app`, as a compose file's service is reached): no
# dot, no port, so code reads the same way (`a[i:n@W]`, `lambda x:x@W`, `{k:v@m for …}`). Taken for a
# host only where nothing of code stands around it: the user after a space, a quote or `=` (not a
# bracket, brace or comma), the host followed by the text's end, a space, a quote (JSON-escaped too),
# `/` or `?`, or a sentence's `.,;:)` and a space (not `]`, `.T`, `)[`), and the password looks like one
# (`_PASSWORD_LIKE`), not a name or a number.
_HOST_NAME = r"[A-Za-z][A-Za-z0-9-]{0,62}"
_BARE_NAME_HOST = r"[A-Za-z][A-Za-z0-9-]{0,62}(?=\Z|[\s'\"/?]|\\+['\"]|[.,;:)](?:\Z|\s))"
_BARE_NAME_USER_AFTER = frozenset(" \t\r\n'\"=")
# A user and a password that are their names: a placeholder of documentation (`"user:pw@host"`), no
# secret (`alice:pw@db` is one).
_PLACEHOLDER_USERS = frozenset({"user", "username", "usr", "login", "name"})
_PLACEHOLDERS = frozenset({"pw", "pwd", "pass", "passwd", "password", "secret", "xxx", "xxxx"})
# An item's opener before the user and the closer right after the host that make `user:password@host`
# the whole item, whatever the password (`'alice:pw@db'`, `connect(alice:pw@db)`).
_CLOSERS = {"'": "'", '"': '"', "(": ")", "[": "]"}
# 6+ characters, a letter and a digit or a sign among them (`V3ryS3cret`, `hunter2!`; not `x`, `step`,
# `2024`).
_PASSWORD_LIKE = r"(?=.{6})(?=.*[A-Za-z])(?=.*[^A-Za-z])"
# A run of characters that are not whitespace (`\s` is what `str.isspace` says is).
_NON_SPACE = re.compile(r"\S*")
# `${oc.env:NAME}`, the environment reference of config files, given to a Secret field.
_OC_ENV = r"^\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}$"
SECRET_REFERENCE_ERROR = "secret_reference"
# A credential found only in text with its line breaks taken out is masked where it occurs from this
# length on (a short query value could also be an ordinary word of the text).
_FOLDED_MIN = 8
# A unix datagram socket of the launcher teeing this process's output (see the module's docstring).
SINK_ENV = "T3RL_SECRET_SINK"
_REVEALED: set[str] = set()
REFERENCE_HELP = "env:NAME (an environment variable holding it) or file:PATH (a file holding it)"


def mask_url(text: str) -> str:
    """`text` with the password of every `scheme://user:password@host` and of every `user:password@host`
    without a scheme replaced by the mask."""
    at = "@" in text
    if at:
        for start, end in reversed(bare_userinfo_spans(text)):
            text = text[:start] + MASK + text[end:]
    if _may_hold_encoded_url(text, at):
        text = re.sub(_ENCODED_USERINFO, rf"\1{MASK}", text)
    pieces, done = [], 0
    for start, end in _url_runs(text):
        pieces += [text[done:start], _URL_USERINFO.sub(rf"\1:{MASK}@", text[start:end])]
        done = end
    return "".join(pieces) + text[done:]


def _url_runs(text: str) -> Iterator[tuple[int, int]]:
    """The runs of `text` without whitespace that hold `://`, in order: no part of a `_URL_USERINFO`
    match is whitespace, so every match lies in one. The pattern tried at every place of a text reads
    its scheme's run again from each of its characters: 2.5 M instructions for a 7 KB plan.sh with two
    URLs, and 0.26 s for a 10,000-letter value (time growing with the square of the run)."""
    done = 0
    at = text.find("://")  # every line t3rl prints passes here at once: most hold no URL
    while at >= 0:
        start = at
        while start > done and not text[start - 1].isspace():
            start -= 1
        done = _NON_SPACE.match(text, at).end()
        yield start, done
        at = text.find("://", done)


def mask_text(text: str) -> str:
    """`text` with URL passwords and credentials known by their shape (`sk-…`, `?token=…`,
    `Authorization: Bearer …`) masked, also where a renderer folded them over lines, and as the text
    reads with the escapes of a name's characters undone (`api%5Fkey=V`: t3rl_core.secret_pieces.ESCAPES)."""
    return mask_escaped_names(_mask_text(text), _mask_text)


def _mask_text(text: str) -> str:
    text = mask_url(text)
    if "\n" in text:
        text = mask_wrapped_base64(text, mask_text)
        folded = [v for v in folded_credentials_in(text) if len(v) >= _FOLDED_MIN]
        if folded:
            text = mask_folded(text, folded)
    return mask_base64_text(mask_shapes(text), mask_text)


def log_tail(text: str, lines: int = 20) -> str:
    """The last `lines` lines of a log (an error saying why a server did not start, why a probe failed),
    masked as a whole before it is cut: a private key whose BEGIN line falls before the cut is masked
    all the same, which no reader of the cut lines alone could tell from other text."""
    return "\n".join(mask_text(text).splitlines()[-lines:])


def url_passwords(text: str) -> list[str]:
    """The passwords embedded in URLs of `text`, with a scheme or without (already masked ones
    excluded)."""
    at = "@" in text
    found = [text[start:end] for start, end in bare_userinfo_spans(text)] if at else []
    if _may_hold_encoded_url(text, at):
        found += [m.group(2) for m in re.finditer(_ENCODED_USERINFO, text) if m.group(2) != MASK]
    for start, end in _url_runs(text):
        found += [m.group(2) for m in _URL_USERINFO.finditer(text, start, end) if m.group(2) != MASK]
    return found


def _may_hold_encoded_url(text: str, at: bool) -> bool:
    """`text` (`at`: it holds an `@`) may hold a URL's user information with escaped or percent-encoded
    slashes: one scan of the text where it holds no `@` (every line t3rl prints passes here)."""
    return (at and "\\/" in text) or ("%40" in text and ("%2F%2F" in text or "%2f%2f" in text))


def bare_userinfo_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds the password of a `user:password@host` without a scheme, in order."""
    spans = []
    at = text.find("@")
    while at >= 0:
        # The password holds no `:` and ends the window: it is all after the window's last `:`, so a window
        # whose end is no `_BARE_PASSWORD` (an e-mail address in prose: a space after that `:`) holds
        # none, told without the pattern, which tried each of the window's ~330 places (an eval's
        # episode texts with an `@`: ~30 K instructions each).
        colon = text.rfind(":", max(0, at - 330), at)
        if colon < 0 or re.compile(_BARE_PASSWORD).fullmatch(text, colon + 1, at) is None:
            at = text.find("@", at + 1)
            continue
        # The look-behind reads before the window: a user at the text's start counts after a space.
        found = re.compile(_BARE_USERINFO).search(" " + text[max(0, at - 330) : at])
        if (
            found is not None
            and found.group(1).lower() not in _NOT_USERS
            and not found.group(2).startswith(("***", "$", "env:", "file:"))
            and not is_hash(f"{found.group(1)}:{found.group(2)}")  # `sha256:<hex>@…`: a digest's address
            and (re.compile(_BARE_HOST).match(text, at + 1) is not None or _bare_name_host(text, at, found))
            and not in_code(text, at - len(found.group(2)) - 1 - len(found.group(1)))
        ):
            spans.append((at - len(found.group(2)), at))
        at = text.find("@", at + 1)
    return spans


def _bare_name_host(text: str, at: int, found: re.Match[str]) -> bool:
    """The `@` at `at` is followed by a bare host name (`alice:V@db`) that `found`'s user and password
    (matched in the window before it, a space put first) make user information, not code: the user
    after a space, a quote or `=` and a password that looks like one; or, whatever the password, a
    URL's shape (`alice:hunter@db/app`, `alice:hunter@db?sslmode=…`) or the whole of a quoted or
    bracketed item (`'alice:pw@db'`, `connect(alice:pw@db)`, `[alice:pw@db]`)."""
    before_user = found.string[found.start(1) - 1]
    placeholder = found.group(1).lower() in _PLACEHOLDER_USERS and found.group(2).lower() in _PLACEHOLDERS
    if found.group(2).startswith("=") or placeholder:
        return False  # a walrus before a name (`f(x:=y@W)`), or a placeholder (`"user:pw@host"`)
    name = re.compile(_HOST_NAME).match(text, at + 1)
    closer = _CLOSERS.get(before_user)
    # A quote closing it may be escaped as the opening one was (`create(\"alice:V@db\")` in JSON).
    after = (
        name.end()
        + len(text[name.end() : name.end() + 8])
        - len(text[name.end() : name.end() + 8].lstrip("\\"))
        if name
        else 0
    )
    if (
        name is not None
        and closer is not None
        and text.startswith(closer, after if closer in "'\"" else name.end())
    ):
        return True
    host = re.compile(_BARE_NAME_HOST).match(text, at + 1)
    return (
        host is not None
        and before_user in _BARE_NAME_USER_AFTER
        and (
            text.startswith(("/", "?"), host.end())
            or re.compile(_PASSWORD_LIKE).match(found.group(2)) is not None
        )
    )


def is_reference(text: str) -> bool:
    """`env:NAME` or `file:PATH`: what a Secret takes (not `env:<the credential itself>`)."""
    kind, _, target = text.partition(":")
    if kind == "env":
        return bool(re.match(ENV_NAME, target)) and not looks_like_credential(target)
    return kind == "file" and bool(target)


def revealed() -> frozenset[str]:
    """Every value a Secret has revealed in this process."""
    return frozenset(_REVEALED)


def mask_revealed(text: str) -> str:
    """`text` with every value a Secret revealed in this process masked (for the files a t3rl_core
    process writes itself: an error message may quote a credential) whole, folded over lines or cut
    short, and what `mask_text` masks."""
    return mask_text(_mask_revealed_values(text))


def mask_episode_text(text: str) -> str:
    """An episode's own text in a record (the model's turns, the world's observations): every value a
    Secret revealed in this process, URL passwords and what `mask_issued` knows by its form masked. A
    name's value stays: there it is the task's data (a BFCL task's password the model passes on), and
    the record must replay through the official scorers as it was played."""
    return mask_issued(mask_url(_mask_revealed_values(text)))


def _mask_revealed_values(text: str) -> str:
    return mask_values(text, (v for v in _REVEALED if len(v) >= 2), _credential)


def _credential(value: str) -> bool:
    return True  # a Secret's value is a credential, whatever it looks like


def no_core_dumps() -> None:
    """This process, and every process it starts, dumps no core: a core holds the process's environment
    and memory, every credential among them, in a file in its working directory (a run's, a checkout's,
    which a Ray job uploads) or with the host's handler (`|…systemd-coredump`, apport), outside every
    mask. The soft RLIMIT_CORE becomes 1, not 0: the kernel makes no file dump below a page and aborts a
    dump to a pipe handler at exactly 1, which ignores 0. Inherited through fork and exec (SGLang, slime,
    a stage's Python); a hard limit of 0 stays 0. A user who wants cores raises the soft limit again in
    the process that needs one."""
    import resource  # lazy: the C module, only where a credential is held

    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    wanted = 1 if hard == resource.RLIM_INFINITY or hard >= 1 else 0
    if soft != wanted:
        resource.setrlimit(resource.RLIMIT_CORE, (wanted, hard))


def _note_revealed(value: str) -> None:
    if not value or value in _REVEALED:
        return
    if not _REVEALED:
        no_core_dumps()  # the first credential this process holds
    _REVEALED.add(value)
    sink = os.environ.get(SINK_ENV)
    if not sink:
        return
    import socket  # lazy: only a process that reveals a secret under a launcher needs it

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as announce:
            # Queued in the launcher's socket when sendto returns, so before this process can print it.
            announce.sendto(value.encode(), sink)
    except OSError:
        pass  # the launcher is gone (or never listened): nobody tees this output


class SecretResolutionError(RuntimeError):
    """The reference names a variable that is not set or a file that cannot be read."""


class Secret:
    """A credential by reference (`env:NAME` or `file:PATH`); serialises as the reference only."""

    __slots__ = ("reference",)

    def __init__(self, reference: str) -> None:
        if not is_reference(reference):
            from pydantic_core import PydanticCustomError  # lazy: pydantic, only when a reference is refused

            # The rejected text may be the credential itself: it is not repeated.
            raise PydanticCustomError(
                SECRET_REFERENCE_ERROR,
                "takes a reference to a credential, " + REFERENCE_HELP + ", never the credential itself",
            )
        self.reference = reference

    @property
    def kind(self) -> str:
        return self.reference.partition(":")[0]

    @property
    def target(self) -> str:
        return self.reference.partition(":")[2]

    def shell_expression(self) -> str:
        """How a bash script reads the value where it runs, without holding it: `"${NAME}"` or
        `"$(cat PATH)"`."""
        if self.kind == "env":
            return f'"${{{self.target}}}"'

        return f'"$(cat {shlex.quote(self.target)})"'

    def reveal(self) -> SecretStr:
        """The value, read now (strip of the trailing newline files usually end with)."""
        from pydantic import SecretStr  # lazy: pydantic, only when a value is revealed

        if self.kind == "env":
            value = os.environ.get(self.target)
            if not value:
                raise SecretResolutionError(
                    f"{self.reference}: environment variable {self.target} is not set"
                )
        else:
            try:
                value = Path(self.target).expanduser().read_text().strip()
            except OSError as error:
                raise SecretResolutionError(f"{self.reference}: cannot read ({error.strerror})") from None
        _note_revealed(value)
        return SecretStr(value)

    def __repr__(self) -> str:
        return f"Secret({self.reference!r})"

    def __str__(self) -> str:
        return self.reference

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other.reference == self.reference

    def __hash__(self) -> int:
        return hash(self.reference)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        from pydantic_core import core_schema  # lazy: pydantic, only when a model holding a Secret is built

        return core_schema.no_info_plain_validator_function(
            _validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )


def _validate(value: Any) -> Secret:
    if isinstance(value, Secret):
        return value
    if not isinstance(value, str):
        from pydantic_core import PydanticCustomError  # lazy: pydantic, only when a reference is refused

        raise PydanticCustomError(SECRET_REFERENCE_ERROR, "takes a reference string, " + REFERENCE_HELP)
    environment = re.match(_OC_ENV, value.strip())
    return Secret(f"env:{environment.group(1)}" if environment else value)
