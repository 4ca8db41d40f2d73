"""Credentials that their command or file format gives away, whatever they look like (round seven;
docs/how-to/secrets.md listed them as left unmasked): a password glued to a short flag (`mysql -pV`),
after a password option's `=` (`mysql --password=V`), a program's credential option's next word
(`sshpass -p V`, `docker login -p V`), a user's password (`curl -u alice:V`, `smbclient -U alice%V`),
a positional key (`wandb login V`, `htpasswd -b F alice V`), a config command's credential
(`aws configure set aws_secret_access_key V`), a secrets store's value (`fly secrets set K=V`), and
`.netrc` records (`machine h login u password V`). Each kind is generated in many shapes (program as a
word, a path, an argv list's item, JSON-escaped in a record, behind `sudo`/`env`, inside `bash -c`, with
other options around it, line by line as a log's tee sees it) and checked in every record kind:
`scrub_text` (run dir files, logs), `scrub_obj` (config, manifest, W&B), an eval record's line (its
episode text too) and pre-flight's `credentials_in`. Ordinary text stays as it is: commands without a
credential, paths, hashes, model names, numbers, and the BFCL and tau2 data the official checkers replay.

t3rl_core.secret_commands holds the declarations; each property fails before it (`git archive` of the
parent commit, these tests run against it: every masking test fails)."""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from launch.config.secrets import scrub_obj, scrub_text
from t3rl_core.eval.jsonl import record_line
from t3rl_core.secret import mask_episode_text
from t3rl_core.secret_shapes import credentials_in
from tests.support.cli_app import invoke
from tests.support.planted import isolate

# A password's characters: printable, no space, quote, backslash or shell operator (a shell would
# need them quoted; quoted values are generated separately), not starting as an option or a reference.
VALUE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#%*+-./:=?@^_~{}[],"
VALUES = (
    st.text(VALUE_CHARS, min_size=6, max_size=24)
    .filter(lambda v: v[0] not in "-$*[," and not v.startswith(("env:", "file:", "fd:", "pass:")))
    .filter(lambda v: v[-1] not in ",]")
)
QUOTED_VALUES = st.text(VALUE_CHARS + " ;|&()<>$`", min_size=6, max_size=24).filter(
    lambda v: v.strip() == v and v[0] not in "-$*[" and v[-1] not in ",]" and not v.startswith("env:")
)
USERS = st.sampled_from(["alice", "root", "svc-deploy", "u_01", "__token__"])
HOSTS = st.sampled_from(["db.example.com", "10.0.0.7", "api.wandb.ai", "huggingface.co", "localhost"])
MYSQLS = st.sampled_from(["mysql", "mysqldump", "mysqladmin", "mariadb", "mariadb-dump", "mysqlsh"])
OTHER_OPTIONS = st.lists(
    st.sampled_from(["-h", "db", "-P", "3306", "--ssl", "-v", "-q", "--verbose"]), max_size=4
)


def _argv(program: str, before: list[str], credential: list[str], after: list[str]) -> list[str]:
    return [program, *before, *credential, *after]


@st.composite
def glued_short(draw: st.DrawFn) -> tuple[list[str], str]:
    """A password glued to a short flag: `mysql -pV`, `7z a -pV`, `sshpass -pV`, `curl -uuser:V`."""
    value = draw(VALUES)
    program, flag = draw(
        st.sampled_from([(draw(MYSQLS), "-p"), ("7z", "-p"), ("rar", "-p"), ("sshpass", "-p")])
    )
    if draw(st.booleans()) and program != "sshpass":
        program, flag = "curl", "-u" + draw(USERS) + ":"
    return _argv(program, draw(OTHER_OPTIONS), [flag + value], ["db"]), value


@st.composite
def password_option(draw: st.DrawFn) -> tuple[list[str], str]:
    """A password option's value after `=` (any program's), or as its next word (a credential-taking
    program's): `mysql --password=V`, `wget --http-password V`, `redis-cli -a V`, `docker login -p V`."""
    value = draw(VALUES)
    if draw(st.booleans()):
        option = draw(st.sampled_from(["--password", "--db-password", "--admin-passwd", "--passphrase"]))
        program = draw(st.sampled_from([draw(MYSQLS), "mytool", "python -m app", "wget"]))
        return [*program.split(), *draw(OTHER_OPTIONS), f"{option}={value}"], value
    program, option = draw(
        st.sampled_from(
            [
                ("sshpass", "-p"), ("redis-cli", "-a"), ("mongosh", "-p"), ("mongodump", "--password"),
                ("sqlcmd", "-P"), ("ldapsearch", "-w"), ("zip", "-P"), ("unzip", "-P"),
                ("gpg", "--passphrase"), ("keytool", "-storepass"), ("twine", "-p"), ("mosquitto_pub", "-P"),
                ("wget", "--http-password"), ("wget", "--password"), ("curl", "--oauth2-bearer"),
                ("docker login", "-p"), ("podman login", "--password"), ("helm", "--password"),
                ("gh secret set NAME", "--body"), ("kubectl", "--token"), ("openssl enc", "-k"),
            ]
        )
    )  # fmt: skip
    if draw(st.booleans()) and not option.startswith("--") and program not in ("keytool", "openssl enc"):
        return [*program.split(), option + value], value  # glued, as getopt also reads it
    return [*program.split(), *draw(OTHER_OPTIONS), option, value, "x"], value


@st.composite
def user_password(draw: st.DrawFn) -> tuple[list[str], str]:
    """A user's password in one word: `curl -u alice:V`, `curl --user=alice:V`, `smbclient -U alice%V`,
    `lftp -u alice,V`, `skopeo --creds alice:V`, `openssl … -passin pass:V`."""
    value, user = draw(VALUES), draw(USERS)
    program, option, joined = draw(
        st.sampled_from(
            [
                ("curl", "-u", f"{user}:{value}"), ("curl", "--user", f"{user}:{value}"),
                ("curl", "-U", f"{user}:{value}"), ("curl", "--proxy-user", f"{user}:{value}"),
                ("smbclient //h/share", "-U", f"{user}%{value}"), ("lftp", "-u", f"{user},{value}"),
                ("skopeo copy", "--creds", f"{user}:{value}"), ("openssl rsa", "-passin", f"pass:{value}"),
                ("openssl pkcs12", "-passout", f"pass:{value}"),
            ]
        )
    )  # fmt: skip
    if option.startswith("--") and draw(st.booleans()):
        return [*program.split(), f"{option}={joined}", "https://example.com/x"], value
    return [*program.split(), option, joined, "https://example.com/x"], value


@st.composite
def positional_key(draw: st.DrawFn) -> tuple[list[str], str]:
    """A key or password as a positional argument where the program takes one, a config command's value
    for a credential's name, a secrets store's value."""
    value, user = draw(VALUES), draw(USERS)
    argv = draw(
        st.sampled_from(
            [
                ["wandb", "login", value], ["wandb", "login", "--relogin", value],
                ["wandb", "login", "--host", "https://wandb.example.com", value],
                ["ngrok", "authtoken", value], ["ngrok", "config", "add-authtoken", value],
                ["vault", "login", value], ["rabbitmqctl", "add_user", user, value],
                ["rabbitmqctl", "change_password", user, value],
                ["htpasswd", "-b", ".htpasswd", user, value], ["htpasswd", "-nbB", user, value],
                ["aws", "configure", "set", "aws_secret_access_key", value],
                ["npm", "config", "set", "//registry.npmjs.org/:_authToken", value],
                ["npm", "config", "set", f"//registry.npmjs.org/:_authToken={value}"],
                ["git", "config", "--global", "user.password", value],
                ["redis-cli", "CONFIG", "SET", "requirepass", value],
                ["poetry", "config", "pypi-token.pypi", value],
                ["poetry", "config", "http-basic.repo", user, value],
                ["fly", "secrets", "set", f"DB_URL={value}"], ["doppler", "secrets", "set", f"X={value}"],
                ["kubectl", "create", "secret", "generic", "db", f"--from-literal=password={value}"],
            ]
        )
    )  # fmt: skip
    return argv, value


COMMANDS = st.one_of(glued_short(), password_option(), user_password(), positional_key())


@st.composite
def framed(
    draw: st.DrawFn, kind: st.SearchStrategy[tuple[list[str], str]] = COMMANDS
) -> tuple[str, str, list[str]]:
    """A command as text where a record may hold it: a shell line (behind a path, `sudo`, `env`, a
    prompt, `bash -c`, or after another command), an argv list's repr or JSON, or JSON-escaped."""
    argv, value = draw(kind)
    if draw(st.booleans()):
        argv = [draw(st.sampled_from(["/usr/bin/", "/usr/local/bin/", "./", ""])) + argv[0], *argv[1:]]
    line = shlex.join(argv)
    framing = draw(st.integers(0, 8))
    if framing == 0:
        text = line
    elif framing == 1:
        text = f"sudo {line}"
    elif framing == 2:
        text = f"env LANG=C {line} && echo done"
    elif framing == 3:
        text = f"$ {line}\nok\n"
    elif framing == 4:
        text = f"bash -c {shlex.quote(line)}"
    elif framing == 5:
        text = f"subprocess.CalledProcessError: Command {argv!r} returned non-zero exit status 1."
    elif framing == 6:
        text = json.dumps({"argv": argv, "returncode": 1})
    elif framing == 7:
        text = json.dumps({"cmd": f"cd /work && {line}; echo $?"})
    else:
        text = f"2026-01-01 12:00:00 INFO running: {line} (attempt 2)"
    assume(text.count(value) == 1 and value not in text.replace(value, "", 1))
    return text, value, argv


def _records(text: str, argv: list[str] | None = None) -> dict[str, str]:
    """`text` as each kind of record writes it, and `argv` (the command as a config's or a manifest's
    list of words)."""
    return {
        "scrub_text": scrub_text(text),
        "scrub_obj": json.dumps(scrub_obj({"stage": {"command": text, "argv": argv or []}})),
        "eval record": record_line({"task_id": "t", "error": text, "messages": [{"content": text}]}),
        "episode text": mask_episode_text(text),
        "log lines": "\n".join(scrub_text(line) for line in text.splitlines()),
    }


def _outside(value: str, text: str) -> None:
    """Only values that stand once in `text` and nowhere in what a record writes around it."""
    assume(text.count(value) == 1 and value not in " ".join(_records("x").values()))


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@given(framed())
@SETTINGS
def test_a_credential_a_command_takes_is_masked_in_every_record(case: tuple[str, str, list[str]]) -> None:
    text, value, argv = case
    _outside(value, text)
    for where, written in _records(text, argv).items():
        assert value not in written, (where, text, written)
    assert any(value in found for found in credentials_in(text)), text  # pre-flight refuses it


@given(st.data())
@SETTINGS
def test_a_quoted_password_holding_spaces_and_shell_operators_is_masked(data: st.DataObject) -> None:
    """`mysql -p'a b;c'`, `sshpass -p "a|b"`: the quoted word is the value, whatever it holds."""
    value = data.draw(QUOTED_VALUES)
    assume("'" not in value)
    argv = data.draw(
        st.sampled_from([["mysql", "-u", "root", "-p" + value], ["sshpass", "-p", value, "ssh", "h"]])
    )
    text = data.draw(st.sampled_from([shlex.join(argv), repr(argv), json.dumps(argv)]))
    _outside(value, text)
    for where, written in _records(text, argv).items():
        assert value not in written, (where, text, written)


@st.composite
def netrc(draw: st.DrawFn) -> tuple[str, list[str], list[str]]:
    """`.netrc` content: records of `machine HOST` or `default` with `login`, `password` and `account`
    in any order, over one line or several (spaces, tabs, newlines, indentation); its credentials, and
    of them the passwords."""
    records, values, passwords = [], [], []
    for _ in range(draw(st.integers(1, 3))):
        password = draw(VALUES)
        tokens = [("login", draw(USERS)), ("password", password)]
        if draw(st.booleans()):
            account = draw(VALUES)
            tokens.append(("account", account))
            values.append(account)
        values.append(password)
        passwords.append(password)
        tokens = draw(st.permutations(tokens))
        gap = draw(st.sampled_from([" ", "\n  ", "\n\t", "\t"]))
        head = (
            draw(st.sampled_from(["machine " + draw(HOSTS), "default"]))
            if not records
            else ("machine " + draw(HOSTS))
        )
        records.append(head + "".join(f"{gap}{name} {value}" for name, value in tokens))
    return "\n".join(records) + "\n", values, passwords


@given(netrc(), st.integers(0, 3))
@SETTINGS
def test_netrc_content_is_masked_in_every_record(
    case: tuple[str, list[str], list[str]], framing: int
) -> None:
    """Whole, in every record; line by line (a log's tee), every password (an `account` line alone is
    not read as one: docs/how-to/secrets.md, Limits)."""
    content, values, passwords = case
    text = [
        content,
        f"$ cat ~/.netrc\n{content}",
        json.dumps({"stdout": content}),
        f"cell output:\n{content}\n[exit 0]",
    ][framing]
    for value in values:
        _outside(value, text)
        assume(not any(value in other for other in values if other != value))
    for where, written in _records(text).items():
        for value in passwords if where == "log lines" else values:
            assert value not in written, (where, text, written)


def test_a_netrc_line_alone_is_masked_as_a_tee_sees_it() -> None:
    """A line-by-line copier sees `password V` without its `machine` line."""
    for line in ["  password hunter2", "login alice password hunter2", "\tpassword hunter2 account a1b2c3d4"]:
        assert "hunter2" not in scrub_text(line), line


# ------------------------------------------------------------------ what stays


ORDINARY_COMMANDS = [
    "mysql -u root -h db.example.com -P 3306 app",
    "mysql -p app",  # asks for the password; `app` is the database
    "mysql --password -u root app",
    "docker run -p 8080:80 -v /data:/data nginx:1.25",
    "docker build -t t3rl:dev -f docker/Dockerfile .",
    "curl -X POST -H 'Content-Type: application/json' -d @body.json https://api.example.com/v1",
    "curl -u alice https://example.com/",  # asks for the password
    "curl -sSfL -o /tmp/x.tar.gz https://example.com/x.tar.gz",
    "ssh -p 2222 -i ~/.ssh/id_ed25519 alice@host",
    "mkdir -p /work/runs/stage2_bfcl && cd /work/runs",
    "git commit -m 'fix the password prompt' && git push -u origin main",
    "git config --global user.name 'Alice Example'",
    "pip install -U 'sglang[all]==0.4.6' --index-url https://pypi.org/simple",
    "wandb sync runs/20260101-120000 --project t3rl",
    "wandb login",
    "openssl enc -aes-256-cbc -pass env:BACKUP_PASS -in a -out b",
    "openssl rsa -passin file:/run/secrets/key_pass -in key.pem",
    "redis-cli -h cache -p 6379 ping",
    "zip -r -q out.zip dir/",
    "7z a -mx=9 archive.7z dir/",
    "htpasswd -c .htpasswd alice",
    "kubectl get pods -n t3rl -o wide",
    "mysql --password=$DB_PASS -u root app",
    "sshpass -e ssh alice@host",
    "aws configure set region us-east-1",
    "npm config set registry https://registry.npmjs.org/",
    "fly secrets list",
    "password changed successfully for alice",
    "machine learning models default to bf16",
    "python -m launch.cli plan +experiment=stage2_bfcl --dry-run",
]


@pytest.mark.parametrize("text", ORDINARY_COMMANDS)
def test_a_command_without_a_credential_is_left_as_it_is(text: str) -> None:
    from t3rl_core.secret_commands import command_spans, named_spans

    assert command_spans(text) == [] and named_spans(text, text.lower()) == [], text
    assert scrub_text(text) == text and mask_episode_text(text) == text


ORDINARY_WORDS = st.one_of(
    st.from_regex(r"/(?:[a-z0-9_.-]{1,12}/){0,4}[a-z0-9_.-]{1,12}", fullmatch=True),  # paths
    st.from_regex(r"[0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64}", fullmatch=True),  # hashes
    st.sampled_from(["Qwen/Qwen3-4B-Instruct-2507", "meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-V3"]),
    st.integers(-(10**9), 10**9).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-", "--", "- item", "the", "a:b", "x,y", "k=v", "--lr=1e-6", "-n", "--tp-size"]),
)
PROGRAM_NAMES = st.sampled_from(
    ["mysql", "curl", "docker", "git", "wandb", "aws", "fly", "7z", "zip", "gh", "oc", "az", "sshpass",
     "htpasswd", "default", "machine"]
)  # fmt: skip
CREDENTIAL_OPTIONS = st.sampled_from(
    ["-u", "-p", "-P", "-a", "--user", "--token", "-w", "-k", "--body", "-b", "--password", "login", "set",
     "config", "authtoken", "add_user", "secrets"]
)  # fmt: skip
SEPARATORS = st.sampled_from([" ", "\n", ", ", " - ", "', '"])


@given(st.lists(st.one_of(ORDINARY_WORDS, PROGRAM_NAMES), max_size=12), SEPARATORS)
@settings(max_examples=400, deadline=None)
def test_programs_names_among_ordinary_words_are_no_credential(words: list[str], separator: str) -> None:
    """Paths, hashes, model names, numbers, options and the names of programs that take credentials, in
    any order: no credential option or word follows the program, so nothing is masked."""
    from t3rl_core.secret_commands import command_spans, named_spans

    text = separator.join(words)
    assert command_spans(text) == [] and named_spans(text, text.lower()) == [], text


@given(st.lists(st.one_of(ORDINARY_WORDS, CREDENTIAL_OPTIONS), max_size=12), SEPARATORS)
@settings(max_examples=400, deadline=None)
def test_credential_options_without_their_program_are_no_credential(words: list[str], separator: str) -> None:
    """The same words with the options and words after which a program takes a credential (`-p`,
    `--user`, `login`, `set`), but no such program: nothing is masked."""
    from t3rl_core.secret_commands import command_spans

    text = separator.join(words)
    assert command_spans(text) == [], text


def _shipped_texts() -> list[tuple[str, str]]:
    """(the files holding it, joined by ' = '; the text) for each distinct text of the shipped BFCL and
    tau2 files: a scan is a function of the text alone, and tau2 ships telecom's tasks.json and
    tasks_full.json alike (14 of the 51 MB; ~2.5 s of CPU a scan of both forms)."""
    paths: dict[str, list[str]] = {}
    for package, pattern in (("bfcl_eval", "data/**/*.json"), ("tau2", "data/tau2/domains/*/*.json")):
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            continue
        for path in sorted(Path(spec.origin).parent.glob(pattern)):
            paths.setdefault(path.read_text(encoding="utf-8", errors="replace"), []).append(str(path))
    return [(" = ".join(files), text) for text, files in paths.items()]


def test_bfcl_and_tau2_data_holds_no_command_credential() -> None:
    """Every shipped BFCL and tau2 file (tasks, ground truth, databases), as an episode's text and as a
    record's JSON holds it: nothing of the new kinds, so what the official checkers replay is unchanged."""
    from t3rl_core.secret_commands import command_spans, named_spans

    texts = _shipped_texts()
    if not texts:
        pytest.skip("neither bfcl_eval nor tau2 is installed: no shipped data to read")
    found = []
    for path, text in texts:
        for piece in (text, json.dumps(text)):
            found += [(path, piece[a:b]) for a, b in command_spans(piece)]
            found += [(path, piece[a:b]) for a, b in named_spans(piece, piece.lower())]
    assert found == []


# ------------------------------------------------------------------ through the CLI


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch, {})


@pytest.mark.parametrize(
    "command",
    ["mysql -uroot -p{v} app", "curl -u alice:{v} https://example.com", "wandb login {v}"],
    ids=["mysql-glued", "curl-user", "wandb-positional"],
)
def test_a_job_variable_holding_such_a_command_is_refused_without_quoting_it(
    here: Path, command: str
) -> None:
    """A job variable's text holding `mysql -pV`: every file masks V, so the job would run what the config
    does not say; refused as a `?token=` in a variable's text is, and V is not printed."""
    value = "Zq8" + "x7Kp2" * 3
    override = f"++hardware.env_vars.DB_CMD='{command.format(v=value)}'"
    result = invoke(["validate", "+experiment=quickstart", override])
    assert result.exit_code == 2, result.output
    assert "hardware.env_vars.DB_CMD" in result.output, result.output
    assert value not in result.output, result.output
