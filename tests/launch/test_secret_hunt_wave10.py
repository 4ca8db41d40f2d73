"""Hunt wave ten (docs/how-to/secrets.md, "Hunt wave ten"): wave nine's leftovers closed by their tables.

- A password's name in another language written in ASCII (`kennwort=V`, `mot de passe: V`, `parol'=V`,
  `senha=V`) in free text: read, as a config key or a variable already was, through the one vocabulary
  (`t3rl_core.secret_name_words.OTHER_LANGUAGES`), now one pattern made from it.
- Protocols' logins without a row: IMAP's `a001 LOGIN user V`, IRC's `PRIVMSG NickServ :IDENTIFY V`, and
  SASL PLAIN's response without a client's debug mark (`secret_commands.PROTOCOL_LOGINS`).
- A PuTTY private key file's private lines (`secret_shapes.PRIVATE_BLOCKS`), in one text and as a
  line-by-line copier reads them.
- Tokens of issuers the table lacked (Discord's and Telegram's bots, Slack's app-level tokens, Neptune,
  1Password, Pinecone, Tavily, …): rows of `secret_shapes.ISSUERS`, each checked whole, encoded and cut
  short by tests/launch/test_secret_kinds_eight.py.
"""

from __future__ import annotations

import base64
import json

import pytest

from launch.config.secrets import scrub_text
from t3rl_core import secret_name_words
from t3rl_core.secret import mask_episode_text, mask_text
from t3rl_core.secret_commands import PROTOCOL_LOGINS
from t3rl_core.secret_name_words import OTHER_LANGUAGES, is_secret_name
from t3rl_core.secret_shapes import ISSUERS, PemLines, credentials_in

V = "tulipGarden1987"


def _masked(text: str, value: str = V) -> bool:
    return value not in mask_text(text) and value not in scrub_text(text, ())


def _tee(text: str) -> str:
    """`text` as a stage's tee writes it: each line scrubbed, then the lines' own state (PemLines)."""
    pem = PemLines()
    return "".join(pem(scrub_text(line)) for line in text.splitlines(keepends=True))


# ------------------------------------------------------------ kind 1: another language's name, in text


def _spellings(word: str) -> list[str]:
    """How text writes a word of the vocabulary: as the table does, its parts spaced or dashed, in
    capitals."""
    return sorted({word, word.replace("_", " "), word.replace("_", "-"), word.upper()})


@pytest.mark.parametrize("word", sorted(OTHER_LANGUAGES))
def test_every_word_of_the_vocabulary_names_a_value_in_free_text(word: str) -> None:
    for spelt in _spellings(word):
        for text in (
            f"{spelt}={V}",
            f"{spelt}: {V}",
            f'{{"{spelt}": "{V}"}}',
            f"log: db {spelt} = {V} (retry)",
        ):
            assert _masked(text), text
            assert V in "".join(credentials_in(text)), text


def _forget_the_vocabulary() -> None:
    """Its patterns and the names judged by it are made once: made again from the table."""
    secret_name_words._vocabulary.cache_clear()
    secret_name_words._signed_words.cache_clear()
    is_secret_name.cache_clear()


def test_a_row_added_to_the_vocabulary_is_read_in_text_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is the one declaration: a made-up word added there is read everywhere."""
    text = f"tulpenwort_x: {V}"
    assert V in mask_text(text)
    monkeypatch.setitem(OTHER_LANGUAGES, "tulpenwort_x", "test")
    _forget_the_vocabulary()
    try:
        assert V not in mask_text(text)
        assert V not in mask_text(f"tulpenwort x={V}")
        assert is_secret_name("DB_TULPENWORT_X")
    finally:
        monkeypatch.undo()
        _forget_the_vocabulary()


@pytest.mark.parametrize(
    "text",
    ["parole=abc12345x", "parole board: hearing2024x", "Kennwortlaenge: 12abcdefgh", "senhas2: x1234567",
     "mathematical_kata: sandi123x", "the motif de passe2x: no", "heslovat=abc1234567"],
)  # fmt: skip
def test_a_word_holding_one_of_them_stays(text: str) -> None:
    assert mask_text(text) == text


def test_the_words_are_whole_in_a_sentence_too() -> None:
    assert _masked(f"Le mot de passe : {V}")
    assert _masked(f"parol'={V}")
    assert _masked(f"WACHTWOORD={V}")


# ------------------------------------------------------------ kind 2: protocols' logins


@pytest.mark.parametrize(
    "text",
    [f"a001 LOGIN alice {V}", f'> a001 LOGIN "alice" "{V}"', f"  12:34.56 > b'LNLM1 LOGIN alice {V}'",
     f"C: A1 LOGIN alice {V}\r\n", f"PRIVMSG NickServ :IDENTIFY {V}",
     f"PRIVMSG NickServ :IDENTIFY alice {V}", f"/msg NickServ identify {V}", f"/ns IDENTIFY {V}",
     json.dumps({"log": f"PRIVMSG NickServ :IDENTIFY {V}"})],
)  # fmt: skip
def test_an_imap_login_and_a_nickserv_identify_are_masked_and_refused(text: str) -> None:
    assert _masked(text), mask_text(text)
    assert V in "".join(credentials_in(text))


def test_a_sasl_plain_response_is_masked_wherever_it_stands() -> None:
    response = base64.b64encode(f"\0alice\0{V}".encode()).decode()
    for text in (f"AUTH PLAIN {response}", f"note: AUTHENTICATE PLAIN {response}"):
        assert _masked(text, response), text
        assert response in credentials_in(text)


@pytest.mark.parametrize(
    "text",
    ["12 login failed", "a1 LOGIN failed", "please login alice today",
     "NickServ: please IDENTIFY yourself now", "user identify me", "AUTH PLAIN is supported",
     "AUTH PLAIN " + base64.b64encode(b"no nul here").decode(), "PASS src/app.test.js"],
)  # fmt: skip
def test_text_that_is_no_login_stays(text: str) -> None:
    assert mask_text(text) == text


def test_every_row_names_a_place_a_reader_knows() -> None:
    assert {before for _, _, before in PROTOCOL_LOGINS.values()} <= {"mark", "tag", "nickserv"}
    assert {argument for _, argument, _ in PROTOCOL_LOGINS.values()} <= {"last", "second", "plain"}


# ------------------------------------------------------------ kind 3: a PuTTY private key

PRIVATE = "AAAAIHc9hk3Hf8Ykq2s0Ld7mQpZr1xTvW8nC4aJ5eB6fG0hK"
PPK = (
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAIBmQ2x7\nKp9Lr3sTvW1yZ3bC5dF7gH0j\nPrivate-Lines: 2\n"
    f"{PRIVATE}\n{PRIVATE[::-1]}\nPrivate-MAC: 1f2e3d4c5b6a\n"
)


@pytest.mark.parametrize("version", ["2", "3"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_putty_key_files_private_lines_are_masked_in_every_record(version: str, newline: str) -> None:
    text = PPK.replace("File-3", f"File-{version}").replace("\n", newline)
    for written in (mask_text(text), mask_episode_text(text), _tee(text), mask_text(json.dumps({"k": text}))):
        assert PRIVATE not in written and PRIVATE[::-1] not in written, written
        assert "Kp9Lr3sTvW1yZ3bC5dF7gH0j" in written  # its public lines are public
        assert "Private-MAC: 1f2e3d4c5b6a" in written
    assert any(PRIVATE in found for found in credentials_in(text))


# ------------------------------------------------------------ kind 4: issuers' tokens

TOKENS = {
    "Discord bot": "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "Telegram bot": "AAE-x_9kQ2mN4pLr8sTvW1yZ3bC5dF7gH0j",
    "Slack": "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef0123456789",
    "Pinecone": "pcsk_2x7Ab_4Qm9ZkR3tW8yN1pL6sV5uH2jF0gD3eC7bA9xK1mQ4rT8wY2zN5pL6sV",
}


@pytest.mark.parametrize(("issuer", "token"), TOKENS.items())
def test_a_bots_token_is_masked_in_an_episodes_text_too(issuer: str, token: str) -> None:
    assert issuer in {row[0] for row in ISSUERS}
    for text in (token, f"client.run('{token}')", f"https://api.telegram.org/bot7391204855:{token}/getMe"):
        for written in (mask_text(text), mask_episode_text(text)):
            assert token not in written, (issuer, written)
    assert token in credentials_in(f"OPTS={token}")


@pytest.mark.parametrize(
    "text",
    ["ND5 is a word", "MTU 1500 on eth0", "OTP sent", "AA battery pack of 12", "NTLM authentication failed",
     "Mjolnir.forged.by.dwarves"],
)  # fmt: skip
def test_words_beginning_as_those_tokens_stay(text: str) -> None:
    assert mask_text(text) == text and mask_episode_text(text) == text


# ------------------------------------------------------------ kind 5: programs and calls without a row


@pytest.mark.parametrize(
    "text",
    [f"ssh-keygen -t ed25519 -N {V} -f key", f"ssh-keygen -p -P {V} -N x -f key",
     f"l.simple_bind_s('cn=admin,dc=example,dc=org', '{V}')",
     f"conn.bind_s('cn=admin', '{V}', ldap.AUTH_SIMPLE)", f"l.simple_bind(who='cn=admin', cred='{V}')"],
)  # fmt: skip
def test_a_keys_passphrase_and_an_ldap_bind_are_masked_and_refused(text: str) -> None:
    assert _masked(text), mask_text(text)
    assert V in "".join(credentials_in(text))


def test_a_bind_without_a_literal_stays() -> None:
    for text in ("l.simple_bind_s(who, cred)", "socket.bind(('0.0.0.0', 8080))", "ssh-keygen -N '' -f key"):
        assert mask_text(text) == text


# ------------------------------------------------------------ kind 6: a typed declaration, another sign


@pytest.mark.parametrize(
    "text",
    [f'password: str = "{V}"', f'    api_key: Optional[str] = "{V}"', f'const password: string = "{V}";',
     f'var password string = "{V}"', f'let password: &str = "{V}";', f'val password: String = "{V}"',
     f'DB_PASSWORD: Final = "{V}"', f'password <- "{V}"', f'password <<- "{V}"', f'password ||= "{V}"',
     f'password ??= "{V}"', json.dumps({"cell": f'token: str = "{V}"'})],
)  # fmt: skip
def test_a_value_given_through_a_type_or_another_languages_sign_is_masked_and_refused(text: str) -> None:
    """`secret_shapes._ANNOTATION` and `_SIGN`, read by `_ASSIGNED` and `_QUOTED_VALUE`."""
    assert _masked(text), mask_text(text)
    assert V in "".join(credentials_in(text))


@pytest.mark.parametrize(
    "text",
    ["password: str = Field(default=None)", "max_tokens: int = 4096", 'password: str = "short"',
     "token: Optional[str] = None", 'pad_token: str = "<|endoftext|>"', "if password == other:",
     "password - see section 12ab34cd", "eos_token: str = tokenizer.eos_token"],
)  # fmt: skip
def test_a_typed_declaration_without_a_literal_stays(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 7: Kaggle's kaggle.json

KAGGLE_KEY = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    "text",
    [json.dumps({"username": "alice", "key": KAGGLE_KEY}), f'{{"key": "{KAGGLE_KEY}", "username": "alice"}}',
     f'cat ~/.kaggle/kaggle.json\n{{"username":"alice","key":"{KAGGLE_KEY}"}}',
     json.dumps({"log": json.dumps({"username": "alice", "key": KAGGLE_KEY})})],
)  # fmt: skip
def test_kaggles_key_beside_its_username_is_masked_and_refused(text: str) -> None:
    """A row of `secret_prose.CREDENTIAL_DOCUMENTS` (with the JSON Web Key's)."""
    assert _masked(text, KAGGLE_KEY), mask_text(text)
    assert KAGGLE_KEY in "".join(credentials_in(text))


@pytest.mark.parametrize(
    "text",
    [json.dumps({"key": KAGGLE_KEY}), json.dumps({"username": "alice", "cache": {"key": KAGGLE_KEY}}),
     json.dumps({"username": "alice", "key": "primary"})],
)  # fmt: skip
def test_a_hash_under_key_elsewhere_stays(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 8: a call's user a variable


@pytest.mark.parametrize(
    "text",
    [f'smtp.login(user, "{V}")', f'server.login(EMAIL, "{V}")', f'ftp.login(cfg.user, "{V}")',
     f'HTTPBasicAuth(user, "{V}")', f'requests.get(url, auth=(user, "{V}"))', f'l.simple_bind_s(dn, "{V}")',
     f'pxssh.login(host, user, "{V}")'],
)  # fmt: skip
def test_a_literal_credential_beside_a_variable_is_masked_and_refused(text: str) -> None:
    """`secret_commands.CREDENTIAL_CALLS`' calls read a variable's name as an argument that holds its place
    (wave nine read the literals up to the first name, so none when the user was a variable)."""
    assert _masked(text), mask_text(text)
    assert V in "".join(credentials_in(text))


@pytest.mark.parametrize(
    "text", ["smtp.login(user, password)", 'login("alice")', "wandb.login(key=api_key)", "auth=(user, pw)"]
)
def test_a_call_without_a_literal_credential_stays(text: str) -> None:
    assert mask_text(text) == text
