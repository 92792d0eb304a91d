"""The ``transformers`` provider on a real (tiny, randomly initialised, locally built) model.

No model can be downloaded here, so the test builds a one-layer GPT-2 and a word-level
tokenizer with a chat template on disk, then runs it through intima like any local model.
"""

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
