"""Every setting an eval's result can depend on, declared once, section by section: the part of the
benchmark identity (`t3rl_core.eval.identity.PARTS`) that records it, or why two results may differ in
it and still be compared (a text starting with `NOT_COMPARED`).

The identity reads its budget keys and the chat and parser fields it compares from here, so that a
setting is compared exactly when it is declared so. tests/eval/test_comparable_kinds_three.py fails for
a field of these sections declared nowhere (a new eval setting cannot be forgotten), and checks each
declaration against the identity an eval records: a field declared in a part changes that part and no
other; a field declared not compared changes nothing.

Pure data: `t3rl runs` and the identity import it without pydantic.
"""

from __future__ import annotations

NOT_COMPARED = "not compared"

# EvalConfig (t3rl_core/eval/config.py): what to evaluate and how.
EVAL = {
    "engine": f"{NOT_COMPARED}: the model and the engine serving it are what results are compared across",
    "split": "data",
    "samples": f"{NOT_COMPARED}: pass@k and pass^k are unbiased at any number of samples >= k (a k not "
    "measured has no value)",
    "repeats": f"{NOT_COMPARED}: more draws of the same measurement",
    "pass_k": f"{NOT_COMPARED}: each k is its own metric key",
    "concurrency": f"{NOT_COMPARED}: how many episodes run at once, not what each measures",
    "limit_per_category": "selection",
    "categories": "selection",
    "temperature": "decoding",
    "top_p": "decoding",
    "top_k": "decoding",
    "seed": f"{NOT_COMPARED}: one draw of the same measurement",
    "max_new_tokens": "budget",
    "max_num_steps": "budget",
    "max_engine_failure_rate": f"{NOT_COMPARED}: what the engine failed is the coverage part, recorded "
    "from the episodes",
    "server": f"{NOT_COMPARED}: where the model is served",
    "published": f"{NOT_COMPARED}: what the result is held against, not how it is measured",
}
# RolloutConfig (t3rl_core/config.py): an episode's limits and sampling (the eval's own settings win).
ROLLOUT = {
    "max_new_tokens": "budget",
    "max_num_steps": "budget",
    "max_context_len": "budget",
    "max_response_len": "budget",
    "temperature": f"{NOT_COMPARED}: the eval samples at eval.temperature",
    "top_p": "decoding",
    "tito_drift_check": f"{NOT_COMPARED}: a check of the token ids, which it does not change",
    "max_failure_rate": f"{NOT_COMPARED}: a training rollout's tolerance",
}
# ChatConfig: how conversations become token ids.
CHAT = {
    "tokenizer": "protocol",
    "chat_template": "protocol",
    "family": "protocol",
    "chat_template_kwargs": "protocol",
    "allow_foreign_template": f"{NOT_COMPARED}: a permission pre-flight reads; the template is compared",
}
# ParsersConfig: how model text becomes actions.
PARSERS = {
    "tool_call_parser": "protocol",
    "reasoning_parser": "protocol",
    "think_tags": "protocol",
}
# RuntimeConfig's other sections.
RUNTIME = {
    "env": "env",
    "reward": "metric",  # as the success it defines, when the env gives no verdict of its own
    "mis": f"{NOT_COMPARED}: training's importance sampling",
    "kl_in_reward": f"{NOT_COMPARED}: training's KL penalty",
    "turn_credit": f"{NOT_COMPARED}: training's per-turn credit",
    "chat": "protocol",
    "parsers": "protocol",
    "rollout": "budget",  # field by field: ROLLOUT
}
# An env's sandbox section (ReTool's `sandbox`), by the sandbox's name: the limits a cell runs under are
# what the model reads back (a timeout, a MemoryError, cut output), so they are the env part; how many
# cells run at once and where the server is are not. A sandbox not declared here (a plugin's) is
# compared by every field.
_CELLS_AT_ONCE = f"{NOT_COMPARED}: how many cells run at once, not what each may do"
SANDBOX_LOCAL = {
    "name": "env",
    "python": "env",  # another interpreter has other packages a cell may import
    "timeout_s": "env",
    "cpu_time_s": "env",
    "memory_mb": "env",
    "cpu_cores": "env",
    "max_processes": "env",
    "max_open_files": "env",
    "max_file_size_mb": "env",
    "max_output_bytes": "env",
    "max_concurrency": _CELLS_AT_ONCE,
    "isolation": "env",  # what a cell may reach (the network, files)
    "require": f"{NOT_COMPARED}: which protections must exist to start, not what a cell may do",
    "cell_uid": f"{NOT_COMPARED}: the unprivileged id cells run as on this machine",
    "cell_gid": f"{NOT_COMPARED}: the unprivileged id cells run as on this machine",
    "cell_disk_mb": "env",
    "private_dirs": "env",
    "preload": f"{NOT_COMPARED}: modules imported ahead, so that cells start warm",
    "hidden_paths": "env",
    "readable_paths": "env",
    "env_allowlist": "env",
    "env": "env",
}
SANDBOX_FUSION = {
    "name": "env",
    "url": f"{NOT_COMPARED}: where the server is",
    "language": "env",
    "run_timeout_s": "env",
    "compile_timeout_s": "env",
    "request_timeout_s": f"{NOT_COMPARED}: how long t3rl waits for the server's answer (above its limits)",
    "max_concurrency": _CELLS_AT_ONCE,
    "max_attempts": f"{NOT_COMPARED}: retries of a transport error, not of a cell's result",
    "backoff_initial_s": f"{NOT_COMPARED}: the wait between retries",
    "backoff_max_s": f"{NOT_COMPARED}: the wait between retries",
}
SANDBOXES = {"local": SANDBOX_LOCAL, "sandbox_fusion": SANDBOX_FUSION}
# Each built-in engine's settings (t3rl_core/engines/config.py), by the engine's name: `model` when they
# change what answers (the summary's `model` records them, so two results differing in one are set side by
# side with it shown, as another model is), else why not. The summary's model recorded the HF engine's
# path alone: a float32 eval and a bfloat16 one, or a reference policy with injected faults and one
# without, compared as one model.
_WHERE_SERVED = f"{NOT_COMPARED}: where and how the engine is reached, not what it answers"
_AT_ONCE = f"{NOT_COMPARED}: how many requests run at once"
ENGINES = {
    "sglang": {
        "name": "model",
        "url": _WHERE_SERVED,  # the served checkpoint is recorded from the server (served_model)
        "api_key": _WHERE_SERVED,
        "health_timeout_s": _WHERE_SERVED,
        "concurrency": _AT_ONCE,
        "timeout_s": f"{NOT_COMPARED}: a request past it is retried, then an engine failure (coverage)",
        "max_attempts": f"{NOT_COMPARED}: what the engine failed is the coverage part",
        "backoff_s": _WHERE_SERVED,
    },
    "hf": {
        "name": "model",
        "model_path": "model",
        "device": "model",  # kernels differ in their rounding: another device, other greedy tokens
        "dtype": "model",
        "concurrency": _AT_ONCE,
    },
    "reference": {
        "name": "model",
        "faults": "model",
        "seed": "model",  # the fault draws
        "latency_s": f"{NOT_COMPARED}: a simulated wait, not what the policy answers",
    },
}
SECTIONS = {"eval": EVAL, "rollout": ROLLOUT, "chat": CHAT, "parsers": PARSERS, "runtime": RUNTIME}


def not_compared(section: dict[str, str]) -> frozenset[str]:
    """The fields of `section` declared not compared."""
    return frozenset(field for field, declared in section.items() if declared.startswith(NOT_COMPARED))


def compared_in(section: str, part: str) -> tuple[str, ...]:
    """The fields of `section` that the identity's `part` records, in declaration order."""
    return tuple(field for field, declared in SECTIONS[section].items() if declared == part)


# What results are compared across: the EVAL settings above declared so (the engine with the model it
# serves, the seed, samples, repeats), and the t3rl commits that ran the eval's episodes (no setting; a
# resumed eval keeps an earlier attempt's episodes whatever t3rl ran them, so one summary may hold two).
# Not the benchmark, so two results differing in them stand side by side, but a reader must see that
# they differ: per label, the summary key (dotted) every comparison shows where the two differ (`t3rl
# runs diff`'s benchmark cell). The model's `url` (where it is served, masked) is not shown: the same
# checkpoint served elsewhere is the same model.
ACROSS = {
    "model": "model",  # eval.engine, with the checkpoint it serves
    "seed": "seed",
    "samples": "samples",
    "repeats": "repeats_count",
    "t3rl": "attempts.commits",  # each attempt's; compared as the set of them (`git` in older summaries)
}
ACROSS_HIDDEN = frozenset({"url"})
