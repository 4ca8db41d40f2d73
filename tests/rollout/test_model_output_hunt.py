"""The model-output hunt (tests/support/output_hunt.py): every model option shipped in conf/model/, its
declared family and parsers, and adversarial assistant outputs through the episode loop. Whatever the
model writes: no exception escapes, the masked-in tokens are exactly the engine's, a malformed call is
a bounded error naming the problem (or the episode ends with its reason), the reward is finite."""

from __future__ import annotations

import dataclasses
import math
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.envs.format_repair import FormatRepair
from t3rl_core.parsers.render import FORMATS
from t3rl_core.parsers.tool_calls import MAX_ERROR_CHARS, ToolCallActionParser
from t3rl_core.rewards.base import RewardResult
from t3rl_core.types import AnswerAction, InvalidAction, ToolCall, ToolCallAction
from tests.rollout.fakes import TOOLS
from tests.support.output_hunt import (
    ERROR_LIMIT,
    HUGE,
    MODEL_DIR,
    Hunt,
    ModelOption,
    Output,
    chat_of,
    hunted_options,
    judge,
    judge_repaired,
    play,
    shipped_models,
)

SHIPPED = {option.name: option for option in shipped_models()}
OPTIONS = {option.name: option for option in hunted_options()}
# Options the rollout reads alike (all but the name equal: family, chat template, parsers) play the same
# bytes through the same code, so the hunts play each such reading once, under its first option's name
# (qwen3_4b for qwen3_8b, qwen2_5_3b_instruct for qwen2_5_7b_instruct); an option whose template or
# parsers differ from every other's is a reading of its own, hunted under its name.
READINGS = {
    option.name: option
    for option in {dataclasses.replace(o, name=""): o for o in reversed(OPTIONS.values())}.values()
}


@cache
def _chat(option: ModelOption) -> ChatFormat:
    return chat_of(option)


def test_every_option_in_conf_is_hunted_with_a_format_the_hunt_can_write() -> None:
    assert sorted(SHIPPED) == sorted(path.stem for path in MODEL_DIR.glob("*.yaml"))
    # and every declared family with its own parsers, shipped in an option or not
    assert {(f.name, f.tool_call_parser) for f in FAMILIES.values()} <= {
        (o.family, o.tool_call_parser) for o in OPTIONS.values()
    }
    for option in OPTIONS.values():
        assert option.family in FAMILIES, option
        assert option.tool_call_parser in FORMATS, option
    # the defaults of an option are read: the plain 2507 option is the 2507 one without reasoning tags
    plain, base = OPTIONS["qwen3_4b_instruct_2507_plain"], OPTIONS["qwen3_4b_instruct_2507"]
    assert (plain.family, plain.tool_call_parser) == (base.family, base.tool_call_parser)
    assert base.think_tags and plain.think_tags is None and plain.reasoning_parser is None


def test_the_hunt_plays_each_kind_of_output() -> None:
    option = OPTIONS["qwen3_4b_instruct_2507"]
    cases = {output.case for output in Hunt(option, _chat(option)).outputs()}
    kinds = {
        "cut_mid_json", "cut_mid_tag", "cut_mid_utf8", "two_calls_glued", "call_in_code_block",
        "call_in_reasoning", "opener_only", "nested_tags", "arguments_a_string", "arguments_a_list",
        "arguments_null", "tool_not_offered", "enormous_argument", "only_whitespace", "only_end_of_turn",
        "stop_tokens_repeated_alone", "invalid_json_escapes", "length_mid_call", "cut_mid_utf8_at_length",
        "tokens_of_llama3_around_a_call",
    }  # fmt: skip
    assert kinds <= cases


@pytest.mark.parametrize("name", sorted(READINGS))
def test_every_adversarial_output_keeps_the_contract(name: str) -> None:
    option = READINGS[name]
    chat = _chat(option)
    broken = {}
    for output in Hunt(option, chat).outputs():
        problems = judge(play(option, chat, [output]), output, chat)
        if problems:
            broken[output.case] = problems
    assert broken == {}


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_adversarial_turns_in_a_row_keep_the_contract(data: st.DataObject) -> None:
    """Several adversarial turns in one episode: each error observation and delta after each."""
    option = READINGS[data.draw(st.sampled_from(sorted(READINGS)))]
    chat = _chat(option)
    outputs = [o for o in Hunt(option, chat).outputs() if o.expect != "cut" and "enormous" not in o.case]
    script = data.draw(st.lists(st.sampled_from(outputs), min_size=2, max_size=4))
    played = play(option, chat, script)
    assert judge(played, Output("several", (), expect="any"), chat) == []
    assert played.result.num_model_calls >= min(len(script), len(played.actions))


# ---------------------------------------------------------------------------------------- the judge


def _good_episode() -> tuple[ModelOption, ChatFormat, Output]:
    option = OPTIONS["qwen3_4b"]
    chat = _chat(option)
    hunt = Hunt(option, chat)
    return option, chat, Output("tool_not_offered", hunt.ids(hunt.call(ToolCall("rm", {}))), expect="invalid")


def test_the_judge_finds_each_broken_rule() -> None:
    """Each rule of the contract, broken on a played episode that keeps it, is reported."""
    option, chat, output = _good_episode()
    played = play(option, chat, [output])
    assert judge(played, output, chat) == []
    result = played.result

    def broken(**change: object) -> list[str]:
        fields = {k: v for k, v in change.items() if k in {f.name for f in dataclasses.fields(result)}}
        copy = dataclasses.replace(played, result=dataclasses.replace(result, **fields))
        for key in ("reward", "actions"):
            if key in change:
                copy = dataclasses.replace(copy, **{key: change[key]})
        return judge(copy, output, chat)

    first = result.loss_mask.index(1)
    retokenized = list(result.response_ids)
    retokenized[first] = (retokenized[first] + 1) % len(chat.tokenizer)
    assert broken(response_ids=retokenized)  # a model token that is not the engine's
    assert broken(loss_mask=[1] * len(result.loss_mask))  # an observation trained on
    assert broken(log_probs=[-0.25] * len(result.log_probs))  # an observation with a log-prob
    assert broken(status="failed")
    assert broken(reward=RewardResult(math.nan))
    long_error = InvalidAction(error="Invalid output format: " + "x" * ERROR_LIMIT, text="")
    assert broken(actions=[long_error])
    assert broken(actions=[InvalidAction(error="", text="")])
    assert broken(actions=[AnswerAction(text="")])  # a malformed call read as an answer
    listed = ToolCallAction(calls=(ToolCall("add", [1, 2]),), text="")  # type: ignore[arg-type]
    assert broken(actions=[listed])
    assert broken(actions=[ToolCallAction(calls=(ToolCall("rm", {}),), text="")])


@pytest.mark.parametrize("keep_in_history", [False, True])
def test_a_repaired_turn_is_rewound_or_kept_untrained_in_every_option(keep_in_history: bool) -> None:
    """A call of a tool not offered, repaired by a good call: one repair, the failed generation
    trained on nowhere; and the repair judge finds a trained token that is not the engine's."""
    repair = FormatRepair(1, 0.0, "FORMAT ERROR.", keep_in_history, train_on_repaired=True)
    for option in OPTIONS.values():
        chat = _chat(option)
        hunt = Hunt(option, chat)
        bad = Output("tool_not_offered", hunt.ids(hunt.reply(hunt.call(ToolCall("rm", {})))))
        good = Output("good", hunt.ids(hunt.reply(hunt.good())))
        played = play(option, chat, [bad, good], repair)
        assert judge_repaired(played) == [], option.name
        result = played.result
        assert (result.status, result.format_repairs) == ("completed", 1), (option.name, result.error)
        failed = list(bad.ids)
        ids, n = result.response_ids, len(failed)
        kept = any(ids[i : i + n] == failed for i in range(len(ids) - n + 1))
        assert kept == keep_in_history, option.name
        trained = [i for i, m in enumerate(result.loss_mask) if m == 1]
        changed = list(result.response_ids)
        changed[trained[0]] = (changed[trained[0]] + 1) % len(chat.tokenizer)
        mutated = dataclasses.replace(played, result=dataclasses.replace(result, response_ids=changed))
        assert judge_repaired(mutated), option.name


def test_the_parsers_bound_is_within_the_hunts() -> None:
    assert MAX_ERROR_CHARS <= ERROR_LIMIT


# ------------------------------------------------------------------ the rules the hunt made (product)


def _parser(option: ModelOption) -> ToolCallActionParser:
    return ToolCallActionParser(option.parsers(), TOOLS)


@pytest.mark.parametrize("name", sorted(SHIPPED))
@pytest.mark.parametrize("arguments", ['"a=1, b=2"', "[1, 2]", "null", "3", "true"])
def test_arguments_that_are_no_object_are_refused_in_every_format(name: str, arguments: str) -> None:
    """DeepSeek's detector read `null` as no arguments ({}), a call the model never wrote; GLM-4-0414's
    read `add\\n[1, 2]` as an answer. Every format now refuses it as JSON formats do."""
    option = OPTIONS[name]
    hunt = Hunt(option, _chat(option))
    text = hunt._with_arguments(arguments)
    assert text is not None, "every shipped format writes its arguments as a JSON object"
    action = _parser(option).parse(hunt.reply(text))
    assert isinstance(action, InvalidAction), action
    assert "must be a" in action.error and "object" in action.error


@pytest.mark.parametrize("text", ["add\nIt adds two numbers.", "add\n", "echo\n{broken", "Sure\n[1, 2]"])
def test_glm_text_after_a_name_stays_text_unless_it_is_one_json_value(text: str) -> None:
    action = _parser(OPTIONS["glm4_9b"]).parse(text)
    assert isinstance(action, AnswerAction) or "must be a JSON object" not in action.error


@pytest.mark.parametrize("name", sorted(OPTIONS))
@given(size=st.integers(1, 3 * HUGE), piece=st.sampled_from(["n", "語", "\\u0041", "🙂"]))
@settings(max_examples=6, deadline=None)
def test_an_error_never_quotes_the_models_text_whole(name: str, size: int, piece: str) -> None:
    """A name or a key written twice of any length: the error observation stays bounded and says how
    long the text was."""
    option = OPTIONS[name]
    hunt = Hunt(option, _chat(option))
    word = (piece * size)[:size]
    for text in (hunt.call(ToolCall(word, {})), hunt._key_twice(word)):
        action = _parser(option).parse(hunt.reply(text))
        assert isinstance(action, InvalidAction), action
        assert len(action.error) <= MAX_ERROR_CHARS


@settings(max_examples=16, deadline=None)
@given(data=st.data())
def test_adversarial_turns_under_format_repair_keep_the_contract(data: st.DataObject) -> None:
    """The format-repair protocol on adversarial turns (the retry malformed too, cut at the token
    limit, or good): the trained tokens are whole engine generations, never re-tokenized, and the
    episode ends completed or with its reason."""
    option = READINGS[data.draw(st.sampled_from(sorted(READINGS)))]
    chat = _chat(option)
    outputs = [o for o in Hunt(option, chat).outputs() if "enormous" not in o.case]
    script = data.draw(st.lists(st.sampled_from(outputs), min_size=1, max_size=3))
    repair = FormatRepair(
        attempts=data.draw(st.integers(1, 2)),
        temperature=0.0,
        message="FORMAT ERROR. Write one call in the required format.",
        keep_in_history=data.draw(st.booleans()),
        train_on_repaired=data.draw(st.booleans()),
    )
    played = play(option, chat, script, repair)
    assert judge_repaired(played) == []
