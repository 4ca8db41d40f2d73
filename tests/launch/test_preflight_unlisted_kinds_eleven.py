"""An eleventh round of kinds of mistakes no issue listed, each refused at the key that was changed, with a
first fix that validates, by a declaration rather than by a case of its own:

- a search entry that names a value twice (`choice(1, 1)`, `choice(0.01, 1e-2)`): Optuna keeps each copy as
  a category, so its sampler weighs that value more (launch/checks/search_space.py); an entry of one value
  is a plain override written as a search (a warning), and a space of nothing but such entries would run
  the same trial n_trials times (refused);
- a float no number format the stages compute in holds (`lr=5e-324`, `kl_loss_coef=1e-300`): 0 in float32
  and bfloat16. Every float of every config is judged against float32's smallest normal
  (t3rl_core.fields.FLOAT32_TINY, beside the finite rule), and a learning rate has a domain whose lower end
  is what float32 main weights can still move by (t3rl_core.fields.LearningRate);
- a Docker image a stage here would `docker run` (OpenEnv's `env.image`) with no daemon answering: the field
  declares it (t3rl_core.fields.DockerRun) and one probe pings the daemon's local socket
  (launch/checks/docker_probe.py).

Each case is judged as the mutation harness judges it (tests/support/preflight_mutations.py).
"""

from __future__ import annotations

import functools
import os
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.in_tmp import in_tmp
from tests.support.preflight_mutations import YAML_TEXT, Mutation, judge
from tests.support.refusals import errors as _errors
from tests.support.refusals import fixed as _fixed

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


# ------------------------------------------------------------------------------ floats float32 holds as 0

LR = "stages.train.curriculum.optimizer.lr"
KL = "stages.train.curriculum.algorithm.kl_loss_coef"
TINY_CASES = [
    # a learning rate below what a float32 main weight of ~1e-2 moves by (was accepted)
    Mutation("stage1_bfcl", "tiny float", LR, "5e-324"),
    Mutation("stage1_bfcl", "tiny float", LR, "1e-300"),
    Mutation("stage2_bfcl", "tiny float", LR, "1e-12"),
    # any other float: 0 in disguise in float32 (was accepted)
    Mutation("stage1_bfcl", "tiny float", KL, "1e-300"),
    Mutation("stage1_bfcl", "tiny float", "eval.top_p", "1e-320"),
    Mutation("stage1_bfcl", "tiny float", "hardware.sglang_mem_fraction", "5e-324"),
    Mutation("toolrl_grpo", "tiny float", "reward.format_max", "1e-310"),
    Mutation("toolrl_grpo", "tiny float", "reward.format_min", "-1e-300"),
    Mutation("tau2_pipeline", "tiny float", "env.user.temperature", "1e-300"),
    # ... written in a user's experiment file
    Mutation("stage1_bfcl", YAML_TEXT, KL, "1.0e-300"),
]


@pytest.mark.parametrize("mutation", TINY_CASES, ids=[str(m) for m in TINY_CASES])
def test_a_float_float32_holds_as_zero_is_refused_at_its_key(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_a_tiny_float_in_a_stages_overlay_is_refused_where_the_overlay_is_merged() -> None:
    args = ["+experiment=stage1_bfcl", "+stages.eval.eval.top_p=1e-300"]
    (error,) = _errors(args)  # was accepted
    assert error.key == "stages.eval.eval.top_p" and "float32" in error.message
    assert _errors(_fixed(args, error)) == []


# Property: every float field of a shipped experiment given a nonzero value below float32's smallest normal
# is refused at it with a fix that validates, whatever its sign.
_FLOATS = [
    ("stage1_bfcl", "eval.temperature"),
    ("stage1_bfcl", "stages.train.curriculum.optimizer.weight_decay"),
    ("stage1_bfcl", "stages.train.curriculum.algorithm.entropy_coef"),
    ("stage2_bfcl", "stages.train.curriculum.optimizer.clip_grad"),
    ("retool", "env.sandbox.timeout_s"),
    ("toolrl_grpo", "reward.correctness_min"),
]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    target=st.sampled_from(_FLOATS),
    value=st.floats(min_value=5e-324, max_value=1e-39, allow_subnormal=True),
    negative=st.booleans(),
)
def test_any_float_below_float32s_smallest_normal_is_refused(
    target: tuple[str, str], value: float, negative: bool
) -> None:
    experiment, key = target
    text = repr(-value if negative and key.endswith("_min") else value)
    verdict = judge(Mutation(experiment, "tiny float", key, text))
    assert verdict.outcome == "refused, fix validates", verdict.detail


@pytest.mark.parametrize(
    "override",
    [f"{LR}=1e-9", f"{LR}=1e-10", f"{KL}=0", f"{KL}=1e-30", "eval.top_p=0.001", f"{KL}=1.2e-38"],
)
def test_small_values_float32_holds_are_accepted(override: str) -> None:
    assert _errors(["+experiment=stage1_bfcl", override]) == []


# --------------------------------------------------------------------------------------------- searches


def test_a_search_choice_that_names_a_value_twice_is_refused_with_each_value_once() -> None:
    from test_sweep_checks import SEARCH, _refused_then_fixed

    (error,) = _refused_then_fixed(  # was accepted
        [*SEARCH, "reward=choice(progress, binary, progress)"],
        {"reward": '"reward=choice(progress, binary)"'},
    )
    assert "more than once" in error["message"]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.sampled_from(["choice(0.01, 0.01)", "choice(0.01, 1e-2)", "choice(0.01,0.010)"]))
def test_a_search_choice_of_one_value_repeated_is_refused_with_the_value(entry: str) -> None:
    from test_sweep_checks import KL, SEARCH, _refused_then_fixed

    _refused_then_fixed([*SEARCH, f"{KL}={entry}"], {KL: f"{KL}=0.01"})  # was accepted


def test_a_search_entry_of_one_value_is_a_warning_with_the_plain_override() -> None:
    from test_sweep_checks import SEARCH, _invoke, _problems

    code, out = _invoke("validate", "-m", *SEARCH, "reward=choice(binary)")
    assert code == 0, out
    (warning,) = _problems(out, "warning")  # was silent
    assert warning["key"] == "reward" and warning["fix"].startswith("reward=binary")


@pytest.mark.parametrize(
    "entry", ["interval(0.01, 0.01)", "range(1, 2)", "choice(0.05)", "int(interval(1, 1))"]
)
def test_a_search_space_of_single_values_is_refused_as_one_run_repeated(entry: str) -> None:
    from test_sweep_checks import KL, LR, SEARCH, _invoke, _problems

    args = [*SEARCH, "reward=choice(binary)", f"{KL}={entry}", f"{LR}=1e-6"]
    code, out = _invoke("validate", "-m", *args)
    assert code == 2, out  # was accepted: 12 trials of one run
    (error,) = _problems(out)
    assert "same run" in error["message"] and error["fix"].startswith("++hydra.sweeper.n_trials=1")
    code, out = _invoke("validate", "-m", *args, "++hydra.sweeper.n_trials=1")
    assert code == 0, out


# --------------------------------------------------------------------------------- a Docker image's daemon

OPENENV_IMAGE = ["+experiment=hub_env_grpo", "env=openenv", "env.url=null", "env.command=null"]


def _fake_docker_cli(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `docker` command on PATH (the probe only looks it up; it never runs it)."""
    bin_dir.mkdir(exist_ok=True)
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/sh\nexit 0\n")
    docker.chmod(docker.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(bin_dir / "no-docker-config"))


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Path]:
    """A unix socket that answers GET /_ping as a Docker daemon does."""
    path = Path(f"/tmp/t3rl-d{os.getpid()}-{id(tmp_path):x}.sock")  # a socket path has ~100 characters
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK")

    threading.Thread(target=serve, daemon=True).start()
    yield path
    server.close()
    path.unlink(missing_ok=True)


@pytest.mark.parametrize("image", ["counter:latest", "ghcr.io/meta-pytorch/openenv-echo-env:0.1"])
def test_an_image_with_no_daemon_here_is_refused_with_a_server_by_url(
    image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docker_cli(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    args = [*OPENENV_IMAGE, f"env.image={image}"]
    (error,) = _errors(args)  # was accepted
    assert error.key == "env.image" and "no-daemon.sock does not exist" in error.message
    assert error.fix.startswith("set env.image=null env.url=http://127.0.0.1:8000")
    assert _errors(_fixed(args, error)) == []


def test_an_image_with_no_docker_command_here_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "no-docker"  # python3 (paths.python) and no docker
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    (error,) = _errors([*OPENENV_IMAGE, "env.image=counter:latest"])  # was accepted
    assert error.key == "env.image" and "docker command is not installed" in error.message
    assert _errors(_fixed([*OPENENV_IMAGE, "env.image=counter:latest"], error)) == []


def test_an_image_whose_daemon_answers_is_accepted(
    daemon: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docker_cli(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{daemon}")
    assert _errors([*OPENENV_IMAGE, "env.image=counter:latest"]) == []


@pytest.mark.parametrize(
    "where", [["executor=slurm"], ["executor=dry"], ["executor=ray", "executor.other_stages=cluster"]]
)
def test_an_image_run_on_the_cluster_is_not_probed_here(
    where: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docker_cli(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    problems = _errors([*OPENENV_IMAGE, "env.image=counter:latest", *where])
    assert not [p for p in problems if p.key == "env.image"], problems


def test_a_daemon_over_the_network_is_not_probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_docker_cli(tmp_path / "bin", monkeypatch)
    monkeypatch.setenv("DOCKER_HOST", "tcp://docker-host.invalid:2376")
    assert _errors([*OPENENV_IMAGE, "env.image=counter:latest"]) == []


# ------------------------------------------------------------------- values far past what they can mean
# Found by walking every leaf of every shipped experiment with meaning-wrong values
# (tests/support/meaning_values.py): each kind is now impossible by a declaration.

HUGE_CASES = [
    # a count a check enumerated: `t3rl failed unexpectedly: MemoryError` (resources.candidate_layouts
    # listed every pipeline size up to the layer count; model_size counted MoE layers one by one)
    Mutation("stage1_bfcl", "huge", "model.architecture.num_layers", str(10**12)),
    # a wait past Python's clock (threading.TIMEOUT_MAX): OverflowError at the first sleep (was accepted)
    Mutation("stage1_bfcl", "huge", "executor.stop_grace_s", "1e12"),
    Mutation("stage1_bfcl", "huge", "eval.engine.backoff_s", "1e12"),
    Mutation("stage1_bfcl", "huge", "eval.engine.timeout_s", "1e10"),
    Mutation("tau2_pipeline", "huge", "env.user.timeout_s", "1e12"),
    # a top-k no int32 tensor holds (SGLang's batch): the eval's first batch fails (was accepted)
    Mutation("stage1_bfcl", "huge", "eval.top_k", str(10**12)),
    Mutation("stage1_bfcl", "huge", "eval.top_k", str(2**31)),
    # a weight decay that zeroes or flips every weight each step (lr × weight_decay >= 1; was accepted)
    Mutation("stage1_bfcl", "huge", "stages.train.curriculum.optimizer.weight_decay", "1e12"),
    Mutation("retool", "huge", "stages.sft.curriculum.optimizer.weight_decay", "1e5"),
    # a layout count past every layout: the first fix was the nearest searched value (nodes=128,
    # expert_tensor_parallel=8), which the local Ray head or a dense model refuses next (fix fails before)
    Mutation("stage1_bfcl", "huge", "hardware.nodes", str(10**12)),
    Mutation("bfcl_debug", "huge", "hardware.expert_tensor_parallel", str(10**12)),
    Mutation("stage1_bfcl", "huge", "hardware.expert_tensor_parallel", "3"),
    # an env setting that empties the split several evals read: the fix moved one reader (fix fails before)
    Mutation("bfcl_debug", "zero", "env.data.val_ratio", "0"),
    # an episode's response budget below one model call's: every episode ends truncated (was accepted)
    Mutation("stage1_bfcl", "small", "stages.train.curriculum.max_response_len", "100"),
    Mutation("retool", "small", "stages.rl.curriculum.max_response_len", "4096"),
]


@pytest.mark.parametrize("mutation", HUGE_CASES, ids=[str(m) for m in HUGE_CASES])
def test_a_value_far_past_its_meaning_is_refused_at_its_key(mutation: Mutation) -> None:
    verdict = judge(mutation)
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_the_longest_wait_is_pythons() -> None:
    import threading

    from t3rl_core.fields import MAX_WAIT_S

    assert MAX_WAIT_S <= threading.TIMEOUT_MAX


def test_an_openenv_startup_timeout_is_a_duration() -> None:
    args = ["+experiment=hub_env_grpo", "env=openenv", "env.startup_timeout_s=1e12"]
    (error,) = _errors(args)  # was accepted: a plain float > 0
    assert error.key == "env.startup_timeout_s"
    assert _errors(_fixed(args, error)) == []


@pytest.mark.parametrize(
    "override",
    [
        "eval.top_k=1073741824",  # SGLang's own "whole vocabulary"
        "eval.top_k=50",
        "eval.engine.timeout_s=1e9",
        "stages.train.curriculum.optimizer.weight_decay=0.1",
        "stages.train.curriculum.optimizer.weight_decay=0",
    ],
)
def test_large_values_that_still_mean_something_are_accepted(override: str) -> None:
    assert _errors(["+experiment=stage1_bfcl", override]) == []


def test_a_weight_decay_with_a_large_lr_is_judged_by_their_product() -> None:
    lr = "stages.train.curriculum.optimizer.lr=0.5"
    wd = "stages.train.curriculum.optimizer.weight_decay"
    assert _errors(["+experiment=stage1_bfcl", lr, f"{wd}=1.9"]) == []
    (error,) = _errors(["+experiment=stage1_bfcl", lr, f"{wd}=2"])
    assert error.key == wd and "zeroes or flips" in error.message


# ------------------------------------------------------------- the walk over every leaf, as a property

_GOOD = ("refused, fix validates", "accepted")


@functools.cache
def _meaning_mutations() -> list[tuple[Mutation, str]]:
    from tests.support.meaning_values import left, meaning_mutations

    return [(m, kind) for m, kind in meaning_mutations() if left(m, kind) is None]


def test_the_walk_reaches_every_shipped_experiment_and_kind() -> None:
    from tests.support.preflight_mutations import EXPERIMENTS

    found = _meaning_mutations()
    kinds = {kind for _, kind in found}
    assert kinds == {"huge", "tiny", "zero", "minus one", "empty", "repeat"}
    assert len(found) > 400
    from tests.support.meaning_values import meaning_mutations

    # each experiment walked alone reaches its own leaves (across experiments a field is tried once)
    for experiment in EXPERIMENTS:
        assert next(meaning_mutations([experiment]), None) is not None, experiment


# Property: any leaf of any shipped experiment given a value of its type whose meaning is wrong (far past
# its bounds, 0 in float32, zero, -1, empty, a repeated item) is refused at its key with a first fix that
# validates, or accepted with the whole plan built: never crashed, blamed elsewhere, or fixed in words.
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_leaf_given_a_meaning_wrong_value_is_refused_with_a_fix_or_accepted(data: st.DataObject) -> None:
    mutation, _ = data.draw(st.sampled_from(_meaning_mutations()))
    verdict = judge(mutation)
    assert verdict.outcome in _GOOD, f"{mutation}: {verdict.outcome}: {verdict.detail}"
