"""Every registry of the runtime, with the modules its entries live in, and the entry-point group
and config base class of its plugins (`t3rl_core.plugins`).

Config modules import only pydantic; factories may import heavy libraries.
"""

from __future__ import annotations

from t3rl_core.registry import Entry, Registry

ENVS = Registry(
    "env",
    {
        "bfcl_multi_turn": Entry(
            "t3rl_core.envs.bfcl.config:BFCLEnvConfig", "t3rl_core.envs.bfcl.env:make_factory"
        ),
        "toolrl_single_turn": Entry(
            "t3rl_core.envs.toolrl.config:ToolRLEnvConfig", "t3rl_core.envs.toolrl.env:make_factory"
        ),
        "retool_python": Entry(
            "t3rl_core.envs.retool.config:ReToolEnvConfig", "t3rl_core.envs.retool.env:make_factory"
        ),
        "tau2": Entry("t3rl_core.envs.tau2.config:Tau2EnvConfig", "t3rl_core.envs.tau2.env:make_factory"),
        "verifiers": Entry(
            "t3rl_core.envs.verifiers.config:VerifiersEnvConfig", "t3rl_core.envs.verifiers.env:make_factory"
        ),
        "openenv": Entry(
            "t3rl_core.envs.openenv.config:OpenEnvEnvConfig", "t3rl_core.envs.openenv.env:make_factory"
        ),
    },
    group="t3rl.envs",
    base="t3rl_core.config:EnvConfig",
)

REWARDS = Registry(
    "reward",
    {
        "progress": Entry(
            "t3rl_core.rewards.progress_config:ProgressRewardConfig",
            "t3rl_core.rewards.progress:ProgressReward",
        ),
        "binary": Entry(
            "t3rl_core.rewards.progress_config:BinaryRewardConfig", "t3rl_core.rewards.progress:BinaryReward"
        ),
        "bfcl_format": Entry(
            "t3rl_core.rewards.progress_config:FormatRewardConfig", "t3rl_core.rewards.progress:FormatReward"
        ),
        "toolrl": Entry(
            "t3rl_core.rewards.toolrl:ToolRLRewardConfig", "t3rl_core.rewards.toolrl:ToolRLReward"
        ),
        "tau2_shaped": Entry(
            "t3rl_core.rewards.tau2:Tau2RewardConfig", "t3rl_core.rewards.tau2:Tau2ShapedReward"
        ),
        "retool_outcome": Entry(
            "t3rl_core.rewards.retool:ReToolRewardConfig", "t3rl_core.rewards.retool:ReToolOutcomeReward"
        ),
        "env_score": Entry(
            "t3rl_core.rewards.env_score:EnvScoreRewardConfig", "t3rl_core.rewards.env_score:EnvScoreReward"
        ),
    },
    group="t3rl.rewards",
    base="t3rl_core.config:RewardConfig",
)

ENGINES = Registry(
    "engine",
    {
        "sglang": Entry(
            "t3rl_core.engines.config:SGLangEngineConfig", "t3rl_core.engines.sglang_http:SGLangEngine"
        ),
        "hf": Entry("t3rl_core.engines.config:HFEngineConfig", "t3rl_core.engines.hf:HFEngine"),
        "reference": Entry(
            "t3rl_core.engines.config:ReferenceEngineConfig", "t3rl_core.engines.reference:ReferenceEngine"
        ),
    },
    group="t3rl.engines",
    base="t3rl_core.engines.config:EngineConfig",
)

SANDBOXES = Registry(
    "sandbox",
    {
        "local": Entry("t3rl_core.sandbox.config:LocalSandboxConfig", "t3rl_core.sandbox.local:LocalSandbox"),
        "sandbox_fusion": Entry(
            "t3rl_core.sandbox.config:SandboxFusionConfig", "t3rl_core.sandbox.fusion:SandboxFusionClient"
        ),
    },
    group="t3rl.sandboxes",
    base="t3rl_core.sandbox.config:SandboxConfig",
)

USER_SIMULATORS = Registry(
    "user simulator",
    {
        "llm": Entry("t3rl_core.envs.tau2.users:LLMUserConfig", "t3rl_core.envs.tau2.users:LLMUser"),
        "scripted": Entry(
            "t3rl_core.envs.tau2.users:ScriptedUserConfig", "t3rl_core.envs.tau2.users:ScriptedUser"
        ),
    },
    group="t3rl.user_simulators",
    base="t3rl_core.envs.tau2.users:UserSimulatorConfig",
)

# Data preparation per env name: `prepare(env_config, out_dir: Path) -> dict[str, Path]` writes one
# JSONL file per split and returns split name → path.
DATASETS = Registry(
    "dataset",
    {
        "bfcl_multi_turn": Entry(
            "t3rl_core.envs.bfcl.config:BFCLEnvConfig", "t3rl_core.envs.bfcl.data:prepare"
        ),
        "toolrl_single_turn": Entry(
            "t3rl_core.envs.toolrl.config:ToolRLEnvConfig", "t3rl_core.envs.toolrl.data:prepare"
        ),
        "retool_python": Entry(
            "t3rl_core.envs.retool.config:ReToolEnvConfig", "t3rl_core.envs.retool.data:prepare"
        ),
        "tau2": Entry("t3rl_core.envs.tau2.config:Tau2EnvConfig", "t3rl_core.envs.tau2.data:prepare"),
        "verifiers": Entry(
            "t3rl_core.envs.verifiers.config:VerifiersEnvConfig", "t3rl_core.envs.verifiers.data:prepare"
        ),
        "openenv": Entry(
            "t3rl_core.envs.openenv.config:OpenEnvEnvConfig", "t3rl_core.envs.openenv.data:prepare"
        ),
    },
    group="t3rl.envs",
    base="t3rl_core.config:EnvConfig",
    attribute="prepare",
)

# How model text becomes an action, by `Env.action_format`. Factories are called as
# `factory(parsers: ParsersConfig, tools: list[dict]) -> parser` with `parser.parse(text) -> Action`;
# when a row carries `metadata.late_tools` (functions offered mid-episode, e.g. BFCL miss_func), they
# are passed as `late_tools=` too: accepted in calls, never rendered in the prompt.
ACTION_PARSERS = Registry(
    "action format",
    {
        "tool_calls": Entry(
            "t3rl_core.config:ParsersConfig", "t3rl_core.parsers.tool_calls:ToolCallActionParser"
        ),
        "code_block": Entry("t3rl_core.config:ParsersConfig", "t3rl_core.envs.retool.parser:CodeBlockParser"),
        "toolrl": Entry("t3rl_core.config:ParsersConfig", "t3rl_core.envs.toolrl.parser:ToolRLParser"),
    },
)
