"""Round seven of hostile cells (docs/explanation/sandbox.md, "Round seven"): credentials a cell's
environment held inside a longer value, what a cell can do to its own output pipe, and a cell's output
printed on t3rl's terminal.

A cell's environment is `env_allowlist` and `env` less the credentials; a variable was taken for one by
its name, or when its whole value was a token (`sk-…`) or random under a key-like name. A credential
inside a longer value passed: a proxy's or a package index's URL with its password
(`HTTPS_PROXY=http://user:pass@proxy:3128`, the first variable one allow-lists for a cell that installs
packages), a token in a note, a URL's `?token=`, a credential variable's value with text around it.
"""

from __future__ import annotations

import io
import string
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from launch.config.secret_rich import scrub_rich
from launch.config.secrets import scrub_text
from launch.output.plain import PlainConsole
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import cell_env
from t3rl_core.secret_env import without_credentials
from tests.sandbox.test_sandbox_redteam import Pool, fallback, planted  # noqa: F401 - planted: a fixture
from tests.support.draws import SeededDraws

ALPHABET = string.ascii_letters + string.digits
random_source = SeededDraws(__name__)
# Values per test: each must be refused or dropped in every form `holding` gives it.
DRAWS = 50


def random_value() -> str:
    """24 random letters and digits, a letter and a digit among them: text that assigns a value to a
    credential's name (`api_key=V`) makes it one from 8 such characters (docs/how-to/secrets.md); one
    draw in 70 holds no digit, and `api_key=<24 letters>` in a note is left as prose."""
    while True:
        value = "".join(random_source.choice(ALPHABET) for _ in range(24))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def holding(value: str) -> dict[str, str]:
    """Variables of plain names whose values hold `value` inside longer text, each in its own way."""
    return {
        "HTTPS_PROXY": f"http://build:{value}@proxy.internal:3128",
        "PIP_INDEX_URL": f"https://__token__:{value}@pypi.internal/simple",
        "NOTE": f"the service answers with api_key={value} only",
        "CALLBACK": f"https://hooks.example.com/in?token={value}",
        "BANNER": f"key: sk-proj-{value}{value}",
    }


@pytest.mark.parametrize("name", list(holding("x")))
def test_a_credential_inside_a_set_variable_is_refused(name: str) -> None:
    """`env: {HTTPS_PROXY: http://build:<password>@proxy…}`: validated, and copied into every cell."""
    for _ in range(DRAWS):
        value = random_value()
        with pytest.raises(ValidationError, match=f"{name}: a sandbox cell") as caught:
            LocalSandboxConfig(env={name: holding(value)[name]})
        assert value not in str(caught.value)


def test_an_allow_listed_variable_holding_a_credential_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """`env_allowlist: [HTTPS_PROXY, PIP_INDEX_URL, …]`: the values came from t3rl's own environment and
    passed whole into every cell; so did a plain variable holding a credential variable's value with
    text around it (`NOTE: "key ${oc.env:MY_API_KEY} here"`)."""
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    for _ in range(DRAWS):
        value, key = random_value(), random_value()
        variables = {**holding(value), "WRAPPED": f"prefix-{key}-suffix"}
        for name, text in variables.items():
            monkeypatch.setenv(name, text)
        monkeypatch.setenv("T3RL_TEST_API_KEY", key)
        monkeypatch.setenv("PATH", f"/opt/ghp_{value}{value}/bin:/usr/bin")
        env = cell_env(LocalSandboxConfig(env_allowlist=[*variables, "NO_PROXY", "LANG", "PATH"]))
        assert not set(variables) & set(env), env
        assert env["NO_PROXY"] == "localhost,127.0.0.1" and env["OMP_NUM_THREADS"] == "1"
        assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"  # the default, not none
        assert all(value not in text and key not in text for text in env.values())


def test_a_command_services_environment_loses_a_proxys_password() -> None:
    """The same rule for an environment's server (`services.<name>`, kind `command`), which runs what the
    model asks: `HTTPS_PROXY` with its password was inherited."""
    for _ in range(DRAWS):
        value = random_value()
        env = without_credentials(
            {**holding(value), "HOME": "/home/u", "URL": "https://example.com/a?page=2"}
        )
        assert env == {"HOME": "/home/u", "URL": "https://example.com/a?page=2"}, value


def test_plain_variables_stay() -> None:
    """The neighbours: URLs without a password, paths, numbers, a proxy without user information."""
    env = {
        "HTTPS_PROXY": "http://proxy.internal:3128",
        "HF_ENDPOINT": "https://huggingface.co",
        "TOKENIZERS_PARALLELISM": "false",
        "NOTE": "max_tokens=4096",
    }
    assert LocalSandboxConfig(env=env).env == env
    assert without_credentials(env) == env


# ------------------------------------------------------------------ a cell and its own output pipe


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    pool = Pool(LocalSandboxConfig(timeout_s=60.0, max_concurrency=1, max_output_bytes=1 << 16))
    try:
        yield pool
    finally:
        pool.close()


def test_a_cell_that_grows_its_output_pipe_is_still_capped(pool: Pool) -> None:
    """`fcntl(1, F_SETPIPE_SZ, 1 MiB)` then 4 MiB to stdout: the cap counts what t3rl reads, whatever the
    pipe holds; the next cell is served."""
    code = (
        "import fcntl, os\n"
        "fcntl.fcntl(1, 1031, 1 << 20)\n"  # F_SETPIPE_SZ
        "os.write(1, b'x' * (4 << 20))\n"
    )
    result = pool.run(code)
    assert result.status == "output_limit", result
    assert len(result.stdout) <= 1 << 16
    pool.serves()


def test_a_cell_that_points_its_output_elsewhere_ends_and_says_nothing(pool: Pool) -> None:
    """`dup2` of /dev/null over stdout and stderr, then every other descriptor written to: nothing of it
    reaches the result (no descriptor of t3rl's or the sandbox's is open in the cell), the cell ends."""
    code = (
        "import os\n"
        "null = os.open('/dev/null', os.O_WRONLY)\n"
        "os.dup2(null, 1); os.dup2(null, 2)\n"
        "for fd in range(3, 1024):\n"
        "    try:\n"
        "        os.write(fd, b'forged verdict')\n"
        "    except OSError:\n"
        "        pass\n"
        "print('after')\n"
    )
    result = pool.run(code)
    assert (result.status, result.stdout, result.stderr) == ("success", "", ""), result
    pool.serves()


# ------------------------------------------------------------------ a cell's output on t3rl's terminal

# What a cell prints to rewrite the terminal that later shows it (`t3rl rollouts show --full`, a table of
# samples): clear the screen, move the cursor up over earlier lines, set the window's title, put text on
# the clipboard (OSC 52: whatever the operator pastes next), a hyperlink whose target is hidden.
TERMINAL_CONTROL = (
    "\x1b[2J\x1b[1A\x1b[2K\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x1b\\\x1b]8;;http://evil.example\x1b\\here\x1b]8;;\x1b\\"
    "\x9b31m"
)


def test_a_cells_terminal_control_sequences_print_as_text(pool: Pool) -> None:
    """The trajectory keeps a cell's output exactly; a console of t3rl printed its escape sequences
    raw (rich passes ESC through, in a table cell too), so the model's output could clear the screen,
    overwrite a verdict, set the clipboard. Now each control character prints as its picture (␛)."""
    result = pool.run(f"import sys; sys.stdout.write({TERMINAL_CONTROL!r} + 'done')")
    assert result.status == "success" and result.stdout == TERMINAL_CONTROL + "done", result
    scrub_rich(scrub_text)
    for print_with in (Console, PlainConsole):
        out = io.StringIO()
        print_with(file=out, highlight=False, soft_wrap=True).print(result.stdout, markup=False)
        out_rich = io.StringIO()
        table = Table("output")
        table.add_row(escape(result.stdout))
        Console(file=out_rich, width=300).print(table)
        for shown in (out.getvalue(), out_rich.getvalue()):
            assert "\x1b" not in shown and "\x9b" not in shown and "\x07" not in shown, repr(shown)
            assert "␛]52;c;cm0gLXJmIH4=" in shown and "done" in shown, repr(shown)


def test_plain_text_prints_as_before() -> None:
    """The neighbours: line breaks, non-ASCII text, and rich's own styling on a terminal."""
    scrub_rich(scrub_text)
    text = "a  b\nc é 界 → ok"
    for print_with in (Console, PlainConsole):
        out = io.StringIO()
        print_with(file=out, highlight=False, soft_wrap=True).print(text, markup=False)
        assert out.getvalue() == text + "\n"
    styled = io.StringIO()
    Console(file=styled, force_terminal=True, highlight=False).print("[red]red[/]")
    assert "\x1b[31m" in styled.getvalue()


# ------------------------------------------------------------------ a host that refuses seccomp too


def test_without_user_namespaces_or_seccomp_the_warning_names_the_keyring(planted: Path) -> None:  # noqa: F811
    """Without user namespaces cells keep t3rl's uid, and without seccomp nothing refuses `add_key` and
    `keyctl`: a cell reads and fills the kernel keyring of t3rl's user (a Kerberos ticket, keys kept with
    `keyctl`), which every cell of every episode shares, and binds abstract unix sockets. Neither the mount
    layer nor Landlock covers keyrings, so this is said rather than stopped: the warning named ptrace,
    namespaces and socket families only."""
    attacks = {
        "keyring": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        "print(libc.syscall(248, b'user', b't3rl-probe', b'x', 1, ctypes.c_int(-4)) > 0)",  # add_key
        "abstract": "import socket\nsocket.socket(socket.AF_UNIX).bind('\\0t3rl-probe')\nprint('bound')",
    }
    report = fallback(planted, "userns,seccomp", "t3rl-kinds-six-" + uuid.uuid4().hex, attacks)
    lost = report["protections"]["missing"]["seccomp"]
    assert "keyring" in lost and "abstract" in lost, lost
    if Path("/proc/key-users").exists():  # a kernel with keyrings
        assert report["attacks"]["keyring"][:2] == ["success", "True\n"], report["attacks"]
