"""A newcomer's and a careless expert's mistakes of kinds no issue listed (hunt wave 3), each refused at the
key that was changed, with a first fix that validates, by a declaration rather than a case of its own:

- a host that can only be an address and is not one (`eval.server.host=256.1.1.1`, `0.0.0.0.0`, the short
  `192.168.1` that inet_aton reads as 192.168.0.1, a URL's `10.0.0.300`): the `Hostname` kind and every
  URL kind refuse a name ending in a number that is not an IPv4 address, and an IPv6 literal that is
  not one (t3rl_core.fields);
- a credential reference that does not resolve where the stages run (`eval.engine.api_key=env:UNSET`,
  `file:/missing`): under the local executor every `Secret` of the config is probed here
  (launch/checks/rules/kinds.py), as the stage that reads it would, hours into the run;
- Hydra's `null` typed for a credential key (`eval.engine.api_key=null`): it was remembered as a
  credential, so every later "null" the process printed was masked, the pre-flight's fixes included
  (`set eval.engine.url=***`); null is no credential (t3rl_core.secret_names);
- a SandboxFusion `language` the server does not know (`pyhton`), and an HTTP wait no longer than the
  cell's run limit (`request_timeout_s=1` beside `run_timeout_s=10`): a Literal of RunCodeRequest's
  languages and a declared order (`Above("run_timeout_s")`) on the sandbox's config;
- a run's name typed for TensorBoard (`tracking.project=x` under `tracking=tensorboard`): t3rl passes slime
  no name there (its events go to tracking.dir), so the setting changes nothing: its fields declare
  they are read under wandb only (`ReadWhen`), and the unread-setting rule warns at the key.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter

from launch.checks.resolve import resolve
from t3rl_core.fields import Hostname, HttpUrl, SGLangUrl
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

UNSET = "T3RL_HUNT_WAVE3_UNSET"
MISSING_FILE = "/nonexistent/t3rl-hunt-wave3/key"


# Relative paths of the configs resolve in one empty dir; the variable the cases name is unset.
_in_tmp = in_tmp(**{UNSET: None})


def _refused_at_key_with_a_fix_that_validates(overrides: list[str], key: str) -> None:
    found = errors(overrides)
    named = [e for e in found if e.key == key]
    assert named, f"not refused at {key}: {[(e.key, e.message) for e in found]}"
    assert "***" not in named[0].fix, named[0].fix
    assert errors(fixed(overrides, named[0])) == []


S2 = "+experiment=stage2_bfcl"
TAU2 = "+experiment=tau2_pipeline"
FUSION = ["+experiment=retool", "sandbox=sandbox_fusion"]

CASES = [
    # hosts that can only be addresses, and are not (were accepted)
    ([S2, "eval.server.host=256.1.1.1"], "eval.server.host"),
    ([S2, "eval.server.host=0.0.0.0.0"], "eval.server.host"),
    ([S2, "eval.server.host=192.168.1"], "eval.server.host"),
    ([S2, "eval.server.host=010.0.0.1"], "eval.server.host"),
    ([S2, "eval.engine.url=http://10.0.0.300:30000"], "eval.engine.url"),
    ([S2, "eval.engine.url='http://[::1::]:30000'"], "eval.engine.url"),
    ([TAU2, "env.user.base_url=http://127.0.0.1.1:30001/v1"], "env.user.base_url"),
    # credential references that do not resolve here, under the local executor (were accepted)
    ([S2, f"eval.engine.api_key=env:{UNSET}"], "eval.engine.api_key"),
    ([S2, f"eval.server.api_key=file:{MISSING_FILE}"], "eval.server.api_key"),
    ([TAU2, f"env.user.api_key=env:{UNSET}"], "env.user.api_key"),
    ([TAU2, "env.user.api_key=file:/tmp"], "env.user.api_key"),
    ([S2, f"+stages.eval.eval.engine.api_key=env:{UNSET}"], "stages.eval.eval.engine.api_key"),
    ([S2, "executor=ray", f"eval.engine.api_key=env:{UNSET}"], "eval.engine.api_key"),  # other_stages: local
    # null typed for a credential: the next refusal's fix was masked (`set eval.engine.url=***`)
    ([S2, "eval.engine.api_key=null", "eval.engine.url=localhost:30000"], "eval.engine.url"),
    # SandboxFusion's language and HTTP wait (were accepted)
    ([*FUSION, "env.sandbox.language=pyhton"], "env.sandbox.language"),
    ([*FUSION, "env.sandbox.request_timeout_s=1"], "env.sandbox.request_timeout_s"),
    ([*FUSION, "env.sandbox.request_timeout_s=10"], "env.sandbox.request_timeout_s"),
]


@pytest.mark.parametrize(("overrides", "key"), CASES, ids=[" ".join(o[1:]) for o, _ in CASES])
def test_a_mistake_is_refused_at_its_key_with_a_fix_that_validates(overrides: list[str], key: str) -> None:
    _refused_at_key_with_a_fix_that_validates(overrides, key)


VALID = [
    [S2, "eval.server.host=0.0.0.0"],
    [*FUSION, "env.sandbox.request_timeout_s=30"],
    [*FUSION, "env.sandbox.language=cpp"],
    # the reference resolves here; or the stages run on a cluster, whose environment is not this one
    [TAU2, f"env.user.api_key=env:{UNSET}", "executor=slurm"],
    [TAU2, f"env.user.api_key=env:{UNSET}", "executor=ray"],  # rollouts run on the cluster
    [S2, "executor=ray", "executor.other_stages=ray", f"eval.engine.api_key=env:{UNSET}"],
    # a root eval key no eval stage reads (each sets its own engine): a warning of its own says so
    ["+experiment=quickstart", f"eval.engine.api_key=env:{UNSET}"],
]


@pytest.mark.parametrize("overrides", VALID, ids=[" ".join(o[1:]) for o in VALID])
def test_the_valid_setting_next_to_each_is_accepted(overrides: list[str]) -> None:
    assert errors(overrides) == []


def test_a_reference_that_resolves_here_is_accepted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(UNSET, "a-key-of-the-user")
    key_file = tmp_path / "key"
    key_file.write_text("a-key-of-the-user\n")
    assert errors([S2, f"eval.engine.api_key=env:{UNSET}", f"eval.server.api_key=file:{key_file}"]) == []


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "127.0.0.1", "255.255.255.255", "localhost", "node-1.cluster", "1e100.net", "::1"]
)
def test_hosts_and_addresses_are_accepted(host: str) -> None:
    assert TypeAdapter(Hostname).validate_python(host) == host


@pytest.mark.parametrize(
    "url", ["http://[::1]:30000", "http://[fe80::1%25eth0]:30000", "https://10.0.0.1", "http://node-1:8000"]
)
def test_urls_of_hosts_and_addresses_are_accepted(url: str) -> None:
    assert TypeAdapter(HttpUrl).validate_python(url) == url
    assert TypeAdapter(SGLangUrl).validate_python(url) == url


@pytest.mark.parametrize(
    ("tracker", "warned"), [("tensorboard", True), ("wandb", False)], ids=["tensorboard", "wandb"]
)
def test_a_run_name_nothing_reads_is_warned_about(tracker: str, warned: bool) -> None:
    keys = {"tracking.project", "tracking.group", "tracking.run_name"}
    names = [f"tracking.{field}=try-3" for field in ("project", "group", "run_name")]
    warnings = resolve([S2, f"tracking={tracker}", *names]).warnings
    assert ({w.key for w in warnings} >= keys) is warned  # was: no warning under tensorboard
