"""What counts as a credential, and the pre-flight checks built on it (issue 22 §2):

- names: the common spellings (apikey, api-key, pat, passphrase, …) are secret names, not data keys
  such as `reward_key` or `tokenizer`; a random-looking value under a key-like name is a credential,
  a model name, path or special token is not;
- a literal credential under such a name (`OPENAI_APIKEY=sk-…`) is masked everywhere and warned about
  at pre-flight with the reference form as the fix; no shipped config or experiment is;
- a credential's value in a name (the run's, a stage's) or a path is refused before anything is
  written, with where the value comes from and never the value itself.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.config import secrets
from t3rl_core.secret_names import is_credential_at, is_secret_flag, is_secret_name, looks_like_credential
from tests.support.planted import invoke, isolate, leaks, shown

REPO = Path(__file__).resolve().parents[2]
_RANDOM = random.Random(22)
RANDOM_KEY = "".join(_RANDOM.choice(string.ascii_letters + string.digits) for _ in range(32))
PLANTED = {
    "apikey": "sk-planted-apikey-" + RANDOM_KEY[:12],  # OPENAI_APIKEY, a literal
    "signature": RANDOM_KEY,  # MY_SERVICE_SIG: a key-like name, a random value
    "hf": "hf_planted_name_value_8c21",  # HF_TOKEN in the environment
    "plain": "plain-named-secret-4f07",  # PLAIN_SERVER_KEY_HOLDER, read by eval.server.api_key
    "in_file": "file-held-secret-93ad",  # behind eval.server.api_key=file:…
}


@pytest.mark.parametrize(
    "name",
    ["OPENAI_APIKEY", "OPENAI_API_KEY", "GITHUB_PAT", "DB_PASSWORD", "DB_PASS", "SMTP_PASSWD",
     "GPG_PASSPHRASE", "SERVICE_CREDENTIALS", "PROXY_AUTH", "API_BEARER", "MY_SECRET", "api-key", "apikey",
     "private_key", "access_key", "client_secret", "github_pat", "auth", "bearer", "passphrase", "token"],
)  # fmt: skip
def test_common_spellings_of_credentials_are_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["PWD", "OLDPWD", "SSH_AUTH_SOCK", "XAUTHORITY", "PATH", "tokenizer", "max_tokens", "reward_key",
     "input_key", "passes", "path", "CUDA_DEVICE_MAX_CONNECTIONS", "MONKEY", "pattern"],
)  # fmt: skip
def test_data_keys_and_ordinary_variables_are_not(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(("flag", "secret"), [("--apikey", True), ("--github-pat", True), ("--path", False)])
def test_flags_follow_the_same_spellings(flag: str, secret: bool) -> None:
    assert is_secret_flag(flag) is secret


def _random_keys() -> list[str]:
    rng = random.Random(7)
    hexes = ["".join(rng.choice("0123456789abcdef") for _ in range(40)) for _ in range(3)]
    b62 = ["".join(rng.choice(string.ascii_letters + string.digits) for _ in range(32)) for _ in range(3)]
    return [*hexes, *b62, "sk-proj-" + b62[0], "ghp_" + b62[1], "xoxb-1234-" + b62[2]]


@pytest.mark.parametrize("value", _random_keys())
def test_random_keys_look_like_credentials(value: str) -> None:
    assert looks_like_credential(value)
    assert is_credential_at("hardware.env_vars.MY_SERVICE_SIG", value)  # a key-like name
    # Not under a name that is not key-like, unless its form gives it away (secret_shapes): an issuer's
    # prefix, or 32+ random base62 characters (round ten: secret_name_words.is_bare_key). A hash is data.
    hexadecimal = all(c in "0123456789abcdef" for c in value)
    assert is_credential_at("hardware.env_vars.NCCL_SOCKET_IFNAME", value) is not hexadecimal


@pytest.mark.parametrize(
    "value",
    ["Qwen/Qwen3-4B-Instruct-2507", "/models/qwen3_4b_instruct_2507", "checkpoint20000steps",
     "model-00001-of-00004.safetensors", "<|im_end|>", "[MASK]", "1234567890123456",
     "https://example.org/v1/chat/completions", "the quick brown fox jumps over 13 lazy dogs"],
)  # fmt: skip
def test_names_paths_numbers_and_special_tokens_do_not(value: str) -> None:
    assert not looks_like_credential(value)
    assert not is_credential_at("hardware.env_vars.MY_SERVICE_SIG", value)  # a key-like name
    assert not is_credential_at("model.chat.tokenizer", value)


def test_a_special_token_is_no_credential_under_a_token_name() -> None:
    assert not is_credential_at("model.chat.eos_token", "<|im_end|>")
    assert is_credential_at("model.chat.eos_token", "not-a-special-token")  # a token name: a credential


def _leaves(node: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _leaves(v, f"{key}.{k}" if key else str(k))]
    if isinstance(node, list):
        return [leaf for i, v in enumerate(node) for leaf in _leaves(v, f"{key}.{i}")]
    return [(key, node)]


def test_no_shipped_config_file_holds_what_looks_like_a_credential() -> None:
    files = [*(REPO / "conf").rglob("*.yaml"), *(REPO / "examples").rglob("*.yaml")]
    assert len(files) > 50
    found = [
        f"{path.relative_to(REPO)}: {key}"
        for path in files
        for key, value in _leaves(yaml.safe_load(path.read_text()) or {})
        if is_credential_at(key, value)
    ]
    assert found == []


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml")))
def test_no_shipped_experiment_warns_of_or_masks_a_credential(experiment: str) -> None:
    resolved = resolve([f"+experiment={experiment}"])
    assert [p.key for p in resolved.warnings if "credential" in p.message] == []
    assert secrets.secrets_in(resolved.config) == [] and not secrets._REMEMBERED


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("OPENAI_APIKEY", "MY_SERVICE_SIG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "key").write_text(PLANTED["in_file"] + "\n")
    environ = {"HF_TOKEN": PLANTED["hf"], "PLAIN_SERVER_KEY_HOLDER": PLANTED["plain"]}
    return isolate(tmp_path, monkeypatch, environ)


def test_a_literal_credential_under_any_spelling_is_masked_and_warned_about(workdir: Path) -> None:
    naive = (
        f"++hardware.env_vars.OPENAI_APIKEY={PLANTED['apikey']}",
        f"++hardware.env_vars.MY_SERVICE_SIG={PLANTED['signature']}",
    )
    code, out = invoke("plan", "+experiment=stage1_bfcl", *naive, "--out", "naive")
    assert code == 0, out
    for name in ("OPENAI_APIKEY", "MY_SERVICE_SIG"):
        assert f"warning hardware.env_vars.{name}: looks like a credential" in out
        fix = f"fix: export it and pass it by reference: hardware.env_vars.{name}='${{oc.env:{name}}}'"
        assert fix in out
        # The job reads its own variable: the plan could not hold the value (it is masked there).
        assert f'"{name}": "${{{name}}}"' in (workdir / "naive" / "plan.sh").read_text()
    documented = ("++hardware.env_vars.OPENAI_APIKEY=${oc.env:OPENAI_APIKEY}",)
    code, clean = invoke("plan", "+experiment=stage1_bfcl", *documented, "--out", "documented")
    assert code == 0 and "looks like a credential" not in clean, clean
    assert shown(PLANTED, out + clean) == []
    assert leaks(PLANTED, workdir / "naive", workdir / "documented", workdir / "cache") == []


@pytest.mark.parametrize(
    ("overrides", "key", "source"),
    [
        ([f"name={PLANTED['hf']}"], "name", "the environment variable HF_TOKEN"),
        ([f"++stages.s{PLANTED['hf']}.kind=prepare_data"], "stages", "the environment variable HF_TOKEN"),
        ([f"paths.runs_dir=/x/{PLANTED['hf']}/runs"], "paths.runs_dir", "the environment variable HF_TOKEN"),
        # A Secret's value, whatever its variable is called, and one held by a file.
        (["eval.server.api_key=env:PLAIN_SERVER_KEY_HOLDER", f"name={PLANTED['plain']}"], "name",
         "the environment variable PLAIN_SERVER_KEY_HOLDER"),
        (["eval.server.api_key=file:key", f"name=run-{PLANTED['in_file']}"], "name", "the value of a Secret"),
    ],
    ids=["run-name", "stage-name", "path", "secret-env", "secret-file"],
)  # fmt: skip
def test_a_credentials_value_in_a_name_is_refused_before_anything_is_written(
    workdir: Path, overrides: list[str], key: str, source: str
) -> None:
    for command in ("validate", "plan", "run"):
        code, out = invoke(command, "+experiment=stage1_bfcl", *overrides)
        assert code == 2, out
        assert f"error {key}: " in out and source in out and "must not contain a credential" in out
        assert shown(PLANTED, out) == []
    assert not (workdir / "plans").exists() and not (workdir / "runs").exists()
    assert leaks(PLANTED, workdir / "cache") == []
