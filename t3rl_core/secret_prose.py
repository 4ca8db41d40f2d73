"""Credentials in prose and in log text that the shapes of `t3rl_core.secret_shapes` did not read
(docs/how-to/secrets.md, round twelve), masked in every file and line t3rl writes but an episode's own
text (the task's data: a BFCL task says `using access token 'V'`):

- a key of the base64url alphabet (`-` and `_` in it: JWT signing keys, Fernet keys, many vendors'
  API keys) known by its look alone, as `secret_name_words.is_bare_key` knows a base62/base64 key;
- a value of 8+ characters given in prose to a credential's name (`the api key is V`, `password V`,
  `access token: V`), however short, when it holds a letter and a digit;
- a key folded over lines by a renderer or a YAML file (`  <40 characters>` then `  <24 characters>`):
  every piece of a chain of line-ending and line-starting runs that reads as one key;
- `user:password@host` in prose whatever the password (`connect as alice:password@db today`);
- (wave five) such a value after a credential's name spelt as an identifier (`HF_TOKEN V`, `api_key V`,
  `ENV DB_PASSWORD V`: a table's columns, a Dockerfile), inside a markup element of that name
  (`<password>V</password>`), and as pydantic's `input_value` of an error whose location names one;
- (wave seven) a credential's entry at a line's start whose value runs to the line's end, spaces
  included (`password: it's 1234 go now`: YAML's plain scalar; an INI's or a `.env`'s `NAME = V W`), and
  over the lines below indented further (a YAML block scalar after `|` or `>`, a plain scalar
  continued); a session cookie, which is a login: under its framework's name (`PHPSESSID=V`,
  `JSESSIONID=V`, Django's `sessionid`, Express's `connect.sid`: `SESSION_COOKIES`), and any cookie where
  the text says it is one (`curl -b 'n=V'`, a cookie jar's `<Cookie n=V for host/>`, `cookies={'n': 'V'}`);
  a form's field percent-encoded outside a URL's query (`curl -d 'password=tulip%20garden%2F1987'`).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections import Counter
from urllib.parse import unquote_plus

from t3rl_core.code_context import in_code
from t3rl_core.secret_name_words import (
    _HASH_NAME,
    _LONGEST,
    _public_blocks,
    _reads_as_words,
    is_bare_key,
    is_hash,
    is_hash_under,
    is_secret_name,
    looks_like_credential,
)
from t3rl_core.secret_pieces import PROSE_FIRST

# Between texts scanned as one (`secret_shapes.any_credentials_in`, `launch.config.secrets.scrub_texts`):
# no shape matches across it (no name, value, space or quote class holds it), each reads it as the end
# of a text (no letter, digit, `_` or `-`), and a line's reader as a line's start: the texts joined by it
# hold a credential wherever one of them does.
SEPARATOR = "\0"

# ------------------------------------------------------------------ base64url keys by their look

_URL_RUN = r"[A-Za-z0-9_-]{32,256}"
_URL_RUN_BYTES = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "_-") else ord(" ") for i in range(256)
)
_URL_MARK = b"a" * 32
# What may not stand right before or after such a run (a name, a path, a URL, an address joins it).
_JOINED_BEFORE = frozenset("_-./@%&\\+")
_JOINED_AFTER = frozenset("_-@/")
# A hash algorithm's name before the run (`_HASH_NAME`: a wheel RECORD's `sha256=<base64url>`, an SRI
# digest) makes it a digest, public, as for a base64 key.
# A run's separators-free characters count as drawn at random from these (bits per character, share of
# neighbours of another class): 32-character base64url keys pass ~97 % of the time.
_BITS = 3.9
_CHANGES = 0.4
# A word of a name (`run`, `Data`, `raysubmit`, `ROOT`): a segment of the run between `-`/`_` that is one
# makes the run a name with a random part (`run_<random>`), not a key.
_SEGMENT_WORD = r"[A-Za-z][a-z]{2,}|[A-Z]{3,}|[a-z]{3,}"


def is_url_key(run: str) -> bool:
    """`run`, a whole value holding `-` or `_`, is a base64url key by its look alone: 32 to 256
    characters, upper-case and lower-case letters and digits, no segment between its separators that
    reads as a word of a name, and the spread and changes of class of a random draw."""
    core = run.rstrip("=")
    if not 32 <= len(core) <= _LONGEST or not ("-" in core or "_" in core):
        return False
    if re.fullmatch(r"[A-Za-z0-9_-]+", core) is None or core.startswith("eyJ"):
        return False
    letters = core.replace("-", "").replace("_", "")
    if not all(any(map(kind, letters)) for kind in (str.isupper, str.islower, str.isdigit)):
        return False
    segments = [s for s in re.split(r"[-_]", core) if s]
    if any(_word(segment) for segment in segments):
        return False
    bits = -sum(n / len(letters) * math.log2(n / len(letters)) for n in Counter(letters).values())
    changes = sum(_kind(a) != _kind(b) for a, b in itertools.pairwise(core)) / (len(core) - 1)
    return bits >= _BITS and changes >= _CHANGES


def _word(segment: str) -> bool:
    """A segment reads as a word of a name: 3+ letters (small ones, or with a vowel), or such a word
    with a number after it (`Qwen3`, `ckpt10`: a model's or a checkpoint's name)."""
    letters = re.match(r"[A-Za-z]*", segment).group()  # type: ignore[union-attr]  # always matches
    if len(letters) < 3 or re.fullmatch(_SEGMENT_WORD, letters) is None:
        return False
    if not (letters == segment or segment[len(letters) :].isdigit()):
        return False
    # Small letters alone are a name's word (`ckpt`, `tmp`, `run`); with capitals, one with a vowel.
    return letters.islower() or any(c in "aeiouyAEIOUY" for c in letters)


def _kind(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2 if char.islower() else 3


def url_key_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a base64url key standing alone (`is_url_key`)."""
    # The text's bytes with every run character as `a`, searched for 32 of them (two passes in C): the
    # pattern tried at every place of a 37 KB eval record cost ~0.7 ms.
    if ("-" not in text and "_" not in text) or _URL_MARK not in text.encode(
        "utf-8", "surrogatepass"
    ).translate(_URL_RUN_BYTES):
        return []
    spans = []
    for found in re.finditer(_URL_RUN, text):
        start, end = found.span()
        if start and (text[start - 1] in _JOINED_BEFORE or text[start - 1].isalnum()):
            continue
        if end < len(text) and (text[end] in _JOINED_AFTER or text[end].isalnum()):
            continue
        if end < len(text) and text[end] == "." and text[end + 1 : end + 2].isalnum():
            continue  # a host or a file name (`<run>.example.com`)
        if is_url_key(found.group()) and re.search(_HASH_NAME, text[max(0, start - 8) : start]) is None:
            spans.append((start, end))
    return spans


# ------------------------------------------------------------------ a value named in prose

# The words of a credential's name in prose, as `str.find` looks for them; a word of a name before it
# (`api key`, `access-token`, `apikey`), and the name then what prose puts between a name and its value
# (`is`, `was`, `:`, `=`, an arrow, quotes).
_PROSE_WORDS = ("key", "token", "secret", "password", "passphrase", "passwd", "passcode", "credential")
# The last words of an environment variable's credential name (`DB_PASS`, `MYSQL_PWD`, `GITHUB_PAT`,
# `X_AUTH`: `is_secret_name`'s) that are no credential's word in prose (`pass the test`, `the path`):
# read only where they end such an identifier (`DB_PASS  V` in a table of variables, fish's `set`).
_IDENTIFIER_WORDS = ("pass", "pwd", "pat", "auth")
# What `str.find` looks for (over a 40 KB record each pass): `pass` finds `password`, `passwd`,
# `passphrase` and `passcode` too.
_PROSE_NEEDLES = ("key", "token", "secret", "credential", *_IDENTIFIER_WORDS)
assert all(word.startswith(_PROSE_NEEDLES) for word in _PROSE_WORDS)
_PROSE_HEAD = (
    r"(?:^|[^a-z0-9_]|\\[ntr])(?:api|access|secret|private|auth|license|signing|client|service)[ -]?$"
)
_PROSE_NAME = (
    r"(?i)(?:key|token|secret|password|passphrase|passwd|passcode|credential|pass|pwd|pat|auth)s?(?![A-Za-z0-9_])"
    r"(?:[ \t]+(?:id|for[ \t]+[\w.-]{1,24}))?"  # `access key id V`, `the API token for prod: V`
    r"(?:\s+(?:is|was|are|were)(?:\s+now)?)?"
    # what prose puts between, or a table's border between two cells (`| HF_TOKEN | V |`, rich's `│`)
    r"(?:[ \t]*(?:[:=]|->|=>|\u2014|\u2013|\\u201[34]|[|\u2502\u2503\u2551])[ \t]*|[ \t]+)(?:\\*['\"`])?"
)
# A dotted name (`t3rl_core.secret.mask_text`, `os.environ`) named after such a word in prose.
_DOTTED_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"


def _dotted(value: str) -> bool:
    """`value` is a dotted name with a word of small letters in it (`os.environ`, `t3rl_core.secret`),
    not a key that holds a dot (`A00000.A`)."""
    return re.fullmatch(_DOTTED_NAME, value) is not None and any(
        part.islower() and part.isalpha() and len(part) >= 3 for part in re.split(r"[._]", value)
    )


_PROSE_VALUE = r"([A-Za-z0-9+/_.~!#$%^&*-]{8,128})"
# Plain words that may follow a bare `key`/`token`/`secret` in prose without naming a value
# (`token ids`, `key point`): a value must hold a letter and a digit anyway.
_NOT_PROSE_VALUES = ("env:", "file:", "${", "***")


def prose_value_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Where prose gives a credential's name a value (`the api key is V`, `password V`): 8+ characters
    with a letter and a digit, not a hash (`token <git sha>`), not a path or a reference. The names are
    found by `str.find` over the lower-cased text and the pattern tried only there (tried at every
    place of a 37 KB eval record it cost ~8 ms). `lower`: `text` lower-cased (once for the module)."""
    spans = []
    for word in _PROSE_NEEDLES:
        at = lower.find(word)
        while at >= 0:
            identifier_only = word in _IDENTIFIER_WORDS and not lower.startswith(_PROSE_WORDS, at)
            found = _prose_value_at(text, lower, at, identifier_only)
            if found is not None:
                spans.append(found)
            at = lower.find(word, at + 1)
    return sorted(set(spans))


def _prose_value_at(text: str, lower: str, at: int, identifier_only: bool = False) -> tuple[int, int] | None:
    """The value a credential's name whose word begins at `at` is given in prose, if any;
    `identifier_only`: the word counts only where it ends an identifier naming a credential."""
    escaped = text[max(0, at - 2) : at] in ("\\n", "\\t", "\\r")  # after a JSON-escaped break
    name = None
    if at and (text[at - 1].isalnum() or text[at - 1] == "_") and not escaped:
        head = re.search(_PROSE_HEAD, lower[max(0, at - 9) : at])
        name = _identifier_ends_with_name(text, at)
        if (head is None or identifier_only) and name is None:
            return None  # inside another word (`monkey`, `tokenizer` ends below), not after `api`/`access`
        name = name or _identifier_at(text, at)  # `signing_key`: a secret's word before `key`
    elif identifier_only:
        return None
    found = re.compile(_PROSE_NAME + _PROSE_VALUE).match(text, at)
    if found is None:
        return None
    # A form's next field (`password=V&user=alice`) is not the value's: `&` is a value's character too.
    start = found.start(1)
    field = re.compile(r"&[\w.-]+=").search(text, start, found.end(1) + 1)
    value = text[start : field.start() if field else found.end(1)].rstrip(".,;:!?")
    # Under an identifier naming a credential a hash is a credential written in hex (`GITHUB_TOKEN
    # <40 hex>`, `db_password <hex>`), as after `=`: only a data key's name (`cache_key`, by
    # `is_hash_under`) keeps one a hash.
    hex_credential = name is not None and not (name.lower().endswith("key") and is_hash_under(name, value))
    named = _named_value(value, hashes=not hex_credential)
    return (start, start + len(value)) if named else None


def _identifier_ends_with_name(text: str, at: int) -> str | None:
    """The identifier that the credential's word at `at` ends, when it names a credential (`HF_TOKEN`,
    `api_key`, `db-password`, `accessToken`; `is_secret_name`, the one judge of a name): joined to what
    is before it by `_` or `-`, or a camelCase word's capital. None otherwise."""
    if not (text[at - 1] in "_-" or (text[at].isupper() and text[at - 1].islower())):
        return None
    name = _identifier_at(text, at)
    return name if is_secret_name(name) else None


def _identifier_at(text: str, at: int) -> str:
    """The identifier whose last word begins at `at` (`signing_key`, `HF_TOKEN`)."""
    start = at
    while start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    end = at
    while end < len(text) and text[end].isalpha():
        end += 1
    return text[start:end]


def _named_value(value: str, hashes: bool = True) -> bool:
    """`value`, given to a credential's name, is one as a name's value is judged in text: 8+ characters
    with a letter and a digit, not a reference, a path, a hash (unless not `hashes`: a name that makes
    one a key's), a number, a version or a dotted name."""
    if len(value) < 8 or value.startswith(_NOT_PROSE_VALUES) or "/" in value.strip("/"):
        return False
    if not (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)):
        return False
    # a digest, a number, a version, a module's or an attribute's name
    if is_hash(value):
        return not hashes  # read as a version too when it begins with a digit
    return not (re.fullmatch(r"[0-9.eE+-]+|v?[0-9][0-9.]*[a-z0-9.+-]*", value) or _dotted(value))


# A markup element (XML, HTML: Maven's settings.xml, a SOAP body) and its text, up to the longest key.
_ELEMENT = r"<((?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*))(?:\s[^<>]*)?>\s*([^<>\s]{1,256})\s*</\1\s*>"


# An element whose `key` or `name` attribute names the value in its `value` attribute or its text (.NET's
# `<add key="Password" value="V"/>`, NuGet's, Java's properties `<entry key="api.key">V</entry>`).
_KEYED = (
    r"""<[A-Za-z_][\w.:-]*\s+(?:key|name)\s*=\s*["']([\w.:-]{1,64})["']"""
    r"""(?:\s+value\s*=\s*["']([^"'<>\s]{1,256})["']|\s*>\s*([^<>\s]{1,256})\s*</)"""
)


def element_value_spans(text: str) -> list[tuple[int, int]]:
    """Where an element named as a credential holds its value (`<password>V</password>`), or names one
    by its `key` or `name` attribute (`<add key="Password" value="V"/>`)."""
    if "</" not in text and "value" not in text:  # most text holds neither: no pattern tried
        return []
    spans = [
        match.span(3)
        for match in re.finditer(_ELEMENT, text)
        if is_secret_name(match.group(2)) and _named_value(match.group(3))
    ]
    for match in re.finditer(_KEYED, text):
        group = 2 if match.group(2) is not None else 3
        if _names_credential(match.group(1)) and _named_value(match.group(group)):
            spans.append(match.span(group))
    return spans


def _names_credential(name: str) -> bool:
    """A record's name field names a credential: the whole (its dots, colons and slashes read as `_`) or
    one of its parts (`api.key`, `/prod/db_password`, `X-Api-Key`)."""
    parts = re.split(r"[.:/]", name)
    return is_secret_name("_".join(part for part in parts if part)) or any(map(is_secret_name, parts))


# A record that keeps a value's name in one field and the value in another: a mapping's `name` (`key`,
# CloudFormation's `ParameterKey`) beside its `value` in either order (a Kubernetes or ECS `env` entry,
# SSM's `Name`/`Value`, a HAR file's header), in JSON, a repr or YAML over lines; and a pair whose first
# item is the name (`[('X-Api-Key', 'V')]`: a header list, aiohttp's raw headers as bytes). The markup
# form is `_KEYED`.
_FIELD_NAME = (
    r"""(?<![\w-])["']?(?:name|key|parameter_?(?:key|name))["']?\s*[:=]\s*["']?([\w.:/-]{1,64})["']?"""
)
_FIELD_VALUE = (
    r"""(?<![\w-])["']?(?:parameter_?)?value["']?\s*[:=]\s*"""
    r"""(?:"((?:[^"\\\n]|\\.){1,256})"|'([^'\n]{1,256})'|([^\s"',}\]]{1,256}))"""
)
_NAMED_FIELDS = (
    rf"(?i){_FIELD_NAME}\s*,?\s*{_FIELD_VALUE}",
    rf"(?i){_FIELD_VALUE}\s*,?\s*{_FIELD_NAME}",
)
# The most a name's field (`_FIELD_NAME`: a quoted name of 64 characters and its signs) spans.
_FIELD_SPAN = 100
# A quoted item that names a credential and the quoted item after it: a pair (`('X-Api-Key', 'V')`), a
# call's arguments (`setenv("API_KEY", "V", 1)`, `config.set("auth", "token", "V")`, Redis'
# `hset("creds", "password", "V")`), a list written out.
_NAMED_ITEM = r"""b?(["'])([\w.:-]{1,64})\1\s*,\s*b?(["'])((?:(?!\3)[^\\\n]|\\.){1,256})\3"""
# A call of a setter named for a credential (`ds.setPassword("V")`, `client.setApiKey("V")`,
# `withToken("V")`, keyring's `set_password("svc", "alice", "V")`): its last argument, quoted.
_SETTER = r"(?:set|with|put|store|save|update)_?[A-Za-z]\w*"
_SETTER_CALL = (
    r"""\(\s*(?:b?(?:"[^"\n]*"|'[^'\n]*')\s*,\s*){0,4}b?(["'])((?:(?!\1)[^\\\n]|\\.){1,256})\1\s*\)"""
)


def named_field_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Where a record names a credential in one field and holds its value in another
    (`{"name": "DB_PASSWORD", "value": "V"}`, `- name: API_TOKEN` above `value: V`), the value judged as
    a name's (`_named_value`); an item's after its name (`('X-Api-Key', 'V')`) is `item_value_span`'s."""
    spans = set()
    # Tried around each `value` (found by `str.find`: one in an eval record of 40 KB on average), not at
    # every place of the text (~2 ms a record): the name's field within a field's length before it, the
    # value within its own after it; a window begins at a word's start, as the look-behind needs.
    at = lower.find("value")
    while at >= 0:
        for order, pattern in enumerate(_NAMED_FIELDS):
            start = max(0, at - (_FIELD_SPAN if order == 0 else 12))
            while start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
                start -= 1
            for match in re.compile(pattern).finditer(text, start, at + 2 * _FIELD_SPAN):
                name, values = (match.group(1), (2, 3, 4)) if order == 0 else (match.group(4), (1, 2, 3))
                group = next(g for g in values if match.group(g) is not None)
                if _names_credential(name) and _named_value(match.group(group)):
                    spans.add(match.span(group))
        at = lower.find("value", at + 5)
    return sorted(spans)


def item_value_span(text: str, at: int) -> tuple[int, int] | None:
    """The value given to the credential's name whose word stands at `at` as a quoted item followed by
    another (`('X-Api-Key', 'V')`, `setenv("API_KEY", "V", 1)`), or as a setter's name (`setPassword("V")`):
    tried where t3rl_core.secret_shapes finds each name's word already, so no more passes over the text."""
    end = at
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    start = at
    while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    if (
        text.startswith("(", end)
        and re.fullmatch(_SETTER, text[start:end])
        and is_secret_name(text[start:end])
    ):
        call = re.compile(_SETTER_CALL).match(text, end)
        if call is not None and _named_value(call.group(2)):
            return call.span(2)
        return None
    quote = max(text.rfind("'", max(0, at - 64), at), text.rfind('"', max(0, at - 64), at))
    if quote < 0:
        return None
    match = re.compile(_NAMED_ITEM).match(text, quote - (text[quote - 1 : quote] == "b"))
    if match is None or not (_names_credential(match.group(2)) and _named_value(match.group(4))):
        return None
    return match.span(4)


# ------------------------------------------------------------------ a table's column named as a credential

# What parts a table's cells: CSV's comma, TSV's tab, a semicolon (CSV in locales whose decimal sign is a
# comma), and the bars of Markdown and of rich's and psql's borders (a header's `┃` above a row's `│`).
_CELL_SEPARATORS = (",", "\t", ";", "|")
_BARS = str.maketrans("│┃║", "|||")
# A rule between a table's header and its rows (`|---|:--:|`, `━━━╇━━━`, psql's `-----+-----`).
# The most cells a header line has: a table's, not a record's.
_MOST_CELLS = 64
_RULE = r"[\s|:+\-\u2500-\u257f]*"  # the box-drawing block


def column_value_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Where a table (CSV, TSV, Markdown, a rich or psql table) holds a value in a column whose header
    names a credential (`User name,Password` above `alice,V`: AWS's credentials.csv; `| user | token |`),
    in each row below the header with as many cells, the value judged as a name's (`_named_value`).
    Only lines holding a credential's word are read as a header."""
    if text.find("\n", 0, len(text) - 1) < 0:  # one line, with its line break or not
        return []
    words = [at for word in (*_PROSE_WORDS, "pass", "pwd", "auth") for at in _finds(lower, word)]
    if not words:
        return []
    lines = text.translate(_BARS).split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    spans = []
    for index in sorted({bisect.bisect_right(starts, at) - 1 for at in words}):
        header = lines[index]
        # A header is a short line of a few cells with a row of as many below it (a JSON record of 40 KB
        # and a line break is not one: each of its thousands of commas was judged as a name's end).
        below = next(
            (lines[i] for i in range(index + 1, len(lines)) if not re.fullmatch(_RULE, lines[i])), ""
        )
        for separator in _CELL_SEPARATORS:
            count = header.count(separator)
            if not 1 <= count <= _MOST_CELLS or below.count(separator) != count:
                continue
            cells = _cells(header, separator)
            named = [i for i, (a, b) in enumerate(cells) if _names_column(header[a:b])]
            for row in range(index + 1, len(lines)) if named else ():
                if re.fullmatch(_RULE, lines[row]):
                    continue
                found = _cells(lines[row], separator)
                if len(found) != len(cells):
                    break
                for i in named:
                    a, b = found[i]
                    if _named_value(lines[row][a:b]):
                        spans.append((starts[row] + a, starts[row] + b))
        if len(header) <= _ALIGNED_WIDTH and not any(separator in header for separator in _CELL_SEPARATORS):
            spans += [(starts[row] + a, starts[row] + b) for row, a, b in _aligned_values(lines, index)]
    return spans


# A table laid out by spaces alone (pandas' print of a frame, `column -t`, kubectl's custom columns):
# cells parted by two spaces or more, a column's cells standing under its header (left-, right- or
# centre-aligned), at most this wide a line.
_ALIGNED_CELL = re.compile(r"\S+(?: \S+)*")
# A header's cell: a column's name (`User name`, `password`, `ACCESS_KEY`, `Secret access key (s3)`).
_COLUMN_NAME = r"[A-Za-z_][\w .()/-]{0,63}"
_ALIGNED_WIDTH = 512


def _aligned_values(lines: list[str], index: int) -> list[tuple[int, int, int]]:
    """(row, start, end) of each value under a header cell of `lines[index]` that names a credential,
    in the rows below it up to a blank line: the row's cell that overlaps the header cell's columns
    most, judged as a name's value (`_named_value`)."""
    header = lines[index].expandtabs()
    cells = [found.span() for found in _ALIGNED_CELL.finditer(header)]
    named = [(a, b) for a, b in cells if _names_column(header[a:b])]
    if not named or not 2 <= len(cells) <= _MOST_CELLS:
        return []
    if not all(re.fullmatch(_COLUMN_NAME, header[a:b]) for a, b in cells):
        return []  # a line of code or YAML with a comment after two spaces (`kind: TokenKind  # the token`)
    values = []
    for row in range(index + 1, len(lines)):
        line = lines[row]
        if not line.strip() or "\t" in line or len(line) > _ALIGNED_WIDTH:
            break
        found = [match.span() for match in _ALIGNED_CELL.finditer(line)]
        if len(found) < 2:
            break
        for a, b in named:
            overlap = max(found, key=lambda span: min(span[1], b) - max(span[0], a))
            if min(overlap[1], b) > max(overlap[0], a) and _named_value(line[overlap[0] : overlap[1]]):
                values.append((row, *overlap))
    return values


def _cells(line: str, separator: str) -> list[tuple[int, int]]:
    """The spans of `line`'s cells parted by `separator`, their padding and quotes left out."""
    if separator not in line:
        return []
    cells, start = [], 0
    for part in line.split(separator):
        stripped = part.strip().strip("\"'")
        at = part.find(stripped) if stripped else 0
        cells.append((start + at, start + at + len(stripped)))
        start += len(part) + 1
    return cells


def _names_column(header: str) -> bool:
    """A table's header cell names a credential (`Password`, `Secret access key`, `api_key`)."""
    return 0 < len(header) <= 64 and is_secret_name(re.sub(r"[\s-]+", "_", header.strip()))


# pydantic's line for one error: its location on the line above, the value as a repr after `input_value=`.
_INPUT_VALUE = r"""input_value=(?:'((?:[^'\\\n]|\\.){1,256})'|"((?:[^"\\\n]|\\.){1,256})")"""


def validation_input_spans(text: str) -> list[tuple[int, int]]:
    """Where a pydantic ValidationError shows the value it refused for a field whose location names a
    credential (`db.password` above `… [type=string_too_long, input_value='V', input_type=str]`): the
    location and the value are on two lines, so no name stands beside the value."""
    spans = []
    at = text.find("input_value=")
    while at >= 0:
        line = text.rfind("\n", 0, at)
        location = text[text.rfind("\n", 0, max(line, 0)) + 1 : max(line, 0)].strip()
        found = re.compile(_INPUT_VALUE).match(text, at)
        if (
            found is not None
            and any(is_secret_name(part) for part in re.split(r"[.\s]+", location) if not part.isdigit())
            and _named_value(found.group(1) or found.group(2) or "")
        ):
            spans.append(found.span(1) if found.group(1) is not None else found.span(2))
        at = text.find("input_value=", at + 1)
    return spans


# ------------------------------------------------------------------ a key folded over lines

# A line's break as written, or JSON-escaped (an eval record's error, masked as its line is written).
_BREAK = r"[ \t]*(?:\r?\n|(?:\\r)?\\n)"
_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=-")
# A continuation may begin with `-` or `_` (base64url), not with `- ` (a YAML list's item).
_PIECE_START = r"(?:[ \t]|\\t)*((?!-[-\s])[A-Za-z0-9_+/-][A-Za-z0-9+/_=-]*)"
_PEM_WIDTHS = (64, 76)
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def folded_key_spans(text: str) -> list[tuple[int, int]]:
    """The pieces of each key `text` folds over lines (a renderer's width, a YAML scalar's folding):
    runs each ending a line and starting the next (after its indentation) that read as one key joined,
    standing alone, when one piece alone is 32+ characters or every continuation line is indented. A
    public PEM body's lines (64 or 76 wide from the line's start) are not joined. The line breaks are
    found first and each run read back from its break (a pattern tried at every place cost ~10 ms an
    eval record)."""
    if "\n" not in text and "\\n" not in text:
        return []
    spans: list[tuple[int, int]] = []
    done = 0
    for brk_start, brk_end in _breaks(text):
        end = brk_start
        while end > done and text[end - 1] in " \t":
            end -= 1
        first = end
        while first > done and (text[first - 1] in _RUN_CHARS):
            first -= 1
        if first and text[first - 1] == "\\" and text[first : first + 1] in ("n", "r", "t"):
            first += 1  # the run begins after a JSON-escaped break (`\\n<piece>`)
        while first < end and not text[first].isalnum():
            first += 1
        if first >= end:
            continue
        pieces = [(first, end)]
        indented, margin, cursor, length = True, "", brk_end, end - first
        while True:
            start_match = re.compile(_PIECE_START).match(text, cursor)
            if start_match is None or not start_match.group(1):
                break
            indent = text[cursor : start_match.start(1)]
            if len(pieces) > 1 and indent != margin:
                break  # a fold keeps one margin: a line indented otherwise is the next item
            if _own_line(text, start_match.start(1)):
                break  # `Status: ok`, `Initial setup done` below a key: the next line's text
            margin = indent
            indented = indented and bool(indent)
            pieces.append(start_match.span(1))
            length += start_match.end(1) - start_match.start(1)
            if length > _LONGEST + 2:
                break  # longer than any key joined: each break walks at most a key's length on
            next_line = re.compile(_BREAK).match(text, start_match.end(1))
            if next_line is None:
                break
            cursor = next_line.end()
        if len(pieces) > 1 and _folded_key(text, pieces, indented):
            spans += pieces
            done = pieces[-1][1]
    return spans


def _own_line(text: str, at: int) -> bool:
    """The line from `at` begins as a record of its own (secret_pieces.PROSE_FIRST, the one reading of it
    every fold rule shares: a word of prose, a number, an assignment, a flag, a path), read to its end."""
    ends = [end for end in (text.find("\n", at), text.find("\\n", at), text.find("\r", at)) if end >= 0]
    return re.compile(PROSE_FIRST).match(text, at, min(ends, default=len(text))) is not None


def _breaks(text: str) -> list[tuple[int, int]]:
    """Each line break of `text`, written or JSON-escaped (`\\r` before it included), in order: found by
    `str.find` (a pattern with an optional `\\r` first tried every place, ~3.7 ms an eval record)."""
    found = []
    for needle, back in (("\n", "\r"), ("\\n", "\\r")):
        at = text.find(needle)
        while at >= 0:
            start = at - len(back) if text.startswith(back, at - len(back)) and at >= len(back) else at
            found.append((start, at + len(needle)))
            at = text.find(needle, at + 1)
    return sorted(found)


def _folded_key(text: str, pieces: list[tuple[int, int]], indented: bool) -> bool:
    first_start, last_end = pieces[0][0], pieces[-1][1]
    joined = "".join(text[a:b] for a, b in pieces)
    if not 32 <= len(joined.rstrip("=")) <= _LONGEST:
        return False
    if first_start and (text[first_start - 1].isalnum() or text[first_start - 1] in "_-./@%&\\"):
        return False
    if last_end < len(text) and (text[last_end].isalnum() or text[last_end] in "_-.@/"):
        return False
    if any(not _key_piece(text[a:b]) for a, b in pieces):
        return False
    # A line's run is measured from its first base64 character: the first piece begins at a letter or a
    # digit, and a PEM line may begin with `+` or `/` (one in 32).
    widths = {b - _base64_start(text, a) for a, b in pieces[:-1]}
    if len(widths) == 1 and widths <= set(_PEM_WIDTHS):
        return False
    if "-----BEGIN " in text and any(a <= first_start < b for a, b in _public_blocks(text)):
        return False  # a certificate's or a public key's body, whatever its width
    if not (is_bare_key(joined) or is_url_key(joined)):
        return False
    return indented or any(b - a >= 32 for a, b in pieces)


def _base64_start(text: str, at: int) -> int:
    """Where the run of base64 characters holding the character at `at` begins."""
    while at and text[at - 1] in _BASE64:
        at -= 1
    return at


def _key_piece(piece: str) -> bool:
    """`piece` may be part of a key: not a hash or a UUID in hex on its own line (a list of ids one a
    line), nor a name with a random part (`raysubmit_…`, `run_…`)."""
    if len(piece) >= 8 and re.fullmatch(r"[0-9a-f-]+|[0-9A-F-]+", piece.rstrip("=")) is not None:
        return False
    # A name's word then a separator begins a name (`raysubmit_…`, `run-…`); elsewhere a piece may hold
    # a word by chance (`Ynozp1`, `_Jsi`): the key's look is the whole's (`is_url_key`).
    head = re.match(r"([A-Za-z0-9]+)[-_]", piece)
    return head is None or not (_word(head.group(1)) and re.search("[aeiouyAEIOUY]", head.group(1)))


# ------------------------------------------------------------------ user:password@host in prose

# A bare name's user information in a sentence: the user after a space (or the text's start), a password
# of 4+ characters, a bare host followed by the end, a space or a sentence's sign and then a space.
_PROSE_USERINFO = (
    r"(?:(?<![^\s(\"'`])|(?<=\\[nrt]))([A-Za-z][A-Za-z0-9._-]{2,31}):([^\s:@/'\"`<>]{4,64})@([A-Za-z][A-Za-z0-9-]{0,62})"
    r"(?=\Z|\s|[\"'`]|\\[nrt\"]|[.,;!?)](?:\Z|\s|[\"'`]|\\[nrt\"]))"
)
# Words a mail's subject or a URI puts before `:` (`Re:hello@team`, `Fwd:`, `mailto:`), not users.
_NOT_PROSE_USERS = frozenset(
    {
        "mailto",
        "sip",
        "sips",
        "xmpp",
        "tel",
        "urn",
        "news",
        "data",
        "fwd",
        "reply",
        "attn",
        "subject",
        "from",
        "email",
        "mail",
        "contact",
        "note",
        "ping",
        "bcc",
        "via",
        "see",
        "cc",
        "to",
        "re",
        "fw",
        "aw",
        "sv",
        "tag",
        "image",
        "docker",
        "git",
        "ssh",
        "http",
        "https",
    }
)
_PLACEHOLDER_USERS = frozenset({"user", "username", "usr", "login", "name"})
_PLACEHOLDERS = frozenset({"pw", "pwd", "pass", "passwd", "password", "secret", "xxx", "xxxx"})


def prose_userinfo_spans(text: str) -> list[tuple[int, int]]:
    """Where a sentence holds `user:password@host` with a bare host, whatever the password: its span."""
    if "@" not in text or ":" not in text:
        return []

    spans = []
    for found in _userinfo_at_signs(text):
        user, password = found.group(1), found.group(2)
        if user.lower() in _NOT_PROSE_USERS or password.startswith(("***", "$", "env:", "file:", "=")):
            continue
        if user.lower() in _PLACEHOLDER_USERS and password.lower() in _PLACEHOLDERS:
            continue
        if is_hash(f"{user}:{password}") or in_code(text, found.start(1)):
            continue
        spans.append(found.span(2))
    return spans


def _userinfo_at_signs(text: str) -> list[re.Match[str]]:
    """`_PROSE_USERINFO` tried where its `@` stands (found by `str.find`), from the window before it:
    tried at every place of a 37 KB eval record it cost ~0.5 ms."""
    found = []
    at = text.find("@")
    while at >= 0:
        start = max(0, at - 100)
        match = None
        for user_start in _user_starts(text, start, at):
            match = re.compile(_PROSE_USERINFO).match(text, user_start)
            if match is not None:
                found.append(match)
                break
        at = text.find("@", (match.end() if match else at) + 1)
    return found


def _user_starts(text: str, start: int, at: int) -> list[int]:
    """Where a user may begin before the `@` at `at`: after the last space, quote or JSON-escaped break
    of the window (a password holds none), or after any `(` since (a password may hold one), or at the
    text's start."""
    cut = max(text.rfind(sign, start, at) for sign in (" ", "\t", "\n", '"', "'", "`"))
    escaped = max(text.rfind(sign, start, at) for sign in ("\\n", "\\t", "\\r"))
    first = max(cut + 1, escaped + 2) if max(cut, escaped) >= 0 else (0 if start == 0 else at)
    starts = [first]
    paren = text.find("(", first, at)
    while paren >= 0:
        starts.append(paren + 1)
        paren = text.find("(", paren + 1, at)
    return starts


# ------------------------------------------------------------------ a webhook's key in a URL's path

# A webhook's URL is its credential: whoever has it posts as the hook (Slack's
# `hooks.slack.com/services/T…/B…/<key>`, Discord's `…/api/webhooks/<id>/<key>`, Teams'
# `…/IncomingWebhook/<key>/…`). Its key is a path segment after the hook's word.
_HOOK_URL = r"(?i)https?://([^\s/'\"<>\\]+)(/[^\s?#'\"<>\\]*)"
_HOOK_WORDS = frozenset({"webhook", "webhooks", "hooks", "incomingwebhook"})
# Hosts whose URLs carry a credential in their path by the service's own convention, and the segment
# before it ("": the path's first): Anaconda's private channels (`conda.anaconda.org/t/<token>/<channel>`,
# in a `.condarc` or an environment.yml), Gemfury's indexes (`pypi.fury.io/<token>/<user>/`). The segment
# is the credential whatever it looks like (8+ characters, a letter and a digit), where a segment follows.
PATH_TOKEN_HOSTS = (("anaconda.org", "t"), ("anaconda.cloud", "t"), ("fury.io", ""))


def webhook_spans(text: str) -> list[tuple[int, int]]:
    """Where a webhook's URL holds its key: each path segment after the hook's word (or any, on a
    hook's host: `hooks.slack.com`) of 16+ characters, small and capital letters and a digit, random,
    not words (the hook's ids, digits or capitals alone, stay); and where a host of `PATH_TOKEN_HOSTS`
    holds its token."""
    if "://" not in text:
        return []
    lower = text.lower()
    if "hook" not in lower and "anaconda." not in lower and "fury.io" not in lower:
        return []
    spans = []
    for url in re.finditer(_HOOK_URL, text):
        token = _path_token_span(url)
        if token is not None:
            spans.append(token)
            continue
        at = url.start(2) if "hook" in url.group(1).lower() else None
        offset = url.start(2)
        for part in url.group(2).split("/"):
            if at is None and part.lower() in _HOOK_WORDS:
                at = offset
            elif at is not None and _hook_key(part):
                spans.append((offset, offset + len(part)))
            offset += len(part) + 1
    return spans


def _path_token_span(url: re.Match[str]) -> tuple[int, int] | None:
    """The span of the token a host of `PATH_TOKEN_HOSTS` carries in `url`'s path, if it is there."""
    host = url.group(1).lower().rsplit("@", 1)[-1].split(":", 1)[0]
    for suffix, before in PATH_TOKEN_HOSTS:
        if host != suffix and not host.endswith("." + suffix):
            continue
        parts = url.group(2).split("/")[1:]
        index = 0 if before == "" else parts.index(before) + 1 if before in parts[:-1] else None
        if index is None:
            return None
        part = parts[index]
        # The token stands before what it opens (a channel, a user's index): `pypi.fury.io/alice1/` is
        # a user's public index.
        opens = index + 1 < len(parts) and parts[index + 1] != ""
        if opens and len(part) >= 8 and _mixed(part):  # the mask (`***`) holds neither
            start = url.start(2) + 1 + sum(len(p) + 1 for p in parts[:index])
            return start, start + len(part)
        return None
    return None


def _hook_key(part: str) -> bool:
    if len(part) < 16 or re.fullmatch(r"[A-Za-z0-9_-]+", part) is None or _reads_as_words(part):
        return False
    mixed = all(any(map(kind, part)) for kind in (str.isupper, str.islower, str.isdigit))
    return mixed and looks_like_credential(part)


# ------------------------------------------------------------------ an entry's value over its line and below

# The words every credential's name holds (`is_secret_name`'s), found by `str.find`: only their lines
# are read as an entry.
_ENTRY_WORDS = ("key", "token", "secret", "pass", "pwd", "auth", "cred", "pat")
# A line's entry: indentation, a list's dash, `export`, the name (quoted or not, a dotted override's),
# its sign and what follows on the line.
_ENTRY = re.compile(
    r"([ \t]*)(?:-[ \t]+)?(?:export[ \t]+)?([\"']?)([A-Za-z_][\w.-]{0,127})\2"
    r"[ \t]*(=>|[:?+]=|:|=)[ \t]*(\S[^\r\n\0]*?)[ \t]*(?=\r?\n|\0|\Z)"
)
_BLOCK_INDICATOR = re.compile(r"[|>][+-]?[0-9]?[+-]?[ \t]*(?:#.*)?")
# What a plain value may not begin with: a quoted, flow, anchored or tagged value, a comment (the
# readers of quoted values and of mappings read those), and a reference's or the mask's signs.
_NOT_PLAIN_START = "'\"{[&*!#%@`"
_NOT_VALUES = ("env:", "file:", "${", "$(", "***")
# Code's signs in the value: a line of code (`api_key = load_key(3, cfg)`, `last_token = ids[-1] if ids
# else None` in a traceback, a parameter's annotation `token: str = "0"`), or a sentence's aside.
_CODE = re.compile(r"[()\[\]{}]|\s(?:if|else|for|in|and|or|not|lambda|await|return)\s|\s=\s|==")
_LONGEST_VALUE = 4096


def entry_value_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Where an entry at a line's start names a credential (`is_secret_name`, of a dotted name its last
    part) and its value holds a space or goes on over the lines below (indented further than the
    entry: a YAML block scalar, a plain scalar continued): the whole value, judged as a name's is (8+
    characters besides spaces, a letter and a digit; not a reference, nor a special token `<…>`). A
    value of one word on its line is the other readers' (`HF_TOKEN=V`)."""
    if text.find("\n", 0, len(text) - 1) < 0 and SEPARATOR not in text:  # one line (an eval's record)
        starts = {0}
    else:  # a line begins a text of its own too, where texts are scanned joined (`SEPARATOR`)
        starts = {
            max(text.rfind("\n", 0, at), text.rfind(SEPARATOR, 0, at)) + 1
            for word in _ENTRY_WORDS
            for at in _finds(lower, word)
        }
    spans = []
    for start in sorted(starts):
        found = _ENTRY.match(text, start)
        if found is None or not is_secret_name(found.group(3).rsplit(".", 1)[-1]):
            continue
        indent, rest = len(found.group(1).expandtabs()), found.group(5)
        block = _BLOCK_INDICATOR.fullmatch(rest) is not None and found.group(4) == ":"
        if rest[0] in _NOT_PLAIN_START and not block:
            continue
        below = _indented_below(text, found.end(), indent)
        if block:
            if below is None:
                continue
            span = below
        else:
            rest = re.split(r"[ \t]#", rest, maxsplit=1)[0]  # a comment ends a plain value
            span = (found.start(5), found.start(5) + len(rest))
            if below is not None and found.group(4) == ":" and _pieces(text[span[0] : below[1]]):
                span = (span[0], below[1])  # a key's pieces, one a line (a list item's prose stays)
            elif " " not in rest and "\t" not in rest:
                continue
        value = text[span[0] : span[1]]
        if _named(value):
            spans.append(span)
    return spans


def block_entry_indent(line: str) -> int | None:
    """The indentation of `line` (one line, no line break) when it opens a YAML block scalar under a
    credential's name (`  password: >-`, `api_key: |`), else None."""
    found = _ENTRY.fullmatch(line)
    if found is None or found.group(4) != ":" or _BLOCK_INDICATOR.fullmatch(found.group(5)) is None:
        return None
    return len(found.group(1).expandtabs()) if is_secret_name(found.group(3).rsplit(".", 1)[-1]) else None


def block_entry_in(text: str) -> bool:
    """Some line of `text` may open a YAML block scalar under a credential's name (`block_entry_indent`)."""
    if "|" not in text and ">" not in text:
        return False
    return any(block_entry_indent(line) is not None for line in text.splitlines())


def _indented_below(text: str, end: int, indent: int) -> tuple[int, int] | None:
    """The span of the lines after `end` (a line's end) indented further than `indent`, blank lines
    between them included: from the first's first character to the last's last; None when the next
    line is not indented so."""
    first = last = None
    at = end
    while at < len(text) and at - end <= _LONGEST_VALUE:
        at = text.find("\n", at) + 1
        if at == 0:
            break
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        line = text[at:line_end].rstrip("\r \t")
        if not line:
            at = line_end
            continue
        stripped = line.lstrip(" \t")
        if len(line[: len(line) - len(stripped)].expandtabs()) <= indent:
            break
        first = at + len(line) - len(stripped) if first is None else first
        last = at + len(line)
        at = line_end
    return None if first is None or last is None else (first, last)


# A count (`3 of 10 used`, `12 out of 20`, `3/10 used`, `1,024 left`, `100 requests/min`, `8 characters
# min`, `50% used`, `12+ characters with 1 digit`): numbers, the words that relate them, and the words of
# a count's table below, which a usage line, a limit or a password's rule gives a credential's name
# (`Token: 3 of 10 used`, `Password: 3 attempts left`, `Password: at least 8 chars, 1 digit`). A
# passphrase holds a word of no count (`my dog 1234 rex`, `it's 1234 go now`).
_NUMBER = r"[0-9][0-9,._]*(?:[kKmMgG%+]|[smh]\b)?"
_COUNT_WORDS = (
    "of|out|per|in|and|a|an|the|max|min|maximum|minimum|at|most|least|left|used|remaining|total|limit"
    "|requests?|calls?|attempts?|tries|try|retries|keys?|tokens?|characters?|chars?|bytes?|days?|hours?"
    "|minutes?|mins?|seconds?|secs?|weeks?|months?|uses?|sessions?|quota|budget|active|expired|valid|free"
    "|with|long|digits?|letters?|symbols?|numbers?|uppercase|lowercase|special"
)
# Compiled on first use through re's cache: ~1.6 ms, a tenth of the secret modules' import, for the few
# values under a credential's name.
_COUNT = rf"(?i)(?:\(?(?:{_NUMBER}|(?:{_COUNT_WORDS})(?:/(?:{_COUNT_WORDS}))?|/)[).,;:]?(?:\s+|/|$))+"


def is_count(value: str) -> bool:
    """`value` reads as a count: numbers and `_COUNT_WORDS` only, a number among them."""
    return re.fullmatch(_COUNT, value.strip()) is not None and re.search("[0-9]", value) is not None


def _named(value: str) -> bool:
    """`value`, an entry's, is a credential as a name's value is judged in text, and no count."""
    joined = "".join(value.split())
    return (
        len(joined) >= 8
        and not joined.startswith(_NOT_VALUES)
        and joined[0] + joined[-1] != "<>"
        and _CODE.search(value) is None
        and not is_count(value)
        and any(c.isalpha() for c in joined)
        and any(c.isdigit() for c in joined)
    )


def _pieces(value: str) -> bool:
    """`value`, over lines, is one word a line (a key folded as YAML continues a plain scalar)."""
    return all(len(line.split()) <= 1 for line in value.splitlines())


def _finds(text: str, word: str) -> list[int]:
    """Where `word` stands in `text` (`str.find`, from each end on)."""
    found, at = [], text.find(word)
    while at >= 0:
        found.append(at)
        at = text.find(word, at + len(word))
    return found


# ------------------------------------------------------------------ session cookies

# The session cookies of web frameworks, by their default names (lower-cased): each value is a login
# to the site as whoever it belongs to. A plain `session_id` (a rollout's own, one per episode) is none.
SESSION_COOKIES = (
    "phpsessid",  # PHP
    "jsessionid",  # Java servlets (Tomcat, Jetty, Spring)
    "sessionid",  # Django
    "connect.sid",  # Express
    "laravel_session",  # Laravel
    "asp.net_sessionid",  # ASP.NET
    "ci_session",  # CodeIgniter
    "rack.session",  # Rack, Sinatra
    "_session_id",  # Rails' default store
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
# Each name found by a piece it shares with others (one `str.find` over a 40 KB record each): the
# names holding it, with where it stands in each.
_COOKIE_NEEDLES = tuple(
    (needle, tuple((name, name.index(needle)) for name in SESSION_COOKIES if needle in name))
    for needle in ("sess", ".sid")
)
assert all(any(needle in name for needle, _ in _COOKIE_NEEDLES) for name in SESSION_COOKIES)
# After a cookie's name: its sign (in a header, a URL's `;jsessionid=`, a mapping's `': '`) and value.
_COOKIE_VALUE = re.compile(r"""['"]?[ \t]*[:=][ \t]*['"]?([A-Za-z0-9%._:+/=-]{16,512})""")
# A cookie jar's repr (`requests`, `http.cookiejar`): every cookie is the site's state for its user.
_JAR_COOKIE = re.compile(r"<Cookie ([^\s=<>]{1,128})=([^\s<>]{8,4096}) for ")
# curl's and wget's cookie options with the cookies themselves (a name and `=`; without `=` it is a file).
_COOKIE_OPTION = re.compile(r"""(?:-b|--cookie)(?:[ \t]+|=)(?:'([^'\n]*)'|"([^"\n]*)"|(\S+))""")
_PAIR = re.compile(r"([^=;\s]+)=([^;\s]*)")
# A mapping of cookies in each of its layouts: a flow mapping on one line or over several
# (`cookies={'session': 'V'}`, httpx's `Cookies({…})`, JSON's `"cookies": {…}`, a dict printed one item
# a line), and a block mapping below a `cookies:` entry (YAML, each `name: V` indented further).
_COOKIE_MAPPING = re.compile(r"""cookies['"]?\)?\s*(?:[=:(]\s*)+\{([^{}]{0,4096})\}""", re.IGNORECASE)
_COOKIE_BLOCK = re.compile(r"""cookies['"]?[ \t]*:[ \t]*(?:#[^\n]*)?(?=\r?\n)""", re.IGNORECASE)
_BLOCK_ITEM = re.compile(
    r"""[ \t]+(['"]?)[^\s'":#]{1,128}\1[ \t]*:[ \t]*(['"]?)([^\s'"#]{8,4096})\2[ \t]*\r?"""
)
_ITEM = re.compile(r"""(['"])([^'"\n]{1,128})\1[ \t]*:[ \t]*(['"])((?:(?!\3)[^\\\n]|\\.){8,4096})\3""")


def cookie_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Where `text` gives a session cookie's value (`SESSION_COOKIES`, 16+ characters with a letter and a
    digit), or a cookie's value of 8+ characters where it says it is a cookie (a jar's repr, `curl -b`,
    a mapping of cookies)."""
    spans = []
    for needle, names in _COOKIE_NEEDLES:
        for at in _finds(lower, needle):
            for name, offset in names:
                start, end = at - offset, at - offset + len(name)
                if start < 0 or not lower.startswith(name, start):
                    continue
                if (start and lower[start - 1] in _NAME_CHARS) or lower[end : end + 1] in _NAME_CHARS:
                    continue
                found = _COOKIE_VALUE.match(text, end)
                if found is not None and _mixed(found.group(1)):
                    spans.append(found.span(1))
    if "<cookie " in lower:
        spans += [found.span(2) for found in _JAR_COOKIE.finditer(text)]
    options = [at + 1 for at in _finds(text, " -b") + _finds(text, " --cookie")]
    for at in [0, *options] if text.startswith(("-b", "--cookie")) else options:
        found = _COOKIE_OPTION.match(text, at)
        if found is not None:
            group = next(i for i in (1, 2, 3) if found.group(i) is not None)
            base = found.start(group)
            spans += [
                (base + pair.start(2), base + pair.end(2))
                for pair in _PAIR.finditer(found.group(group))
                if len(pair.group(2)) >= 8
            ]
    for at in _finds(lower, "cookies"):
        found = _COOKIE_MAPPING.match(text, at)
        if found is not None:
            base = found.start(1)
            spans += [(base + item.start(4), base + item.end(4)) for item in _ITEM.finditer(found.group(1))]
        elif (block := _COOKIE_BLOCK.match(text, at)) is not None:
            spans += _block_cookie_spans(text, at, block.end())
    return spans


def _block_cookie_spans(text: str, entry: int, end: int) -> list[tuple[int, int]]:
    """The values of 8+ characters with a letter and a digit of the block mapping below the `cookies:`
    entry at `entry` (its line ending at `end`): the lines indented further than the entry's."""
    before = text[text.rfind("\n", 0, entry) + 1 : entry]  # the entry's indentation (and a list's dash)
    indent = len(before.expandtabs()) - len(before.lstrip(" \t-").expandtabs())
    spans, at = [], end
    while at < len(text):
        at = text.find("\n", at) + 1
        if at == 0:
            break
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        line = text[at:line_end]
        body = line.lstrip(" \t")
        if body.strip() and len(line[: len(line) - len(body)].expandtabs()) <= indent:
            break
        item = _BLOCK_ITEM.fullmatch(line)
        if item is not None and _mixed(item.group(3)):
            spans.append((at + item.start(3), at + item.end(3)))
        at = line_end
    return spans


def _mixed(value: str) -> bool:
    return any(c.isalpha() for c in value) and any(c.isdigit() for c in value)


# A JSON Web Key's private members (RFC 7518 section 6: an RSA key's `d`, `p`, `q`, `dp`, `dq`, `qi`, an EC
# or OKP key's `d`, a symmetric key's `k`), as a key set a service prints or a record quotes holds them:
# the key itself, whatever its length (an RSA key's `d` is 342+ characters, past a bare key's 256). Its
# public members (`n`, `e`, `x`, `y`, `crv`, `kid`) stay.
JWK_PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "k")
# Documents whose members are credentials by the document they stand in, known by a member beside them:
# the mark (searched for), the members that hold one and the look of their value. A JSON Web Key (`kty`);
# Kaggle's `kaggle.json` (wave ten: `{"username": …, "key": "<32 hex>"}`, whose hex key under `key` alone
# reads as a data key's hash). Read in the object where the mark stands, its quotes JSON-escaped too;
# pattern strings compiled on first use.
CREDENTIAL_DOCUMENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "kty": (JWK_PRIVATE, r"[A-Za-z0-9_-]{16,}"),
    "username": (("key",), r"[0-9a-f]{32}"),
}


def _member(members: tuple[str, ...], value: str) -> str:
    return rf"""(\\*["'])(?:{"|".join(members)})\1\s*:\s*\\*["']({value})(?![A-Za-z0-9_-])"""


def jwk_private_spans(text: str) -> list[tuple[int, int]]:
    """The values of the credential members of each document of `CREDENTIAL_DOCUMENTS` in `text` (a JSON
    Web Key's private members, Kaggle's key), in the object its mark stands in, not one nested in it."""
    spans: list[tuple[int, int]] = []
    for mark, (members, value) in CREDENTIAL_DOCUMENTS.items():
        at = text.find(mark)
        while at >= 0:
            start, end = text.rfind("{", 0, at), text.find("}", at)
            start, end = max(start, 0), len(text) if end < 0 else end
            member = re.compile(_member(members, value))
            spans += [
                found.span(2)
                for found in member.finditer(text, start, end)
                if "{" not in text[min(at, found.start()) : max(at, found.start())]
            ]
            at = text.find(mark, end)
    return spans


# The same mappings as a line-by-line copier sees them (`secret_shapes.PemLines`): a line that opens one
# and leaves it open (`cookies:` above its block, `"cookies": {` or `cookies={` above its items), and the
# items of each line below it, read as `cookie_spans` reads them in one text.
# Compiled on first use through re's cache (a line naming cookies).
# Matched from the line's last `cookies` on (a pattern reading the line up to each of them from its
# start would try every one: a 64 KB line of them, quadratic).
_COOKIE_OPENER = r"""(?i)cookies['"]?(?:[ \t]*:[ \t]*(?:#.*)?\r?|\)?\s*(?:[=:(]\s*)+\{[^{}]*\r?)"""


def cookie_block_opened(line: str) -> tuple[int, bool] | None:
    """`line` (one line, no line break) opens a mapping of cookies it does not close: the indentation of
    its entry and whether the mapping is a flow mapping (`{` … `}` over lines) or a block one; else None."""
    if "ookies" not in line and "OOKIES" not in line:
        return None
    at = line.lower().rfind("cookies")
    if at < 0 or (at and (line[at - 1].isalnum() or line[at - 1] == "_")):
        return None
    if re.compile(_COOKIE_OPENER).fullmatch(line, at) is None:
        return None
    lead = line[: len(line) - len(line.lstrip(" \t-"))]
    return len(lead.expandtabs()) - len(lead.lstrip(" \t-").expandtabs()), "{" in line[at:]


def cookie_item_spans(line: str, flow: bool) -> list[tuple[int, int]]:
    """The values of 8+ characters with a letter and a digit that `line`, an item line of an open mapping of
    cookies (`flow`: of `{` … `}`), gives (`  session: V`, `"session": "V",`)."""
    if flow:
        return [found.span(4) for found in _ITEM.finditer(line)]
    item = _BLOCK_ITEM.fullmatch(line)
    return [item.span(3)] if item is not None and _mixed(item.group(3)) else []


# ------------------------------------------------------------------ a form's value, percent-encoded

# A form body's field (`application/x-www-form-urlencoded`: `password=tulip%20garden%21&user=alice`, as
# `curl -d` and `requests`' `data=` send it) where a URL's query reader does not look: at the text's or a
# word's start, not after `?` or `&`. Its value holds a percent escape; a plain one is `=`'s readers'.
_FORM_FIELD = re.compile(
    r"""(?<![^\s'"(])([A-Za-z_][\w.-]{0,127})=([^&#\s'"<>]*%[0-9A-Fa-f]{2}[^&#\s'"<>]*)"""
)


def form_value_spans(text: str) -> list[tuple[int, int]]:
    """Where a form's field naming a credential holds a percent-encoded value, judged decoded as a
    name's value is (8+ characters, a letter and a digit)."""
    if "%" not in text:
        return []
    return [
        found.span(2)
        for found in _FORM_FIELD.finditer(text)
        if is_secret_name(found.group(1).rsplit(".", 1)[-1]) and _named(unquote_plus(found.group(2)))
    ]


def prose_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Every span this module masks in `text` (`lower`: it lower-cased)."""
    return (
        url_key_spans(text)
        + prose_value_spans(text, lower)
        + element_value_spans(text)
        + named_field_spans(text, lower)
        + column_value_spans(text, lower)
        + validation_input_spans(text)
        + folded_key_spans(text)
        + prose_userinfo_spans(text)
        + webhook_spans(text)
        + entry_value_spans(text, lower)
        + cookie_spans(text, lower)
        + form_value_spans(text)
    )
