"""A stand-in for slime's `Sample` (slime/utils/types.py), so hooks can be tested on machines without
slime: the same field names, defaults, nested types and the methods slime's rollout code calls on the
samples the hooks return (`tests/hooks/test_slime_sample_standin.py` compares the names with a record
of slime's class at the pinned commit, `tests/fixtures/slime_sample/sample_fields.json`).

Not here: `append_response_tokens`, which only slime's own generate function calls on its samples."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole > 0 else 0.0


class _Counters:
    """slime's counter records (SpecInfo, PrefixCacheInfo): each field sums one SGLang meta_info entry
    over a sample's model calls (`_META`: field → entry); to_dict/from_dict carry every field."""

    _META: ClassVar[dict[str, str]]

    def add(self, meta_info: dict) -> None:
        for name, key in self._META.items():
            setattr(self, name, getattr(self, name) + meta_info.get(key, 0))

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: dict) -> Any:
        return cls(**{f.name: data.get(f.name, 0) for f in fields(cls)})  # type: ignore[arg-type]


@dataclass
class Sample:
    group_index: int | None = None
    index: int | None = None
    rollout_id: int | None = None
    prompt: str | list[dict[str, Any]] = ""
    tokens: list[int] = field(default_factory=list)
    multimodal_inputs: dict[str, Any] | None = None
    multimodal_train_inputs: dict[str, Any] | None = None
    multimodal_train_input_id: str | None = None
    apply_chat_template_kwargs: dict = field(default_factory=dict)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    weight_versions: list[str] = field(default_factory=list)
    rollout_log_probs: list[float] | None = None
    rollout_top_p_token_ids: list[int] | None = None
    rollout_top_p_token_offsets: list[int] | None = None
    rollout_routed_experts: list[list[int]] | None = None
    remove_sample: bool = False
    teacher_log_probs: list[float] | None = None

    class Status(Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)
    generate_function_path: str | None = None
    custom_rm_path: str | None = None
    train_metadata: dict | None = None
    session_id: str | None = None
    non_generation_time: float = 0.0

    @dataclass
    class SpecInfo(_Counters):
        """Speculative-decoding counters."""

        _META: ClassVar[dict[str, str]] = {
            "spec_accept_token_num": "spec_accept_token_num",
            "spec_draft_token_num": "spec_draft_token_num",
            "spec_verify_ct": "spec_verify_ct",
            "completion_token_num": "completion_tokens",
        }

        spec_accept_token_num: int = 0
        spec_draft_token_num: int = 0
        spec_verify_ct: int = 0
        completion_token_num: int = 0

        @property
        def spec_accept_rate(self) -> float:
            return _ratio(self.spec_accept_token_num, self.spec_draft_token_num)

        @property
        def spec_accept_length(self) -> float:
            return _ratio(self.completion_token_num, self.spec_verify_ct)

    spec_info: SpecInfo = field(default_factory=SpecInfo)

    @dataclass
    class PrefixCacheInfo(_Counters):
        """Prompt tokens SGLang served from its prefix cache, of all prompt tokens."""

        _META: ClassVar[dict[str, str]] = {
            "cached_tokens": "cached_tokens",
            "total_prompt_tokens": "prompt_tokens",
        }

        cached_tokens: int = 0
        total_prompt_tokens: int = 0

        @property
        def prefix_cache_hit_rate(self) -> float:
            return _ratio(self.cached_tokens, self.total_prompt_tokens)

    prefix_cache_info: PrefixCacheInfo = field(default_factory=PrefixCacheInfo)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as slime's debug dump (`--save-debug-rollout-data`) saves a sample; attributes
        set beyond the fields travel too."""
        value = dict(vars(self))
        value["status"] = self.status.value
        value["spec_info"] = self.spec_info.to_dict()
        value["prefix_cache_info"] = self.prefix_cache_info.to_dict()
        return value

    @staticmethod
    def from_dict(data: dict) -> Sample:
        """The sample `to_dict` wrote (slime's `--load-debug-rollout-data`)."""
        data = dict(data)
        data["status"] = Sample.Status(data["status"])
        data["spec_info"] = Sample.SpecInfo.from_dict(data.get("spec_info", {}))
        data["prefix_cache_info"] = Sample.PrefixCacheInfo.from_dict(data.get("prefix_cache_info", {}))
        names = {f.name for f in fields(Sample)}
        sample = Sample(**{key: value for key, value in data.items() if key in names})
        for key, value in data.items():
            if key not in names:
                setattr(sample, key, value)
        return sample

    def get_reward_value(self, args: Any) -> Any:
        """The scalar reward slime trains on: the reward, or its `--reward-key` entry."""
        key = args.reward_key
        return self.reward[key] if key else self.reward

    @property
    def effective_response_length(self) -> int:
        """Response tokens trained on (all of them without a loss mask)."""
        return sum(self.loss_mask) if self.loss_mask is not None else self.response_length
