"""The model side of a verifiers rollout, played by t3rl's episode loop.

verifiers' own `rollout()` runs as a task and asks its client for each model turn; this client hands
the prompt to the episode (the env's messages since the last turn become the t3rl observation) and
waits for the model's parsed turn, which the episode gives back as a response."""

from __future__ import annotations

import asyncio
from typing import Any

from verifiers.clients import Client
from verifiers.errors import OverlongPromptError
from verifiers.types import Messages, Response, SamplingArgs, Tool


class EpisodeEnded(OverlongPromptError):
    """t3rl ended the episode (a step or token limit) while verifiers waited for a model turn: verifiers
    records it as a prompt that no longer fits, ends the rollout and scores what was played."""


class EpisodeClient(Client[None, Messages, Response, Tool]):
    """One episode's model: `requests` carries verifiers' prompts out, `answer()` the turns back."""

    def __init__(self) -> None:
        super().__init__(None)
        self.requests: asyncio.Queue[Messages] = asyncio.Queue()
        self._answers: asyncio.Queue[Response | BaseException] = asyncio.Queue()

    def answer(self, response: Response | BaseException) -> None:
        self._answers.put_nowait(response)

    def setup_client(self, config: Any) -> None:
        """No connection: the episode loop is the model."""

    async def to_native_tool(self, tool: Tool) -> Tool:
        return tool

    async def to_native_prompt(self, messages: Messages) -> tuple[Messages, dict]:
        return messages, {}

    async def get_native_response(
        self,
        prompt: Messages,
        model: str,
        sampling_args: SamplingArgs,
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> Response:
        self.requests.put_nowait(prompt)
        answer = await self._answers.get()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def raise_from_native_response(self, response: Response) -> None:
        """The episode's turns are already parsed actions."""

    async def from_native_response(self, response: Response) -> Response:
        return response

    async def close(self) -> None:
        """Nothing to close."""
