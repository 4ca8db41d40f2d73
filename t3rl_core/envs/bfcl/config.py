"""Config of the BFCL multi-turn environment and its data preparation (pydantic only)."""

import typing
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from t3rl_core.config import EnvConfig
from t3rl_core.counts import counted
from t3rl_core.envs.bfcl.augment_config import AugmentationConfig
from t3rl_core.fields import ChatTag, Seed
from t3rl_core.strict import StrictModel

Category = Literal[
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
]
MULTI_TURN_CATEGORIES: tuple[Category, ...] = typing.get_args(Category)
# Entries bfcl-eval ships per multi-turn category (ids <category>_0 … _199).
SHIPPED_ENTRIES = 200

# Prepared file stem → (split of its rows or None for all, category filter or None).
SPLIT_FILES: dict[str, tuple[tuple[str, ...] | None, str | None]] = {
    "bfcl_train_base": (("train",), "multi_turn_base"),
    "bfcl_train": (("train",), None),
    "bfcl_val": (("val",), None),
    "bfcl_test": (("test",), None),
    # The 400 tasks no T3RL stage trains on (val + test ids): the published stage-1 checkpoint's
    # "400 unseen BFCL V3 instances" (60.00 %).
    "bfcl_unseen": (("val", "test"), None),
    "bfcl_all": (None, None),
}


class BFCLDataConfig(StrictModel):
    """T3RL's id split of the multi-turn categories shipped inside the bfcl-eval package."""

    # BFCL multi-turn categories whose entries the splits hold (each split: its ids in every one).
    categories: list[Category] = Field(default_factory=lambda: list(MULTI_TURN_CATEGORIES), min_length=1)
    # Seed of the shuffle of entry ids 0..num_ids-1 (T3RL: random.seed(42)).
    seed: Seed = 42
    # Ids 0..num_ids-1 are split; at most the 200 entries each category ships (bfcl-eval, BFCL v3 and v4: an
    # id past them is a task of no category). The package installed is read too (prepare_refusals).
    num_ids: int = Field(SHIPPED_ENTRIES, ge=1, le=SHIPPED_ENTRIES)
    train_ratio: float = Field(0.5, gt=0, lt=1)
    val_ratio: float = Field(0.125, ge=0, lt=1)
    # Reasoning delimiters named in the system prompt (e.g. ["<thinking>", "</thinking>"] for
    # Qwen3-Instruct-2507, matching `parsers.think_tags`); None = ask for reasoning without naming tags.
    think_tags: tuple[ChatTag, ChatTag] | None = None

    @field_validator("val_ratio")
    @classmethod
    def _ratios_leave_a_test_split(cls, value: float, info: ValidationInfo) -> float:
        train = info.data.get("train_ratio", 0.0)
        if train + value >= 1:
            raise ValueError(
                f"train_ratio {train} + val_ratio {value} must stay below 1 "
                "(the rest of the ids is the test split)"
            )
        return value


def id_split_counts(data: BFCLDataConfig) -> dict[str, int]:
    """How many of the ids 0..num_ids-1 each id split gets (T3RL's cut of the shuffled ids)."""
    train = int(data.num_ids * data.train_ratio)
    val = int(data.num_ids * data.val_ratio)
    return {"train": train, "val": val, "test": data.num_ids - train - val}


class BFCLEnvConfig(EnvConfig):
    """BFCL multi-turn episodes: one model world and one ground-truth world per episode.

    Train mode keeps T3RL's progress semantics (every turn scored, the episode goes on after a failed
    turn); eval mode reproduces the official bfcl-eval verdict. See `t3rl_core.envs.bfcl.env`.
    """

    OUTCOME_FIELDS = frozenset(
        {
            *("task_id", "category", "mode", "turn_scores", "turn_errors", "turns_total", "turns_correct"),
            *("turns_completed", "progress", "accuracy", "format_errors", "tool_call_errors", "tool_calls"),
            *("interactions", "force_terminated", "failure", "turn_rewards", "turn_steps"),
        }
    )

    SIZE_FIELDS = ("data.categories", "data.num_ids", "data.train_ratio", "data.val_ratio")
    # Seconds of CPU time a model's call of a stateless class (bfcl-eval's MathAPI) may use, in a worker
    # process that is killed past it (t3rl_core/envs/bounded_calls.py); None runs them on the event loop.
    PURE_CALL_BUDGET_S: typing.ClassVar[float | None] = 10.0

    name: Literal["bfcl_multi_turn"] = "bfcl_multi_turn"
    # Attempts (tool steps and format errors) per user turn in train mode before the turn is forced on;
    # T3RL's released configs use 20, the official harness's eval limit.
    max_step_limit: int = Field(20, ge=1)
    # Per-turn step limit in eval mode (bfcl-eval's MAXIMUM_STEP_LIMIT); exceeding it fails the entry.
    eval_max_step_limit: int = Field(20, ge=1)
    # Train mode only: an empty-ground-truth turn (miss_func / miss_param) counts as correct only when
    # the model makes no call and asks instead. The official checker (eval mode) skips such turns.
    strict_irrelevance: bool = True
    # Eval mode only: an unparsable model output ends the turn, as bfcl-eval's inference loop does
    # ("failed to decode, proceed to next turn"). False = feed the error back like train mode does.
    eval_invalid_action_ends_turn: bool = True
    # Train mode only: corrective hints after failed calls (t3rl_core.envs.bfcl.augment); eval never.
    augmentation: AugmentationConfig = Field(default_factory=AugmentationConfig)
    data: BFCLDataConfig = Field(default_factory=BFCLDataConfig)

    def split_names(self) -> list[str]:
        """The files (`<name>.jsonl`) the prepare_data stage writes for this env."""
        return list(SPLIT_FILES)

    def demonstration_splits(self) -> frozenset[str]:
        """None: every split holds the tasks' prompts (the gold calls are the checker's, not turns)."""
        return frozenset()

    def prompt_think_tags(self) -> tuple[str, str] | None:
        """The system prompt names data.think_tags."""
        return self.data.think_tags

    def split_sizes(self) -> dict[str, int]:
        """Ids of the split's id splits × the categories it keeps; at most, since a category may ship
        fewer entries than num_ids."""
        ids = id_split_counts(self.data)
        sizes = {}
        for name, (id_splits, category) in SPLIT_FILES.items():
            categories = [c for c in self.data.categories if category in (None, c)]
            sizes[name] = sum(ids[s] for s in id_splits or ids) * len(categories)
        return sizes

    def model_calls_needed(self) -> list[int] | None:
        """One model call per user turn of every entry of the categories (read from bfcl-eval's files)."""
        from t3rl_core.envs.bfcl.shipped import turns_per_entry  # lazy: reads bfcl-eval's data files

        return turns_per_entry(list(self.data.categories))

    def model_calls_bound(self) -> int | None:
        """The ground truth's brackets per entry, less the outer list's (each turn is a list of calls)."""
        from t3rl_core.envs.bfcl.shipped import turns_bound  # lazy: reads bfcl-eval's data files

        return turns_bound(list(self.data.categories))

    def prepare_refusals(self) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
        """Every entry bfcl-eval ships in the categories has an id below num_ids: preparing the data
        refuses an entry outside the id cut (t3rl_core.envs.bfcl.data.build_rows). And no id of the cut is
        past every shipped entry: such an id is a task of no category, so each split would hold fewer
        tasks than its share of the cut (and split_sizes counts), and prepare_data shuffles a list of
        num_ids ids in memory (10**12 of them do not fit)."""
        from t3rl_core.envs.bfcl.shipped import entry_id_bound  # lazy: reads bfcl-eval's data files

        found = entry_id_bound(list(self.data.categories))
        if found is None or self.data.num_ids == found[0]:
            return []
        bound, category = found
        reads = ("data.num_ids", "data.categories")  # the cut and the entries it is held to
        if self.data.num_ids > bound:
            why = (
                f"data.num_ids {counted(self.data.num_ids, 'cut')} ids past bfcl-eval's last entry (id "
                f"{bound - 1} in {', '.join(self.data.categories)}): {self.data.num_ids - bound} ids of the "
                "cut are tasks of no category, and the splits hold fewer tasks than their ratios say"
            )
            return [("data.num_ids", why, str(bound), reads)]
        why = (
            f"data.num_ids {counted(self.data.num_ids, 'leaf', 'leaves')} bfcl-eval's {category} entries up "
            f"to id {bound - 1} in no split: prepare_data stops at the first of them"
        )
        return [("data.num_ids", why, str(bound), reads)]

    def eval_categories(self) -> list[str]:
        """Rows carry their BFCL category as data_source."""
        return list(self.data.categories)

    def split_parts(self) -> dict[str, frozenset[str]]:
        """Parts are (id split, category): bfcl_unseen is val and test of every category."""
        parts = {}
        for name, (id_splits, category) in SPLIT_FILES.items():
            categories = [category] if category else self.data.categories
            parts[name] = frozenset(
                f"{s}/{c}" for s in id_splits or ("train", "val", "test") for c in categories
            )
        return parts
