"""Hunt wave ten (helper 197): `t3rl eval` on its own, and searches.

- A server at `--url` whose `GET /get_model_info` answers something that is not SGLang's model info
  (a list, an object without `model_path`, a `model_path` that is no text) is refused by the health
  check, as a server that is not SGLang, before any episode: `{"model_path": 5}` passed the check and
  crashed the eval's record with "t3rl failed unexpectedly: TypeError". The answer's shape is declared
  once (`t3rl_core.engines.sglang_http.ServedModelInfo`); the cases are built from that declaration.
- A search entry over a key nothing reads in any trial (`tracking.project=choice(a,b)` under
  `tracking=none`, Adam's betas under `optimizer.name=sgd`) is a warning naming the key, why and what
  would have it read: it validated silently, and every trial ran the same whatever Optuna picked there.
  Read from the `ReadWhen` declarations (`launch.checks.rules.unread`) in the runs the space is probed
  with, so a key read in some trial (its sibling searched too) is not warned about.
- A URL whose scheme is written in capitals (`HTTP://host:30000`) is the same URL (RFC 3986 3.1) and
  validates, written lower-case; a foreign scheme (`ftp://x`) is refused naming it. Both were refused
  with "a URL with a scheme and a host is needed" (`t3rl_core.fields._url`, every URL kind).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.engines.base import EngineUnavailable
from t3rl_core.engines.config import SGLangEngineConfig
from t3rl_core.engines.sglang_http import ServedModelInfo, SGLangEngine
from t3rl_core.fields import HttpUrl, OpenAIBaseUrl, RayAddress, SandboxFusionUrl, SGLangUrl
from tests.support.body_server import answering
from tests.support.planted import isolate


def _check(url: str) -> dict[str, Any]:
    engine = SGLangEngine(SGLangEngineConfig(url=url, health_timeout_s=5.0, max_attempts=1))

    async def run() -> dict[str, Any]:
        try:
            return await engine.check()
        finally:
            await engine.aclose()

    return asyncio.run(run())


_GOOD = {"model_path": "/models/m", "tokenizer_path": "/models/m", "is_generation": True}
# A value of every JSON type: each field declared a text refuses all but its own.
_JSON_VALUES: list[Any] = [5, 1.5, True, None, [], {}, ["/models/m"], ""]


def _bad_answers() -> Iterator[Any]:
    yield from ([], [1, 2], "model", 5, None)  # no JSON object at all
    for name in ServedModelInfo.model_fields:
        yield {k: v for k, v in _GOOD.items() if k != name}  # the declared field missing
        for value in _JSON_VALUES:
            yield {**_GOOD, name: value}


@pytest.mark.parametrize("answer", list(_bad_answers()), ids=repr)
def test_a_model_info_that_is_not_sglangs_fails_the_health_check(answer: Any) -> None:
    # the server answers /health and /get_model_info alike: /health reads only the status
    with answering(json.dumps(answer).encode()) as url, pytest.raises(EngineUnavailable) as refused:
        _check(url)
    message = str(refused.value)
    assert "not SGLang's model info" in message and "eval.engine.url / --url" in message
    assert "Traceback" not in message


def test_sglangs_model_info_passes_with_every_key_recorded() -> None:
    answer = {**_GOOD, "max_total_num_tokens": 4096, "weight_version": "7"}
    with answering(json.dumps(answer).encode()) as url:
        info = _check(url)
    assert info["served_model"] == "/models/m" and info["model_info"] == answer


S1 = "+experiment=stage1_bfcl"
SEARCH = [S1, "hparams_search=bfcl_lr_kl_reward"]
OPT = "stages.train.curriculum.optimizer"
_BLOCK = re.compile(r"^(warning|error) (\S+): (.*)\n\s+set in: (.*)\n\s+fix: (.*)$", re.M)


@pytest.fixture(scope="module")
def _module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("search_unread")


@pytest.fixture
def workdir(_module_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One working directory and composition cache for the searches (their edges recur)."""
    return isolate(_module_dir, monkeypatch, {})


def _validate(*args: str) -> dict[str, tuple[str, str, str, str]]:
    """`t3rl validate -m ARGS`, which must pass: key -> (severity, message, set in, fix) of each problem."""
    result = CliRunner().invoke(app, ["validate", "-m", *args], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return {m[2]: (m[1], m[3], m[4], m[5]) for m in _BLOCK.finditer(result.output)}


@pytest.mark.usefixtures("workdir")
def test_a_searched_key_nothing_reads_is_a_warning_with_what_reads_it() -> None:
    project, beta = "tracking.project=choice(a,b)", f"{OPT}.adam_beta1=interval(0.8, 0.9)"
    found = _validate(*SEARCH, "tracking=none", project, f"{OPT}.name=sgd", beta)
    for entry, read_by in ((project, "tracking.kind=wandb"), (beta, f"{OPT}.name=adam")):
        key = entry.split("=", 1)[0]
        severity, message, source, fix = found[key]
        assert severity == "warning" and "nothing reads" in message, found
        assert source == f"override `{entry}`" and f"set {read_by} to have it read" in fix, found
    # The shipped entries are read in every trial: no warning of theirs.
    assert not [k for k in found if k.startswith(("stages.train.curriculum.", "reward")) and "adam" not in k]


@pytest.mark.usefixtures("workdir")
def test_a_key_read_in_some_trial_is_no_warning() -> None:
    """Adam's beta with the optimizer searched too: the trials that pick adam read it."""
    found = _validate(*SEARCH, f"{OPT}.name=choice(sgd,adam)", f"{OPT}.adam_beta1=interval(0.8, 0.9)")
    assert f"{OPT}.adam_beta1" not in found, found


def test_a_file_entry_nothing_reads_is_blamed_on_the_file(workdir: Path) -> None:
    conf = workdir / "conf" / "hparams_search"
    conf.mkdir(parents=True, exist_ok=True)
    shipped = Path(__file__).parents[2] / "conf" / "hparams_search" / "bfcl_lr_kl_reward.yaml"
    text = shipped.read_text().replace(
        "reward: choice(", "tracking.project: choice(x, y)\n      reward: choice("
    )
    (conf / "unread.yaml").write_text(text)
    found = _validate("--config-dir", str(workdir / "conf"), S1, "hparams_search=unread", "tracking=none")
    severity, _, source, fix = found["hydra.sweeper.params.tracking.project"]
    assert severity == "warning" and "unread.yaml" in source and f"drop the entry from {source}" in fix


# Every URL kind `t3rl_core.fields` declares, with a URL of it that validates.
_URL_KINDS = {
    HttpUrl: "http://127.0.0.1:30000",
    SGLangUrl: "http://127.0.0.1:30000",
    OpenAIBaseUrl: "https://api.example.com/v1",
    SandboxFusionUrl: "http://sandbox:8080",
    RayAddress: "ray://head:10001",
}


@pytest.mark.parametrize(("kind", "url"), list(_URL_KINDS.items()), ids=lambda v: str(v)[:40])
def test_a_url_scheme_is_read_without_its_case_and_a_foreign_one_is_named(kind: Any, url: str) -> None:
    """`HTTP://host` is the URL `http://host` (a scheme is case-insensitive): it validated as having no
    scheme or host. `ftp://host` has both: the refusal names its scheme, not a missing one."""
    adapter = TypeAdapter(kind)
    scheme, rest = url.split("://", 1)
    for written in (scheme.upper(), scheme.title()):
        assert adapter.validate_python(f"{written}://{rest}") == adapter.validate_python(url)
    with pytest.raises(ValidationError) as refused:
        adapter.validate_python(f"ftp://{rest}")
    assert "the scheme ftp:// is not one this URL takes" in str(refused.value)
