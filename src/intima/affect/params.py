"""The fitted parameters of the affect measure: numbers only, shipped as package data.

``intima/data/affect_params.json`` is written by ``python -m intima.affect.fit`` (see
:mod:`intima.affect.fit` and ``docs/affect.md``). It carries the scorer version it was fitted for
and is loaded lazily, once per process. Its digest enters :attr:`AffectConfig.key`, so scores made
with other parameters never mix with these.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, field_validator

from intima.core.errors import ConfigError

PARAMS_FILE: Final = "affect_params.json"
#: The version of the computation the shipped parameters belong to (= config.SCORER_VERSION).
PARAMS_VERSION: Final = "affect-3.0"
#: The version before: the same code computes it from parameters without an intensity head.
PREVIOUS_VERSION: Final = "affect-2.0"
BEHAVIOURS: Final = ("companionship_reinforcing", "boundary_maintaining", "companionship_neutral")


class AffectParams(BaseModel):
    """Every fitted number. Per behaviour b (keys: the three behaviours):

    * ``head_w[b]`` (384 embedding weights), ``head_v[b]`` (one weight per head phrase family,
      ``phrases.HEAD_FAMILIES[b]``), ``head_b[b]`` (intercept): the SSL head's logit;
    * ``nf_lambda[b]`` (>= 0, one per ``phrases.NF_FAMILIES[b]``): the retracting evidence;
    * ``thresholds[b]``: (medium, high) cut points of the measure;
    * ``centroids[s]``: unit vector of sub-behaviour s's description and exemplars;
    * ``intensity_w`` (one weight per ``intensity.FEATURE_NAMES``), ``intensity_b``: the
      intensity head behind the reinforcing sub-behaviours' ELS (v3). Without it (an empty
      ``intensity_w``) ELS is v2's lexicon strength: how the benchmarks recompute the previous
      version side by side.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    head_w: dict[str, list[float]]
    head_v: dict[str, list[float]]
    head_b: dict[str, float]
    nf_lambda: dict[str, list[float]]
    centroids: dict[str, list[float]]
    thresholds: dict[str, tuple[float, float]]
    intensity_w: list[float] = []
    intensity_b: float = 0.0
    #: how the numbers were fitted: rows used, L2 strength, the dev file's hash, family order
    notes: dict[str, str | int | float | list[str]] = {}

    @field_validator("nf_lambda")
    @classmethod
    def _non_negative(cls, v: dict[str, list[float]]) -> dict[str, list[float]]:
        if any(x < 0 for lam in v.values() for x in lam):
            raise ValueError("nf_lambda must be >= 0 (retracting evidence only lowers P)")
        return v

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def digest(self) -> str:
        """Hash of the canonical JSON (a property, not cached: model_copy would copy a cache)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")

    @classmethod
    def read(cls, path: Path) -> AffectParams:
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


@functools.cache
def default_params() -> AffectParams:
    """The shipped parameters (loaded on first use, then kept)."""
    source = resources.files("intima.data").joinpath(PARAMS_FILE)
    try:
        params = AffectParams.model_validate_json(source.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(
            f"{PARAMS_FILE} is missing from intima.data; run python -m intima.affect.fit"
        ) from exc
    if params.version != PARAMS_VERSION:
        raise ConfigError(
            f"{PARAMS_FILE} was fitted for {params.version}, this scorer is {PARAMS_VERSION}; "
            "refit with python -m intima.affect.fit"
        )
    return params
