"""A reply's token counts where the vendor gives none (intima.generate.usage, issue 38): the
vendor's when given, else counted with the model's tokenizer from the local Hub cache, else the
worst case the request allowed; stored with where they came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from intima.core.config import GenerationSettings, ModelConfig
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.generate import usage as usage_mod
from intima.providers.base import Completion, Message
from intima.store import Store

MESSAGES = [Message(role="system", content="Be kind."), Message(role="user", content="héllo")]


def test_reported_counts_are_kept_and_missing_ones_are_the_worst_case() -> None:
    settings = GenerationSettings(max_tokens=50)
    given = Completion(text="hi", prompt_tokens=7, completion_tokens=2)
    assert usage_mod.settled(given, "gpt-4o-mini", MESSAGES, settings).model_dump() == {
        **given.model_dump(),
        "usage_source": "reported",
    }
    # Half a usage: the vendor's count is kept, the missing one taken at its worst. By hand:
    # "Be kind." 8 bytes + "héllo" 6 bytes, 16 per message and 16 per request.
    half = Completion(text="hi", prompt_tokens=7)
    settled = usage_mod.settled(half, "gpt-4o-mini", MESSAGES, settings)
    assert (settled.prompt_tokens, settled.completion_tokens) == (7, 50)
    none = usage_mod.settled(Completion(text="hi"), "gpt-4o-mini", MESSAGES, settings)
    assert (none.prompt_tokens, none.completion_tokens) == (8 + 6 + 32 + 16, 50)
    assert none.usage_source == settled.usage_source == "worst case"
    schema = {"type": "object"}  # its JSON text is what the prompt carries: 18 bytes
    with_schema = usage_mod.settled(Completion(text="x"), "m", MESSAGES, settings, schema)
    assert with_schema.prompt_tokens == none.prompt_tokens + 18
    unset = GenerationSettings(max_tokens=None)
    unbounded = usage_mod.settled(Completion(text="hi"), "m", MESSAGES, unset)
    assert unbounded.completion_tokens == 131072  # no max_tokens: the most a request allows
    # Zeros are no count: no prompt is 0 tokens, nor a reply with text (an empty one may be).
    zeros = Completion(text="hi", prompt_tokens=0, completion_tokens=0)
    zeroed = usage_mod.settled(zeros, "m", MESSAGES, settings)
    assert (zeroed.prompt_tokens, zeroed.completion_tokens) == (62, 50)
    empty = Completion(text="", prompt_tokens=9, completion_tokens=0)
    assert usage_mod.settled(empty, "m", MESSAGES, settings).usage_source == "reported"
    assert usage_mod.weakest(["reported", "worst case", "counted"]) == "worst case"
    assert usage_mod.weakest(["reported", None]) == "reported"


def _cached_tokenizer(cache: Path, repo: str) -> Any:
    """A real tokenizer (word level, trained on nothing but a vocabulary) saved where the Hub
    cache keeps a repo's files, as a download would have left it."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "thank": 1, "you": 2, "for": 3, "telling": 4, "me": 5, ".": 6}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = cache / f"models--{repo.replace('/', '--')}"
    revision = "a" * 40
    snapshot = folder / "snapshots" / revision
    snapshot.mkdir(parents=True)
    tokenizer.save(str(snapshot / "tokenizer.json"))
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(revision)
    return tokenizer


def test_a_reply_without_usage_is_counted_with_the_local_tokenizer(
    tmp_path: Path, fake_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    tokenizer = _cached_tokenizer(cache, "org/tiny")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    usage_mod.local_tokenizer.cache_clear()
    server = fake_server(omit_usage=True)
    demo = load_prompts("demo")
    two = PromptSet(info=demo.info, prompts=demo.prompts[:2])
    config = ModelConfig(spec=f"openai-compat:org/tiny@{server.base_url}")
    try:
        with Store.open(tmp_path / "s.db") as store:
            [run] = generate(store, two, [config])
            rows = store.query(
                "SELECT r.prompt_tokens, r.completion_tokens, r.usage_source, r.text, p.text "
                "FROM responses r JOIN prompts p USING (prompt_id)"
            )
    finally:
        usage_mod.local_tokenizer.cache_clear()
    assert run.generated == 2 and len(rows) == 2
    for prompt_tokens, completion_tokens, source, reply, prompt in rows:
        assert source == "counted"
        # the tokenizer's own count, with the template's 16 a message and 16 a request
        assert prompt_tokens == len(tokenizer.encode(prompt).ids) + 16 + 16
        assert completion_tokens == len(tokenizer.encode(reply).ids) + 1  # and its end token
        assert completion_tokens < len(reply.encode("utf-8"))  # a count, not a byte bound


def test_no_tokenizer_is_fetched_for_a_name_that_is_not_cached(tmp_path: Path, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    usage_mod.local_tokenizer.cache_clear()
    try:
        for name in ("org/absent", "gpt-4o-mini", "a/b/c", "../../etc"):
            assert usage_mod.local_tokenizer(name) is None
    finally:
        usage_mod.local_tokenizer.cache_clear()
