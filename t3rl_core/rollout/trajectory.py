"""The token trajectory of one episode, kept aligned token for token (TITO: token ids in, token ids out).

Response tokens are the model's own (loss mask 1, with their rollout log-probs) and everything the
episode inserts between model calls (loss mask 0, log-prob 0.0). The three response lists always have
the same length; any attempt to break that raises a `TitoViolation`.
"""

from __future__ import annotations

from collections.abc import Sequence


class TitoViolation(AssertionError):
    """The response tokens, loss mask and log-probs fell out of alignment (a bug, never model output)."""


class Trajectory:
    def __init__(self, prompt_ids: Sequence[int], max_response: int | None = None) -> None:
        """`max_response`: the response tokens the episode's limits allow (None = no limit); inserted
        tokens past it are dropped (counted in `cut`), model tokens never are (a call never asks for
        more than what is left)."""
        # Prompt + response in one list, grown in place: each model call reads it without a copy, and
        # an episode keeps one prompt-long list alive, not two (hundreds of episodes' token lists are
        # most of what a young-generation collection walks during a batch).
        self._tokens = list(prompt_ids)
        self._prompt_length = len(self._tokens)
        self.response_ids: list[int] = []
        self.loss_mask: list[int] = []
        self.log_probs: list[float] = []
        self.max_response = None if max_response is None else max(0, max_response)
        self.cut = 0  # inserted tokens dropped at max_response

    @property
    def prompt_ids(self) -> list[int]:
        """The prompt's ids (a copy)."""
        return self._tokens[: self._prompt_length]

    def append_model(self, token_ids: Sequence[int], log_probs: Sequence[float]) -> None:
        """Tokens the model sampled: trained on (mask 1), with the engine's log-probs."""
        if len(token_ids) != len(log_probs):
            raise TitoViolation(
                f"TITO violation: {len(token_ids)} model tokens but {len(log_probs)} log-probs"
            )
        self.response_ids.extend(token_ids)
        self._tokens.extend(token_ids)
        self.loss_mask.extend([1] * len(token_ids))
        self.log_probs.extend(map(float, log_probs))
        self.check()

    def append_observation(self, token_ids: Sequence[int]) -> None:
        """Tokens the episode inserted (template text, tool results): not trained on (mask 0). What
        passes `max_response` is dropped: no model token can follow it, and slime's batches are sized
        by the episode's limits."""
        if self.max_response is not None and len(self.response_ids) + len(token_ids) > self.max_response:
            kept = max(0, self.max_response - len(self.response_ids))
            self.cut += len(token_ids) - kept
            token_ids = token_ids[:kept]
        self.response_ids.extend(token_ids)
        self._tokens.extend(token_ids)
        self.loss_mask.extend([0] * len(token_ids))
        self.log_probs.extend([0.0] * len(token_ids))
        self.check()

    def rewind(self, response_length: int) -> None:
        """Drop every response token from `response_length` on (a turn the episode takes back)."""
        if not 0 <= response_length <= len(self.response_ids):
            raise ValueError(f"cannot rewind {len(self.response_ids)} response tokens to {response_length}")
        for values in (self.response_ids, self.loss_mask, self.log_probs):
            del values[response_length:]
        del self._tokens[self._prompt_length + response_length :]
        self.check()

    def exclude(self, start: int, end: int | None = None) -> None:
        """Response tokens [start, end) (to the end by default) stay in the context, untrained (mask 0)."""
        self.loss_mask[start:end] = [0] * len(self.loss_mask[start:end])
        self.log_probs[start:end] = [0.0] * len(self.log_probs[start:end])
        self.check()

    def check(self) -> None:
        if not len(self.response_ids) == len(self.loss_mask) == len(self.log_probs):
            lengths = (len(self.response_ids), len(self.loss_mask), len(self.log_probs))
            raise TitoViolation(
                f"TITO violation: response {lengths[0]}, loss mask {lengths[1]}, log-probs {lengths[2]}"
            )

    @property
    def tokens(self) -> list[int]:
        """Prompt and response ids: what the next model call reads (callers must not modify it)."""
        return self._tokens

    def __len__(self) -> int:
        return len(self._tokens)
