"""Names of variables and config keys that hold a credential (`FOO_API_KEY`, `GITHUB_PAT`, `api_key`,
`accessToken`), values that look random as keys do (`looks_like_credential`), and keys known by their
look alone whatever names them (`is_bare_key`, `bare_key_spans`). A leaf of the secret
modules: `t3rl_core.secret_commands` reads a command's `set NAME V` and a key given to a credential's
word by them, and `t3rl_core.secret_names` (which reads values by `secret_shapes`, which reads commands)
builds on them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from functools import cache, lru_cache

# Named explicitly because their names do not all follow the patterns below.
_KNOWN_SECRETS = frozenset({"WANDB_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
# Environment-variable style (upper case), by the name's last word. PASS, PWD, PAT and AUTH only after
# another word: PWD alone is the shell's working directory. A word in the plural names several
# credentials (`OPENAI_API_KEYS`, `DB_PASSWORDS`: a list to rotate through); not TOKENS nor a bare
# KEYS, which count (`MAX_NEW_TOKENS`, `NUM_KEYS`). A number after the word tells one of several apart
# (`API_KEY_2`, `DB_PASS2`). PASSWORD, PASSWD and PASSPHRASE also glued to the word before (libpq's
# `PGPASSWORD`, `HTPASSWD`).
_SECRET_ENV_NAME = re.compile(
    r"((^|_)(KEY|API_?KEYS?|TOKEN|SECRETS?|CREDENTIALS?|BEARER)|PASSWORDS?|PASSWDS?|PASSPHRASES?"
    r"|_(PASS|PWD|PAT|AUTH))(_?[0-9]+)?$"
)
# Config-key style (any case, `-` read as `_`): narrower, because slime-shaped keys such as
# `reward_key` or `input_key` name data fields, not credentials. A token or a secret glued to the word
# that says whose it is, as one lower-case word (Docker's config.json `identitytoken`, OAuth clients'
# `accesstoken`, `refreshtoken`, `clientsecret`), as `api_key` may be `apikey`: a word that counts or
# pages (`maxtokens`, `pagetoken`) is not one of those.
_SECRET_KEY_NAME = re.compile(
    r"(?i)((^|_)(api_?keys?|access_?keys?|secret_?keys?|private_?keys?|wandb_key|token|secrets?|credentials?"
    r"|auth|bearer|pat|(?:access|refresh|identity|registry|session|auth|api|id|bearer|oauth|bot)tokens?"
    r"|(?:client|app|api|consumer|shared|webhook|signing)secrets?)|passwords?|passwds?|passphrases?)(_?[0-9]+)?$"
)
# Where a camelCase name's next word begins (`access|Token`, `client|Secret`): read as `_` by the name
# patterns, as `-` is.
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# A password's word in the languages names are also written in (`DB_PASSWORT`, `mot_de_passe`,
# `contraseña`, `пароль`, `密码`), read as `password` by every reader of names: `is_secret_name` (config
# keys, variables, so a value under such a name is masked and refused as under `DB_PASSWORD`) and the
# reading of text (`names_in_english`, through `secret_pieces.decoded_names`: a log line `kennwort=V`,
# `mot de passe : V`, `parol'=V`). The one vocabulary: a row added here is read everywhere. A word of
# several (`mot_de_passe`, `kata_sandi`) is written with `_`, and read with `_`, `-`, a space or nothing
# between its parts (`mot de passe`, `MOT-DE-PASSE`, `motdepasse`). Spanish `clave` and Greek `κωδικός`
# alone are none: they name a data key or a code as often (`clave primaria`, a product's `κωδικός`), whose
# value masked would break the record. Only a whole word counts (`enclave`, `Kennwortlänge`, `parole`,
# `密码学` (cryptography) are no name of one: the readers of names want the word at a name's end).
OTHER_LANGUAGES: dict[str, str] = {
    "passwort": "de", "kennwort": "de", "mot_de_passe": "fr", "contraseña": "es",
    "contrasena": "es", "senha": "pt", "wachtwoord": "nl", "hasło": "pl", "haslo": "pl",
    "heslo": "cs", "lösenord": "sv", "losenord": "sv", "passord": "no", "adgangskode": "da",
    "salasana": "fi", "jelszó": "hu", "jelszo": "hu", "şifre": "tr", "sifre": "tr", "parolă": "ro",
    "parola": "ro, tr", "parol": "ru, uk, az (transliterated: `parol'`)", "kata_sandi": "id",
    "kata_laluan": "ms", "mật_khẩu": "vi", "mat_khau": "vi",
    "пароль": "ru", "密码": "zh", "密碼": "zh", "パスワード": "ja", "비밀번호": "ko", "סיסמה": "he",
    "पासवर्ड": "hi", "كلمة_المرور": "ar", "كلمة_السر": "ar", "رمز_عبور": "fa", "รหัสผ่าน": "th",
}  # fmt: skip
# Where free text is searched for them. In a text with a character beyond ASCII: every word anywhere
# (`_vocabulary`, one pattern made from the table). In an ASCII text (nearly every record): the ASCII
# words where a sign gives them a value (`kennwort=V`, `"senha": "V"`, `mot de passe : V`, `parol'=V`),
# found by a pattern a sign over the text reversed, each beginning with its sign (`_signed_words`): `re`
# finds the few `=` and `:` of a text in C and tries the words there only. The vocabulary anywhere in an ASCII
# text cost `mask_text` ~25 % of a 40 KB eval record (callgrind), a `str.find` a word ~0.6 % each, this
# ~1 %. `passwort` and `passord` also end as `PASS_ENDINGS` where the name readers find `pass`.
PASS_ENDINGS = tuple(word.removeprefix("pass") for word in OTHER_LANGUAGES if word.startswith("pass"))
# Full-width forms of ASCII (U+FF01-U+FF5E), as a Chinese, Japanese or Korean input method types them:
# `密码：V` (the full-width colon is the one those languages write), `ＡＰＩ＿ＫＥＹ＝V`. Read as ASCII, one
# character for one, with the other languages' words.
_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}


def _spellings(words: list[str]) -> list[str]:
    """The patterns of `words` as text writes them: a word of several parts with `_`, `-`, a space or
    nothing between them; the longest first (`contraseña` before a word it holds)."""
    return sorted(("[ _-]?".join(map(re.escape, word.split("_"))) for word in words), key=len, reverse=True)


@cache
def _vocabulary() -> re.Pattern[str]:
    """Every word of `OTHER_LANGUAGES` as text writes it, anywhere. Compiled on first use."""
    return re.compile("|".join(_spellings(list(OTHER_LANGUAGES))))


# The signs after which `_signed_words` reads a word: `=` (also of `=>`, `:=`) and `:`; an ASCII text's
# bytes are read with each sign as the first and every letter in lower case (`_SIGNED_BYTES`, one
# `bytes.translate`), so one pattern beginning with the one sign finds them all.
_SIGNS = ("=", ":")
_SIGNED_BYTES = bytes(
    ord(_SIGNS[1]) if chr(i) in _SIGNS else ord(chr(i).lower()) if i < 128 else i for i in range(256)
)


@cache
def _signed_words() -> re.Pattern[bytes]:
    """The ASCII words of `OTHER_LANGUAGES` before a sign of `_SIGNS`, a closing quote (JSON-escaped too)
    or a subscript's `]` between, matched in the text's bytes as `_SIGNED_BYTES` reads them, reversed: the
    sign first (a literal: `re` finds it as `str.find` does; a class of signs first cost ten times as
    much, tried at every character), the words as a tree of their shared beginnings (`_tree`: an eval
    record's ~170 colons each try a few branches, not each word). Group 1: the word, reversed."""
    words = _tree([word[::-1] for word in OTHER_LANGUAGES if word.isascii()])
    return re.compile(rf"{re.escape(_SIGNS[1])}[ \t]*\]?(?:['\"]\\*)?[ \t]*({words})".encode())


def _tree(words: list[str]) -> str:
    """A pattern matching each of `words` (`_` between parts read as `_`, `-`, a space or nothing), its
    alternatives grouped by their shared beginnings; a word ending where a longer one goes on is
    matched as the longer one when it can be."""
    groups: dict[str, list[str]] = {}
    for word in words:
        if word:
            groups.setdefault(word[0], []).append(word[1:])
    branches = [
        ("[ _-]?" if first == "_" else re.escape(first)) + _tree(rest)
        for first, rest in sorted(groups.items())
    ]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return f"(?:{body})?" if "" in words else body


def names_in_english(text: str, names_only: bool = False) -> tuple[str, list[int]] | None:
    """`text` with every whole word of `OTHER_LANGUAGES` read as `password` and its full-width ASCII as
    ASCII, and where each of its characters (and its end) begins in `text`; None when it holds neither.
    `names_only`: `text` is a name, its words read anywhere; in other text, where `_signed_words` says
    when it is ASCII."""
    changed = False
    if not text.isascii():
        folded = text.translate(_FULLWIDTH)  # one character for one: where each stands does not move
        text, changed = folded, folded != text
    if names_only or not text.isascii():
        lower = text.lower()
        if len(lower) != len(text):  # a letter whose lower case is longer (`İ`): read as it is
            lower = text
        spans = [m.span() for m in _vocabulary().finditer(lower)]
    else:
        size, backwards = len(text), text.encode("ascii").translate(_SIGNED_BYTES)[::-1]
        spans = sorted((size - m.end(1), size - m.start(1)) for m in _signed_words().finditer(backwards))
    found = [(start, end) for start, end in spans if _whole_word(text, start, end)]
    if not found:
        return (text, list(range(len(text) + 1))) if changed else None
    pieces: list[str] = []
    starts: list[int] = []
    done = 0
    for start, end in found:
        if start < done:
            continue
        pieces += [text[done:start], "password"]
        starts += [*range(done, start), *(min(start + i, end - 1) for i in range(8))]
        done = end
    pieces.append(text[done:])
    starts += [*range(done, len(text) + 1)]
    return "".join(pieces), starts


def _whole_word(text: str, start: int, end: int) -> bool:
    """`text[start:end]` is a word of its own: in a script with case, no letter or digit joined before it
    but a camelCase word's start (`dbPasswort`) and no small letter after it; a script without case
    (`数据库密码`) writes no space between words, so only what follows counts there, and no letter may
    (`密码学`)."""
    after = text[end : end + 1]
    if text[start].lower() == text[start].upper():  # no case: Chinese, Japanese, Korean, Hebrew, Hindi
        return not after.isalpha()
    before = text[start - 1 : start]
    camel_start = (before.islower() or before.isdigit()) and text[start].isupper()
    return not (before.isalnum() and not camel_start) and not (after.isalpha() and after.islower())


# Cached: every scrub of printed or written text walks the environment's names through it.
@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for variable or config-key names that hold credentials (FOO_API_KEY, GITHUB_PAT, api_key),
    in the languages of `OTHER_LANGUAGES` too (`DB_PASSWORT`, `contraseña`)."""
    if name in _KNOWN_SECRETS or _SECRET_KEY_NAME.search(_CAMEL_BOUNDARY.sub("_", name).replace("-", "_")):
        return True
    if name.isupper() and _SECRET_ENV_NAME.search(name):
        return True
    english = names_in_english(name, names_only=True)
    return english is not None and is_secret_name(english[0])


# A run of characters as random keys are written (base62, hex, base64 without `/`), long enough that a
# run of a word-built name rarely is one.
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+]{16,}")
# Shannon entropy (bits per character) and share of neighbouring characters of another class (lower,
# upper, digit) from which such a run counts as random: 16+ random base62 or hex characters pass 83-99 %
# of the time, words with a number (`checkpoint20000steps`, `model00001of00004`) do not.
_RANDOM_BITS = 3.0
_RANDOM_CHANGES = 0.25


def looks_like_credential(value: object) -> bool:
    """A value with a long run of letters and digits that looks random (a key, not a path of words,
    a model name or a number)."""
    return isinstance(value, str) and len(value) <= 4096 and any(map(_random, _RANDOM_RUN.findall(value)))


@lru_cache(maxsize=4096)
def _random(run: str) -> bool:
    if not (any(c.isdigit() for c in run) and any(c.isalpha() for c in run)):
        return False
    bits = -sum(n / len(run) * math.log2(n / len(run)) for n in Counter(run).values())
    changes = sum(_kind(a) != _kind(b) for a, b in itertools.pairwise(run)) / (len(run) - 1)
    return bits >= _RANDOM_BITS and changes >= _RANDOM_CHANGES


# A hash as git, sha256sum and content-addressed caches print it: lower-case hex of 7+ digits (a git
# short sha), also after its algorithm's name (`sha256:…`). This and the next are pattern strings
# compiled on first use: a cold plan asks neither.
_HASH = r"(?:(?:sha(?:1|224|256|384|512)|md5|blake2[bs])[:-])?[0-9a-f]{7,}"
# The words before `key` that make its value a secret's whatever it looks like: hex is a common way to
# write such keys (`signing_key`, `hmacKey`, `--license-key`).
_SECRET_KEY_HEAD = (
    r"(?i)(?:api|access|secret|private|client|account|subscription|wandb|sign|signing|encryption"
    r"|decryption|crypt|cipher|aes|hmac|master|licen[cs]e|session|shared|app|service|deploy|ssh|gpg|pgp"
    r"|jwt|webhook|admin|auth|root|bearer|password|pass)[_-]?key$"
)


def is_hash_under(name: str, value: str) -> bool:
    """`value` is a hash (lower-case hex, as git and sha256sum print it) under the name of a data key
    (`cache_key`, `sortKey`, `content-key`), not a credential although it looks random. A name written as
    an environment variable's (`DD_APP_KEY`: upper case, a secret's name by `is_secret_name`) or whose
    word before `key` makes it a secret's (`signing_key`, `hmacKey`) keeps such a value a credential."""
    return is_hash(value) and not name.isupper() and re.search(_SECRET_KEY_HEAD, name) is None


def is_hash(text: str) -> bool:
    """`text` is a hash as git and sha256sum print it (`_HASH`: `3f2a9c1`, `sha256:<hex>`)."""
    return re.fullmatch(_HASH, text) is not None


def _kind(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2


# ------------------------------------------------------------------ keys known by their look alone
# A key no issuer marks and no name announces, known by its look alone (an AWS secret access key
# pasted into a note, a vendor's 32-character key as the value of `MODEL_OPTS`, a key as a bare argument).
#
# Such a key is a run of base62 or base64 characters (`[A-Za-z0-9+/]`, `=` padding after it) of
# credential length, 32 to 256 characters, that reads as drawn at random:
# - upper-case and lower-case letters and digits all in it (a hash is lower-case hex, a ULID or a base32
#   secret upper case, a UUID hex with dashes: none is one);
# - its characters change class often (`_CHANGES`) with the spread of a random draw (`_BITS`), and it
#   does not read as words: an identifier in camelCase (`NPUCompressedTensorsW4A8Int8DynamicMoE`,
#   `AWSIoT1ClickReadOnlyAccess`) is mostly words of 3+ letters with a language's share of vowels;
# - it stands alone: nothing of a name joins it (`_`, `-`, `.`, `/`, `@`, `%`, `&`, `\\`, a letter or a
#   digit before it; `_`, `-`, `.` or more name after it), and reads as no path of names: a piece of
#   an identifier, of a path (`/data/<random dir>`, `user/<random name>`), of a URL's path, an issuer's
#   token (`sk-…`, found by its prefix) or a submission id (`raysubmit_…`) is not one;
# - it is no line of a public PEM block (a certificate, a public key) nor a whole line of a PEM body's
#   width (64 characters: a line-by-line copier sees such a body with no BEGIN line in view);
# - it is no hash's encoding: not after an algorithm's name (`sha512-<base64>` of a lock file,
#   `sha256:…`), and not an SSH public key's (`AAAA…`, the wire format's length; public).
#
# Shorter random words (Ray's 16-character submission ids, KSUIDs, nanoids, a 24-character key after
# prose) stay: at that length words, ids and keys cannot be told apart by their look. `bare_key_spans`
# finds them; `t3rl_core.secret_shapes` masks them in every file and line t3rl writes (not in an
# episode's own text, the task's data) and pre-flight refuses a config value holding one.

# Compiled on first use through re's cache (a cold plan's text holds few runs this long).
_RUN = r"[A-Za-z0-9+/]{32,}={0,2}"
_LONGEST = 256
_RUN_BYTES = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/") else ord(" ") for i in range(256)
)
_RUN_MARK = b"a" * 32
# A PEM block (RFC 7468) and the width of its body's lines.
_PEM_BLOCK = r"(?s)-----BEGIN ([A-Z0-9 ]+)-----.*?(?:-----END \1-----|\Z)"
_PEM_WIDTH = 64
# The widths a base64 body is wrapped at (RFC 7468's PEM, MIME's) and one whole line of such a body.
_WRAP_WIDTHS = (64, 76)
_BASE64_LINE = r"[A-Za-z0-9+/]+={0,2}"
# What may not stand right before the run, or right after it.
_JOINED_BEFORE = frozenset("_-./@%&\\")
_JOINED_AFTER = frozenset("_-.")
# An algorithm's name right before the run: a hash's encoding (`sha512-…`, `sha256:…`, `md5=…`).
_HASH_NAME = r"(?i)(?:sha(?:1|224|256|384|512)|md5|blake2[bs]|crc32c?|xxh(?:32|64|128))[-:=]$"
# Shannon entropy (bits per character) and share of neighbouring characters of another class (lower,
# upper, digit, sign) from which a run counts as drawn at random: 32 random base62 or base64 characters
# pass 99 % of the time (1,000 draws each of 32, 40, 64, 88 and 128 characters).
_BITS = 4.0
_CHANGES = 0.4
# A word of an identifier, the share of a run's characters in such words and the share of vowels among
# its small letters from which it reads as words (`_reads_as_words`).
_WORD = r"[A-Z]?[a-z]{2,}"
_IN_WORDS = 0.6
_VOWELS = 0.25
_PATH_PART = r"[A-Za-z][a-z]{2,}|[0-9]{2,}"


def bare_key_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a key known by its look alone (the comment above `_RUN`), in order."""
    # The text's bytes with every run character as `a` and every other as a space, searched for 32 `a`s
    # (two passes in C): the pattern tried at every place of a 37 KB eval record cost ~0.8 ms.
    if _RUN_MARK not in text.encode("utf-8", "surrogatepass").translate(_RUN_BYTES):
        return []
    spans = []
    public = _public_blocks(text) if "-----BEGIN " in text else []
    for found in re.finditer(_RUN, text):
        start, end = found.span()
        if any(a <= start < b for a, b in public) or _pem_line(text, start, end):
            continue
        if start and (text[start - 1] in _JOINED_BEFORE or text[start - 1].isalnum()):
            continue
        if end < len(text) and (text[end] in _JOINED_AFTER or text[end].isalnum()):
            continue
        if is_bare_key(found.group()) and re.search(_HASH_NAME, text[max(0, start - 8) : start]) is None:
            spans.append((start, end))
    return spans


def _public_blocks(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a PEM block that is no private key's (a public key, a certificate): its body
    is public, base64 of a key's length."""
    return [m.span() for m in re.finditer(_PEM_BLOCK, text) if "PRIVATE" not in m.group(1)]


def _pem_line(text: str, start: int, end: int) -> bool:
    """The run is a whole line of a wrapped base64 body, as a copier that reads one line at a time sees
    a certificate's or a public key's body: no BEGIN line in view to tell it from a private key's, whose
    body such a copier masks by its BEGIN line (secret_shapes.PemLines). A whole line of a PEM body's
    width (64 characters, RFC 7468) is one; so is a line after a whole base64 line of 64 or 76 (MIME's
    width) no wider than it (a body's last line: its 64-wide lines above it are left, masking it
    would hide nothing), and a 76-wide line before a whole base64 line no wider (a MIME blob's)."""
    if not _whole_line(text, start, end):
        return False
    width = end - start
    if width == _PEM_WIDTH:
        return True
    above = _line_above(text, start)
    if above is not None and above[1] - above[0] in _WRAP_WIDTHS and width <= above[1] - above[0]:
        return True
    below = _line_below(text, end)
    return width == _WRAP_WIDTHS[1] and below is not None and below[1] - below[0] <= width


def _whole_line(text: str, start: int, end: int) -> bool:
    return (start == 0 or text[start - 1] in "\r\n") and text[end : end + 1] in ("", "\r", "\n")


def _line_above(text: str, start: int) -> tuple[int, int] | None:
    """The line before the one beginning at `start`, when it is a whole run of base64 characters."""
    if start == 0:
        return None
    end = start - 1
    if end and text[end - 1] == "\r":
        end -= 1
    begin = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end)) + 1
    return (begin, end) if re.fullmatch(_BASE64_LINE, text[begin:end]) else None


def _line_below(text: str, end: int) -> tuple[int, int] | None:
    """The line after the one ending at `end`, when it is a whole run of base64 characters."""
    begin = end + (2 if text.startswith("\r\n", end) else 1)
    if begin > len(text):
        return None
    stops = [at for at in (text.find("\n", begin), text.find("\r", begin)) if at >= 0]
    stop = min(stops, default=len(text))
    return (begin, stop) if re.fullmatch(_BASE64_LINE, text[begin:stop]) else None


def is_bare_key(run: str) -> bool:
    """`run`, a whole value, is a key by its look alone (see the module's docstring)."""
    core = run.rstrip("=")
    if not 32 <= len(core) <= _LONGEST or core.startswith("AAAA") or len(run) - len(core) > 2:
        return False
    if re.fullmatch(r"[A-Za-z0-9+/]+", core) is None:
        return False
    if not (
        any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)
    ):
        return False
    if core.startswith("eyJ") or _reads_as_words(core) or _is_path(core):
        return False
    bits = -sum(n / len(core) * math.log2(n / len(core)) for n in Counter(core).values())
    changes = sum(_key_kind(a) != _key_kind(b) for a, b in itertools.pairwise(core)) / (len(core) - 1)
    return bits >= _BITS and changes >= _CHANGES


def _reads_as_words(core: str) -> bool:
    """`core` is mostly words of 3+ letters (`[A-Z]?[a-z]{2,}`) whose small letters hold vowels as a
    language's do: an identifier in camelCase (`NPUCompressedTensorsW4A8Int8DynamicMoE`,
    `AWSIoT1ClickReadOnlyAccess`), not 32 random characters (both at once: about 1 draw in 200)."""
    in_words = sum(len(word) for word in re.findall(_WORD, core))
    small = [c for c in core if c.islower()]
    vowels = sum(c in "aeiouy" for c in small)
    return in_words >= _IN_WORDS * len(core) and vowels >= _VOWELS * max(1, len(small))


def _is_path(core: str) -> bool:
    """`core` holds `/` between names, as a path or a repository's id does (`Polynomials/SphericalY/26/`,
    `user/VWGVH0R3…`, `/data/<random>/model`): half its parts or more are words of 3+ letters with a
    vowel or numbers of 2+ digits. A base64 key's `/` falls between random characters."""
    parts = [part for part in core.split("/") if part]
    if len(parts) < 2 or "/" not in core:
        return False
    named = sum(re.fullmatch(_PATH_PART, part) is not None and not _vowelless(part) for part in parts)
    return 2 * named >= len(parts)


def _vowelless(part: str) -> bool:
    return part.isalpha() and not any(c in "aeiouyAEIOUY" for c in part)


def _key_kind(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2 if char.islower() else 3
