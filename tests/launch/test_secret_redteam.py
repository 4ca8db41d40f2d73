"""Red team: credentials of kinds no name gives away (a token under an ordinary key, in a URL's query, in
an Authorization header, in a server's flags), planted the naive way, never leave the process: not in a
file of the run, plans or cache dir, not on the terminal, not in a record the eval writes, not in an
error message. Every writer goes through one masking point (t3rl_core.secret.mask_text, under
launch.config.secrets.scrub_text); these tests search what each writer produced."""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config import secrets
from t3rl_core.secret import mask_revealed, mask_text
from t3rl_core.secret_shapes import credentials_in, is_shaped_credential
from tests.support.planted import invoke, isolate, leaks, shown

# One canary per kind, each unique, none under a name that looks secret.
CANARY = {
    "openai": "sk-proj-RedTeam0Canary1OpenAI2x9QzK",
    "anthropic": "sk-ant-api03-RedTeam3Canary4Anthropic5Zq",
    "hf": "hf_RedTeamCanary6HuggingFace7abcdefgh",
    "github": "ghp_RedTeamCanary8GitHub9abcdefghijklmn",
    "slack": "xoxb-1234567890-RedTeam0Slack1Canary",
    "aws": "AKIAREDTEAMCANARY123",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyZWR0ZWFtIn0.RedTeam2Jwt3Signature",
    "query": "qRedTeam7QueryValue",  # ?token=<this>
    "bearer": "bRedTeam9Bearer42Value",  # Authorization: Bearer <this>
}
# Each kind as it turns up in text someone writes.
IN_CONTEXT = {
    "openai": f"OPENAI={CANARY['openai']}",
    "anthropic": f"key {CANARY['anthropic']}.",
    "hf": f"--hub-key={CANARY['hf']}",
    "github": f"https://x:{CANARY['github']}@github.com/o/r.git",
    "slack": f"'{CANARY['slack']}'",
    "aws": f"aws_access_key_id = {CANARY['aws']}",
    "jwt": f"cookie={CANARY['jwt']};",
    "query": f"https://blob.example/d.parquet?sv=2024&token={CANARY['query']}&x=1",
    "bearer": f"curl -H 'Authorization: Bearer {CANARY['bearer']}' http://h",
}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(secrets, "_REMEMBERED", set())  # nothing an earlier test remembered masks for us
    return isolate(tmp_path, monkeypatch, {})


@pytest.mark.parametrize("kind", sorted(IN_CONTEXT))
def test_every_text_sink_masks_a_credential_known_by_its_form(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    text = IN_CONTEXT[kind]
    assert CANARY[kind] in credentials_in(text) or kind == "github"  # github: a URL password as well
    for sink in (mask_text, mask_revealed, secrets.scrub_text):
        masked = sink(text)
        assert CANARY[kind] not in masked and secrets.MASK in masked, (sink, masked)
    stream = io.StringIO()
    secrets.ScrubbingStream(stream).write(text + "\n")
    assert CANARY[kind] not in stream.getvalue()
    # In a value, a list and a mapping's key (a variable named with it).
    assert CANARY[kind] not in str(secrets.scrub_obj({"extra_args": [text], "note": text, text: {text: 1}}))


@pytest.mark.parametrize(
    "text",
    [
        "task-assessment-for-the-long-horizon-runs", "Qwen/Qwen3-4B-Instruct-2507", "hf_transfer",
        "https://huggingface.co/datasets/x?download=true&revision=main", "eos token <|im_end|>",
        "Bearer authentication", "api_key: env:SGLANG_API_KEY", "?token=${oc.env:TOKEN}",
        "0123456789abcdef0123456789abcdef01234567",  # a git sha: no issuer prefix
    ],
)  # fmt: skip
def test_ordinary_text_is_not_taken_for_a_credential(text: str) -> None:
    assert credentials_in(text) == [] and mask_text(text) == text and not is_shaped_credential(text)


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_a_token_in_a_job_variable_of_any_name_stays_out_of_every_file(workdir: Path, executor: str) -> None:
    """A whole token under a name that looks like nothing: warned about; the job (the Ray runtime env
    in plan.sh) reads ${NAME} where it runs."""
    code, out = invoke(
        "plan", "+experiment=stage1_bfcl", f"executor={executor}",
        f"++hardware.env_vars.MODEL_OPTS={CANARY['openai']}",
        f"++stages.train.hardware.env_vars.NCCL_NOTE={CANARY['aws']}",
    )  # fmt: skip
    assert code == 0, out
    assert "warning hardware.env_vars.MODEL_OPTS" in out and "${oc.env:MODEL_OPTS}" in out
    assert shown(CANARY, out) == []
    (run_dir,) = (workdir / "plans" / "stage1_bfcl").iterdir()
    plan = (run_dir / "plan.sh").read_text()
    assert '"MODEL_OPTS": "${MODEL_OPTS}"' in plan if executor == "ray" else "MODEL_OPTS" in plan
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["hardware"]["env_vars"]["MODEL_OPTS"] == secrets.MASK
    assert leaks(CANARY, workdir) == []


@pytest.mark.parametrize(
    ("override", "key"),
    [
        (f"eval.server.extra_args=[--served-model-name,{CANARY['github']}]", "eval.server.extra_args.1"),
        (f"model.architecture.extra_args=[--note,{CANARY['hf']}]", "model.architecture.extra_args.1"),
        (f"eval.engine.url='http://127.0.0.1:30000/?token={CANARY['query']}'", "eval.engine.url"),
        (f"name={CANARY['slack']}", "name"),
        (f"++hardware.env_vars.CURL_OPTS='-H Authorization: Bearer {CANARY['bearer']}'",
         "hardware.env_vars.CURL_OPTS"),
        (f"++hardware.env_vars.SESSION_URL='https://h/login?api_key={CANARY['query']}'",
         "hardware.env_vars.SESSION_URL"),
        (f"paths.runs_dir=/data/{CANARY['jwt']}", "paths.runs_dir"),
        (f"eval.engine.api_key={CANARY['anthropic']}", "eval.engine.api_key"),  # a Secret field
        (("tracking=wandb", f"tracking.run_name={CANARY['hf']}"), "tracking.run_name"),  # wandb's run name
        (f"++hardware.env_vars.{CANARY['github']}='x1'", "hardware.env_vars"),  # a token as a name
        (("executor=ray", f"executor.address=http://{CANARY['jwt']}@head:8265"), "executor.address"),
    ],
)  # fmt: skip
def test_a_token_anywhere_else_is_refused_without_being_repeated(
    workdir: Path, override: str | tuple[str, ...], key: str
) -> None:
    """In a command, a URL, a name or a path the masked text would not be what runs: refused, and the
    fix names the reference form. Nothing is written; the output never quotes the value."""
    for command in ("validate", "plan"):
        code, out = invoke(
            command, "+experiment=stage1_bfcl", *((override,) if isinstance(override, str) else override)
        )
        assert code == 2, out
        assert f"error {key}" in out and "env:NAME" in out, out
        assert shown(CANARY, out) == [], out
    assert not (workdir / "plans").exists() and not (workdir / "runs").exists()
    assert leaks(CANARY, workdir) == []


def test_a_rich_line_folded_or_cut_on_the_terminal_still_hides_a_known_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rich folds a word longer than the terminal across lines, and a view may cut a long text: the
    stream under every CLI output still masks the value (its pieces are no use without the rest)."""
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    value = "remembered-RedTeam-value-0123456789-abcdefghij"
    secrets.remember([value])
    stream = io.StringIO()
    console = Console(file=secrets.ScrubbingStream(stream), width=30, highlight=False)  # type: ignore[arg-type]
    console.print(f"url=https://host/path/{value}/tail and more words")
    console.print(f"cut: {value[:24]}…")
    out = stream.getvalue()
    assert value[:12] not in out and value[-12:] not in out, out


def test_eval_refuses_a_url_that_carries_a_token_and_writes_nothing(workdir: Path) -> None:
    """`t3rl eval --url` is held to what pre-flight refuses in eval.engine.url: the record of the
    model's URL (summary.json, manifest.json) would otherwise carry it."""
    for url in (f"http://127.0.0.1:9/?token={CANARY['query']}", f"http://127.0.0.1:9/{CANARY['openai']}/"):
        code, out = invoke(
            "eval", "+experiment=quickstart", "--engine", "sglang", "--url", url, "--out", "ev"
        )
        assert code == 2 and "a credential is embedded in this URL" in out, out
        assert shown(CANARY, out) == []
    assert not (workdir / "ev").exists() and leaks(CANARY, workdir) == []


def test_a_value_folded_inside_a_panel_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error panel (typer's, rich's) folds a long word between its borders."""
    from rich.panel import Panel

    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    stream = io.StringIO()
    console = Console(file=secrets.ScrubbingStream(stream), width=36, highlight=False)  # type: ignore[arg-type]
    console.print(Panel(f"Invalid value: {IN_CONTEXT['query']}/{CANARY['slack']}"))
    console.print(Panel(f"Invalid value: {IN_CONTEXT['bearer']} and {CANARY['jwt']}"))
    assert shown(CANARY, re.sub(r"[\s│]", "", stream.getvalue())) == [], stream.getvalue()


def test_the_eval_report_masks_what_summary_json_masks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """report.md is rendered from the summary itself, not from the masked summary.json: a reason that
    quotes a revealed credential (any variable name) or a token is masked there too."""
    from t3rl_core.eval.report import write_report
    from t3rl_core.secret import Secret
    from tests.eval.test_eval_report import _summary

    revealed = "rt-revealed-Zq81Lm20Xc"
    monkeypatch.setenv("RT_PLAIN_NAME", revealed)
    assert Secret("env:RT_PLAIN_NAME").reveal().get_secret_value() == revealed
    reason = f"engine refused key {revealed}; last error at {IN_CONTEXT['query']} ({CANARY['jwt']})"
    summary = _summary(complete=False) | {"reason": reason}
    text = write_report(summary, tmp_path).read_text()
    assert "incomplete" in text and revealed not in text and shown(CANARY, text) == [], text


def test_rollouts_show_masks_tokens_a_table_cell_wraps_or_a_clip_cuts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """slime's rollout files hold what the model and its tools said: a table cell wraps a long token
    between the other columns' text, and the view clips the prompt with an ellipsis."""
    from tests.launch.test_rollouts_show import sample, save

    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    row = sample(0)
    row["prompt"] = f"use {CANARY['openai']} and {CANARY['jwt']} then {IN_CONTEXT['query']}"
    row["response"] = f"{IN_CONTEXT['bearer']} {CANARY['github']} <tool_call>{CANARY['aws']}</tool_call>"
    path = save(tmp_path / "rollout_data_0.pt", 0, [row])
    # The prompt clipped inside a token and whole; a terminal wide enough for the table, and a narrow
    # one that wraps its cells.
    for width, columns in itertools.product(("12", "20", "80"), ("250", "60")):
        args = ["rollouts", "show", str(path), "--width", width, "--full", "0"]
        result = CliRunner().invoke(app, args, env={"COLUMNS": columns}, catch_exceptions=False)
        code, out = result.exit_code, result.output
        assert code in (0, 1), out
        assert "***" in out and shown(CANARY, re.sub(r"[\s│┃]", "", out)) == [], out
        cut = [value[:10] for value in CANARY.values() if value[:10] in out]
        assert cut == [], out


PROBE_SERVER = """
import http.server, json, os, sys

port, out = int(sys.argv[1]), sys.argv[2]
with open(out, "w") as f:
    json.dump({"environ": dict(os.environ), "argv": sys.argv}, f)


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def test_a_command_service_runs_without_the_credentials_it_does_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment's server executes what the model asks: a variable it inherits could be printed
    into an observation (trajectories, rollouts, the weights). It gets none of t3rl's credentials but
    the one its command reads by reference."""
    import socket

    from t3rl_core.services import ServiceSpec, start, stop

    plain = {
        "HF_TOKEN": CANARY["hf"],  # a secret name
        "MODEL_OPTS": CANARY["openai"],  # a plain name, a token's form
        "RT_SERVICE_KEY": "rt-service-own-key-77Ab",  # what the service reads by reference
        "DEPLOY_API_KEY": "deploy words only",  # a secret name, a value of no credential's form
        "BUILD_NOTE": "deploy words only",  # the same credential copied under a plain name
    }
    for name, value in plain.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "probe.py").write_text(PROBE_SERVER)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "seen.json"
    command = [sys.executable, str(tmp_path / "probe.py"), "{port}", str(out), "--key", "env:RT_SERVICE_KEY"]
    spec = ServiceSpec(
        name="probe", kind="command", command=command, port=port, startup_timeout_s=60,
        pid_file=str(tmp_path / "probe.pid"), log_file=str(tmp_path / "probe.log"),
    )  # fmt: skip
    start(spec, owner=os.getpid())
    try:
        seen = json.loads(out.read_text())
    finally:
        stop(spec)
    environ = seen["environ"]
    assert {"HF_TOKEN", "MODEL_OPTS", "DEPLOY_API_KEY", "BUILD_NOTE"}.isdisjoint(environ)
    assert environ["RT_SERVICE_KEY"] == plain["RT_SERVICE_KEY"] and "PATH" in environ
    assert seen["argv"][-1] == "--key=" + plain["RT_SERVICE_KEY"]  # revealed in its own process


def test_a_sweep_over_credentials_keeps_them_out_of_its_records(workdir: Path) -> None:
    """Sweep points are labelled by their overrides (sweep.json, sweep.md, the terminal), and each
    point's launcher gets its run dir, not the overrides, on its command line."""
    code, out = invoke(
        "run", "-m", "+experiment=stage1_bfcl", "executor=dry",
        f"++hardware.env_vars.OPTS={CANARY['openai']},{CANARY['anthropic']}",
        f"++hardware.env_vars.HF_TOKEN={CANARY['query']}",
    )  # fmt: skip
    assert code == 0, out
    assert shown(CANARY, out) == []
    (sweep,) = (workdir / "runs" / "stage1_bfcl").glob("sweep-*")
    assert (sweep / "sweep.json").is_file() and "OPTS=***" in (sweep / "sweep.md").read_text()
    assert leaks(CANARY, workdir) == []
    # Hydra's own records of the overrides (.hydra/overrides.yaml, multirun.yaml) are never written.
    assert [p for p in workdir.rglob("*") if p.name in (".hydra", "multirun.yaml")] == []
    assert not (workdir / "outputs").exists() and not (workdir / "multirun").exists()


def test_a_servers_copier_also_masks_credentials_by_their_form() -> None:
    """The copier in front of a server started with a key (t3rl_core.redact, through secret_launch)
    masks what the server's request log may hold besides that key: another client's token, a header."""
    child = (
        "import sys\n"
        "from t3rl_core.redact import mask_output\n"
        "mask_output(['the-servers-own-key-1'])\n"
        f"print('POST /generate', {IN_CONTEXT['bearer']!r}, flush=True)\n"
        f"print('GET', {IN_CONTEXT['query']!r}, {CANARY['jwt']!r}, file=sys.stderr, flush=True)\n"
        "sys.stdout.buffer.write(b'\\xff not utf-8\\n')\n"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    output = (done.stdout + done.stderr).decode(errors="replace")
    assert "POST /generate" in output and "***" in output and shown(CANARY, output) == [], output
    assert b"\xff not utf-8\n" in done.stdout


@pytest.mark.parametrize(
    "encode",
    [
        lambda v: json.dumps({"error": f"refused {v}"}),  # ASCII JSON: \\u00e4, \\"
        lambda v: json.dumps({"error": f"refused {v}"}, ensure_ascii=False),
        lambda v: f"GET http://h/?p={quote(v, safe='')}",
        lambda v: f"GET http://h/{quote(v)}",
        lambda v: f"curl -d {shlex.quote(v)}",
        lambda v: f"run it: t3rl run {shlex.quote('++hardware.env_vars.DB=' + v)}",
        lambda v: f"raised ValueError({v!r})",
    ],
    ids=["json-ascii", "json", "url-quoted", "url-path", "shell", "shell-override", "repr"],
)
def test_a_known_value_with_quotes_and_accents_is_masked_in_its_encodings(
    encode: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A password is not a random token: quotes, a backslash, accents, spaces. JSON files of an eval
    hold it escaped, a URL percent-encoded, a shell command quoted, a traceback as its repr."""
    from t3rl_core.eval.jsonl import record_line
    from t3rl_core.secret import Secret

    password = "pä$$w\"o'rd\\Zq8+x y/é"
    monkeypatch.setenv("RT_PASSPHRASE_PLAIN", password)
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    Secret("env:RT_PASSPHRASE_PLAIN").reveal()
    text = encode(password)
    assert password not in text  # the case is about the encoded form only
    for masked in (mask_revealed(text), secrets.scrub_text(text)):
        assert masked.count("***") == 1 and "Zq8" not in masked, masked
    assert "Zq8" not in record_line({"error": f"refused {password}", "response_ids": [1]})


def test_ray_uploads_no_credential_file_with_a_jobs_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin's package (py_modules) and executor.working_dir are uploaded to the cluster, readable by
    every job there: the runtime env of every Ray submission excludes the files credentials live in,
    as Ray's own packaging reads the patterns."""
    import zipfile

    from ray._private.runtime_env.packaging import create_package  # lazy: ray, this test only

    from launch.config.schema import RayExecutorConfig
    from launch.run.executors.ray_jobs import RayExecutor
    from tests.plugins.test_plugin_shipping import plan
    from tests.support.plugin_example import EXAMPLE

    monkeypatch.syspath_prepend(str(EXAMPLE))
    _, built = plan("executor=ray", "executor.address=http://head:8265")
    executor = RayExecutor(RayExecutorConfig(address="http://head:8265", working_dir=str(tmp_path)))
    specs = [executor.job_spec(built.stage(name)) for name in ("train", "data")]
    assert "py_modules" in specs[0].runtime_env and "working_dir" in specs[1].runtime_env
    code = tmp_path / "code"
    planted = [".env", "conf/.env.prod", "keys/server.key", ".aws/credentials", "sub/.git-credentials",
               "gcp/service-account-prod.json", ".ssh/id_ed25519", "deploy.pem", ".netrc"]  # fmt: skip
    for name in [*planted, "world.py", "conf/world.yaml"]:
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        (code / name).write_text(CANARY["github"] if name in planted else "ordinary = 1\n")
    for spec in specs:
        target = tmp_path / f"{len(list(tmp_path.glob('*.zip')))}.zip"
        create_package(str(code), target, include_gitignore=True, excludes=spec.runtime_env["excludes"])
        names = zipfile.ZipFile(target).namelist()
        assert {"world.py", "conf/world.yaml"} <= set(names), names
        assert [name for name in names if name in planted] == []


@pytest.mark.parametrize(
    "url", [f"http://127.0.0.1:{{port}}/?token={CANARY['query']}", "http://u:pw1234567@127.0.0.1:{port}"]
)
def test_a_refused_url_is_not_probed(workdir: Path, url: str) -> None:
    """Pre-flight asks a configured server whether it answers: not at a URL it refuses for the
    credential it carries (the request would send it)."""
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.setblocking(False)
        address = url.format(port=server.getsockname()[1])
        code, out = invoke("validate", "+experiment=stage1_bfcl", f"eval.engine.url='{address}'")
        assert code == 2 and "does not answer" not in out, out
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected


@pytest.mark.parametrize(
    ("url", "warned"),
    [("http://10.1.2.3:30000", True), ("http://gpu-node-7:30000", True), ("https://gpu-node-7:30000", False),
     ("http://127.0.0.1:30000", False), ("http://localhost:30000", False), ("http://[::1]:30000", False)],
)  # fmt: skip
def test_a_key_sent_over_plain_http_to_another_machine_is_warned_about(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, url: str, warned: bool
) -> None:
    """The engine's Authorization header leaves the process in clear text on the network."""
    monkeypatch.setenv("SGLANG_API_KEY", CANARY["openai"])
    for key in ("eval.engine.api_key", "eval.server.api_key"):  # its own, or the server's it sends
        overrides = ["executor=ray", f"eval.engine.url='{url}'", f"{key}=env:SGLANG_API_KEY"]
        code, out = invoke("validate", "+experiment=stage1_bfcl", *overrides)
        assert code == 0, out
        assert ("over plain http" in out) is warned and shown(CANARY, out) == [], out


@pytest.mark.parametrize("command", [[], ["run"], ["eval"], ["plan"], ["rollouts", "show"]])
def test_help_shows_no_value_of_the_environment(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """No option takes its default from a variable whose value --help would print."""
    for name, value in {"HF_TOKEN": CANARY["hf"], "T3RL_ENGINE_URL": IN_CONTEXT["query"]}.items():
        monkeypatch.setenv(name, value)
    code, out = invoke(*command, "--help")
    assert code == 0 and "Usage" in out and shown(CANARY, out) == [], out
