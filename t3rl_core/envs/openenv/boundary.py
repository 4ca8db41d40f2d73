"""What t3rl accepts from an OpenEnv server's session, checked where it crosses into t3rl: every answer
to a reset or a step.

OpenEnv's generic client takes whatever comes back: an answer of another protocol (no `type`, no
`data`) reads as an empty observation with no reward that never ends, a `reward` of "0.5" or NaN or
Infinity (JSON as Python writes it) is summed into the episode's score, `done: "false"` ends the
episode, an observation that is a text or a list fails later with an AttributeError, and a session the
server closes mid-episode surfaces as the websockets library's own exception. Each of these is the
environment's failure, not the model's: the episode fails with `OpenEnvProtocolError`, naming the
server, the request and what it answered, and is never trained on or scored."""

from __future__ import annotations

import asyncio
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed

from t3rl_core import outside_json
from t3rl_core.finite import finite_real, shown
from t3rl_core.secret import mask_url

# The `type` of each answer t3rl waits for (OpenEnv's WSObservationResponse, WSErrorResponse).
_ANSWERS = frozenset({"observation", "error"})
# What an answer shows of a value it refuses.
_SHOWN = 80


class OpenEnvProtocolError(RuntimeError):
    """The server answered what no OpenEnv server answers, or dropped the session: the episode fails."""


class CheckedClient(GenericEnvClient):
    """OpenEnv's generic client (its Gym-style protocol, whatever OPENENV_CLIENT_MODE says), every answer
    checked before t3rl reads it."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url=base_url, mode="simulation")
        self._where = f"the OpenEnv server at {mask_url(base_url)}"
        self._request = "a request"

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        self._request = str(message.get("type"))
        try:
            return await super()._send_and_receive(message)
        except ConnectionClosed as exc:
            raise self._failed(f"closed the session during {self._request} ({exc})") from None
        except TimeoutError:
            raise self._failed(
                f"did not answer {self._request} within {self._message_timeout:g} s (the environment hangs)"
            ) from None

    async def _receive(self) -> dict[str, Any]:
        # OpenEnv's own _receive, its text read under t3rl's JSON limit: json.loads of an answer nested
        # past Python's recursion raised RecursionError in Python's words, out of the episode.
        assert self._ws is not None
        raw = await asyncio.wait_for(self._ws.recv(), timeout=self._message_timeout)
        try:
            answer = outside_json.loads(raw, "JSON that")
        except outside_json.OutsideJsonError as exc:
            raise self._failed(f"answered {self._request} with {exc}") from None
        except ValueError as exc:  # the server sent text that is no JSON
            raise self._failed(f"answered {self._request} with no JSON ({exc})") from None
        if not isinstance(answer, dict) or answer.get("type") not in _ANSWERS:
            what = f"type {_show(answer.get('type'))}" if isinstance(answer, dict) else _show(answer)
            raise self._failed(
                f"answered {self._request} with {what} where an OpenEnv server sends "
                "{'type': 'observation', 'data': …} (another protocol or version of it)"
            )
        if not isinstance(answer.get("data"), dict):
            raise self._failed(f"answered {self._request} with data {_show(answer.get('data'))}, no object")
        return answer

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[dict[str, Any]]:
        observation, reward, done = payload.get("observation"), payload.get("reward"), payload.get("done")
        if not isinstance(observation, dict):
            raise self._failed(
                f"answered {self._request} with observation {_show(observation)}, not an object of fields"
            )
        if reward is not None and not _finite_number(reward):
            raise self._failed(
                f"answered {self._request} with reward {_show(reward)}: a reward is a finite number or "
                "null (fix the environment's reward)"
            )
        if not isinstance(done, bool):
            raise self._failed(f"answered {self._request} with done {_show(done)}, not true or false")
        return StepResult(observation=observation, reward=reward, done=done)

    def _failed(self, what: str) -> OpenEnvProtocolError:
        return OpenEnvProtocolError(
            f"{self._where} {what}: the environment's failure, not the model's (the episode is not scored)"
        )


def _finite_number(value: Any) -> bool:
    """A number JSON can carry (bool included, as OpenEnv's Observation.reward allows), finite."""
    return finite_real(value)


def _show(value: Any) -> str:
    text = f"{type(value).__name__} {shown(value, _SHOWN)}"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
