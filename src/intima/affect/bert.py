"""A sentence-transformers model directory run with torch alone: BERT, mean pooling, L2 norm.

Why not ``sentence_transformers.SentenceTransformer``: importing it costs 5-7 s on a 2-core
machine (torch, transformers' model-loading stack, and scikit-learn, which
``sentence_transformers.util`` imports at module level), while the weights themselves load in
0.3 s. The affect scorer's target is a model ready in under 5 s, so this module reads the same
files sentence-transformers reads and runs the same computation with torch, ``tokenizers`` and
``safetensors``: ready in about 2 s, most of it importing torch.

Only the pipeline all-MiniLM-L6-v2 uses is supported (Transformer -> mean Pooling -> Normalize
over a BERT encoder); any other directory is refused with the file that says so, never run
approximately. ``tests/test_affect_bert.py`` checks that the vectors equal
sentence-transformers' own to 1e-5.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, ValidationError

from intima.core.errors import ConfigError

_PIPELINE = (
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
)


class BertConfig(BaseModel):
    """The parts of a Hugging Face ``config.json`` the forward pass depends on."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model_type: Literal["bert"]
    hidden_act: Literal["gelu"]
    position_embedding_type: Literal["absolute"] = "absolute"
    hidden_size: int
    num_attention_heads: int
    num_hidden_layers: int
    max_position_embeddings: int
    layer_norm_eps: float
    pad_token_id: int = 0


class MeanPooling(BaseModel):
    """``1_Pooling/config.json``: mean over tokens, and nothing else."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    pooling_mode_mean_tokens: Literal[True]
    pooling_mode_cls_token: Literal[False] = False
    pooling_mode_max_tokens: Literal[False] = False
    pooling_mode_mean_sqrt_len_tokens: Literal[False] = False


_M = TypeVar("_M", bound=BaseModel)


class SentenceBertConfig(BaseModel):
    """``sentence_bert_config.json``: where sentence-transformers truncates."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    max_seq_length: int


def _read(path: Path, model: type[_M]) -> _M:
    try:
        return model.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path} is missing; reinstall the model") from exc
    except ValidationError as exc:
        raise ConfigError(f"{path} describes a model intima cannot run:\n{exc}") from exc


class ModelFiles(BaseModel):
    """What a sentence-transformers directory says about the model, checked."""

    model_config = ConfigDict(frozen=True)

    root: Path
    bert: BertConfig
    max_seq_length: int

    @classmethod
    def read(cls, root: Path) -> ModelFiles:
        modules_path = root / "modules.json"
        try:
            modules = json.loads(modules_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{modules_path}: no sentence-transformers model ({exc})") from exc
        kinds = tuple(m.get("type") for m in modules)
        if kinds != _PIPELINE:
            raise ConfigError(
                f"{modules_path}: the pipeline is {kinds}; intima runs only {_PIPELINE}"
            )
        _read(root / modules[1]["path"] / "config.json", MeanPooling)
        bert = _read(root / "config.json", BertConfig)
        st_config = _read(root / "sentence_bert_config.json", SentenceBertConfig)
        max_len = min(st_config.max_seq_length, bert.max_position_embeddings)
        for name in ("model.safetensors", "tokenizer.json"):
            if not (root / name).is_file():
                raise ConfigError(f"{root / name} is missing; reinstall the model")
        return cls(root=root, bert=bert, max_seq_length=max_len)


class BertEncoder:
    """Sentence embeddings exactly as sentence-transformers computes them for this pipeline."""

    def __init__(self, files: ModelFiles) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.files = files
        self._torch = torch
        weights = load_file(str(files.root / "model.safetensors"))
        # Some exports prefix every key with the architecture name.
        self._w = {k.removeprefix("bert."): v for k, v in weights.items()}
        missing = sorted(_weight_names(files.bert) - self._w.keys())
        if missing:
            raise ConfigError(
                f"{files.root / 'model.safetensors'} lacks {len(missing)} BERT weights, "
                f"e.g. {missing[:3]}; reinstall the model"
            )
        tokenizer = Tokenizer.from_file(str(files.root / "tokenizer.json"))
        # tokenizer.json carries fixed padding and truncation from its export; sentence-
        # transformers pads each batch to its longest text and truncates at max_seq_length.
        tokenizer.enable_truncation(files.max_seq_length)
        pad_id = files.bert.pad_token_id
        tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id))
        self._tokenizer = tokenizer

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, max_tokens: int | None = None
    ) -> NDArray[np.float32]:
        """L2-normalised embeddings, one row per text, in the order given. Each text is cut at
        ``max_tokens`` tokens (special tokens included; at most the model's max_seq_length)."""
        dim = self.files.bert.hidden_size
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        limit = self.files.max_seq_length if max_tokens is None else max_tokens
        limit = max(2, min(limit, self.files.max_seq_length))
        if self._tokenizer.truncation is None or self._tokenizer.truncation["max_length"] != limit:
            self._tokenizer.enable_truncation(limit)
        # Like sentence-transformers: strip, and batch longest-first so padding stays short.
        stripped = [t.strip() for t in texts]
        order = np.argsort([-len(t) for t in stripped], kind="stable")
        out = np.empty((len(texts), dim), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            encoded = self._tokenizer.encode_batch([stripped[i] for i in idx])
            ids = self._torch.tensor([e.ids for e in encoded])
            mask = self._torch.tensor([e.attention_mask for e in encoded])
            out[idx] = self._forward(ids, mask).numpy()
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        torch = self._torch
        functional = torch.nn.functional
        cfg, w = self.files.bert, self._w
        heads, hidden = cfg.num_attention_heads, cfg.hidden_size
        batch, length = ids.shape

        def linear(x: Any, name: str) -> Any:
            return functional.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

        def norm(x: Any, name: str) -> Any:
            return functional.layer_norm(
                x, (hidden,), w[f"{name}.weight"], w[f"{name}.bias"], cfg.layer_norm_eps
            )

        def split_heads(x: Any) -> Any:
            return x.view(batch, length, heads, hidden // heads).transpose(1, 2)

        with torch.inference_mode():
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][:length]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            x = norm(x, "embeddings.LayerNorm")
            keep = mask[:, None, None, :].bool()  # padding is never attended to
            for i in range(cfg.num_hidden_layers):
                p = f"encoder.layer.{i}"
                q, k, v = (
                    split_heads(linear(x, f"{p}.attention.self.{n}"))
                    for n in ("query", "key", "value")
                )
                attended = functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
                attended = attended.transpose(1, 2).reshape(batch, length, hidden)
                x = linear(attended, f"{p}.attention.output.dense") + x
                x = norm(x, f"{p}.attention.output.LayerNorm")
                inner = functional.gelu(linear(x, f"{p}.intermediate.dense"))
                x = norm(linear(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
            weights = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return functional.normalize(pooled, p=2.0, dim=1)


def _weight_names(cfg: BertConfig) -> set[str]:
    """Every tensor the forward pass reads."""
    names = {
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
    }
    parts = (
        "attention.self.query", "attention.self.key", "attention.self.value",
        "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
        "output.dense", "output.LayerNorm",
    )  # fmt: skip
    for i in range(cfg.num_hidden_layers):
        for part in parts:
            names |= {f"encoder.layer.{i}.{part}.weight", f"encoder.layer.{i}.{part}.bias"}
    return names
