"""Shared value types of the episode loop: chat messages, parsed actions, env transitions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A chat message as the HF chat templates take it: {"role": ..., "content": ..., optional "name"}.
Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One parsed function call."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolCallAction:
    """The model asked to run one or more tools in this step."""

    calls: tuple[ToolCall, ...]
    text: str  # the assistant text the calls were parsed from (reasoning stripped)
    reasoning: str | None = None
    # The text outside the calls (reasoning excluded), stripped; None when no tag or marker delimits the
    # format's calls (GLM-4-0414's), so the parser cannot tell where a call ends.
    content: str | None = None


@dataclass(frozen=True)
class AnswerAction:
    """The model answered in plain text (no tool call): the turn or the episode ends."""

    text: str
    reasoning: str | None = None


@dataclass(frozen=True)
class InvalidAction:
    """The model's output could not be parsed; `error` is fed back to the model as an observation."""

    error: str
    text: str


Action = ToolCallAction | AnswerAction | InvalidAction


@dataclass
class Transition:
    """What the environment returns for one action.

    `messages` are new chat messages (tool results, error feedback, the next user question), rendered
    through the chat template. `inline` is text spliced into the current assistant turn instead (the
    ReTool `<interpreter>` block): the model continues the same message after it. Only a turn the model
    left open may be continued: one that stopped at one of the world's stop strings (`Env.stop`); after
    the chat family's turn-ending token it is the world's failure (`env/InlineAfterTurnEnd`). `info` is
    the world's note on the call, for people and scripts, never for the model or the score: a text-keyed
    mapping of JSON data, kept per call in order (reset's first) as the episode's `step_info` in the
    eval's records and slime's sample metadata; one that is no JSON data is the world's failure
    (`env/InvalidInfo`).
    """

    messages: list[Message] = field(default_factory=list)
    inline: str | None = None
    done: bool = False
    truncated: bool = False  # ended by a limit rather than by the task
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Messages are a list of them: None failed the episode as t3rl's own bug (iterating it), and one
        # message not in a list was read key by key ("a message that is a str").
        if not isinstance(self.messages, list | tuple):
            raise ValueError(
                f"Transition.messages is a {type(self.messages).__name__}, not a list of messages: "
                "write [{'role': 'tool', 'content': '...'}], or [] for none"
            )
        # done and truncated are flags: done="no" (a text), a list or None read as truthiness ended the
        # episode a world meant to go on, or went on with one it meant to end, without a word. A NumPy
        # bool (gymnasium's worlds return one) is a flag too.
        for name in ("done", "truncated"):
            value = getattr(self, name)
            if not isinstance(value, bool) and type(value).__name__ not in ("bool_", "bool"):
                raise ValueError(
                    f"Transition.{name} is {type(value).__name__} {value!r}, not True or False: write "
                    f"{name}=bool(...) of what ends the episode"
                )
        # A limit ending the episode ends it: with done=False the loop went on playing a world that
        # said it was cut (gymnasium's truncated, which ends an episode there as terminated does).
        if self.truncated and not self.done:
            raise ValueError("Transition(truncated=True) ends the episode by a limit: set done=True with it")
        # The episode splices inline text into the model's turn and reads no messages beside it: a world
        # returning both had its messages dropped, never shown to the model, without a word.
        if self.inline is not None and self.messages:
            raise ValueError(
                "a Transition holds inline text or messages, not both: inline text goes on in the model's "
                "turn, messages follow a finished one; write their text into the inline text, or return "
                "them from a step of their own"
            )
