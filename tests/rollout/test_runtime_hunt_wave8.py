"""Runtime hunt, wave eight: what wave seven left (CRLF and tabs inside a call block, call-shaped text
inside a tagless answer) and the kinds found after (docs/explanation/tito.md, "Hunted, wave eight")."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.hooks import slime as hooks
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.rollout.runner import InvalidTask, task_parts
from t3rl_core.types import Action, AnswerAction, InvalidAction, ToolCall, ToolCallAction, Transition
from tests.hooks.slime_fakes import toy_sample
from tests.rollout.fakes import TOOLS, ScriptedEngine, ToyEnv, family_parser, play

_ADD = ToolCall("add", {"a": 1, "b": 2})


@pytest.fixture(scope="module")
def parsers() -> dict[str, ToolCallActionParser]:
    return {
        name: ToolCallActionParser(ParsersConfig(tool_call_parser=name, reasoning_parser=None), TOOLS)
        for name in sorted(FORMATS)
    }


# ------------------------------------------------------------ kind 1: the layout inside a call block

# The formats whose detector reads the template's exact whitespace around its tags (the others read a
# CRLF call as it is: hermes, Qwen3-Coder).
_LAYOUT_FORMATS = ("deepseekv3", "glm", "glm45", "qwen", "qwen25")


@pytest.mark.parametrize("name", _LAYOUT_FORMATS)
@pytest.mark.parametrize(("label", "old", "new"), [("crlf", "\n", "\r\n"), ("space", "\n", " \n")])
def test_a_call_in_other_line_breaks_names_them(
    parsers: dict[str, ToolCallActionParser], name: str, label: str, old: str, new: str
) -> None:
    """`<tool_call>\\r\\n{…}\\r\\n</tool_call>` (and GLM-4.5's, DeepSeek's fences): SGLang's detector drops
    it, and the model was told "1 of 1 tool call(s) could not be parsed" beside an example it could not
    tell apart. Now the error names each run of whitespace and what the format writes there, and names
    it only when the call written with the format's layout is read (the fix validates)."""
    text = "Adding.\n" + render_calls(name, [_ADD]).replace(old, new)
    action = parsers[name].parse(text)
    assert isinstance(action, InvalidAction), action
    assert "the line breaks around the format's tags are not the format's" in action.error
    assert f"{new!r} " in action.error and f"(the format writes {old!r})" in action.error


@pytest.mark.parametrize("name", ("qwen", "qwen25"))
def test_a_tab_or_no_line_break_inside_a_qwen_call_is_named(
    parsers: dict[str, ToolCallActionParser], name: str
) -> None:
    call = render_calls(name, [_ADD])
    tabbed = parsers[name].parse(call.replace("\n", "\n\t"))
    assert isinstance(tabbed, InvalidAction) and "'\\n\\t' after <tool_call>" in tabbed.error
    glued = parsers[name].parse(call.replace("\n", ""))
    assert (
        isinstance(glued, InvalidAction) and "'' after <tool_call> (the format writes '\\n')" in glued.error
    )


def test_the_formats_layouts_stay_calls(parsers: dict[str, ToolCallActionParser]) -> None:
    """No over-refusal: a call in the template's own layout, or in a tab-indented GLM layout the
    detector reads, is a call; of two calls, only the one in other line breaks is counted and named."""
    for name in _LAYOUT_FORMATS:
        assert isinstance(parsers[name].parse(render_calls(name, [_ADD])), ToolCallAction)
    tabbed = render_calls("glm45", [_ADD]).replace("\n", "\n\t")
    assert isinstance(parsers["glm45"].parse(tabbed), ToolCallAction)
    two = render_calls("qwen25", [_ADD]) + "\n" + render_calls("qwen25", [_ADD]).replace("\n", "\r\n")
    action = parsers["qwen25"].parse(two)
    assert (
        isinstance(action, InvalidAction)
        and "1 of 2 tool call(s) could not be parsed: the line" in action.error
    )


# ------------------------------------------------------------ kind 2: a call after text, tagless formats


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("llama3", 'Sure.\n{"name": "add", "parameters": {"a": 1, "b": 2}}'),
        (
            "llama3",
            'Sure.\n{"name": "add", "parameters": {"a": 1}}; {"name": "echo", "parameters": {"text": "x"}}',
        ),
        ("glm4_0414", 'Sure.\nadd\n{"a": 1, "b": 2}'),
    ],
)
def test_a_call_after_text_in_a_tagless_format_is_a_format_error(
    parsers: dict[str, ToolCallActionParser], name: str, text: str
) -> None:
    """Llama-3 and GLM-4-0414 define a call as the whole turn (segment): `Sure.\\n{call}` was an answer
    holding the call's text, the world ended the turn on it and nothing told the model why its call
    never ran. Declared now: a turn ending, from a line start, with calls of offered functions the
    format reads without error is a call written after text, a format error saying how to write it."""
    action = parsers[name].parse(text)
    assert isinstance(action, InvalidAction), action
    assert "a call written after text" in action.error
    fix = "<|python_tag|>" if name == "llama3" else "<|assistant|>"
    assert fix in action.error
    # The fix it names is read as the call (with the text as its content where the format keeps one).
    before, _, call = text.partition("\n")
    fixed = parsers[name].parse(before + fix + call)
    assert isinstance(fixed, ToolCallAction) and fixed.calls[0] == ToolCall("add", fixed.calls[0].arguments)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("llama3", 'Here is the JSON you asked for:\n{"x": 1}'),
        ("llama3", 'Sure.\n{"name": "add", "parameters": {"a": 1}} is what I would send.'),
        ("llama3", 'Inline {"name": "add", "parameters": {"a": 1}}'),
        ("llama3", 'Sure.\n{"name": "weather", "parameters": {}}'),
        ("glm4_0414", 'Sure.\nadd\n{"a": 1} is the call.'),
        ("glm4_0414", "Sure.\nadd\n[1, 2]"),
        ("glm4_0414", 'The word add\n{"a": 1}'),
    ],
)
def test_answers_quoting_json_stay_answers(
    parsers: dict[str, ToolCallActionParser], name: str, text: str
) -> None:
    """No over-refusal: JSON of no offered function, a call with text after it, or one not on its own
    line is an answer, as before."""
    assert isinstance(parsers[name].parse(text), AnswerAction)


# ------------------------------------------------------------ kind 3: a structured call's arguments


def _few_shot(arguments: Any, wrapped: bool = True) -> dict[str, Any]:
    call = {"name": "add", "arguments": arguments}
    calls = [{"type": "function", "id": "c1", "function": call}] if wrapped else [call]
    return {
        "prompt": [
            {"role": "user", "content": "Add 1 and 2."},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "content": "3", "tool_call_id": "c1"},
            {"role": "user", "content": "Now add 3 and 4."},
        ],
        "metadata": {"tools": TOOLS},
    }


def _played(chat: ChatFormat, row: dict[str, Any]) -> tuple[EpisodeResult, ScriptedEngine]:
    """One episode of `row` answered "Done.", and the engine (its inputs: what the model read)."""
    engine = ScriptedEngine(chat, ["Done."])
    result = asyncio.run(
        run_episode(
            row,
            env=ToyEnv(("q",)),
            engine=engine,
            chat=chat,
            parser=family_parser(chat),
            sampling=SamplingParams(),
            limits=RolloutConfig(max_response_len=64),
        )
    )
    return result, engine


def _prompt_ids(chat: ChatFormat, row: dict[str, Any]) -> list[int]:
    return _played(chat, row)[1].inputs[0]


def test_a_few_shot_calls_json_text_arguments_render_as_its_object(chat: ChatFormat) -> None:
    """Every family: a row's few-shot call in OpenAI's form (arguments as JSON text) renders exactly as
    the same call with an object. Before, GLM-4.5's template wrote no argument of it
    (`<tool_call>add\\n</tool_call>`: the prompt taught a call without arguments), the others the text
    as written."""
    as_object = _prompt_ids(chat, _few_shot({"a": 1, "b": 2}))
    assert _prompt_ids(chat, _few_shot('{"a": 1, "b": 2}')) == as_object
    assert _prompt_ids(chat, _few_shot({"a": 1, "b": 2}, wrapped=False)) == as_object
    assert "<arg_key>a</arg_key>" in chat.decode(as_object) or chat.family.tool_call_parser != "glm45"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [(None, "None"), ("[1, 2]", "'[1, 2]'"), ("add(1, 2)", "'add(1, 2)'"), (..., "none")],
)
def test_a_few_shot_call_without_an_object_is_refused_naming_it(arguments: Any, said: str) -> None:
    """`null` was written `"arguments": null` (a call every t3rl reader refuses from the model: the
    prompt taught it), a call without arguments failed inside the template as t3rl's bug."""
    row = _few_shot(arguments)
    if arguments is ...:
        del row["prompt"][1]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(
        InvalidTask, match=re.escape(f"message 1's tool_calls[0].function.arguments is {said}")
    ):
        task_parts(row)


def test_a_worlds_call_without_an_object_is_the_worlds_failure(qwen_chat: ChatFormat) -> None:
    class Annotating(ToyEnv):
        async def step(self, action: Action) -> Transition:
            call = {"type": "function", "function": {"name": "add", "arguments": "oops"}}
            return Transition(messages=[{"role": "assistant", "content": "", "tool_calls": [call]}])

    result = play(
        qwen_chat, Annotating(), ScriptedEngine(qwen_chat, ["Hi."]), RolloutConfig(max_response_len=64)
    )
    assert result.failure is not None and (result.failure.kind, result.failure.error_type) == (
        "env",
        "InvalidMessage",
    )
    assert "message 0's tool_calls[0].function.arguments is 'oops'" in result.failure.message


# ------------------------------------------------------------ kind 4: names a reader cannot tell apart


def _offering(*names: str) -> dict[str, Any]:
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in names
    ]
    return {"prompt": [{"role": "user", "content": "Hi."}], "metadata": {"tools": tools}}


@pytest.mark.parametrize(
    ("first", "second"), [("café", "cafe\u0301"), ("add", "ad\u200bd"), ("add", "ａｄｄ"), ("ﬁnd", "find")]
)
def test_two_offered_names_that_read_as_one_are_refused(first: str, second: str) -> None:
    """A row offering `café` composed and decomposed (or `add` and `ad`+ZWSP+`d`): both were offered,
    the model read two tools it cannot tell apart, wrote either by chance, and wave five's hint for a
    misspelt name ('differs only in … Unicode normalization') could name either. Declared: the names a
    row offers are distinct as a reader sees them (NFKC, no format characters)."""
    with pytest.raises(InvalidTask, match="one name as a reader sees it") as refused:
        task_parts(_offering(first, second))
    assert ascii(second) in str(refused.value)


def test_names_that_differ_in_case_or_letters_are_offered() -> None:
    """No over-refusal: case tells names apart (`Add`, `add`), so do accents (`cafe`, `café`)."""
    for names in (("Add", "add"), ("cafe", "café"), ("añadir", "anadir", "add")):
        assert len(task_parts(_offering(*names))[1]) == len(names)


# ------------------------------------------------------------ kind 5: a prompt's message the template moves


def test_a_prompts_message_after_an_assistant_turn_is_written_there_or_refused(chat: ChatFormat) -> None:
    """Every family: a row whose few-shot history holds a system message after a worked answer. DeepSeek-V3's
    and GLM-4-0414's templates write every system message in the prompt's head, so it was moved before
    the turns it follows, unsaid. Now the episode plays only where the template writes it after the answer,
    and is `env/UnrenderedRole` where it does not (decided by the template's own rendering)."""
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add 1 and 2."},
        {"role": "assistant", "content": "WORKED"},
        {"role": "system", "content": "MIDDLE"},
        {"role": "user", "content": "Now add 3 and 4."},
    ]
    result, engine = _played(chat, {"prompt": messages, "metadata": {"tools": TOOLS}})
    rendered = chat.render(messages, add_generation_prompt=True)
    in_place = rendered.find("WORKED") < rendered.find("MIDDLE")
    if in_place:
        assert result.failure is None and result.status == "completed", result.failure
        assert chat.decode(engine.inputs[0]).find("WORKED") < chat.decode(engine.inputs[0]).find("MIDDLE")
    else:
        assert result.failure is not None and result.failure.error_type == "UnrenderedRole"
        assert "(message 3, after an assistant turn)" in result.failure.message
    # A system message before any answer is the prompt's head, written as before in every family.
    head, _ = _played(chat, {"prompt": [messages[0], messages[3], messages[1]], "metadata": {"tools": TOOLS}})
    assert head.failure is None


# ------------------------------------------------------------ kind 6: content parts instead of text


_PARTS = [{"type": "text", "text": "Add 1"}, {"type": "text", "text": " and 2."}]


def test_content_parts_of_text_are_their_text(qwen_chat: ChatFormat) -> None:
    """OpenAI's content parts failed in every shipped template (`can only concatenate str (not "list")`):
    a row holding them was refused as no chat message, a world's was told to json.dumps its content (the
    model would have read the parts' JSON). Parts of text are their text, concatenated."""
    as_text = {"prompt": [{"role": "user", "content": "Add 1 and 2."}], "metadata": {"tools": TOOLS}}
    as_parts = {"prompt": [{"role": "user", "content": _PARTS}], "metadata": {"tools": TOOLS}}
    task_parts(as_parts)
    assert _prompt_ids(qwen_chat, as_parts) == _prompt_ids(qwen_chat, as_text)

    class Parts(ToyEnv):
        async def step(self, action: Action) -> Transition:
            return Transition(messages=[{"role": "user", "content": list(_PARTS)}], done=True)

    result = play(qwen_chat, Parts(), ScriptedEngine(qwen_chat, ["Hi."]), RolloutConfig(max_response_len=64))
    assert result.failure is None and result.messages[-1]["content"] == "Add 1 and 2."


def test_a_content_part_of_another_type_is_refused_naming_it(qwen_chat: ChatFormat) -> None:
    image = [*_PARTS, {"type": "image_url", "image_url": {"url": "x"}}]
    with pytest.raises(InvalidTask, match="message 0's content part 2 is of type 'image_url', not text"):
        task_parts({"prompt": [{"role": "user", "content": image}], "metadata": {}})

    class Image(ToyEnv):
        async def step(self, action: Action) -> Transition:
            return Transition(messages=[{"role": "tool", "content": image}])

    result = play(qwen_chat, Image(), ScriptedEngine(qwen_chat, ["Hi."]), RolloutConfig(max_response_len=64))
    assert result.failure is not None and result.failure.error_type == "InvalidMessage"
    assert "content part 2 is of type 'image_url'" in result.failure.message
    assert "json.dumps" not in result.failure.message


# ------------------------------------------------------------ kind 7: a call's JSON in another shape


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("qwen25", '<tool_call>\n{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}\n</tool_call>'),
        ("llama3", '{"name": "add", "parameters": "{\\"a\\": 1}"}'),
        ("mistral", '[TOOL_CALLS] [{"name": "add", "arguments": "{\\"a\\": 1}"}]'),
        (
            "deepseekv31",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>add<｜tool▁sep｜>"
            '"{\\"a\\": 1}"<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        ),
    ],
)
def test_arguments_written_as_a_json_string_are_named(
    parsers: dict[str, ToolCallActionParser], name: str, text: str
) -> None:
    """`"arguments": "{\\"a\\": 1}"` (OpenAI's messages keep arguments as text; a model trained on them
    writes it): the error said "must be a JSON object" of what reads as an object. Now it says they
    are a string holding one, and to write the object itself; that fix is read as the call."""
    action = parsers[name].parse(text)
    assert isinstance(action, InvalidAction)
    assert "but they are a string holding one" in action.error and "write the object itself" in action.error
    fixed = text.replace('"{', "{").replace('}"', "}").replace('\\"', '"')
    assert isinstance(parsers[name].parse(fixed), ToolCallAction)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"type": "function", "function": {"name": "add", "arguments": {"a": 1}}}', 'wrapped in "function"'),
        ('[{"name": "add", "arguments": {"a": 1}}]', "not a list"),
        ('{"function": "add", "arguments": {"a": 1}}', 'named under "function"'),
    ],
)
def test_a_call_object_of_another_shape_is_named(
    parsers: dict[str, ToolCallActionParser], text: str, said: str
) -> None:
    """The chat message's wrapped call, a list in one block, the name under "function": each was
    'expected a JSON object with a "name" string', now followed by what was written instead."""
    action = parsers["qwen25"].parse(f"<tool_call>\n{text}\n</tool_call>")
    assert isinstance(action, InvalidAction) and said in action.error
    assert "arguments must be" not in action.error
    other = parsers["qwen25"].parse('<tool_call>\n{"arguments": {"a": 1}}\n</tool_call>')
    assert isinstance(other, InvalidAction) and 'with a "name" string. Write' in other.error


@pytest.mark.parametrize(("text", "between"), [('add{"a": 1}', "''"), ('add {"a": 1}', "' '")])
def test_glm4_0414s_name_glued_to_its_object_is_named(
    parsers: dict[str, ToolCallActionParser], text: str, between: str
) -> None:
    """Kind one in the tagless GLM-4-0414: `add{"a": 1}` (no line break) was an answer holding the call's
    text; wave seven named `\\r\\n` and a blank line only. Now the same error names the separator."""
    action = parsers["glm4_0414"].parse(text)
    assert (
        isinstance(action, InvalidAction)
        and f"separated by {between}: write the name, one newline" in action.error
    )
    assert isinstance(parsers["glm4_0414"].parse('word{"a": 1}'), AnswerAction)


# ------------------------------------------------------------ kind 9: a tool schema of another shape


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        (
            "parameters",
            '{"type": "object"}',
            "parameters of type str, not a JSON Schema object (JSON text must be",
        ),
        ("parameters", [], "parameters of type list, not a JSON Schema object"),
        ("description", 3, "description of type int, not text"),
    ],
)
def test_a_tool_schema_of_another_shape_is_refused_naming_it(key: str, value: Any, said: str) -> None:
    """A row's tool whose parameters are JSON text was played: every template showed the model one
    escaped string for its schema (no template reads it); a description that is no text raised
    SGLang's ValidationError naming no row or tool ('cannot start the episode: ValidationError …')."""
    row = _offering("add", "echo")
    row["metadata"]["tools"][1]["function"][key] = value
    with pytest.raises(InvalidTask, match=re.escape(f"metadata.tools[1] ('echo') has a {said}")):
        task_parts(row)


def test_a_tool_schema_without_parameters_or_description_is_offered() -> None:
    row = _offering("add")
    row["metadata"]["tools"][0]["function"] = {"name": "add", "parameters": None}
    assert task_parts(row)[1] == row["metadata"]["tools"]


# ------------------------------------------------------------ kind 10: a data source named as a hook's metric


def test_a_data_source_named_as_the_hooks_own_metrics_keeps_its_means() -> None:
    """A dataset whose `data_source` is `average` had its means overwritten by the batch's overall ones
    (`rollout/average/reward`); one named `failures` was written among the failure counts. Such a source
    is written as `source_<name>` (and so is one already starting with the mark: no two share a key)."""
    samples = []
    for source, reward in (("average", 1.0), ("failures", 0.5), ("source_average", 0.25), ("bfcl", 0.0)):
        sample = toy_sample(len(samples), group=len(samples), source=source)
        sample.reward = reward
        samples.append(sample)
    metrics = hooks.category_metrics(samples, "rollout")
    assert metrics["rollout/source_average/reward"] == 1.0
    assert metrics["rollout/source_failures/reward"] == 0.5
    assert metrics["rollout/source_source_average/reward"] == 0.25
    assert metrics["rollout/bfcl/reward"] == 0.0
    assert metrics["rollout/average/reward"] == pytest.approx(1.75 / 4)
    assert not any(key.startswith("rollout/failures/") for key in metrics)


# ------------------------------------------------------------ kind 11: an empty stop string from slime


@pytest.mark.parametrize("stop", [[""], ["</tool_call>", ""], [None]])
def test_an_empty_stop_string_from_slime_is_refused(stop: list[Any]) -> None:
    """`--rollout-stop ""` (or an empty entry beside others) reached SGLang, whose stop check finds "" in
    every text: each call of every episode ended after its first token, trained on as the policy's
    turns. A world's empty stop string was refused already (runner._check_stop); slime's now too."""
    with pytest.raises(ValueError, match=r"--rollout-stop\) holds .*drop it from --rollout-stop"):
        hooks.to_sampling({"stop": stop})
    assert hooks.to_sampling({"stop": ["</tool_call>"]}).stop == ("</tool_call>",)
    assert hooks.to_sampling({"stop": ""}).stop == ()  # no stop at all, as before


# ------------------------------------------------------------ kind 12: an argument name that looks declared


@pytest.mark.parametrize("key", ["a\u200b", "ａ", "b\u2060"])
def test_an_argument_name_that_only_looks_declared_is_a_format_error(
    parsers: dict[str, ToolCallActionParser], key: str
) -> None:
    """`add(a=1, b=2)` with a zero-width space in `a` (or a fullwidth `ａ`) reached the world as an unknown
    argument, whose error quoted a name that looks like the declared one (a tool taking **kwargs dropped
    it). Wave five's reading of names that fold to an offered one, for argument names: every format."""
    for name in ("qwen25", "llama3", "glm45", "deepseekv3"):
        action = parsers[name].parse(render_calls(name, [ToolCall("add", {key: 1, "b": 2})]))
        assert isinstance(action, InvalidAction), (name, action)
        assert (
            "differs from the declared 'a'" in action.error or "differs from the declared 'b'" in action.error
        )
    # Case and letters tell argument names apart: an undeclared `A` or `é` reaches the world as written.
    for other in ("A", "é"):
        action = parsers["qwen25"].parse(render_calls("qwen25", [ToolCall("add", {other: 1, "b": 2})]))
        assert isinstance(action, ToolCallAction)


def test_deepseek_v3s_name_glued_to_its_fence_is_named(parsers: dict[str, ToolCallActionParser]) -> None:
    """Kind one in DeepSeek-V3: a call written on one line (`add```json{…}````) was "invalid JSON
    arguments (Expecting value)" of a name the model wrote right; one line break missing after the
    fence is named by the layout reading."""
    glued = parsers["deepseekv3"].parse(render_calls("deepseekv3", [_ADD]).replace("\n", ""))
    assert isinstance(glued, InvalidAction) and "the function name must end its line" in glued.error
    fence = parsers["deepseekv3"].parse(render_calls("deepseekv3", [_ADD]).replace("```json\n", "```json"))
    assert isinstance(fence, InvalidAction) and "'' after ```json (the format writes '\\n')" in fence.error
