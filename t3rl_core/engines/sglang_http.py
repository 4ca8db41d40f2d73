"""A running SGLang server (or slime's router), spoken to over its native `/generate` endpoint.

Token ids go in (`input_ids`), token ids and their log-probs come back (`meta_info.output_token_logprobs`),
with the call's bookkeeping slime keeps per sample (prompt and cached tokens, weight version).
Transport failures — 5xx, refused or dropped connections, timeouts, truncated or invalid bodies — are
retried with exponential back-off; when the attempts run out the call returns `finish_reason="abort"`
with the error, and the episode ends ABORTED. Nothing raises to the episode loop.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from t3rl_core import finite, outside_json
from t3rl_core.backoff import backoff_delay
from t3rl_core.counts import counted
from t3rl_core.engines.answers import FINISH_REASONS, call_meta
from t3rl_core.engines.base import Engine, EngineUnavailable, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.config import SGLangEngineConfig
from t3rl_core.secret import mask_text

if TYPE_CHECKING:
    import aiohttp

    from t3rl_core.chat.format import ChatFormat


# What SGLang's refusals of a request longer than the model's context say (sglang 0.5): the tokenizer
# manager's input and input + max_new_tokens checks ("...the model's [maximum] context length..."), and
# the scheduler's, for an input at its request limit (context length - 6, or less when the KV cache
# pool is smaller than the context: "...exceeds the maximum allowed length...").
_LENGTH_REFUSALS = (b"context length", b"maximum allowed length")


# SGLang's model gateway (sgl-router) answers 429 when its request queue is full and 408 when a request
# waited in it past --queue-timeout-secs: the request was never run, and may be sent again.
_COME_BACK_LATER = frozenset({408, 429})


class ServedModelInfo(BaseModel):
    """What t3rl reads of SGLang's `GET /get_model_info` answer (slime's router forwards a worker's): the
    served checkpoint's path, recorded as the eval's `served_model` and fingerprinted when it is local.
    Any other key is kept as it came. A server answering something else there is no SGLang server: an
    object whose model_path was a number crashed the eval's record (TypeError) after the check passed."""

    model_config = ConfigDict(extra="allow", strict=True)

    model_path: str = Field(min_length=1)


class BadResponse(ValueError):
    """The server answered with something that is not a finished generation."""


def sampling_payload(sampling: SamplingParams) -> dict[str, Any]:
    """SGLang's `sampling_params`; stop strings stay in the output so text and tokens agree."""
    params: dict[str, Any] = {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k,
        "max_new_tokens": sampling.max_new_tokens,
        "stop": list(sampling.stop),
        "stop_token_ids": list(sampling.stop_token_ids),
        "no_stop_trim": True,
        "skip_special_tokens": False,
    }
    if sampling.seed is not None:
        params["sampling_seed"] = sampling.seed
    return params


def parse_generation(body: bytes) -> Generation:
    """A `/generate` response body → Generation; raises BadResponse on anything malformed."""
    try:
        data = outside_json.loads(body, "the /generate answer")
        if isinstance(data, dict) and "meta_info" not in data and ("error" in data or "message" in data):
            # A proxy (or an OpenAI-style front) answering its error with HTTP 200: its words, not a
            # KeyError on 'meta_info'.
            said = data.get("error") or data.get("message")
            raise BadResponse(f"the server answered an error with HTTP 200: {str(said)[:300]}")
        meta = data["meta_info"]
        if isinstance(meta, dict) and meta.get("output_token_logprobs") is None and "finish_reason" in meta:
            raise BadResponse(
                "the answer has no output_token_logprobs, though t3rl asks for return_logprob: a proxy "
                "that drops it, or an SGLang mode that computes none (its lookahead speculative "
                f"decoding); t3rl trains on each token's log-prob: {body[:200]!r}"
            )
        entries = meta["output_token_logprobs"]
        finish = meta["finish_reason"]
    except BadResponse:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        # A body nested past t3rl's JSON limit is outside_json's ValueError, with the limit named (no
        # SGLang answer nests 5 levels).
        raise BadResponse(
            f"invalid /generate response ({type(exc).__name__}: {exc}): {body[:200]!r}"
        ) from None
    kind = finish.get("type") if isinstance(finish, dict) else finish
    if type(kind) is not str or kind not in FINISH_REASONS:
        raise BadResponse(f"unfinished or unknown finish_reason {finish!r}")
    try:
        token_ids = [entry[1] for entry in entries]
        log_probs = [entry[0] for entry in entries]
    except (TypeError, IndexError, KeyError) as exc:
        raise BadResponse(f"malformed output_token_logprobs ({exc})") from None
    # int() would take 3.7 as token 3, true as 1 and "12" as 12: a token nobody sampled, trained on.
    bad = [token for token in token_ids if type(token) is not int or token < 0]
    if bad:
        raise BadResponse(f"output_token_logprobs holds what is no token id: {bad[:5]!r}")
    # float() would take true as log-prob 1.0 and "-0.5" as -0.5: a number the server never computed.
    if not all(type(lp) is float or type(lp) is int for lp in log_probs):
        wrong = [lp for lp in log_probs if type(lp) is not float and type(lp) is not int][:5]
        raise BadResponse(f"output_token_logprobs holds log-probs that are no JSON number: {wrong!r}")
    try:
        log_probs = [float(lp) for lp in log_probs]
    except OverflowError:  # a JSON integer past a float's range (1 followed by 400 digits): the server's
        huge = [finite.shown(lp, 40) for lp in log_probs if not finite.finite_real(lp)][:5]
        raise BadResponse(f"non-finite output_token_logprobs: {huge}") from None
    # SGLang answers the tokens twice, as output_ids and with their log-probs: the two must be the same
    # tokens. Its speculative decoding has answered log-probs past the returned tokens (accepted drafts
    # beyond a stop), and a proxy may cut one list: the episode would train on tokens, or with log-probs,
    # the server never returned as its output.
    output_ids = data.get("output_ids")
    if output_ids is not None and output_ids != token_ids:
        shown = len(output_ids) if isinstance(output_ids, list) else type(output_ids).__name__
        raise BadResponse(
            f"output_token_logprobs ({counted(len(token_ids), 'token')}) are not the answer's output_ids "
            f"({shown}): "
            "one log-prob per output token is needed"
        )
    # Its third statement of the count, meta_info.completion_tokens (len(output_ids) in SGLang), holds
    # where output_ids is absent (a proxy that answers the meta_info alone): a list cut short there was
    # taken as the whole answer, the tokens past the cut lost from the episode the server went on with.
    counts = call_meta(meta)  # a count that is no count is left out, as if not reported
    completion = counts.get("completion_tokens")
    if completion is not None and completion != len(token_ids):
        raise BadResponse(
            f"output_token_logprobs ({counted(len(token_ids), 'token')}) are not the answer's "
            "completion_tokens "
            f"({completion}): one log-prob per output token is needed"
        )
    if not all(map(math.isfinite, log_probs)):
        # A sampled token has a finite log-prob; a NaN or an infinity would reach slime's importance
        # ratios (rollout_log_probs) and make the loss NaN.
        raise BadResponse(
            f"non-finite output_token_logprobs: {[lp for lp in log_probs if not math.isfinite(lp)][:5]}"
        )
    error, on_request = None, False
    if kind == "abort":
        error = f"SGLang aborted the request: {finish.get('message') if isinstance(finish, dict) else finish}"
        # SGLang gives the aborts it decides itself a status code (and answers most with an HTTP error);
        # one without is an abort a client asked for.
        on_request = isinstance(finish, dict) and finish.get("status_code") is None
    return Generation(
        token_ids, log_probs, FINISH_REASONS[kind], error=error, meta=counts, on_request=on_request
    )


def retry_wait(attempt: int, backoff_s: float, timeout_s: float, retry_after: str | None) -> float:
    """Seconds before retry `attempt`: the jittered back-off, or longer when the server's Retry-After
    header (seconds, or an HTTP date) asks for more, but never longer than one request may take."""
    wait = backoff_delay(attempt, backoff_s)
    if retry_after is None:
        return wait
    try:
        asked = float(retry_after)
    except ValueError:
        try:
            asked = parsedate_to_datetime(retry_after).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return wait
    if not math.isfinite(asked):
        return wait
    return max(wait, min(asked, timeout_s))


class SGLangEngine(Engine):
    """HTTP client of SGLang's `/generate` with bounded concurrency, timeouts and retries."""

    answers_plain = True  # parse_generation keeps JSON ints and floats and CALL_META's entries only

    def __init__(self, config: SGLangEngineConfig, chat: ChatFormat | None = None) -> None:
        if not config.url:
            raise ValueError(
                "the sglang engine needs engine.url (the eval stage sets it to the server it starts)"
            )
        self.config = config
        self.base_url = config.url.rstrip("/")
        self.url = self.base_url + "/generate"
        self._headers = {"Content-Type": "application/json"}
        if config.api_key is not None:
            self._headers["Authorization"] = f"Bearer {config.api_key.reveal().get_secret_value()}"
        # Session and semaphore belong to one event loop; they are rebuilt when a new loop calls.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(config.concurrency)

    def _client(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            # The semaphore bounds requests; the connector must not queue them a second time.
            connector = aiohttp.TCPConnector(limit=self.config.concurrency)
            self._session = aiohttp.ClientSession(connector=connector)
            self._slots = asyncio.Semaphore(self.config.concurrency)
            self._loop = loop
        return self._session, self._slots

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        import aiohttp

        body = json.dumps(
            {"input_ids": input_ids, "sampling_params": sampling_payload(sampling), "return_logprob": True},
            separators=(",", ":"),
        ).encode()
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        error = "no attempt made"
        retry_after: str | None = None
        for attempt in range(self.config.max_attempts):
            if attempt:
                await asyncio.sleep(
                    retry_wait(attempt, self.config.backoff_s, self.config.timeout_s, retry_after)
                )
                retry_after = None
            session, slots = self._client()
            try:
                async with (
                    slots,
                    session.post(self.url, data=body, headers=self._headers, timeout=timeout) as response,
                ):
                    raw = await response.read()
                    if response.status >= 500 or response.status in _COME_BACK_LATER:
                        error = f"HTTP {response.status}: {raw[:200]!r}"
                        retry_after = response.headers.get("Retry-After")
                        continue
                    if response.status in (401, 403):
                        where = mask_text(self.base_url)
                        return Generation(
                            [], [], "abort", error=self._refused(where, "POST /generate", response.status)
                        )
                    if response.status == 400 and any(phrase in raw for phrase in _LENGTH_REFUSALS):
                        # The episode outgrew the model's context (SGLang refuses the input, or input
                        # plus max_new_tokens): the policy's own long episode, ended as by a length
                        # limit, not an engine failure that removes it and counts toward the failure rate.
                        return Generation([], [], "length", error=f"HTTP 400: {raw[:500]!r}")
                    if response.status >= 400:
                        return Generation([], [], "abort", error=f"HTTP {response.status}: {raw[:500]!r}")
                    return parse_generation(raw)
            except (aiohttp.ClientError, TimeoutError, BadResponse) as exc:
                error = f"{type(exc).__name__}: {exc}"
        attempts = self.config.max_attempts
        return Generation(
            [], [], "abort", error=mask_text(f"{self.url} failed {attempts} time(s); last error: {error}")
        )

    async def check(self) -> dict[str, Any]:
        """`/health` answers 200 and `/get_model_info` names the served model, within health_timeout_s."""
        import aiohttp

        where = mask_text(self.base_url)
        timeout = aiohttp.ClientTimeout(total=self.config.health_timeout_s)
        session, _ = self._client()
        info: Any = None
        raw = b""
        for path in ("/health", "/get_model_info"):
            try:
                async with session.get(
                    self.base_url + path, headers=self._headers, timeout=timeout
                ) as response:
                    raw = await response.read()
                    if response.status in (401, 403):
                        raise EngineUnavailable(self._refused(where, f"GET {path}", response.status))
                    if response.status != 200:
                        raise EngineUnavailable(
                            f"SGLang server {where}: GET {path} answered HTTP {response.status} "
                            f"{raw[:200]!r}; is it still loading, or not an SGLang server?"
                        )
                    if path == "/get_model_info":
                        info = outside_json.loads(raw, f"the GET {path} answer")
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                reason = "no answer" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
                raise EngineUnavailable(
                    f"SGLang server {where} is not answering GET {path} ({mask_text(reason)}); start it "
                    "or point eval.engine.url / --url at a running one"
                ) from None
        try:
            served = ServedModelInfo.model_validate(info)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(map(str, error["loc"])) or "the answer"
            said = "should be a JSON object" if error["type"] == "model_type" else error["msg"]
            raise EngineUnavailable(
                f"SGLang server {where}: GET /get_model_info answered {mask_text(repr(raw[:200]))}, not "
                f"SGLang's model info ({field}: {said}); point eval.engine.url / --url at an SGLang "
                "server (or slime's router)"
            ) from None
        return {"url": where, "served_model": served.model_path, "model_info": info}

    def _refused(self, where: str, request: str, status: int) -> str:
        sent = (
            f"the key of {self.config.api_key} was refused"
            if self.config.api_key is not None
            else "no key was sent"
        )
        return (
            f"SGLang server {where} refused {request} with HTTP {status} ({sent}): it was started with "
            "--api-key; set eval.server.api_key (a server the eval starts) or eval.engine.api_key (a "
            "running one) to env:NAME or file:PATH holding that key"
        )

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None
