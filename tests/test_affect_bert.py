"""The torch-only MiniLM encoder against sentence-transformers itself, and what it refuses."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from intima.affect.bert import BertEncoder, ModelFiles
from intima.affect.config import AffectConfig
from intima.affect.embed import MiniLMEmbedder, default_embedder, model_path
from intima.affect.labelled import load_labelled
from intima.affect.sentences import split_sentences
from intima.core.errors import ConfigError

pytestmark = pytest.mark.slow

EDGE_CASES = [
    "",
    "   surrounded by spaces   ",
    "I love you. " * 120,  # far beyond the 256-token limit: truncated the same way
    "Je t'aime 😍❤️ — 你好, naïve café!",
    "OK",
]


def test_vectors_equal_sentence_transformers() -> None:
    from sentence_transformers import SentenceTransformer

    # A third of the labelled rows (each text is encoded twice: 9 CPU-s for all of them), the
    # edge cases whole: still more than one batch of 64, so batches and padding are compared.
    examples = load_labelled()[::3]
    texts = [s for ex in examples for s in split_sentences(ex.response)]
    texts += [ex.prompt for ex in examples] + EDGE_CASES
    assert len(texts) > 64
    reference = SentenceTransformer(str(model_path()), device="cpu", local_files_only=True)
    expected = reference.encode(texts, batch_size=64, normalize_embeddings=True)
    got = default_embedder().encode(texts)
    assert got.dtype == np.float32
    assert got.shape == (len(texts), 384)
    assert np.abs(got - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    # What the scorer embeds: whole responses, cut at the config's token limit.
    responses = [ex.response for ex in examples] + EDGE_CASES
    limit = AffectConfig().embed_max_tokens
    reference.max_seq_length = limit
    expected = reference.encode(responses, batch_size=64, normalize_embeddings=True)
    got = default_embedder().encode(responses, max_tokens=limit)
    assert np.abs(got - expected).max() < 1e-5


def test_a_text_embeds_the_same_alone_and_in_any_batch() -> None:
    encoder = default_embedder()
    texts = ["I will always be here for you.", "Please talk to a therapist.", *EDGE_CASES]
    together = encoder.encode(texts)
    reversed_ = encoder.encode(texts[::-1])[::-1]
    alone = np.stack([encoder.encode([t])[0] for t in texts])
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(together - reversed_).max() < 1e-5
    assert encoder.encode([]).shape == (0, 384)


def _copy_model(tmp_path: Path, edit: Callable[[Path], None]) -> Path:
    """A copy of the wheel's model directory (large files linked), then edited."""
    src = model_path()
    for file in src.rglob("*"):
        if file.is_file():
            target = tmp_path / file.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if file.suffix == ".json":
                target.write_bytes(file.read_bytes())
            else:
                target.symlink_to(file)
    edit(tmp_path)
    return tmp_path


def _rewrite(path: Path, change: Callable[[object], object]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_an_unchanged_copy_loads_and_matches(tmp_path: Path) -> None:
    root = _copy_model(tmp_path, lambda _: None)
    copy = MiniLMEmbedder(path=root)
    text = ["a sentence to compare"]
    assert np.array_equal(copy.encode(text), default_embedder().encode(text))
    assert copy.load_seconds is not None


@pytest.mark.parametrize(
    ("file", "change", "named"),
    [
        ("modules.json", lambda m: m[:2], "modules.json"),
        ("1_Pooling/config.json", lambda c: {**c, "pooling_mode_mean_tokens": False,
                                              "pooling_mode_cls_token": True}, "config.json"),
        ("config.json", lambda c: {**c, "hidden_act": "relu"}, "hidden_act"),
        ("config.json", lambda c: {**c, "model_type": "roberta"}, "model_type"),
        ("sentence_bert_config.json", lambda c: {}, "max_seq_length"),
    ],
)  # fmt: skip
def test_other_pipelines_are_refused_naming_the_file(
    tmp_path: Path, file: str, change: Callable[[object], object], named: str
) -> None:
    root = _copy_model(tmp_path, lambda r: _rewrite(r / file, change))
    with pytest.raises(ConfigError, match=named) as err:
        MiniLMEmbedder(path=root).encode(["x"])
    assert str(root) in str(err.value)


def test_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="modules.json"):
        ModelFiles.read(tmp_path)


def test_missing_weights_are_a_clear_error(tmp_path: Path) -> None:
    root = _copy_model(tmp_path, lambda r: (r / "model.safetensors").unlink())
    with pytest.raises(ConfigError, match=r"model\.safetensors is missing"):
        ModelFiles.read(root)


def test_a_missing_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ConfigError, match=r"tokenizers.*intima\[affect\]"):
        MiniLMEmbedder().encode(["x"])


def test_weights_that_do_not_fit_the_config_are_refused(tmp_path: Path) -> None:
    # Seven layers announced, six stored: refused at load, naming the weights file.
    root = _copy_model(
        tmp_path, lambda r: _rewrite(r / "config.json", lambda c: {**c, "num_hidden_layers": 7})
    )
    with pytest.raises(ConfigError, match=r"model\.safetensors lacks 16 BERT weights"):
        MiniLMEmbedder(path=root).encode(["x"])


def test_truncation_follows_sentence_bert_config(tmp_path: Path) -> None:
    root = _copy_model(
        tmp_path,
        lambda r: _rewrite(r / "sentence_bert_config.json", lambda c: {"max_seq_length": 8}),
    )
    files = ModelFiles.read(root)
    assert files.max_seq_length == 8
    encoder = BertEncoder(files)
    long = "one two three four five six seven eight nine ten eleven twelve"
    # With 8 tokens ([CLS] + 6 words + [SEP]) the tail is cut: only the first six words count.
    head = "one two three four five six"
    assert np.abs(encoder.encode([long]) - encoder.encode([head])).max() < 1e-6


def test_max_tokens_cuts_the_text_like_a_shorter_model_limit() -> None:
    encoder = default_embedder()
    long = "one two three four five six seven eight nine ten eleven twelve"
    head = "one two three four five six"
    cut = encoder.encode([long], max_tokens=8)  # [CLS] + six words + [SEP]
    assert np.abs(cut - encoder.encode([head])).max() < 1e-5
    assert np.abs(encoder.encode([long]) - cut).max() > 1e-3  # the default reads it all
    # The limit is per call: the next call without it is not cut.
    assert np.abs(encoder.encode([long]) - encoder.encode([long], max_tokens=512)).max() < 1e-6
