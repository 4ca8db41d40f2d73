"""The eval stage command with engine sglang and no url: it serves the checkpoint itself, evaluates over
HTTP, writes the report and always stops the server. The planned stage script serves the tiny model
(a stand-in launch command running t3rl's SGLang-protocol server on it): the one test here of a real
model behind the server. The eval serving a checkpoint itself launches tests/support/dying_sglang.py (the
SGLang protocol with a fixed reply, never dying here) in SGLang's place: what it tests is the eval's
starting, recording and stopping of its server, not the model's answers, and a second real-model
server cost ~6 s of CPU."""

import hashlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RuntimeConfig
from t3rl_core.eval import __main__ as eval_main
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.evaluate import evaluate
from t3rl_core.eval.server import ServerStartError
from tests.support.tiny_stack import free_port, shared_tiny_stack, write_runtime_yaml

pytestmark = pytest.mark.slow

SUPPORT = Path(__file__).resolve().parents[1] / "support"
LAUNCH = (sys.executable, str(SUPPORT / "sglang_via_serve.py"))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve_eval")
    data, model = shared_tiny_stack()
    runtime = write_runtime_yaml(root / "runtime.yaml", model)
    return root, data, model, runtime


def _port_open(port):
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_served_checkpoint_eval(setup):
    root, data, model, runtime_file = setup
    runtime = RuntimeConfig.from_yaml(runtime_file)
    chat = ChatFormat.from_config(runtime.chat)
    reply = ",".join(map(str, [*chat.encode("I cannot do that."), chat.stop_token_ids[0]]))
    launch = (sys.executable, str(SUPPORT / "dying_sglang.py"), "--reply-ids", reply)
    port = free_port()
    config = EvalConfig.model_validate(
        {
            "engine": {"name": "sglang", "url": None, "max_attempts": 1},
            "server": {"port": port, "startup_timeout_s": 60},
            "max_new_tokens": 8,
            "max_num_steps": 2,
            "concurrency": 2,
        }
    )
    out = root / "out"
    summary = evaluate(runtime, config, data, out, serve_checkpoint=model, launch=launch, progress=False)
    assert not _port_open(port), "the served checkpoint outlived the eval"
    assert summary["complete"] and summary["overall"]["episodes"] == 4
    assert summary["engine"]["url"] == f"http://127.0.0.1:{port}"
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} <= {"completed", "truncated"}  # not aborted: the HTTP path worked
    for record in records:  # every model token is the server's reply, with its log-prob
        replied = [lp for lp, m in zip(record["log_probs"], record["loss_mask"], strict=True) if m == 1]
        assert replied and replied == [-0.5] * len(replied)
    assert (out / "report.md").exists() and (out / "accuracy_by_category.png").exists()
    assert (out / "server.log").exists()
    # What was evaluated: the checkpoint the server reports, its fingerprint, the data's hash.
    assert summary["model"]["served_model"] == str(model)
    assert summary["model"]["checkpoint"]["fingerprint"].startswith("sha256:")
    assert summary["model"]["checkpoint"]["files"] == len([p for p in model.rglob("*") if p.is_file()])
    assert summary["dataset"]["sha256"] == hashlib.sha256((data / "bfcl_test.jsonl").read_bytes()).hexdigest()


def test_stage_command_uses_a_configured_url_without_serving(setup, tmp_path):
    _, data, _, runtime_file = setup
    eval_file = tmp_path / "eval.yaml"
    engine = {"name": "sglang", "url": "http://127.0.0.1:1", "max_attempts": 1}
    eval_file.write_text(yaml.safe_dump({"eval": {"engine": engine}}))
    # No server listens on port 1: with a url the command must not start one, and the health check
    # fails the stage before any episode runs, with a record saying why.
    code = eval_main.main(
        ["--runtime-config", str(runtime_file), "--eval-config", str(eval_file), "--data", str(data),
         "--out", str(tmp_path / "out"), "--serve-checkpoint", "/nonexistent", "--no-progress"]
    )  # fmt: skip
    assert code == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["complete"] is False and "http://127.0.0.1:1" in summary["reason"]
    assert summary["overall"]["episodes"] == 0
    assert (tmp_path / "out" / "trajectories.jsonl").read_text() == ""
    assert "do not use these numbers" in (tmp_path / "out" / "report.md").read_text()
    assert not (tmp_path / "out" / "server.log").exists()


def test_sglang_without_url_or_checkpoint_is_a_clear_error(setup, tmp_path):
    _, data, _, runtime_file = setup
    with pytest.raises(ValueError, match="serve-checkpoint"):
        evaluate(
            RuntimeConfig.from_yaml(runtime_file),
            EvalConfig.model_validate({"engine": {"name": "sglang"}}),
            data,
            tmp_path,
        )


def test_the_planned_stage_script_starts_and_stops_the_server_when_run_by_hand(setup, tmp_path):
    """The eval stage's command.sh as the planner writes it (the server's own argv in the script, its pid
    handed to the eval), run with plain bash: the eval completes over HTTP and the server is gone."""
    from types import SimpleNamespace

    from launch.plan.builders.evaluation import _with_server
    from launch.plan.stages import Stage
    from t3rl_core.eval.config import ServerConfig

    _, data, model, runtime_file = setup
    port = free_port()
    # `python -m sglang.launch_server` goes to the stand-in; every other call to the real interpreter.
    python = tmp_path / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        'if [[ "$1 $2" == "-m sglang.launch_server" ]]; then shift 2\n'
        f'  exec {sys.executable} {LAUNCH[1]} "$@"\nfi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    eval_file = tmp_path / "eval.yaml"
    config = {
        "engine": {"name": "sglang", "max_attempts": 1},
        "server": {"port": port, "startup_timeout_s": 120},
        "max_new_tokens": 8, "max_num_steps": 2, "concurrency": 2,
    }  # fmt: skip
    eval_file.write_text(yaml.safe_dump({"eval": config}))
    out = tmp_path / "out"
    builder = SimpleNamespace(
        run=SimpleNamespace(model=SimpleNamespace(parsers=RuntimeConfig.from_yaml(runtime_file).parsers)),
        ctx=SimpleNamespace(python=str(python)),
        cluster_python=lambda: str(python),
    )
    cmd = [str(python), "-m", "t3rl_core.eval", "--runtime-config", str(runtime_file), "--eval-config",
           str(eval_file), "--data", str(data), "--out", str(out), "--no-progress"]  # fmt: skip
    commands = _with_server(builder, cmd, str(model), 1, ServerConfig(port=port), str(out))
    script = tmp_path / "command.sh"
    script.write_text(Stage("eval", "eval", commands).script())
    assert "-m sglang.launch_server" in script.read_text() and f"--port {port}" in script.read_text()
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["engine"]["url"] == f"http://127.0.0.1:{port}"
    assert summary["overall"]["episodes"] == 4 and summary["model"]["served_model"] == str(model)
    assert not _port_open(port), "the server outlived the stage script"
    assert (out / "server.log").exists()
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} <= {"completed", "truncated"}  # not aborted: the HTTP path worked
    for record in records:  # the tiny model's own tokens and log-probs, through the server
        n = len(record["response_ids"])
        assert 0 < sum(record["loss_mask"]) <= 8 * 2 and len(record["log_probs"]) == n
    assert (out / "report.md").exists() and (out / "accuracy_by_category.png").exists()


def test_the_eval_fails_at_once_when_the_servers_process_ends(setup, tmp_path):
    _, data, _, runtime_file = setup
    eval_file = tmp_path / "eval.yaml"
    eval_file.write_text(yaml.safe_dump({"eval": {"engine": {"name": "sglang"}}}))
    dead = subprocess.Popen(["true"])
    dead.wait()  # a server that exited (e.g. out of GPU memory) before it ever answered
    # Only the check of the server's pid says this; waiting out startup_timeout_s (900 s) says "not
    # healthy … after": no clock needed to tell "at once" from "after the timeout".
    with pytest.raises(ServerStartError, match=rf"the server \(pid {dead.pid}\) exited before"):
        eval_main.main(
            ["--runtime-config", str(runtime_file), "--eval-config", str(eval_file), "--data", str(data),
             "--out", str(tmp_path / "out"), "--url", f"http://127.0.0.1:{free_port()}",
             "--server-pid", str(dead.pid)]
        )  # fmt: skip
