"""ToolRL's rule reward (rlla): format + tool-call correctness (+ optional length), every variant a field.

Re-implements the published formulas (ToolRL commit 8cee13e, `verl/utils/reward_score/rlla.py`) with
the environment-variable switches turned into typed config fields. The step-dependent variants read
the training step from `RewardInput.step` (slime's rollout id, from 0) plus `step_offset` (ToolRL
counts its first training step as 1).

- format: a regex chosen by what the ground truth contains, matched as `re.search(…, re.DOTALL)` does
  (no MULTILINE: `^` is the start of the text, `$` its end or just before a final newline) but in
  linear time (t3rl_core.rewards.gapped), plus tag-count conditions.
- correctness: 0 when the ground truth has no `<tool_call>`; the calls are JSON lines between the
  first `<tool_call>` and the following `</tool_call>`; any failure to read or compare the predicted
  calls scores the minimum; an exact list match the maximum; otherwise
  S = match(names) + Σ over GT calls (in GT order) of the best unused same-name prediction's
  match(keys) + #equal values (kept only when > 0), scaled as (max − min)·S/S_max + min with
  S_max = 1 + Σ (1 + |params|).
- length: round(words of the thinking / L, 2) capped at 1, L = 512 or the scheduled L.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import model_validator

from t3rl_core import outside_json
from t3rl_core.config import RewardConfig
from t3rl_core.fields import AtMost, NonNegativeInt, PositiveInt
from t3rl_core.finite import as_score
from t3rl_core.rewards.base import Reward, RewardBound, RewardInput, RewardResult, task_named
from t3rl_core.rewards.gapped import GappedPattern

# The assistant turn of each chat format: text after the last header, up to the end-of-turn token.
_TURN_DELIMITERS = {
    "qwen": ("<|im_start|>assistant", "<|im_end|>"),
    "llama": ("<|start_header_id|>assistant<|end_header_id|>", "<|eot_id|>"),
}

_FORMAT_PATTERNS: dict[tuple[bool, bool], tuple[GappedPattern, tuple[str, ...]]] = {
    # (GT has <tool_call>, GT has <response>) → (pattern, tags that must occur exactly once)
    (False, True): (
        GappedPattern(r"^<think>.*?</think>\n<response>.*?</response>$"),
        ("<response>", "</response>"),
    ),
    (True, False): (
        GappedPattern(r"^<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>$"),
        ("<tool_call>", "</tool_call>"),
    ),
    (True, True): (
        GappedPattern(r"^<think>.*?</think>\n<tool_call>\n.*?\n</tool_call>\n<response>.*?</response>$"),
        ("<tool_call>", "</tool_call>", "<response>", "</response>"),
    ),
    (False, False): (GappedPattern(r"^<think>.*?</think>$"), ()),
}

# Scheduled length target: L = 384 at step 0 → 640 at step 105, not clamped afterwards.
_LENGTH_START, _LENGTH_END, _LENGTH_STEPS = 384, 640, 105
# Scheduled reward ranges reach their final values at step 150.
_SCHEDULE_STEPS = 150
# The two-stage variant switches at step 30.
_STAGE_SWITCH_STEP = 30


class ToolRLRewardConfig(RewardConfig):
    """ToolRL's reward; the defaults are the published GRPO run (every variant off)."""

    NEEDS_OUTCOME = frozenset({"response", "ground_truth"})
    READS_FORMAT = "toolrl"  # ToolRLEnvConfig.ACTION_FORMAT: gold tool calls, `<tool_call>` lines

    name: Literal["toolrl"] = "toolrl"
    # Format reward range (R_fmt is max when the format matches, else min).
    format_max: RewardBound = 1.0
    format_min: Annotated[RewardBound, AtMost("format_max")] = 0.0
    # Correctness reward range; ToolRL's default [−3, 3].
    correctness_max: RewardBound = 3.0
    correctness_min: Annotated[RewardBound, AtMost("correctness_max")] = -3.0
    # CORRECTMAX1: correctness range [−1, 1] (leave correctness_max/min at their defaults).
    correct_max1: bool = False
    # MAX1STEP30MAX3: before step 30 the correctness range is divided by 3; from step 30 on the format
    # range is halved.
    max1_step30_max3: bool = False
    # SCHEDULEREWARD: format range from [−2, 2] towards [min, max]; correctness from [−2, 2] towards
    # [min, max], linearly over 150 steps, clamped at the configured range.
    schedule_reward: bool = False
    # REFINEDREWARD: list similarity is 1 for identical lists and 0 otherwise (no partial credit).
    refined: bool = False
    # INTERMEDIATEREWARD: a GT call scores 1 only if an unused same-name prediction equals it exactly.
    intermediate: bool = False
    # COARSEREWARD: correctness is max for an exact match of all calls, else min.
    coarse: bool = False
    # WITHLENGTH: add R_len = min(1, round(thinking words / L, 2)) scaled to [length_min, length_max].
    with_length: bool = False
    # SCHEDULELENGTH: L = (640 − 384)·step/105 + 384 instead of length_target_words.
    schedule_length: bool = False
    length_target_words: PositiveInt = 512
    length_max: RewardBound = 1.0
    length_min: Annotated[RewardBound, AtMost("length_max")] = 0.0
    # Chat format whose assistant-turn delimiters cut the prediction out of the decoded text.
    model_style: Literal["qwen", "llama"] = "qwen"
    # ToolRL's step t = RewardInput.step + step_offset: slime's first rollout is 0, ToolRL's first
    # training step is 1 (its step 0 is the validation pass before training).
    step_offset: NonNegativeInt = 1

    def cuts_at(self) -> tuple[str, tuple[str, ...]]:
        """model_style's control tokens: the assistant header's and the turn end."""
        header, end = _TURN_DELIMITERS[self.model_style]
        return "model_style", (*re.findall(r"<\|[^|]+\|>", header), end)

    def constant(self) -> tuple[tuple[str, ...], float] | None:
        """Each part's range a single point, with no schedule moving it: R is their sum for every answer."""
        if self.schedule_reward or self.max1_step30_max3 or self.correct_max1:
            return None
        parts = [("format_max", "format_min"), ("correctness_max", "correctness_min")]
        parts += [("length_max", "length_min")] if self.with_length else []
        if any(getattr(self, high) != getattr(self, low) for high, low in parts):
            return None
        return tuple(f for part in parts for f in part), sum(getattr(self, high) for high, _ in parts)

    @model_validator(mode="after")
    def _no_dead_switches(self) -> ToolRLRewardConfig:
        if self.correct_max1 and (self.correctness_max, self.correctness_min) != (3.0, -3.0):
            raise ValueError("correct_max1 sets the correctness range to [-1, 1]; drop correctness_max/min")
        if self.schedule_length and not self.with_length:
            raise ValueError("schedule_length changes the length reward, which needs with_length: true")
        if self.coarse and (self.refined or self.intermediate):
            raise ValueError("coarse scores exact matches only; refined/intermediate would have no effect")
        return self


class ToolRLReward(Reward):
    """R = R_fmt + R_corr (+ R_len); metrics: format, correctness, length, total, and accuracy (1 when
    format and correctness are both at their maximum, the eval's success criterion)."""

    def __init__(self, config: ToolRLRewardConfig) -> None:
        self.config = config

    def __call__(self, inp: RewardInput) -> RewardResult:
        try:
            response, ground_truth = inp.outcome["response"], inp.outcome["ground_truth"]
        except KeyError as missing:
            raise KeyError(f"the toolrl reward needs outcome[{missing}] (env toolrl_single_turn)") from None
        prediction = self.extract_prediction(str(response))
        step = inp.step + self.config.step_offset
        fmt = self.format_score(prediction, ground_truth, step)
        correctness = self.correctness_score(prediction, ground_truth, step)
        length = self.length_score(prediction, step) if self.config.with_length else 0.0
        # Each part is a score its rule gave: one that is none (None, NaN) is named with its task, never
        # summed into a total (None raised a TypeError naming nothing; NaN made the total NaN).
        for name, part in (("format", fmt), ("correctness", correctness), ("length", length)):
            as_score(part, f"the toolrl {name} score{task_named(inp)}")
        total = fmt + correctness + length
        # Fully right by ToolRL's own measure: the format and the correctness maxima (length aside).
        exact = fmt == self.format_range(step)[0] and (
            "<tool_call>" not in ground_truth or correctness == self.correctness_range(step)[0]
        )
        metrics = {"format": fmt, "correctness": correctness, "length": length, "total": total}
        return RewardResult(value=total, metrics={**metrics, "accuracy": float(exact)})

    def bounds(self, inp: RewardInput) -> tuple[float, float]:
        """R_fmt + R_corr (+ R_len) at the episode's step: each part within its range (R_corr 0 when the
        ground truth has no call)."""
        step = inp.step + self.config.step_offset
        parts = [self.format_range(step)]
        if "<tool_call>" in str(inp.outcome.get("ground_truth", "")):
            parts.append(self.correctness_range(step))
        if self.config.with_length:
            parts.append((self.config.length_max, self.config.length_min))
        return sum(min(part) for part in parts), sum(max(part) for part in parts)

    def extract_prediction(self, text: str) -> str:
        header, end = _TURN_DELIMITERS[self.config.model_style]
        return text.split(header)[-1].split(end)[0].strip()

    # ----------------------------------------------------------------------------------- format

    def format_range(self, step: int) -> tuple[float, float]:
        c = self.config
        hi, lo = c.format_max, c.format_min
        if c.max1_step30_max3 and step >= _STAGE_SWITCH_STEP:
            hi, lo = hi / 2, lo / 2
        if c.schedule_reward:
            hi = max(1.0, 2 - (2 - hi) * step / _SCHEDULE_STEPS)
            lo = min(-1.0, -2 + (2 + lo) * step / _SCHEDULE_STEPS)
        return hi, lo

    def format_score(self, prediction: str, ground_truth: str, step: int) -> float:
        hi, lo = self.format_range(step)
        pattern, single_tags = _FORMAT_PATTERNS["<tool_call>" in ground_truth, "<response>" in ground_truth]
        ok = pattern.search(prediction) and all(prediction.count(t) == 1 for t in single_tags)
        return hi if ok else lo

    # ------------------------------------------------------------------------------ correctness

    def correctness_range(self, step: int) -> tuple[float, float]:
        c = self.config
        hi, lo = (1.0, -1.0) if c.correct_max1 else (c.correctness_max, c.correctness_min)
        if c.max1_step30_max3 and step < _STAGE_SWITCH_STEP:
            hi, lo = hi / 3, lo / 3
        if c.schedule_reward:
            hi = min(3.0, (hi - 2) * step / _SCHEDULE_STEPS + 2)
            lo = max(-3.0, (lo + 2) * step / _SCHEDULE_STEPS - 2)
        return hi, lo

    def correctness_score(self, prediction: str, ground_truth: str, step: int) -> float:
        if "<tool_call>" not in ground_truth:
            return 0.0
        hi, lo = self.correctness_range(step)
        try:
            gt_calls = _call_lines(ground_truth)
        except ValueError as err:
            raise ValueError(f"ground truth tool_call block is not JSON lines: {ground_truth!r}") from err
        if "<tool_call>" not in prediction or "</tool_call>" not in prediction:
            return lo
        try:
            return self._score_calls(gt_calls, _call_lines(prediction), hi, lo)
        except Exception:
            # The published reward scores any failure to read or compare the prediction as the minimum
            # (non-JSON lines, a call without "name", non-dict "parameters" on a GT-named call, ...).
            return lo

    def _score_calls(self, gt: list[Any], pd: list[Any], hi: float, lo: float) -> float:
        if gt == pd:
            return hi
        if self.config.coarse:
            return lo
        intermediate = self.config.intermediate
        score = self.match_score([c["name"] for c in gt], [c["name"] for c in pd])
        max_score = 1.0
        used: set[int] = set()
        for g in gt:
            name, params = g["name"], g["parameters"]
            max_score += 1.0 if intermediate else 1.0 + len(params)
            best_index, best = -1, 0.0
            for i, p in enumerate(pd):
                if i in used or p["name"] != name:
                    continue
                if intermediate:
                    if g == p:
                        best_index, best = i, 1.0
                        break
                    continue
                p_params = p["parameters"]
                candidate = self.match_score(list(params.keys()), list(p_params.keys())) + sum(
                    1.0 for k, v in params.items() if k in p_params and p_params[k] == v
                )
                if candidate > best:
                    best_index, best = i, candidate
            if best_index >= 0:
                used.add(best_index)
                score += best
        return (hi - lo) * score / max_score + lo

    def match_score(self, a: list[Any], b: list[Any]) -> float:
        """1 for equal lists (order-sensitive); else the multiset Jaccard |a ∩ b| / |a ∪ b| (0 if refined)."""
        if a == b:
            return 1.0
        if self.config.refined or not a or not b:
            return 0.0
        ca, cb = Counter(a), Counter(b)
        common = sum(min(ca[k], cb[k]) for k in ca.keys() & cb.keys())
        union = len(a) + len(b) - common
        return common / union if union > 0 else 0.0

    # ----------------------------------------------------------------------------------- length

    def length_target(self, step: int) -> float:
        if self.config.schedule_length:
            return (_LENGTH_END - _LENGTH_START) * step / _LENGTH_STEPS + _LENGTH_START
        return float(self.config.length_target_words)

    def length_score(self, prediction: str, step: int) -> float:
        c = self.config
        if "<think>" not in prediction or "</think>" not in prediction:
            return c.length_min
        thinking = prediction.split("<think>")[-1].split("</think>")[0].strip()
        ratio = min(1.0, round(len(thinking.split()) / self.length_target(step), 2))
        return ratio * (c.length_max - c.length_min) + c.length_min


def _call_lines(text: str) -> list[Any]:
    """The JSON lines between the first <tool_call> and the next </tool_call> (ToolRL's split rules)."""
    block = text.split("<tool_call>")[1].split("</tool_call>")[0].strip()
    return [outside_json.loads(line, "a tool call line") for line in block.split("\n")]
