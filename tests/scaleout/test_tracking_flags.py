"""Tracking flags and env for slime, the secret scrubber's rules."""

from __future__ import annotations

from launch.config.schema import TrackingConfig
from launch.config.secrets import MASK, is_secret_name, public_env, scrub_obj, scrub_text
from launch.plan.tracking import slime_tracking_args, tracking_env, tracking_names


def test_secret_names_cover_env_style_and_config_keys_but_not_data_keys() -> None:
    for name in (
        "WANDB_API_KEY",
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "MY_SERVICE_SECRET",
        "S3_KEY",
        "api_key",
        "hf_token",
    ):
        assert is_secret_name(name), name
    for name in (
        "reward_key",
        "input_key",
        "label_key",
        "max_tokens",
        "PYTHONPATH",
        "MONKEY",
        "CUDA_DEVICE_MAX_CONNECTIONS",
    ):
        assert not is_secret_name(name), name


def test_scrubbers_mask_values_everywhere_and_secret_keys() -> None:
    secrets = {"sk-planted-123456"}
    text = "curl -H 'Authorization: sk-planted-123456' && echo done"
    assert scrub_text(text, secrets) == f"curl -H 'Authorization: {MASK}' && echo done"
    data = {
        "engine": {"api_key": "short", "url": "http://x"},
        "argv": ["--k", "sk-planted-123456"],
        "reward_key": "score",
    }
    assert scrub_obj(data, secrets) == {
        "engine": {"api_key": MASK, "url": "http://x"},
        "argv": ["--k", MASK],
        "reward_key": "score",
    }
    assert public_env({"HF_TOKEN": "x", "PYTHONPATH": "/p"}) == {"PYTHONPATH": "/p"}


def test_wandb_flags_are_complete_pairs_and_never_carry_the_key() -> None:
    tracking = TrackingConfig(kind="wandb", group="sweep-7", run_name="lr=1e-6")
    names = tracking_names(tracking, experiment="stage1_bfcl", run_id="stage1_bfcl-20260101")
    args = slime_tracking_args(tracking, names, "/runs/r", environ={"WANDB_API_KEY": "k" * 40})
    assert args == [
        "--use-wandb",
        "--wandb-project", "stage1_bfcl",
        "--wandb-group", "sweep-7",
        "--disable-wandb-random-suffix",
        "--wandb-mode", "online",
        "--wandb-dir", "/runs/r/wandb",
    ]  # fmt: skip
    assert "k" * 40 not in " ".join(args)
    # No key in the environment: offline, also in the job's env.
    offline = slime_tracking_args(tracking, names, "/runs/r", environ={})
    assert offline[offline.index("--wandb-mode") + 1] == "offline"
    assert tracking_env(tracking, "/runs/r", environ={}) == {
        "WANDB_MODE": "offline",
        "WANDB_DIR": "/runs/r/wandb",
    }


def test_tensorboard_and_none() -> None:
    tracking = TrackingConfig(kind="tensorboard", project="t3rl")
    names = tracking_names(tracking, experiment="exp", run_id="exp-1")
    assert slime_tracking_args(tracking, names, "/r") == ["--use-tensorboard"]
    assert tracking_env(tracking, "/r") == {"TENSORBOARD_DIR": "/r/tensorboard"}
    none = TrackingConfig()
    assert slime_tracking_args(none, tracking_names(none, experiment="e", run_id="r"), "/r") == []
    assert tracking_env(none, "/r") == {}
