r"""Credentials that the command or the file format they stand in gives away, whatever they look like.

`t3rl_core.secret_shapes` finds a credential by its own form (an issuer's prefix) or by a name next to it
(`password=V`, `--api-key V`) when the value also looks like one (a letter, a digit, 8+ characters): a
vocabulary id or a word stays. Some places make any value a credential, however short or plain:
- an option of a program that takes a credential there, glued to a short flag (`mysql -pV`, `7z -pV`),
  after `=` (`mysql --password=V`) or as its next word (`sshpass -p V`, `redis-cli -a V`,
  `docker login -p V`), also as a user's password (`curl -u alice:V`, `smbclient -U alice%V`,
  `lftp -u alice,V`, `skopeo --creds alice:V`) or a passphrase's source (`openssl … -passin pass:V`);
  the program found as a word of shell text, a path (`/usr/bin/mysql`) or an argv list's item
  (`['mysql', '-pV']`, JSON's `["mysql", "-pV"]`);
- a positional argument where such a program takes a credential (`wandb login V`, `ngrok authtoken V`,
  `vault login V`, `rabbitmqctl add_user alice V`, `htpasswd -b FILE alice V`), and the value a config
  command sets for a credential's name (`aws configure set aws_secret_access_key V`,
  `npm config set //host/:_authToken V`, `redis-cli CONFIG SET requirepass V`), or every value a
  secrets store is given (`fly secrets set NAME=V`, `kubectl create secret … --from-literal=NAME=V`,
  `gh secret set NAME --body V`);
- the `password` and `account` of a `.netrc` record (`machine HOST login USER password V`, over one
  line or several, also JSON-escaped in a record).
- a password option's value after `=`, of any program (`--db-password=V`, `--passwd=V`).
- the password of a `.pgpass` line (`host:port:database:user:V`, a line of its own, also JSON-escaped).
- a random-looking key as the next word after a credential's word of any program's command
  (`mytool login V`, `cli auth V`, `app token add V`; not a hash: lower-case hex): no declaration names
  the program, the word and the key's look together say what V is. Read by `key_word_spans`, not in an
  episode's text: a BFCL task says `using access token 'V'`, its data the model passes on.
A command folded over lines with a backslash (`mysql -u root \<newline> -pV`, also JSON-escaped) is read
as one line, as a shell reads it.
`command_spans(text)` gives where those values stand; t3rl_core.secret_shapes masks them in every text
t3rl writes (an episode's own text too: no task's data is written so), and `named_spans(text, lower)` a
line of `.netrc` tokens without its `machine` (`login alice password V`, as a log's tee sees a record's
lines), everywhere but an episode's text (a line that says `password V` could be a task's).
"""

from __future__ import annotations

import base64
import itertools
import re

from t3rl_core.secret_name_words import OTHER_LANGUAGES, is_secret_name, looks_like_credential

# How an option takes its value: glued to it only (`-pV`, `--password=V`: `mysql -p V` asks for the
# password, V being the database), or glued or as the next word (`-a V`, `--user alice:V`).
GLUED, ANY = "glued", "any"
# What of the value is the credential: all of it, what follows a user's name (`alice:V`, `alice%V`,
# `alice,V`), OpenSSL's `pass:V` (its `env:`, `file:`, `fd:` and `stdin` name where it lives), a secrets
# store's `NAME=V`.
PLAIN, USER_COLON, USER_PERCENT, USER_COMMA, OPENSSL, ASSIGNED = "plain", ":", "%", ",", "openssl", "="
_Options = dict[str, tuple[str, str]]
_MYSQL: _Options = {"-p": (GLUED, PLAIN), "--password": (GLUED, PLAIN)}
_MONGO: _Options = {"-p": (ANY, PLAIN), "--password": (ANY, PLAIN)}
_LDAP: _Options = {"-w": (ANY, PLAIN)}
_SMB: _Options = {"-U": (ANY, USER_PERCENT), "--user": (ANY, USER_PERCENT), "--password": (ANY, PLAIN)}
_REGISTRY_LOGIN: _Options = {"-p": (ANY, PLAIN), "--password": (ANY, PLAIN)}
_MOSQUITTO: _Options = {"-P": (ANY, PLAIN)}
_SEVEN_ZIP: _Options = {"-p": (GLUED, PLAIN)}
_HTTPIE: _Options = {"-a": (ANY, USER_COLON), "--auth": (ANY, USER_COLON)}  # `http`, `https`, `xh`
_KEYTOOL: _Options = {
    f"-{option}": (ANY, PLAIN)
    for option in ("storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass")
}
# Each program's credential options, and those it takes only after one of its words (`docker login`:
# `docker run -p 8080:80` publishes a port).
_OPTIONS: dict[str, _Options] = {
    **dict.fromkeys(
        ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlslap",
         "mysqlbinlog", "mysqlpump", "mysqlsh", "mariadb", "mariadb-dump", "mariadb-admin",
         "mariadb-import", "mariadb-check", "mariadb-show", "mariadb-slap", "mariadb-binlog"),
        _MYSQL,
    ),
    **dict.fromkeys(
        ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat",
         "mongotop", "mongofiles"),
        _MONGO,
    ),
    **dict.fromkeys(
        ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd", "ldapmodrdn",
         "ldapcompare", "ldapexop"),
        _LDAP,
    ),
    **dict.fromkeys(("smbclient", "rpcclient", "smbcacls", "smbget", "smbmap"), _SMB),
    **dict.fromkeys(("mosquitto_pub", "mosquitto_sub", "mosquitto_rr"), _MOSQUITTO),
    **dict.fromkeys(("7z", "7za", "7zr", "7zz", "rar", "unrar"), _SEVEN_ZIP),
    "sshpass": {"-p": (ANY, PLAIN)},
    "curl": {
        "-u": (ANY, USER_COLON), "--user": (ANY, USER_COLON), "-U": (ANY, USER_COLON),
        "--proxy-user": (ANY, USER_COLON), "--oauth2-bearer": (ANY, PLAIN), "--pass": (ANY, PLAIN),
        "--proxy-pass": (ANY, PLAIN), "--tlspassword": (ANY, PLAIN), "--proxy-tlspassword": (ANY, PLAIN),
    },
    "wget": {
        "--password": (ANY, PLAIN), "--http-password": (ANY, PLAIN), "--ftp-password": (ANY, PLAIN),
        "--proxy-password": (ANY, PLAIN),
    },
    "redis-cli": {"-a": (ANY, PLAIN), "--pass": (ANY, PLAIN)},
    "sqlcmd": {"-P": (ANY, PLAIN)}, "bcp": {"-P": (ANY, PLAIN)}, "osql": {"-P": (ANY, PLAIN)},
    "openssl": {
        "-pass": (ANY, OPENSSL), "-passin": (ANY, OPENSSL), "-passout": (ANY, OPENSSL),
        "-k": (ANY, PLAIN), "-password": (ANY, OPENSSL),
    },
    "zip": {"-P": (ANY, PLAIN), "--password": (ANY, PLAIN)}, "unzip": {"-P": (ANY, PLAIN)},
    "keytool": _KEYTOOL,
    "gpg": {"--passphrase": (ANY, PLAIN)}, "gpg2": {"--passphrase": (ANY, PLAIN)},
    "lftp": {"-u": (ANY, USER_COMMA)},
    "twine": {"-p": (ANY, PLAIN), "--password": (ANY, PLAIN)},
    "helm": {"--password": (ANY, PLAIN)},
    "skopeo": {"--creds": (ANY, USER_COLON), "--src-creds": (ANY, USER_COLON),
               "--dest-creds": (ANY, USER_COLON), "--password": (ANY, PLAIN)},
    "kubectl": {"--token": (ANY, PLAIN), "--password": (ANY, PLAIN)},
    "ngrok": {"--authtoken": (ANY, PLAIN)},
    "vault": {"-token": (ANY, PLAIN), "--token": (ANY, PLAIN)},
    **dict.fromkeys(("http", "https", "xh", "xhs"), _HTTPIE),
    "svn": {"--password": (ANY, PLAIN)},
    "rabbitmqadmin": {"-p": (ANY, PLAIN), "--password": (ANY, PLAIN)},  # wave nine: a broker's admin tool
    # Wave ten: a key's new and old passphrase (`ssh-keygen -N V -f key`, `ssh-keygen -p -P V -N W`).
    "ssh-keygen": {"-N": (ANY, PLAIN), "-P": (ANY, PLAIN)},
}  # fmt: skip
_AFTER_WORD: dict[str, tuple[tuple[str, _Options], ...]] = {
    **dict.fromkeys(
        ("docker", "podman", "nerdctl", "buildah", "oras", "crane", "regctl", "singularity", "apptainer"),
        (("login", _REGISTRY_LOGIN),),
    ),
    "az": (("login", {"-p": (ANY, PLAIN), "--password": (ANY, PLAIN)}),),
    "oc": (("login", {"-p": (ANY, PLAIN), "--password": (ANY, PLAIN), "--token": (ANY, PLAIN)}),),
    "gh": (("secret", {"-b": (ANY, PLAIN), "--body": (ANY, PLAIN)}),),
    "kubectl": (("secret", {"--from-literal": (ANY, ASSIGNED)}),),
}
# The options of `ansible-vault encrypt_string` that take the next word as theirs.
_ANSIBLE_VALUED = frozenset({"-n", "--name", "--vault-id", "--vault-password-file", "--output"})
# Positional credentials: after these words of the program, its Nth word that is no option (0: the
# first), with the options that take the next word as theirs (`wandb login --host URL V`).
_POSITIONAL: dict[str, tuple[tuple[tuple[str, ...], int, frozenset[str]], ...]] = {
    "wandb": ((("login",), 0, frozenset({"--host", "--cloud"})),),
    "ngrok": ((("authtoken",), 0, frozenset()), (("config", "add-authtoken"), 0, frozenset())),
    "vault": ((("login",), 0, frozenset({"-method", "-path", "-address", "-namespace"})),),
    "rabbitmqctl": ((("add_user",), 1, frozenset()), (("change_password",), 1, frozenset())),
    # Wave nine: MinIO's client takes an alias's access key and secret key as its words (`mc alias set
    # NAME URL KEY SECRET`, formerly `mc config host add …`; found as a config command is, by its `set` or
    # `config`: `_POSITIONAL_SETTERS`), Ansible a string to encrypt.
    "mc": ((("alias", "set"), 3, frozenset()), (("config", "host", "add"), 3, frozenset())),
    "ansible-vault": ((("encrypt_string",), 0, _ANSIBLE_VALUED),),
}
# `set NAME V`: a config command's value for a credential's name (`aws configure set`, `npm config set`,
# `git config --global`, `poetry config`, `redis-cli CONFIG SET`).
_CONFIG_SET = {
    "aws": ("set",), "npm": ("set",), "yarn": ("set",), "pnpm": ("set",), "pip": ("set",),
    "pip3": ("set",), "git": ("config",), "poetry": ("config",), "conda": ("--set",),
    "redis-cli": ("set",), "gcloud": ("set",), "firebase": ("functions:config:set",),
}  # fmt: skip
# Names a config command sets that hold a credential where `is_secret_name` has no word for it (a
# pattern string compiled on first use, as the next ones).
_CONFIG_SECRET_NAMES = r"(?i)(requirepass|masterauth|http-basic\..+|pypi-token\..+|.*authtoken)$"
# `fly secrets set NAME=V`, `doppler secrets set NAME=V`: every value is one.
_SECRETS_STORES = {"fly": ("secrets", "set"), "flyctl": ("secrets", "set"), "doppler": ("secrets", "set")}
# Programs whose options are long ones after one `-` (`openssl … -kfile F`): no value glued to a short one.
_NO_GLUED = frozenset({"openssl", "keytool", "vault"})
# Programs whose only credentials follow a word of theirs: text without it is not parsed for them.
_NEEDS = {
    "wandb": ("login",), "git": ("config",), "poetry": ("config",), "conda": ("--set",),
    **dict.fromkeys(("aws", "npm", "yarn", "pnpm", "pip", "pip3", "gcloud", "firebase"), ("set",)),
    "rabbitmqctl": ("add_user", "change_password"), "fly": ("secrets",), "flyctl": ("secrets",),
    "doppler": ("secrets",), "mc": ("alias", "host"), "ansible-vault": ("encrypt_string",),
}  # fmt: skip
_PROGRAMS = frozenset({*_OPTIONS, *_AFTER_WORD, *_POSITIONAL, *_CONFIG_SET, *_SECRETS_STORES, "htpasswd"})
# The words of text a program's name may be, as bytes (every other byte a space): the programs of
# `_PROGRAMS` among them are searched for where each stands as a word (`_program_occurrences`, str.find).
# One pattern for all (an alternation of ~90 names) cost every cold plan its 5 ms compile, and
# `re.findall` of the words cost a cold plan (plan.sh: ~50 KB scanned) 15 M instructions; the bytes'
# translate and split, 5 M.
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-")
_WORD_BYTES = bytes(b if chr(b) in _NAME_CHARS else 32 for b in range(256))
_PROGRAM_NAMES = frozenset(program.encode() for program in _PROGRAMS)
# Programs whose credential stands among the words after a `set` or `config` of theirs, as a config
# command's does (`mc alias set NAME URL KEY SECRET`): found where `_SET_WORDS` are already searched.
_POSITIONAL_SETTERS = ("mc",)
_SETTER_NAMES = frozenset(program.encode() for program in (*_CONFIG_SET, *_POSITIONAL_SETTERS))
# What may not stand before a program's name (more of a longer name) and what may follow it.
_IN_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-")
_AFTER_NAME = frozenset(" \t\n\r\f\v'\",]\\")
# What ends a command in text: a line (also an escaped `\n` in JSON), a shell's separators, a list's `]`.
_ENDS = frozenset("\n\r;|&`)]}<>")
# A backslash ending a line (a command continued on the next), real or JSON-escaped (`\\\n`).
_CONTINUATIONS = ("\\\n", "\\\r\n", "\\\\\\n", "\\\\\\r\\n")
# What stands around a word of an argv list or JSON list (`['mysql', '-pV']`, `[\"-pV\"]`) or a quoted
# word of shell text, and is not the word.
_AROUND = "'\"\\[(,"
# Text where a program's credential may stand holds an option (a word beginning with `-`: a YAML list's
# `- item` or prose's ` - ` is none), a word after which a positional one stands, or a config command's
# `set`/`config` and that program's name (str.find and str.count: each one C scan). Others are not
# tokenized: a 37 KB BFCL record, whose prose says `set ` and `config`, cost ~1 ms more.
_OPTION_STARTS = ("'-", '"-', "\t-", "\\t-")  # also after JSON's escaped tab
assert all("-" in start for start in _OPTION_STARTS), "an option's start without its `-`"
_KEYWORDS = ("login", "authtoken", "add_user", "change_password", "secrets")
_SET_WORDS = ("config", "set ", "CONFIG", "SET ")
# `.netrc`: its tokens over any whitespace, real or JSON-escaped; a record begins with `machine HOST` or
# `default`. The values of `password` and `account` are the credentials.
_GAP = r"(?:\s|\\+[nrt])+"
_NETRC_VALUE = r"((?:[^\s\\\"]|\\(?!\\*[nrt\"]))+)"
_NETRC = (
    rf"(?:machine{_GAP}[^\s\\]+|default)((?:{_GAP}(?:login|password|account|port|protocol|force)"
    rf"{_GAP}{_NETRC_VALUE})+)"
)
_NETRC_SECRET = rf"(?:(?<=\s)|(?<=\\[nrt]))(password|account){_GAP}{_NETRC_VALUE}"
# A line of `.netrc` tokens without its `machine` (one line of a record, as a line-by-line copier sees
# it): `login alice password V`, `password V`.
_NETRC_LINE = (
    r"[ \t]*(?:(?:login|account|port)[ \t]+\S+[ \t]+)*password[ \t]+(\S+)"
    r"(?:[ \t]+(?:login|account|port)[ \t]+\S+)*[ \t]*\r?"
)
# The value of a password option of any program after its `=` (`--db-password=V`, `--passwd=V`).
_OPTION_VALUE = r"[^\s'\"\\]+"
# Values that name where a credential lives, or are one already masked: not a credential.
_NOT_VALUES = ("$", "env:", "file:", "fd:", "***")
# `.pgpass`: `host:port:database:user:password` (`*` for any field; `\:` and `\\` escaped in one), one
# word: after a space, a line break (real or JSON-escaped) or a quote, up to the next (texts a scrub
# joins by a space are read as each alone). The port a number or `*`, no space in any field, and the
# database or the user holding a letter or `*` (`2026-01-01:12:00:00:x` is a time, `fe80:0:0:0:1` an
# address, `1:2:3:4:5` a ratio), the host a name, an address or `*` (`12:00:00:/a/0:/0` is a time and
# paths: a number alone is no host). Pattern strings compiled on first use.
_PGPASS_PORT = r":(?:[0-9]{1,5}|\*):"
# A field's character, or its escaped `:` or `\\` (JSON-escaped too: `\\\\:`), not an escaped line break.
_PGPASS_FIELD = r"((?:[^\s:\\\"']|\\+:|\\+\\(?!\\*[nrt\"]))+)"
_PGPASS = (
    rf"([A-Za-z0-9._*\[\]-]+):([0-9]{{1,5}}|\*):{_PGPASS_FIELD}:{_PGPASS_FIELD}:{_PGPASS_FIELD}"
    r"(?=\s|$|\\+[nrt\"]|[\"'])"
)
# Words after which any program's command takes a key (`mytool login V`, `cli auth V`, `app token V`),
# and what may stand before such a word: a space, a line break, a quote, an argv list's `[` or `,`.
_KEY_WORDS = ("login", "auth", "authenticate", "authtoken", "token", "apikey", "api-key", "set-key")
_KEY_WORD_BEFORE = frozenset(" \t\n\r'\"[,")
# A hash as git and sha256sum print it (lower-case hex, `sha256:` before it): not a key by its look.
_HEX = re.compile(r"(?:sha(?:1|256|512):)?[0-9a-f]+")
# A sub-command or a profile's name between a credential's word and its key (`token add V`).
_SUB_COMMAND = re.compile(r"[a-z][a-z_-]{0,15}")


def command_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a credential its command or `.netrc` record gives away (the module's first
    and second kinds, and the third), in order, not overlapping."""
    spans: list[tuple[int, int]] = []
    if _may_hold_command(text):
        words = text.encode("utf-8", "replace").translate(_WORD_BYTES).split()
        for program in _PROGRAM_NAMES.intersection(words):
            spans += _program_occurrences(text, program.decode())
    if ("machine" in text or "default" in text) and ("password" in text or "account" in text):
        spans += _netrc_spans(text)
    if "=" in text and "-" in text:
        spans += _password_options(text)
    if _holds_colons(text, 4):
        spans += _pgpass_spans(text)
    if any(marker in text for marker in _STDIN_UNDASHED) or (
        "-" in text and any(marker in text for marker in _STDIN_DASHED)
    ):
        spans += stdin_spans(text)
    if "send" in text and "expect" in text:
        spans += expect_spans(text)
    return _ordered(spans)


# A command that reads a credential from its standard input, known by one of these in its line: docker's,
# podman's, helm's and the registries' `--password-stdin`, gh's `--with-token`, `sudo -S`/`--stdin`,
# `passwd --stdin`, `chpasswd`, `vault login -`, gpg's `--passphrase-fd 0`, OpenSSL's `-passin stdin`.
# What it reads is the credential, whatever it looks like: a literal an `echo` or a `printf` pipes to
# it (`echo V | docker login --password-stdin`), or a here-string (`<<< V`).
STDIN_READERS = (
    r"--password-stdin|--with-token|--passphrase-fd[ =]0|--token-stdin|\bsudo\b[^|;&\n]*?\s(?:-S|--stdin)\b"
    r"|\bpasswd\b[^|;&\n]*?\s--stdin\b|\bchpasswd\b|\bvault\s+login\s+-(?=\s|$)|-passin\s+stdin"
    # Wave nine: OpenSSL's password hash of standard input, VNC's password file from it.
    r"|\bopenssl\s+passwd\b[^|;&\n]*?\s-stdin\b|\bvncpasswd\b[^|;&\n]*?\s-f\b"
)
_STDIN_MARKERS = ("-stdin", "--with-token", "-fd", "sudo", "passwd", "vault", "-passin")
# The markers holding a `-` are looked for only in text holding one (a memchr: four in ten of an eval's
# episode texts hold none, and each marker's search is a pass over the text). Made from the table.
_STDIN_DASHED = tuple(marker for marker in _STDIN_MARKERS if "-" in marker)
_STDIN_UNDASHED = tuple(marker for marker in _STDIN_MARKERS if "-" not in marker)
# A shell word: quoted, or plain up to a space or a shell sign.
_SHELL_WORD = r"""(?:'([^'\n]*)'|"((?:[^"\\\n]|\\.)*)"|([^\s'"|;&<>()]+))"""
# `echo [-n] V |` or `printf [FORMAT] V |`, ending where the pipe is; the last word is what is piped. The
# command begins its line (a real one or JSON's escaped `\n`), a quoted string or a shell's list. Both
# compiled on first use through re's cache (~0.6 ms on import, for text that names such a command).
_PIPED = (
    rf"(?:^|(?<=[\s;&('\"`\0])|(?<=\\[nt]))(?:echo(?:\s+-[neE]+)*|printf(?:\s+{_SHELL_WORD})??)"
    rf"\s+{_SHELL_WORD}\s*\|\s*$"
)
_HERE_STRING = rf"<<<\s*{_SHELL_WORD}"
_MOST_HERE_DOCUMENTS = 8
# A credential a here-document gives is a line or a few (a password, a token; a PEM key is masked by its
# own rule): the lines read of one at most, whose delimiter may not come (each reader's document read to
# the text's end was quadratic: 17 s of CPU for a line of 5,000 markers above 2,000 lines).
_MOST_HERE_LINES = 16
# A here-document's marker on the reader's line (`cat <<EOF | docker login --password-stdin`, `<<-'END'`):
# its lines up to the delimiter's are what the command reads (`_here_document`); not a here-string's `<<<`.
_HERE_DOC = r"(?<!<)<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2"


def _holds_colons(text: str, count: int) -> bool:
    """`text.count(":") >= count`, found by a memchr for each up to the `count`th instead of a count
    over all of it (an eval record's JSON has its fourth `:` in its first line: ~20 K instructions a
    text less)."""
    at = -1
    for _ in range(count):
        at = text.find(":", at + 1)
        if at < 0:
            return False
    return True


def stdin_spans(text: str) -> list[tuple[int, int]]:
    """Where a literal is fed to a command that reads a credential from its standard input (`STDIN_READERS`),
    on the command's line: piped by `echo`/`printf` into it, or given as a here-string."""
    spans: list[tuple[int, int]] = []
    for reader in re.finditer(STDIN_READERS, text):
        # A line ends at a line break, or at the NUL that parts texts scanned joined (pre-flight's
        # `secret_prose.SEPARATOR`).
        start = max(text.rfind("\n", 0, reader.start()), text.rfind("\0", 0, reader.start())) + 1
        ends = [at for at in (text.find("\n", reader.end()), text.find("\0", reader.end())) if at >= 0]
        end = min(ends, default=len(text))
        pipe = text.rfind("|", start, reader.start())
        if pipe > start and text[pipe - 1] != "|":
            piped = re.compile(_PIPED).search(text, start, pipe + 1)
            if piped is not None:
                spans.append(_word_span(piped, 4))
        for here in re.compile(_HERE_STRING).finditer(text, start, end):
            spans.append(_word_span(here, 1))
        # A line's here-documents follow it one after another, each from the end of the one before (a
        # shell reads them so); a few at most (a line of thousands read each to the text's end: seconds).
        body = None
        for here in itertools.islice(re.compile(_HERE_DOC).finditer(text, start, end), _MOST_HERE_DOCUMENTS):
            lines, body = _here_document(text, here, body)
            spans += lines
    return [(a, b) for a, b in spans if b > a and not text[a:b].startswith(_NOT_VALUES)]


# `expect`'s dialogue with a program that asks for a credential on its terminal (ssh, su, passwd, a
# vault's unlock): the `send` after an `expect` of a prompt naming one is what the program reads, as a
# stdin reader's line is. A prompt names one by a credential's word (`assword:`, `Passphrase`, `token`,
# `PIN`) or a password's word of another language (t3rl_core.secret_name_words.OTHER_LANGUAGES); the
# `send` follows within the next statements (`;`, a line break, real or JSON-escaped).
# A statement begins after a space or a sign, or after JSON's escaped line break or tab.
_EXPECT = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nt]))expect\s+(?:-[a-z]+\s+)*"
_PROMPT_WORDS = ("assword", "passphrase", "token", "secret", "pin", *OTHER_LANGUAGES)
_SEND = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nt]))send\s+(?:--\s+)?"


def expect_spans(text: str) -> list[tuple[int, int]]:
    """The words `expect`'s `send` answers a credential's prompt with (`expect "password:"` then
    `send "V\\r"`), the line's `\\r` or `\\n` left out."""
    spans = []
    for prompt in re.finditer(_EXPECT, text):
        words = text[prompt.end() : prompt.end() + 80].lower().split("send", 1)[0]
        if not any(word in words for word in _PROMPT_WORDS):
            continue
        send = re.compile(_SEND).search(text, prompt.end(), prompt.end() + 160)
        if send is not None:
            spans.append(_sent(text, send.end()))
    return [(a, b) for a, b in spans if b > a and not text.startswith(_NOT_VALUES, a)]


def _sent(text: str, at: int) -> tuple[int, int]:
    """The span of the word `send` gives at `at`: quoted (`"V\\r"`, also JSON-escaped `\\"V\\r\\"`), in
    Tcl's braces, or plain up to a space or `;`."""
    quote = re.compile(r'\\*"|\{').match(text, at)
    if quote is None:
        end = at
        while end < len(text) and not text[end].isspace() and text[end] not in ";]":
            end += 1
    else:
        at = quote.end()
        end = text.find(quote.group().replace("{", "}"), at)
        end = len(text) if end < 0 else end
    while text[at:end].endswith(("\\r", "\\n")):
        end -= 2
    while end > at and text[end - 1] == "\\":
        end -= 1
    return at, end


# A mail, file, chat or key-value protocol's login as its client's debug output or a transcript shows
# it: the verb, then what it sends. One row a verb: the protocols that use it, which of its arguments is
# the credential (`last`: the last word of its line, a password after an optional user; `second`: the
# second of exactly two, a user's password; `plain`: SASL
# PLAIN's base64 of `\0user\0password`, or, without it, the client's second base64 line below (AUTH
# LOGIN's user, then its password)), and what must stand before the verb (`_BEFORE_VERB`): a client's
# debug mark (smtplib's `send:`, poplib's and ftplib's `*cmd*`, curl's `> `, a transcript's `C: `), an
# IMAP command's tag at a line's start (`a001 LOGIN alice V`), or NickServ (`PRIVMSG NickServ :IDENTIFY
# V`, `/msg NickServ identify V`, `/ns identify V`). A SASL PLAIN response that decodes as one is one
# wherever it stands (`AUTH PLAIN <base64>` in a note). Verbs beginning with `pass` or `auth` are read
# where t3rl_core.secret_shapes already finds those words; the others (`login`, `identify`) are searched
# for (`protocol_login_spans`), one `str.find` a verb.
PROTOCOL_LOGINS: dict[str, tuple[str, str, str]] = {
    "PASS": ("FTP, POP3, IRC", "last", "mark"),
    "AUTH PLAIN": ("SMTP (SASL PLAIN)", "plain", "mark"),
    "AUTHENTICATE PLAIN": ("IMAP (SASL PLAIN)", "plain", "mark"),
    "AUTH LOGIN": ("SMTP (AUTH LOGIN)", "plain", "mark"),
    "AUTH": ("Redis, Memcached", "last", "mark"),
    "LOGIN": ("IMAP", "second", "tag"),
    "IDENTIFY": ("IRC (NickServ)", "last", "nickserv"),
}
_VERBS = sorted(PROTOCOL_LOGINS, key=len, reverse=True)  # `AUTH LOGIN` before `AUTH`
# What stands before a verb a client sent: its debug output's mark, then a quote (`b'` of bytes) or none.
_MARK = r"(?:\*cmd\*|\*put\*|send:|>|C:|>>>)[ \t]*b?['\"]?"
_PROTOCOL_MARK = rf"(?:[\r\n]|\\n)[ \t]*{_MARK}\Z"
# What must stand before a verb, by its row's third field: a window of the text before it, a line break
# put first where the text begins in it. An IMAP tag (`a001`, `A1`, imaplib's `LNLM1`) alone at a line's
# start or after a mark (imaplib prints a time before its `> b'`); NickServ addressed, or `/ns`.
_BEFORE_VERB = {
    "mark": _PROTOCOL_MARK,
    "tag": rf"(?:(?:[\r\n]|\\n)[ \t]*|{_MARK})[A-Za-z0-9.]{{1,12}} \Z",
    "nickserv": r"(?i)(?:nickserv\s*:?|/ns)\s*\Z",
}
# The arguments after a verb, to its line's end: words, or quoted strings (IMAP's `"pass word"`).
_ARGUMENT = r"""[ \t]+("(?:[^"\\\r\n]|\\.)*"|[^\s"'\\]+)"""
_LINE_END = r"""[ \t]*(?:[\r\n'"]|\\[rn]|\Z)"""
_B64_LINE = r"(?<![A-Za-z0-9+/=])([A-Za-z0-9+/]{4,}={0,2})(?=\\r|\\n|[\r\n'\"]|\Z)"


def protocol_login_spans(text: str, lower: str, searched: tuple[str, ...]) -> list[tuple[int, int]]:
    """The credentials protocols' logins send in `text` (`lower`: it lower-cased), found where each verb
    of `PROTOCOL_LOGINS` not beginning with one of `searched` (words the caller finds and reads already)
    stands."""
    spans: list[tuple[int, int]] = []
    for needle in sorted(
        {verb.split()[0].lower() for verb in PROTOCOL_LOGINS if not verb.lower().startswith(searched)}
    ):
        at = lower.find(needle)
        while at >= 0:
            if (login := protocol_login_span(text, at)) is not None:
                spans.append(login)
            at = lower.find(needle, at + 1)
    return spans


def protocol_login_span(text: str, at: int) -> tuple[int, int] | None:
    """The credential a protocol's login at `at` sends (`PROTOCOL_LOGINS`), where what its row wants
    stands before its verb (`send: 'AUTH PLAIN <base64>'`, `*cmd* 'PASS V'`, `a001 LOGIN alice V`); None
    elsewhere (`PASS` in a test runner's report, `auth` in prose)."""
    verb = next((verb for verb in _VERBS if _verb_at(text, at, verb)), None)
    if verb is None:
        return None
    _, argument, before = PROTOCOL_LOGINS[verb]
    # The window before the verb, a line break before it where the text begins there.
    window = ("\n" if at <= 24 else "") + text[max(0, at - 24) : at]
    marked = re.search(_BEFORE_VERB[before], window) is not None
    words = _arguments(text, at + len(verb))
    if argument == "plain" and words and _sasl_plain(text[words[0][0] : words[0][1]]):
        return words[0]  # SASL PLAIN's initial response, a client's debug mark before it or not
    if not marked:
        return None
    if argument == "last":
        return words[-1] if words and len(words) <= 2 else None
    if argument == "second":
        return words[1] if len(words) == 2 else None
    line_end = min((e for e in (text.find(c, at) for c in ("\r", "\n", "\\r", "\\n", "'", '"')) if e >= 0),
                   default=len(text))  # fmt: skip
    if words:
        return words[0]
    # Without one: the client's lines below (a server's `334 …` challenges between), its second is the
    # password (AUTH LOGIN) or its first the PLAIN response (AUTHENTICATE PLAIN).
    sent = [
        found.span(1) for found in re.finditer(_B64_LINE, text[line_end : line_end + 400])
        if not text[line_end + found.start(1) - 4 : line_end + found.start(1)].endswith(("334 ", "+ "))
    ]  # fmt: skip
    if not sent:
        return None
    start, end = sent[1] if verb == "AUTH LOGIN" and len(sent) > 1 else sent[0]
    return line_end + start, line_end + end


def _verb_at(text: str, at: int, verb: str) -> bool:
    """`verb` stands at `at` as a word: as written (a test runner's `Pass`, `12 login ok` in a log), in
    any case after NickServ (IRC's commands, which users type in small letters)."""
    written = text[at : at + len(verb)]
    same = written.upper() == verb if PROTOCOL_LOGINS[verb][2] == "nickserv" else written == verb
    return same and not text[at + len(verb) : at + len(verb) + 1].isalnum()


def _arguments(text: str, at: int) -> list[tuple[int, int]]:
    """The spans of the arguments after a verb ending at `at` (a quoted one inside its quotes), when they
    run to their line's end (or a quote closing a repr); [] otherwise."""
    spans = []
    while (found := re.compile(_ARGUMENT).match(text, at)) is not None and len(spans) < 4:
        start, end = found.span(1)
        spans.append((start + 1, end - 1) if text[start] == '"' and end - start > 1 else (start, end))
        at = found.end()
    return spans if re.compile(_LINE_END).match(text, at) is not None else []


def _sasl_plain(word: str) -> bool:
    """`word` is base64 of SASL PLAIN's `[authzid]\0user\0password` (RFC 4616)."""
    try:
        decoded = base64.b64decode(word, validate=True)
    except ValueError:
        return False
    parts = decoded.split(b"\0")
    return len(parts) == 3 and bool(parts[1]) and bool(parts[2])


def _here_document(
    text: str, marker: re.Match[str], body: tuple[int, str] | None
) -> tuple[list[tuple[int, int]], tuple[int, str] | None]:
    """The lines of the here-document `marker` (`<<EOF`, `<<-'END'`) opens, up to its delimiter's line (or
    the text's end: a view cut short), over real line breaks or JSON's escaped ones (a cell's code in a
    record): what the command reads from its standard input. `body`: where the line's previous
    here-document ended and its line break (None: this one begins after the marker's line); returned
    for the next."""
    if body is None:
        breaks = [(at, sign) for sign in ("\\n", "\n") if (at := text.find(sign, marker.end())) >= 0]
        if not breaks:
            return [], None
        at, sign = min(breaks)
    else:
        at, sign = body
    delimiter, spans = marker.group(3), []
    # Texts scanned joined (pre-flight's, parted by NUL) end the document at their end.
    last = text.find("\0", at)
    last = len(text) if last < 0 else last
    at += len(sign)
    while at < last and len(spans) < _MOST_HERE_LINES:
        line_end = text.find(sign, at, last)
        line_end = last if line_end < 0 else line_end
        line = text[at:line_end]
        # `<<-` strips leading tabs (real or JSON-escaped); a CRLF text's `\r` ends the line.
        if (_without_tabs(line) if marker.group(1) else line).rstrip("\r").removesuffix("\\r") == delimiter:
            return spans, (line_end, sign)
        spans.append((at, line_end))
        at = line_end + len(sign)
    return spans, (last, sign)


def _without_tabs(line: str) -> str:
    while line.startswith(("\t", "\\t")):
        line = line[1:] if line[0] == "\t" else line[2:]
    return line


def _word_span(found: re.Match[str], first: int) -> tuple[int, int]:
    """The span of the shell word whose three groups (quoted once, twice, plain) begin at `first`."""
    group = next((g for g in range(first, first + 3) if found.group(g) is not None), first)
    return found.span(group)


def _pgpass_spans(text: str) -> list[tuple[int, int]]:
    """The passwords of `.pgpass` lines, found from each `:PORT:` (a pattern with a literal first
    character: a 37 KB record's JSON, full of `:`, is searched in one C scan)."""
    spans: list[tuple[int, int]] = []
    for port in re.compile(_PGPASS_PORT).finditer(text):
        if not _PGPASS_RECORD and not _fields_follow(text, port.end()):
            continue  # a time (`12:30:45`), a ratio: `_PGPASS` not compiled (~2 M instructions) for it
        at = port.start()
        # The record's start: after a space or a line break (real or JSON's escaped one), a quote.
        start = at
        while start > max(0, at - 256) and not text[start - 1].isspace() and text[start - 1] not in "\"'":
            start -= 1
        escaped = text.rfind("\\n", start, at)
        start = escaped + 2 if escaped >= 0 else start
        if not _PGPASS_RECORD:
            _PGPASS_RECORD.append(re.compile(_PGPASS))
        record = _PGPASS_RECORD[0].match(text, start)
        if (
            record is not None
            and record.start(2) == at + 1
            and not record.group(5).startswith(_NOT_VALUES)
            and any(c.isalpha() or c == "*" for c in record.group(3) + record.group(4))
            and any(c.isalpha() or c in "*.[" for c in record.group(1))
        ):
            spans.append(record.span(5))
    return spans


# `_PGPASS` once compiled: from then on tried at each `:PORT:`, as fast as `_fields_follow` could tell.
_PGPASS_RECORD: list[re.Pattern[str]] = []


def _fields_follow(text: str, at: int) -> bool:
    """Three fields could follow a `:PORT:` ending at `at`: two more `:` before the next space or quote,
    which no field holds (an escaped line break may: it only adds more text to count in)."""
    end = len(text)
    for stop in (" ", "\t", "\n", "\r", '"', "'"):
        found = text.find(stop, at, end)
        if found >= 0:
            end = found
    return text.count(":", at, end) >= 2


def key_word_spans(text: str) -> list[tuple[int, int]]:
    """A random-looking key as the word after a credential's word (`mytool login V`), on its line: the
    word stands alone (after a space or a quote, before a space), options between are skipped."""
    spans: list[tuple[int, int]] = []
    if not any(word in text for word in (*_KEY_WORDS, "bind")):
        return spans
    if "bind" in text:
        for call in _BIND_CALLS:
            at = text.find(call + "(")
            while at >= 0:
                if text[at - 1 : at] in ".\t\n '\"(":
                    spans += call_credential_spans(text, call, at + len(call))
                at = text.find(call + "(", at + 1)
    for word in _KEY_WORDS:
        at = text.find(word)
        while at >= 0:
            end = at + len(word)
            if (at == 0 or text[at - 1] in _KEY_WORD_BEFORE) and text[end : end + 1] in (" ", "\t"):
                spans += _random_word_after(text, end)
            elif word in CREDENTIAL_CALLS and text.startswith("(", end) and text[at - 1 : at] in ".\t\n '\"(":
                spans += call_credential_spans(text, word, end)
            at = text.find(word, end)
    return spans


# Calls whose literal arguments are a credential by their place, as Python's clients take them: a
# `login` (smtplib's, ftplib's, imaplib's, poplib-like and pexpect's `login(user, password)`, W&B's
# `login(key=…)`: its last positional literal of two or more, or its `key`), an HTTP client's basic or
# digest authentication (`HTTPBasicAuth("alice", V)`, `aiohttp.BasicAuth(…)`: the second), and a
# request's `auth=("alice", V)` (the second item). One row a call's name: where the credential stands
# (`last`: the last of 2+ positional literals; an index: that positional literal) and the keywords that
# name it. Read where `key_word_spans` finds `login` and t3rl_core.secret_shapes finds `auth` already.
CREDENTIAL_CALLS: dict[str, tuple[str | int, tuple[str, ...]]] = {
    "login": ("last", ("key", "password", "passwd", "token")),
    # Wave ten: an LDAP simple bind (python-ldap's `simple_bind_s(who, cred)`, `bind_s(who, cred,
    # method)`): the second, or `cred`. Searched only in text holding `bind` (`_BIND_CALLS`).
    "simple_bind_s": (1, ("cred",)),
    "simple_bind": (1, ("cred",)),
    "bind_s": (1, ("cred",)),
    "BasicAuth": (1, ("password",)),
    "DigestAuth": (1, ("password",)),
    "auth": (1, ()),  # `auth=(user, password)`, a tuple after the keyword
}
_BIND_CALLS = tuple(call for call in CREDENTIAL_CALLS if "bind" in call)
# A call's argument that is a string literal, positional or after its keyword (pattern strings compiled
# on first use): group 1 the keyword, group 3 the literal.
# A variable's name (`login(user, "V")`: a name is no credential, but holds its place), group 4.
_CALL_ARGUMENT = (
    r"""\s*(?:([A-Za-z_]\w*)\s*=\s*)?(?:(['"])((?:(?!\2)[^\\\n]|\\.){1,512})\2|([A-Za-z_][\w.]*))"""
    r"""\s*(?:,|(?=[)\]]))"""
)


def call_credential_spans(text: str, name: str, opening: int) -> list[tuple[int, int]]:
    """The credential a call of `CREDENTIAL_CALLS`' `name` gives (its argument list opening at `opening`):
    its arguments read up to the first that is neither a literal nor a variable's name; a literal where the
    credential stands (wave ten: `smtp.login(user, "V")`, the user a variable, was read no further)."""
    where, keywords = CREDENTIAL_CALLS[name]
    positional: list[tuple[str | None, tuple[int, int] | None]] = []
    named: list[tuple[str | None, tuple[int, int] | None]] = []
    at = opening + 1
    argument = re.compile(_CALL_ARGUMENT)
    while (found := argument.match(text, at)) is not None:
        literal = found.span(3) if found.group(3) is not None else None
        (named if found.group(1) else positional).append((found.group(1), literal))
        at = found.end()
    spans = [span for keyword, span in named if keyword in keywords]
    if where == "last" and len(positional) >= 2:
        spans.append(positional[-1][1])
    elif isinstance(where, int) and len(positional) > where:
        spans.append(positional[where][1])
    return [span for span in spans if span is not None and not text.startswith(_NOT_VALUES, span[0])]


def _random_word_after(text: str, at: int) -> list[tuple[int, int]]:
    # A few options (`login --relogin V`) and up to two sub-commands (`token add V`, `auth set-key
    # default V`: plain lower-case words, as a program's sub-commands and a profile's name are) may
    # stand between.
    commands = 0
    for _ in range(5):
        while at < len(text) and text[at] in " \t":
            at += 1
        end = at
        while end < len(text) and not text[end].isspace() and text[end] not in _ENDS:
            end += 1
        begin, stop = _unquoted(text, at, end)
        if stop <= begin:
            return []
        value = text[begin:stop]
        if not _is_option(value):
            if commands < 2 and _SUB_COMMAND.fullmatch(value) is not None:
                commands += 1
            elif _HEX.fullmatch(value) or value.startswith(_NOT_VALUES):
                return []  # a hash (`git … token <sha>`), or where the key lives
            else:
                return [(begin, stop)] if looks_like_credential(value) else []
        at = end
    return []


def _password_options(text: str) -> list[tuple[int, int]]:
    """A password option's value after `=` (`--db-password=V`), of any program. Found from where the
    word stands (str.find): a pattern run over a 37 KB BFCL record, which says `password`, cost ~1 ms."""
    spans: list[tuple[int, int]] = []
    lower = text.lower()
    for word in ("password=", "passwd=", "passphrase=") if "pass" in lower else ():
        at = lower.find(word)
        while at >= 0:
            option = at
            while option and (lower[option - 1].isalnum() or lower[option - 1] in "_-"):
                option -= 1
            if text.startswith("-", option):
                value = re.compile(_OPTION_VALUE).match(text, at + len(word))
                if value is not None and not value.group(0).startswith(_NOT_VALUES):
                    end = value.end()
                    while end > value.start() + 1 and text[end - 1] in ",])":  # a list's or call's end
                        end -= 1
                    spans.append((value.start(), end))
            at = lower.find(word, at + 1)
    return spans


def argv_credentials(items: list[object]) -> list[tuple[int, int, int]]:
    """The credentials of an argv list held as data (`["mysql", "-pV"]` in a config's `extra_args`, a
    stage's command in manifest.json), which no item shows alone: `(index, start, end)` of each in its
    item. The words are read as one shell line."""
    words = [item if isinstance(item, str) else "" for item in items]
    if sum(1 for word in words if word) < 2:
        return []
    import shlex  # lazy: only lists of words need it

    starts, text = [], ""
    for word in words:
        quoted = shlex.quote(word)
        # Where the word's own text begins in the line: after the quote shlex opened (a word holding a
        # quote is spelt in pieces: all of it is taken).
        starts.append(len(text) + (1 if quoted != word and "'" not in word else 0))
        text += quoted + " "
    found = []
    for start, end in command_spans(text):
        index = max(i for i, at in enumerate(starts) if at <= start) if starts[0] <= start else 0
        word = words[index]
        if "'" in word:
            found.append((index, 0, len(word)))
        else:
            found.append((index, start - starts[index], min(len(word), end - starts[index])))
    return found


def _may_hold_command(text: str) -> bool:
    # An option's start holds a `-`: text without one (four in ten of an eval's episode texts, a
    # memchr) is not searched for each (~0.15 M instructions a record).
    dash = "-" in text
    if (dash and any(start in text for start in _OPTION_STARTS)) or any(word in text for word in _KEYWORDS):
        return True
    at, seen = text.find(" -") if dash else -1, 0
    while at >= 0:  # an option, not a list's `- item` or prose's ` - `
        if not text[at + 2 : at + 3].isspace() or seen > 200:
            return True
        at, seen = text.find(" -", at + 3), seen + 1
    # A config command's program stands in the words just before its `config` or `set`.
    for word in _SET_WORDS:
        at, seen = text.find(word), 0
        while at >= 0:
            before = text[max(0, at - 48) : at].encode("utf-8", "replace").translate(_WORD_BYTES).split()
            if _SETTER_NAMES.intersection(before[-3:]) or seen > 200:
                return True
            at, seen = text.find(word, at + 1), seen + 1
    return False


def named_spans(text: str, lower: str) -> list[tuple[int, int]]:
    """Where `text` (`lower`: it lower-cased) holds a line of `.netrc` tokens (`login alice password V`),
    whose `password` gives V away whatever it looks like. Found from where the word stands (str.find):
    a pattern run over a 37 KB BFCL record, which says `password`, cost ~1 ms."""
    spans: list[tuple[int, int]] = []
    at = text.find("password")
    while at >= 0:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        line = re.compile(_NETRC_LINE).fullmatch(text, start, len(text) if end < 0 else end)
        if line is not None and not line.group(1).startswith(_NOT_VALUES):
            spans.append(line.span(1))
        at = text.find("password", at + 1)
    return spans


def _program_occurrences(text: str, program: str) -> list[tuple[int, int]]:
    """The credentials of each command of `program` in `text`: where its name stands as a word (after a
    space, a quote, a path's `/`, an argv list's `[`, a shell's `;`, `|`, `&`, `(` or `` ` ``), ended by
    a space, a quote or an argv list's `,` or `]` (str.find: no pattern to compile per program)."""
    spans: list[tuple[int, int]] = []
    if program in _NEEDS and not any(word in text for word in _NEEDS[program]):
        return spans
    at = text.find(program)
    while at >= 0:
        end = at + len(program)
        if text.startswith(".exe", end):
            end += 4
        if (at == 0 or text[at - 1] not in _IN_NAME) and (end == len(text) or text[end] in _AFTER_NAME):
            while end < len(text) and text[end] in "'\"\\":  # the closing quote of its argv item
                end += 1
            spans += _program_spans(text, program, end)
        at = text.find(program, at + 1)
    return spans


def _ordered(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` in order, those that overlap joined (two kinds may find one value, each a part of it)."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if kept and start < kept[-1][1]:
            kept[-1] = (kept[-1][0], max(end, kept[-1][1]))
        else:
            kept.append((start, end))
    return kept


def _netrc_spans(text: str) -> list[tuple[int, int]]:
    """The `.netrc` records' credentials: matched where `machine` or `default` stands as a word (found
    with str.find; the pattern run over a 37 KB BFCL record, whose JSON says `default`, cost ~2 ms)."""
    spans = []
    for word in ("machine", "default"):
        at = text.find(word)
        while at >= 0:
            # A word: after no name's character, or after an escaped line break or tab (JSON's `\n`).
            word_starts = not at or text[at - 1] not in _IN_NAME or text[at - 2 : at] in ("\\n", "\\t", "\\r")
            record = re.compile(_NETRC).match(text, at) if word_starts else None
            if record is not None:
                base = record.start(1)
                for token in re.finditer(_NETRC_SECRET, record.group(1)):
                    if not token.group(2).startswith(_NOT_VALUES):
                        spans.append((base + token.start(2), base + token.end(2)))
            at = text.find(word, at + 1)
    return spans


def _command_words(text: str, start: int) -> list[tuple[int, int]]:
    """The words of the command that follows a program's word at `start` (up to its end: a line, a
    shell separator, a list's `]`), each as the span of its text without the quotes, brackets and
    commas around it. A quoted part is one word with what is glued to it (`-p'a b'`)."""
    words: list[tuple[int, int]] = []
    at, end = start, min(len(text), start + 2000)
    while at < end:
        char = text[at]
        if char == "\\" and (skip := _continuation(text, at) or 2 * (text[at + 1 : at + 2] == "t")):
            at += skip  # a line continued (the command goes on), or JSON's escaped tab between words
            continue
        if char in _ENDS or (char == "\\" and text[at + 1 : at + 2] in ("n", "r")):
            break
        if char.isspace():
            at += 1
            continue
        begin, quote = at, ""
        while at < end:
            char = text[at]
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif (
                char.isspace()
                or char in _ENDS
                or (char == "\\" and (text[at + 1 : at + 2] in ("n", "r", "t") or _continuation(text, at)))
            ):
                break
            at += 1
        inner = _inner(text, begin, at)
        if inner[1] > inner[0]:  # not a list's `,` alone
            words.append(inner)
    return words


def _continuation(text: str, at: int) -> int:
    """The length of a line continuation at `at` (a backslash ending a line, as a shell reads it; real or
    JSON-escaped), 0 where there is none."""
    for form in _CONTINUATIONS:
        if text.startswith(form, at):
            return len(form)
    return 0


def _inner(text: str, begin: int, end: int) -> tuple[int, int]:
    """A word's span without what stands around it: an argv list's `[`, `,` and `]`, a shell's `(` and
    `)`, then the quotes around it, also a shell's pieces of quoting (`'-pV',` → `-pV`; `'-pV)'` →
    `-pV)`; `'"'"'-pV'"'"'` inside `bash -c '…'` → `-pV`)."""
    while begin < end and text[begin] in "[(,":
        begin += 1
    while end > begin and text[end - 1] in ",)]":
        end -= 1
    while begin < end and text[begin] in "'\"\\":
        begin += 1
    while end > begin and text[end - 1] in "'\"\\":
        end -= 1
    return begin, end


def _unquoted(text: str, begin: int, end: int) -> tuple[int, int]:
    """A value's span without the quotes around it (`'a b'` → `a b`)."""
    while begin < end and text[begin] in "'\"\\":
        begin += 1
    while end > begin and text[end - 1] in "'\"\\":
        end -= 1
    return begin, end


def _program_spans(text: str, program: str, start: int) -> list[tuple[int, int]]:
    words = _command_words(text, start)
    texts = [text[a:b] for a, b in words]
    options = dict(_OPTIONS.get(program, {}))
    spans: list[tuple[int, int]] = []
    for i, (begin, end) in enumerate(words):
        word = texts[i]
        for after, more in _AFTER_WORD.get(program, ()):
            if word == after:
                options.update(more)
        found = _option_value(word, options, program not in _NO_GLUED)
        if found is None:
            continue
        (how, form), glued_at = found
        if glued_at is not None:
            spans.append(_credential(text, begin + glued_at, end, form))
        elif how == ANY and i + 1 < len(words) and not _is_option(texts[i + 1]):
            spans.append(_credential(text, *words[i + 1], form))
    spans += _positional_spans(program, words, texts)
    return [span for span in spans if span[1] > span[0] and not text.startswith(_NOT_VALUES, span[0])]


def _is_option(word: str) -> bool:
    return word.startswith("-") and len(word) > 1


def _option_value(
    word: str, options: dict[str, tuple[str, str]], glued: bool
) -> tuple[tuple[str, str], int | None] | None:
    """How the option of `options` that `word` is takes its value, with its glued value's offset (None:
    the next word is its value); `glued`: a short option's value may be glued to it."""
    if not _is_option(word):
        return None
    name, eq, _ = word.partition("=")
    if name in options:
        # A short option's glued value is all after it (`-p=V` gives mysql the password `=V`).
        return options[name], (len(name) + (len(name) > 2)) if eq else None
    for option, spec in options.items() if glued else ():
        # A short option's value glued to it (`-pV`, `-uuser:V`); a long option takes it after `=`.
        if len(option) == 2 and word.startswith(option) and len(word) > 2:
            return spec, 2
    return None


def _credential(text: str, begin: int, end: int, form: str) -> tuple[int, int]:
    """The span of the credential in a value standing at `begin:end`, by its form."""
    begin, end = _unquoted(text, begin, end)
    value = text[begin:end]
    if form in (USER_COLON, USER_PERCENT, USER_COMMA, ASSIGNED):
        user, sep, _ = value.partition(form)
        if not sep:
            return begin, begin  # a user's name alone (the program asks for the password)
        if form == USER_COLON and not value[len(user) + 1 :]:
            return begin, begin + len(user)  # `-u KEY:`: an API key given as the user (Stripe's form)
        return begin + len(user) + 1, end
    if form == OPENSSL:
        kind, sep, _ = value.partition(":")
        if sep and kind == "pass":
            return begin + 5, end
        return (begin, begin) if sep or value == "stdin" else (begin, end)
    return begin, end


def _positional_spans(program: str, words: list[tuple[int, int]], texts: list[str]) -> list[tuple[int, int]]:
    spans = []
    for after, index, takes_value in _POSITIONAL.get(program, ()):
        found = _after(texts, after)
        if found is not None:
            spans += _nth_positional(words, texts, found, index, takes_value)
    if program == "htpasswd":
        flags = "".join(t[1:] for t in texts if _is_option(t) and not t.startswith("--"))
        if "b" in flags:  # `-b FILE USER V`, `-nb USER V`: the password is the last of them
            spans += _nth_positional(words, texts, 0, 1 if "n" in flags else 2, frozenset())
    if program in _CONFIG_SET:
        found = _after(texts, _CONFIG_SET[program], fold=True)
        if found is None and program in ("npm", "pnpm", "yarn"):
            found = _after(texts, ("set",))
        if found is not None:
            spans += _config_set(words, texts, found)
    if program in _SECRETS_STORES:
        found = _after(texts, _SECRETS_STORES[program])
        if found is not None:
            for i in range(found, len(texts)):
                name, eq, value = texts[i].partition("=")
                if eq and value and not _is_option(texts[i]):
                    spans.append((words[i][0] + len(name) + 1, words[i][1]))
    return spans


def _after(texts: list[str], path: tuple[str, ...], fold: bool = False) -> int | None:
    """The index after the words `path` (in order, each anywhere after the last), or None."""
    at = 0
    for part in path:
        for i in range(at, len(texts)):
            if (texts[i].lower() if fold else texts[i]) == part:
                at = i + 1
                break
        else:
            return None
    return at


def _nth_positional(
    words: list[tuple[int, int]], texts: list[str], at: int, index: int, takes_value: frozenset[str]
) -> list[tuple[int, int]]:
    count, i = 0, at
    while i < len(texts):
        word = texts[i]
        if _is_option(word):
            i += 2 if word in takes_value else 1
            continue
        if count == index:
            return [words[i]]
        count, i = count + 1, i + 1
    return []


def _config_set(words: list[tuple[int, int]], texts: list[str], at: int) -> list[tuple[int, int]]:
    """`set NAME V` (`NAME=V` too, as npm takes it): V when NAME names a credential."""
    rest = [i for i in range(at, len(texts)) if not _is_option(texts[i])]
    if not rest:
        return []
    name, eq, value = texts[rest[0]].partition("=")
    last = re.split(r"[.:/]", name)[-1] or name
    if not (is_secret_name(last) or is_secret_name(name) or re.match(_CONFIG_SECRET_NAMES, name)):
        return []
    if eq:
        return [(words[rest[0]][0] + len(name) + 1, words[rest[0]][1])] if value else []
    if len(rest) < 2:
        return []
    # `poetry config http-basic.REPO USER V`: the password is the last word.
    return [words[rest[2]] if name.startswith("http-basic.") and len(rest) > 2 else words[rest[1]]]
