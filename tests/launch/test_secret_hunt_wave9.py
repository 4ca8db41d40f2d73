"""Secret hunt wave nine: kinds no earlier wave closed (docs/how-to/secrets.md, "Hunt wave nine").

In process: each text through the function every writer uses (`mask_text`, `scrub_text`, a copier's
`PemLines`), each name through `is_secret_name` / `is_credential_at`, a config value through pre-flight's
reader (`credentials_in`). Each kind has cases that must be masked and cases that must stay.
"""

from __future__ import annotations

import json

import pytest

from launch.config.secrets import scrub_text, secret_values
from t3rl_core.redact import _masked
from t3rl_core.secret import mask_episode_text, mask_text
from t3rl_core.secret_name_words import OTHER_LANGUAGES, is_secret_name
from t3rl_core.secret_names import is_credential_at
from t3rl_core.secret_shapes import PemLines, credentials_in

V = "tulipGarden1987"


def _masks(text: str, value: str = V) -> bool:
    return value not in mask_text(text) and value not in scrub_text(text, ())


# ------------------------------------------------------------ kind 1: a password's name in another language


@pytest.mark.parametrize("word", sorted(OTHER_LANGUAGES))
def test_every_word_of_the_vocabulary_names_a_credential(word: str) -> None:
    assert is_secret_name(word)
    assert is_secret_name(f"db_{word}")
    assert is_credential_at(f"services.db.{word}", "hunter2")


@pytest.mark.parametrize(
    "name", ["DB_PASSWORT", "dbPasswort", "MY_KENNWORT", "SENHA_2", "mot_de_passe", "Пароль"]
)
def test_names_spelt_as_variables_and_camel_case(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["enclave", "autoclave_temp", "conclave_size", "Kennwortlaenge", "passwortlos", "passwortHash",
     "密码学", "clavecin", "Clavel", "heslovat", "sifrele", "clave", "clave_primaria",
     "κωδικός"],
)  # fmt: skip
def test_a_word_holding_one_of_them_is_no_credential(name: str) -> None:
    assert not is_secret_name(name)
    assert not is_credential_at(f"model.{name}", "abc")


def test_a_variable_named_so_is_masked_wherever_its_value_stands() -> None:
    assert V in secret_values({"DB_PASSWORT": V, "PATH": "/usr/bin"})
    assert V in secret_values({"CONTRASEÑA": V})


@pytest.mark.parametrize(
    "text",
    [f"DB_PASSWORT={V}", f"Passwort: {V}", f'{{"passord": "{V}"}}', f"пароль: {V}", f"Пароль = {V}",
     f"密码={V}", f"数据库密码: {V}", f"パスワード: {V}", f"contraseña={V}", f"비밀번호: {V}"],
)  # fmt: skip
def test_a_value_given_to_such_a_name_in_text_is_masked(text: str) -> None:
    assert _masks(text)
    assert V in "".join(credentials_in(text))


@pytest.mark.parametrize(
    "text",
    ["密码学: rsa2048keyabc", "Kennwortlänge: 12abcdefgh", "passwortlos=ja1234567", "enclave=sgx2abcdefg"],
)
def test_text_holding_a_longer_word_stays(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 2: a here-document or expect's send


@pytest.mark.parametrize(
    "text",
    [
        f"cat <<EOF | docker login --password-stdin registry.example\n{V}\nEOF\necho done",
        f"docker login -u alice --password-stdin <<'EOF'\n{V}\nEOF",
        f"sudo -S apt-get update <<-END\n\t{V}\n\tEND",
        # A cell's code in a record: JSON-escaped line breaks and tabs.
        f'{{"code": "cat <<EOF | gh auth login --with-token\\n{V}\\nEOF\\n"}}',
        f"docker login --password-stdin <<EOF\n{V}",  # a view cut short before the delimiter
    ],
)
def test_a_here_document_a_stdin_reader_reads_is_masked(text: str) -> None:
    assert _masks(text)
    assert V not in mask_episode_text(text)
    assert credentials_in(text)


def test_a_lines_here_documents_follow_one_another() -> None:
    masked = mask_text("cat <<A <<'B' | docker login --password-stdin\nfirst1pw\nA\nsecond2pw\nB\nafter it\n")
    assert "first1pw" not in masked and "second2pw" not in masked
    assert "\nA\n" in masked and masked.endswith("\nB\nafter it\n")


def test_a_here_document_ends_at_its_delimiter() -> None:
    text = f"cat <<EOF | docker login --password-stdin\n{V}\nEOF\nhostname is build1234x\n"
    assert mask_text(text).endswith("EOF\nhostname is build1234x\n")


@pytest.mark.parametrize(
    "text",
    [
        f'expect -c \'spawn ssh bob@h; expect "password:"; send "{V}\\r"; interact\'',
        f'spawn su -\nexpect "Password: "\nsend "{V}\\r"\nexpect eof',
        f"expect {{*assword*}}\nsend -- {{{V}}}\n",
        f'expect "Passphrase for key"; send {V}\\r',
        f'expect "Passwort:"; send "{V}\\r"',
        f'{{"code": "spawn ssh h\\nexpect \\"password:\\"\\nsend \\"{V}\\\\r\\"\\n"}}',
    ],
)
def test_expect_sending_a_credential_is_masked(text: str) -> None:
    assert _masks(text)
    assert V not in mask_episode_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "cat <<EOF > notes.txt\ntulipGarden1987 is a word\nEOF",  # no stdin reader
        'expect "login:"\nsend "alice1234x\\r"',  # a user's name, not a credential's prompt
        "I expect we send tulipGarden1987 tomorrow",
    ],
)
def test_other_here_documents_and_sends_stay(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 3: cookies over lines, cut lines


def _copied(text: str, cut: int | None = None) -> str:
    """`text` as the server copier (`t3rl_core.redact`) writes it, a line at a time, or in two reads cut
    at `cut` (a line of 64 KB without a break is copied in pieces)."""
    pem, secrets = PemLines(), [b"an-unrelated-known-value"]
    raw = text.encode()
    if cut is not None:
        return (_masked(raw[:cut], secrets, pem) + _masked(raw[cut:], secrets, pem)).decode()
    return b"".join(_masked(line, secrets, pem) for line in raw.splitlines(keepends=True)).decode()


@pytest.mark.parametrize(
    "text",
    [
        f"response:\n  cookies:\n    session: {V}\n    lang: en\n  status: 200\n",
        f"cookies = {{\n    'session': '{V}',\n    'csrftoken': 'Zz99yy88XX77ww66'\n}}\n",
        f'{{\n  "cookies": {{\n    "sid": "{V}"\n  }}\n}}\n',
    ],
)
def test_a_mapping_of_cookies_read_a_line_at_a_time_is_masked(text: str) -> None:
    assert V not in _copied(text)


def test_the_lines_after_the_mapping_stay() -> None:
    text = f"cookies:\n  session: {V}\nnext: x1234567890abc\nother = {{'a': 'AbCd1234EfGh5678'}}\n"
    assert _copied(text).endswith("next: x1234567890abc\nother = {'a': 'AbCd1234EfGh5678'}\n")


@pytest.mark.parametrize(
    "text",
    [
        f"Cookie: lang=en;\n  session={V}; theme=dark\n",  # HTTP's folded header, a wrapped log line
        f"headers: Cookie: lang=en; theme=dark; tz=utc1;\n\tsid={V}\n",
        f"Set-Cookie: a=b;\n session={V}; Path=/\n",
    ],
)
def test_a_cookie_header_continued_on_the_next_line_is_masked(text: str) -> None:
    assert V not in _copied(text)


def test_a_yaml_key_named_cookie_is_no_header() -> None:
    text = "cookie:\n  name: sid\n  max_age: 3600\nnext: 1\n"
    assert _copied(text) == text


@pytest.mark.parametrize("cut", [110, 142, 150])
def test_a_cookie_header_cut_between_two_reads_is_masked(cut: int) -> None:
    line = "x" * 100 + f" Cookie: lang=en; session={V}Ij; theme=dark1234xx\n"
    copied = _copied(line, cut)
    assert "Ij; theme" not in copied and "dark1234xx" not in copied and V[-6:] not in copied


def test_a_named_value_cut_between_two_reads_is_masked() -> None:
    line = "x" * 100 + f" api_key={V}Ij then ok\n"
    copied = _copied(line, 118)
    assert V[8:] not in copied and copied.endswith(" then ok\n")


# ------------------------------------------------------------ kind 4: issuers with short or inner marks

MODAL_ID, MODAL_SECRET = "ak-AbCdEf0123456789xyzQrs", "as-ZyXw9876543210AbCdEfGh"
TERRAFORM = "AbCdEf12345678.atlasv1." + "Zq8x7Kp2Wm9Lr4Ts6Yv1Nb3Hc5Jd7Fg9Qw2Er4Ty6Ui8Op0As2Df4Gh6" * 2


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"modal token set --token-id {MODAL_ID} --token-secret {MODAL_SECRET}", MODAL_SECRET),
        (f"export MODAL_OPTS={MODAL_ID}", MODAL_ID),
        (f'{{"note": "{MODAL_SECRET}"}}', MODAL_SECRET),
        (f"credentials {{ app.terraform.io {{ token = {TERRAFORM} }} }}", TERRAFORM.split(".atlasv1.")[1]),
        (f"TF note {TERRAFORM} done", TERRAFORM.split(".atlasv1.")[1]),
    ],
)
def test_a_token_of_a_short_or_inner_mark_is_masked_by_its_shape(text: str, secret: str) -> None:
    assert secret not in mask_text(text) and secret not in mask_episode_text(text)
    assert any(secret in found for found in credentials_in(text))


@pytest.mark.parametrize(
    "text",
    ["use it as-is", "the ak-47 and as-yet-unnamed things", "task-AbCdEf0123456789xyzQrs", "as-Abc123"],
)
def test_words_beginning_so_stay(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 5: a protocol's login in a debug log

PLAIN = "AGFsaWNlAHR1bGlwR2FyZGVuMTk4Nw=="  # base64 of \0alice\0tulipGarden1987 (SASL PLAIN)
LOGIN = "dHVsaXBHYXJkZW4xOTg3"  # base64 of tulipGarden1987 (AUTH LOGIN's second line)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"send: 'AUTH PLAIN {PLAIN}\\r\\n'", PLAIN),  # smtplib.set_debuglevel(1)
        (
            "send: 'AUTH LOGIN\\r\\n'\nreply: b'334 VXNlcm5hbWU6\\r\\n'\n"
            f"send: 'YWxpY2U=\\r\\n'\nsend: '{LOGIN}\\r\\n'",
            LOGIN,
        ),
        (f"send: 'AUTHENTICATE PLAIN\\r\\n'\nreply: b'+ \\r\\n'\nsend: '{PLAIN}\\r\\n'", PLAIN),
        (f"*cmd* 'PASS {V}'", V),  # poplib, ftplib
        (f"> PASS {V}", V),  # curl -v of ftp://
        (f"C: AUTH default {V}", V),  # a Redis transcript
    ],
)
def test_a_protocols_login_is_masked(text: str, secret: str) -> None:
    assert secret not in mask_text(text) and secret not in scrub_text(text, ())
    assert any(secret in found for found in credentials_in(text))


@pytest.mark.parametrize(
    "text",
    ["PASS src/app.test.js", " PASS  src/App.test.js (5 s)", "--- PASS: TestFoo (0.00s)",
     "the auth step: AUTH fails", "AUTH PLAIN is what we use", "send: 'AUTH LOGIN\\r\\n'",
     "x" * 40 + "              > PASS tulipGarden1987"],
)  # fmt: skip
def test_a_test_runners_pass_and_prose_stay(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 6: a JSON Web Key's private members

D_RSA = (
    "Zq8x7Kp2Wm9Lr4Ts6Yv1Nb3Hc5Jd7Fg9Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz1Xc3Vb5Nm7Qa9Ws_-" * 5
)  # 342 like 2048-bit


@pytest.mark.parametrize(
    "key",
    [{"kty": "RSA", "n": "x" * 40, "e": "AQAB", "d": D_RSA, "p": D_RSA[:171], "qi": D_RSA[:171]},
     {"kty": "oct", "k": "GawgguFyGrWKav7AX4VKUg"}],
)  # fmt: skip
def test_a_jwks_private_members_are_masked(key: dict[str, str]) -> None:
    for text in (json.dumps({"keys": [key]}), json.dumps({"note": json.dumps(key)})):
        masked = mask_text(text)
        assert all(value[:16] not in masked for name, value in key.items() if name in ("d", "p", "qi", "k"))
        assert "AQAB" in masked or key["kty"] == "oct"


def test_a_public_jwk_stays() -> None:
    text = json.dumps({"keys": [{"kty": "RSA", "kid": "abc", "n": "x" * 40, "e": "AQAB"}]})
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 7: the line below a key masked too

KEY = "4jYbl2CBIv6SpkKj6Hos9iD32k5RfGkLzlosrrq/JgOm"  # a Vault unseal key's look: 44 base64 characters


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Unseal Key 1: {KEY}\nInitial Root Token: hvs.AbCdEf0123456789GhIjKlMn", "\nInitial Root Token: "),
        (f"note {KEY}\nInitial setup done", "\nInitial setup done"),
        (f"note {KEY}\nStatus: ok", "\nStatus: ok"),
        (f'{{"error": "key {KEY}\\nRetry later"}}', "\\nRetry later"),
    ],
)
def test_a_line_of_its_own_below_a_key_stays(text: str, kept: str) -> None:
    masked = mask_text(text)
    assert KEY not in masked and kept in masked


def test_a_key_folded_at_an_indented_margin_is_still_joined() -> None:
    assert KEY[20:] not in mask_text(f"key:\n  {KEY[:20]}\n  {KEY[20:]}")


# ------------------------------------------------------------ kind 8: programs no row named


@pytest.mark.parametrize(
    "text",
    [
        f"rabbitmqadmin -u alice -p {V} list queues",
        f"echo '{V}' | openssl passwd -6 -stdin",
        f"printf '%s' {V} | vncpasswd -f > ~/.vnc/passwd",
        f"ansible-vault encrypt_string '{V}' --name db_pass",
        f"mc alias set myminio http://minio:9000 AKIAEXAMPLE {V}",
        f"mc config host add myminio http://minio:9000 AKIAEXAMPLE {V}",
    ],
)
def test_a_programs_credential_is_masked_by_its_row(text: str) -> None:
    assert _masks(text)
    assert V not in mask_episode_text(text)
    assert credentials_in(text)


@pytest.mark.parametrize(
    "text",
    ["mc alias set myminio http://minio:9000", "mc cp ./a myminio/bucket/a", "rabbitmqadmin list queues"],
)
def test_the_same_programs_without_a_credential_stay(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------ kind 9: full-width ASCII of an input method


@pytest.mark.parametrize(
    "text",
    [
        f"密码：{V}",
        f"数据库密码：{V}，请保存",
        f"ＡＰＩ＿ＫＥＹ＝{V}",
        "ｐａｓｓｗｏｒｄ：ｔｕｌｉｐ１９８７ｇａｒｄｅｎ",
        f"パスワード：{V}",
    ],
)
def test_a_name_and_sign_typed_full_width_give_their_value(text: str) -> None:
    masked = mask_text(text)
    assert V not in masked and "ｔｕｌｉｐ" not in masked
    assert credentials_in(text)


def test_full_width_text_without_a_credential_stays() -> None:
    text = "全角：ＡＢＣ１２３ 密码学：ａｂｃ１２３４５６７"
    assert mask_text(text) == text
    assert is_secret_name("ＤＢ＿ＰＡＳＳＷＯＲＤ")


# ------------------------------------------------------------ kind 10: a credential given by its place

HEX_KEY = "0123456789abcdef0123456789abcdef01234567"  # a W&B key's look: 40 lower-case hex digits


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f'wandb.login(key="{HEX_KEY}")', HEX_KEY),
        (f"wandb.login(key='{HEX_KEY}', relogin=True)", HEX_KEY),
        (f'smtp.login("alice@example.com", "{V}")', V),
        (f'ftp.login("alice", "{V}")', V),
        (f'pxssh.pxssh().login("host", "alice", "{V}")', V),
        (f'requests.get(url, auth=("alice", "{V}"))', V),
        (f'requests.get(url, auth = ["alice", "{V}"])', V),
        (f'HTTPBasicAuth("alice", "{V}")', V),
        (f'aiohttp.BasicAuth("alice", "{V}")', V),
        (f'HTTPDigestAuth("alice", "{V}")', V),
    ],
)
def test_a_credential_a_call_takes_by_its_place_is_masked(text: str, secret: str) -> None:
    assert secret not in mask_text(text) and secret not in scrub_text(text, ())
    assert any(secret in found for found in credentials_in(text))


@pytest.mark.parametrize(
    "text",
    [
        'client.login("alice")',
        "client.login(user, password)",
        'HTTPBasicAuth(user, os.environ["PW"])',
        'requests.get(url, auth=("alice", "env:PW"))',
        'cache.get(key="0123456789abcdef0123456789abcdef01234567")',
        'author=("alice", "tulipGarden1987")',
    ],
)
def test_calls_without_a_literal_credential_stay(text: str) -> None:
    assert mask_text(text) == text
