"""The runtime config: the only thing `launch` hands to `t3rl_core` inside slime.

`launch` serialises a `RuntimeConfig` to YAML under one top-level key, `t3rl`, and passes the file with
slime's `--custom-config-path`; slime then sets `args.t3rl` to the mapping (it turns every top-level key
of that file into an attribute of `args`). The hooks validate it again with this same model, so both
sides agree on every field.

Annotations are evaluated as the classes are created (no `from __future__ import annotations`), as in
`launch.config.schema`: pydantic would compile each annotation string again at a cold start.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t3rl_core.chat.families import Family
from t3rl_core.credit import TurnCreditConfig
from t3rl_core.fields import (
    Above,
    ChatTag,
    Distinct,
    Identifier,
    ModelRef,
    Name,
    NonNegativeFloat,
    PositiveFloat,
    RegistryName,
    Temperature,
    TemplateRef,
    Text,
)
from t3rl_core.home_paths import expand_home
from t3rl_core.input_files import InputFile
from t3rl_core.records import Record
from t3rl_core.registries import ENVS, REWARDS
from t3rl_core.registry import registered
from t3rl_core.strict import StrictModel, empty_list
from t3rl_core.yaml_text import safe_dump, safe_load

RUNTIME_KEY = "t3rl"


# A Record rather than a frozen dataclass, as t3rl_core.chat.families.Family (a cold start's cost).
class StartedServer(Record):
    """A server an env starts with `command` and then calls at `url` (keys under `env`)."""

    url_key: str
    url: str
    command_key: str
    command: tuple[str, ...]


class EnvConfig(StrictModel):
    """Base of every env section; subclasses narrow `name` to a Literal.

    The contract with rewards is declared data on the class: `OUTCOME_FIELDS` names the keys every
    `Env.outcome()` of this env returns (None = undeclared, no reward can be checked against it).
    """

    OUTCOME_FIELDS: ClassVar[frozenset[str] | None] = None
    # The env keys (dotted under `env`) its data settings are: what `split_sizes()` and `split_parts()`
    # depend on, so that pre-flight blames a change to one of them.
    SIZE_FIELDS: ClassVar[tuple[str, ...]] = ()
    # How its env reads model text (`Env.action_format`, a key of `registries.ACTION_PARSERS`): only
    # "tool_calls" splits off reasoning with `model.parsers` (reasoning_parser, think_tags).
    ACTION_FORMAT: ClassVar[str] = "tool_calls"
    # The outcome's `termination_reason` values that another party than the policy caused, each with
    # what it was: an episode so ended is left out of training (slime's generate hook, with its group),
    # since its reward measured that party. tau2's `user_error`: its user model sent an empty message.
    FOREIGN_ENDINGS: ClassVar[Mapping[str, str]] = {}

    name: RegistryName

    def eval_categories(self) -> list[str] | None:
        """The `metadata.data_source` values the prepared rows carry (None = not known before the data)."""
        return None

    def input_files(self) -> list[InputFile]:
        """The dataset files a user gives this env (none for envs whose data ships in a package)."""
        return []

    def off_context_logprobs(self) -> str | None:
        """The env key (under `env`) that makes some trained tokens carry rollout log-probs sampled in
        another context than the one they are trained in (None = none does): importance sampling on
        rollout log-probs would weight those tokens by the wrong ratio."""
        return None

    def started_server(self) -> StartedServer | None:
        """The server the env starts itself and calls (None = it starts none): pre-flight checks that
        the command's listening port is the URL's."""
        return None

    def prompt_think_tags(self) -> tuple[str, str] | None:
        """The reasoning delimiters the env's prompt asks the model to write (None = it names none):
        the parser that strips reasoning (`model.parsers.think_tags`) must read the same ones."""
        return None

    def varies_between_attempts(self) -> str | None:
        """The env key (under `env`) of what the env samples itself, so that attempts at one task differ
        under a greedy policy (an LLM customer at temperature > 0); None = it answers an action the
        same way every time. Greedy attempts then still differ: pass^k and a group baseline hold."""
        return None

    def split_sizes(self) -> dict[str, int] | None:
        """Split name → the most rows it can hold, known without preparing data (None = not declared).
        Pre-flight compares it with what a stage draws from the split: a batch of more prompts than
        the split has, or an empty split, is refused before any data is prepared. `SIZE_FIELDS` names
        the env keys it depends on (dotted, under `env`), so that a change to one of them is blamed."""
        return None

    def prepare_refusals(self) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
        """What prepare_data would refuse in these settings, known without preparing data: (the key under
        `env`, why, a value that prepares, or None when no value of that key does; the keys under `env`
        the refusal reads, the one set last is blamed). Pre-flight refuses it wherever a prepare_data
        stage runs (a sweep's point included), instead of the stage failing."""
        return []

    def split_parts(self) -> dict[str, frozenset[str]] | None:
        """Split name → the parts of the task space its rows come from (None = not declared): two splits
        share a task exactly when they share a part, which pre-flight checks between the splits a
        training stage reads and those an eval scores, without preparing any data."""
        return None

    def demonstration_splits(self) -> frozenset[str] | None:
        """The splits whose rows are whole conversations with the assistant's turns, what a stage of mode
        sft trains on (None = not declared): an SFT stage on a split of bare prompts has no assistant
        token to learn."""
        return None

    def model_call_limit(self) -> tuple[str, int] | None:
        """The env's own limit on an episode's model calls: (its field, dotted under `env`; the limit);
        None = the env has none. The episode loop's `max_num_steps` limits the same count: of the two,
        the lower ends every episode and the other does nothing."""
        return None

    def episode_steps_needed(self) -> tuple[str, list[int]] | None:
        """The env's own limit on an episode's steps in its own unit (its field, dotted under `env`) and
        the fewest such steps each task of its data needs (None = not declared): a limit below most of
        them ends most episodes before their task can be done (tau2's `max_steps`)."""
        return None

    def model_calls_needed(self) -> list[int] | None:
        """The fewest model calls each task needs to be completed (one per user turn for BFCL), over
        the tasks the env's data holds; None = not declared. A step limit below most of them ends
        most episodes before their task can be done."""
        return None

    def model_calls_bound(self) -> int | None:
        """At least the most model calls any task of the env's data needs, read more cheaply than
        `model_calls_needed` (None = not declared): a step limit at or above it cuts no task, so the
        pre-flight check does not read the tasks one by one."""
        return None

    def gold_missing(self, row: Mapping[str, Any] | None) -> str | None:
        """Why the reference engine (`Env.oracle()`, the scripted gold policy) has no action to play on
        a task: for a prepared `row`, or, with None, for every task whatever its row (an env that keeps no
        gold). None = it has one (for None: it may, by the rows). An eval of the reference engine on such
        a task fails its first episode ("no gold action here") after the data and the world were built."""
        return None


class RewardConfig(StrictModel):
    """Base of every reward section; subclasses narrow `name` to a Literal.

    `NEEDS_OUTCOME` names the `Env.outcome()` keys the reward reads: an env that does not provide them
    all would score every episode from missing data, so the launcher rejects the pair before a run.
    """

    NEEDS_OUTCOME: ClassVar[frozenset[str]] = frozenset()
    # The env `ACTION_FORMAT` whose model text and ground truth the reward parses (ToolRL's `<tool_call>`
    # lines against its gold calls, ReTool's `\boxed{}` answer against its number): the same outcome keys
    # of another world hold other things, which it would score as always wrong. None = any env.
    READS_FORMAT: ClassVar[str | None] = None

    name: RegistryName

    def cuts_at(self) -> tuple[str, tuple[str, ...]] | None:
        """(the field that chooses them, the chat-format tokens the reward cuts the decoded answer at);
        None = it reads no chat format. Each must be a control token of model.family's format, or the
        cut finds nothing and every answer is scored with the prompt around it."""
        return None

    def constant(self) -> tuple[tuple[str, ...], float] | None:
        """(the fields that set its range, the one value) when these settings leave the reward a single
        value for every episode; None = it can vary (or is not declared). A constant reward gives every
        sample of a group the group's mean: every advantage is 0 and RL never updates the policy."""
        return None


AnyEnvConfig = registered(EnvConfig, ENVS)
AnyRewardConfig = registered(RewardConfig, REWARDS)


class ChatFamilyConfig(StrictModel):
    """A chat format's control tokens, for a template t3rl does not ship (a user's .jinja file). The
    parsers that read it are the model's `parsers`."""

    # The family's name (model.family).
    name: Name
    # Control tokens (role markers, turn ends): special tokens of the tokenizer.
    special_tokens: Annotated[list[ChatTag], Distinct()] = Field(min_length=1)
    # Format tags the model writes as text (e.g. <tool_call>): added, non-special tokens.
    tag_tokens: Annotated[list[ChatTag], Distinct()] = Field(default_factory=empty_list)
    # Tokens that end an assistant turn (sampling stops on them); the first is the usual one.
    stop_tokens: Annotated[list[ChatTag], Distinct()] = Field(min_length=1)
    # The tokenizer's beginning-of-sequence token; None = the family has none.
    bos_token: ChatTag | None = None
    # The tokenizer's end-of-sequence token.
    eos_token: ChatTag
    # The tokenizer's padding token.
    pad_token: ChatTag
    # Text a model of the family writes first in each of its turns.
    turn_prefix: Text = ""
    # The token ending a turn that calls tools, when it differs from stop_tokens[0].
    tool_turn_stop: ChatTag | None = None
    # Text a model writes first in a turn that calls tools, when it differs from turn_prefix.
    call_turn_prefix: Text | None = None

    def to_family(self, parsers: "ParsersConfig | None" = None) -> Family:
        return Family(
            name=self.name,
            special_tokens=tuple(self.special_tokens),
            tag_tokens=tuple(self.tag_tokens),
            stop_tokens=tuple(self.stop_tokens),
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            pad_token=self.pad_token,
            tool_call_parser=parsers.tool_call_parser if parsers else "",
            reasoning_parser=parsers.reasoning_parser if parsers else None,
            turn_prefix=self.turn_prefix,
            tool_turn_stop=self.tool_turn_stop,
            call_turn_prefix=self.call_turn_prefix,
        )


class ChatConfig(StrictModel):
    """How conversations become token ids."""

    # HF model or tokenizer directory (a hub id is accepted only where the hub is reachable).
    tokenizer: ModelRef
    # A template shipped in t3rl_core/chat/templates/<name>.jinja, a .jinja file, a template plugin
    # (`pkg.module:OBJECT` or an entry point of t3rl.chat_templates), or None for the tokenizer's own.
    chat_template: TemplateRef | None = None
    # The control tokens of a .jinja template's family (shipped templates and plugins bring their own).
    family: ChatFamilyConfig | None = None
    # Extra variables for the template (e.g. {"enable_thinking": false}).
    chat_template_kwargs: dict[Identifier, Any] = Field(default_factory=dict)
    # True: a shipped template of another family than model.family is intended (the launcher rejects
    # it otherwise: the parsers and stop tokens follow the family, not the template).
    allow_foreign_template: bool = False


class ParsersConfig(StrictModel):
    """How model text becomes actions: SGLang's own parsers, chosen by name."""

    # A name registered in sglang's FunctionCallParser (e.g. "qwen25", "hermes", "llama3", "deepseekv3").
    tool_call_parser: Name
    # A name registered in sglang's ReasoningParser (e.g. "qwen3", "deepseek-r1"); None = see think_tags.
    reasoning_parser: Name | None = None
    # Reasoning delimiters: alone, plain tags; with a reasoning_parser, they replace the parser's own
    # tags and its rules apply to them (T3RL: qwen3-thinking with <thinking>…</thinking>).
    think_tags: tuple[ChatTag, ChatTag] | None = None


class RolloutConfig(StrictModel):
    """Limits and sampling of one episode."""

    # Model calls per episode before it ends as truncated.
    max_num_steps: int = Field(30, ge=1)
    # Cap on prompt + response tokens of an episode; None = no cap beyond per-call limits.
    max_context_len: int | None = Field(None, ge=1)
    # Cap on the response tokens of an episode (model output + observations after the prompt);
    # no model call starts once it is spent and a call never asks for more than what is left.
    max_response_len: int | None = Field(None, ge=1)
    # Tokens per model call (slime's --rollout-max-response-len; the eval uses it as is).
    max_new_tokens: int = Field(1024, ge=1)
    temperature: Temperature = 1.0
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    # Re-render the whole conversation at episode end and compare with the TITO tokens (costly).
    tito_drift_check: bool = False
    # Share of a rollout's samples that may fail on infrastructure (the env, the engine, the reward or
    # t3rl raised; never trained on, removed with their prompt group) before the run stops with the
    # first failure's traceback; 0 = the first failure stops it, 1 = only a rollout that lost every
    # sample does (t3rl_core.hooks.failures).
    max_failure_rate: float = Field(0.05, ge=0.0, le=1.0)


class MisConfig(StrictModel):
    """Train/inference mismatch metrics and optional truncated importance sampling (slime's --use-tis)."""

    tis_level: Literal["token", "sequence", "geometric"] = "token"
    tis_mode: Literal["truncate", "clip", "mask"] = "truncate"
    # Importance weights outside [lower, upper] are truncated, clipped or masked (an empty range is none).
    tis_lower_bound: NonNegativeFloat = 0.5
    tis_upper_bound: Annotated[PositiveFloat, Above("tis_lower_bound")] = 2.0
    tis_batch_normalize: bool = True


class KlInRewardConfig(StrictModel):
    """veRL's KL penalty in the reward (fixed controller): each response token's reward loses
    coef × KL(π‖π_ref) before GRPO's group z-score (t3rl_core.hooks.advantage)."""

    # β, the fixed KL coefficient (veRL algorithm.kl_ctrl.kl_coef, default 0.001); > 0 (null the
    # section for none). At most 2**24, the largest reward range or weight a reward declares
    # (rewards.base.REWARD_SCALE_MAX): past it a KL of one nat outweighs any reward, and β=1e308 made a
    # response's score -inf (β times its KL sum) and its group's advantages NaN.
    coef: float = Field(0.001, gt=0, le=2**24)
    # veRL's kl_penalty estimator of log π − log π_ref = d: kl = d, abs = |d|, mse = d²/2.
    type: Literal["kl", "abs", "mse"] = "kl"


class RuntimeConfig(StrictModel):
    """Everything the hooks and the standalone eval need to run episodes."""

    env: AnyEnvConfig
    reward: AnyRewardConfig
    chat: ChatConfig
    parsers: ParsersConfig
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    mis: MisConfig = Field(default_factory=MisConfig)
    # The advantage hook's KL-in-reward settings; None = the hook is not planned.
    kl_in_reward: KlInRewardConfig | None = None
    # algorithm.credit=turn's settings (t3rl_core.credit); None = trajectory-level credit.
    turn_credit: TurnCreditConfig | None = None

    def to_yaml(self) -> str:
        """The file passed to slime's --custom-config-path."""
        return safe_dump({RUNTIME_KEY: self.model_dump(mode="json")}, sort_keys=False)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "RuntimeConfig":
        data = safe_load(Path(path).read_text())
        return cls.model_validate(expand_home(data.get(RUNTIME_KEY, data)))

    @classmethod
    def from_slime_args(cls, args: Any) -> "RuntimeConfig":
        """Read the config slime attached to `args` from our --custom-config-path file."""
        data = getattr(args, RUNTIME_KEY, None)
        if data is None:
            path = getattr(args, "custom_config_path", None)
            if not path:
                raise RuntimeError(
                    "t3rl hooks need the runtime config: "
                    "pass --custom-config-path <run dir>/runtime/<stage>.yaml"
                )
            return cls.from_yaml(path)
        return data if isinstance(data, cls) else cls.model_validate(data)
