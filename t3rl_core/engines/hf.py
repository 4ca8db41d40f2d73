"""A transformers causal LM on CPU as an engine: real sampling with per-token log-probs.

Generation runs in worker threads so the event loop keeps serving other episodes. The reported
log-prob of a token is under the temperature-scaled distribution before top-k/top-p filtering (at
temperature 1, the model's own distribution; greedy at temperature 0 reports the raw model's).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TYPE_CHECKING, Any

from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.config import HFEngineConfig

if TYPE_CHECKING:
    from t3rl_core.chat.format import ChatFormat

# Stop strings are searched in the text of this many final tokens (plus the stop string's length).
_STOP_WINDOW_TOKENS = 8


class HFEngine(Engine):
    """Samples from a local HF model directory token by token with a KV cache."""

    answers_plain = True  # _sample answers int() and float() of the model's tensors

    def __init__(self, config: HFEngineConfig, chat: ChatFormat | None = None) -> None:
        path = config.model_path or (chat.tokenizer.name_or_path if chat is not None else None)
        if not path:
            raise ValueError(
                "the hf engine needs engine.model_path or a chat format whose tokenizer dir holds the model"
            )
        self.config, self.path, self.chat = config, str(path), chat
        self._model: Any = None
        self._tokenizer: Any = chat.tokenizer if chat is not None else None
        self._load_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(config.concurrency)

    async def check(self) -> dict[str, Any]:
        """The model loads (in a worker thread); a directory that holds none fails before any episode."""
        from t3rl_core.engines.base import EngineUnavailable

        try:
            await asyncio.to_thread(self._load)
        except ModuleNotFoundError as exc:
            # A package of the stack missing, not the model: said with the fix (the engine loads
            # torch and transformers only here).
            raise EngineUnavailable(
                f"hf engine: the Python package '{exc.name}' is not installed in {sys.executable}, and the "
                "hf engine loads the model with torch and transformers: run ./scripts/setup.sh, which "
                "installs t3rl's pinned stack into .venv, then .venv/bin/t3rl …"
            ) from None
        except Exception as exc:
            raise EngineUnavailable(f"hf engine: cannot load a model from {self.path}: {exc}") from None
        return {"model_path": self.path}

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
                dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[self.config.dtype]
                model = AutoModelForCausalLM.from_pretrained(self.path, dtype=dtype, local_files_only=True)
                self._model = model.to(self.config.device).eval()
                if self._tokenizer is None:
                    self._tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        return self._model

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._slots, self._loop = asyncio.Semaphore(self.config.concurrency), loop
        # A cancelled call (Ctrl-C in an eval, an episode dropped) stops its thread at the next token:
        # a thread cannot be cancelled, and one left decoding up to max_new_tokens held a core past its
        # slot, and asyncio.run's end waited for it (an eval's Ctrl-C hung for the whole generation).
        cancelled = threading.Event()
        async with self._slots:
            try:
                return await asyncio.to_thread(self._generate, list(input_ids), sampling, cancelled)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            except Exception as exc:  # a model error aborts this episode, not the run
                return Generation([], [], "abort", error=f"hf engine: {type(exc).__name__}: {exc}")

    def _generate(
        self, input_ids: list[int], sampling: SamplingParams, cancelled: threading.Event | None = None
    ) -> Generation:
        import torch

        model = self._load()
        limit = getattr(model.config, "max_position_embeddings", None)
        max_new = (
            sampling.max_new_tokens if limit is None else min(sampling.max_new_tokens, limit - len(input_ids))
        )
        if not input_ids or max_new <= 0:
            return Generation(
                [], [], "length" if input_ids else "abort", error=None if input_ids else "empty input"
            )
        generator = torch.Generator().manual_seed(sampling.seed) if sampling.seed is not None else None
        stop_ids = set(sampling.stop_token_ids)
        tokens: list[int] = []
        log_probs: list[float] = []
        with torch.inference_mode():
            step = torch.tensor([input_ids], device=self.config.device)
            past = None
            for _ in range(max_new):
                if cancelled is not None and cancelled.is_set():
                    return Generation(tokens, log_probs, "abort", error="hf engine: the call was cancelled")
                output = model(input_ids=step, past_key_values=past, use_cache=True)
                past = output.past_key_values
                token, log_prob = _sample(output.logits[0, -1].float(), sampling, generator)
                tokens.append(token)
                log_probs.append(log_prob)
                if token in stop_ids or self._hit_stop_string(tokens, sampling.stop):
                    return Generation(tokens, log_probs, "stop")
                step = torch.tensor([[token]], device=self.config.device)
        return Generation(tokens, log_probs, "length")

    def _hit_stop_string(self, tokens: list[int], stops: tuple[str, ...]) -> bool:
        if not stops:
            return False
        longest = max(len(stop) for stop in stops)
        tail = self._tokenizer.decode(tokens[-(_STOP_WINDOW_TOKENS + longest) :], skip_special_tokens=False)
        # an occurrence inside the window is new: an older one would have stopped generation already
        return any(stop in tail for stop in stops)

    async def aclose(self) -> None:
        self._model = None


def _sample(logits: Any, sampling: SamplingParams, generator: Any) -> tuple[int, float]:
    """One token from `logits` (1-D) with SGLang's temperature / top-k / top-p, and its log-prob."""
    import torch

    if sampling.temperature <= 0:
        log_probs = torch.log_softmax(logits, dim=-1)
        token = int(torch.argmax(logits))
        return token, float(log_probs[token])
    log_probs = torch.log_softmax(logits / sampling.temperature, dim=-1)
    probs = log_probs.exp()
    if 0 < sampling.top_k < probs.numel():
        kth = torch.topk(probs, sampling.top_k).values[-1]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    if sampling.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        # keep the smallest prefix whose mass reaches top_p (the first token always stays)
        outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs > sampling.top_p
        sorted_probs[outside] = 0.0
        probs = torch.zeros_like(probs).scatter(0, order, sorted_probs)
    token = int(torch.multinomial(probs / probs.sum(), 1, generator=generator))
    return token, float(log_probs[token])
