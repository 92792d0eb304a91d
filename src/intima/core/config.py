"""Model configurations: what to call, how, and which settings change the output.

Spec grammar (``intima run --model SPEC``)::

    SPEC      := PROVIDER [ ":" MODEL ] [ "@" URL { "," URL } ]
    PROVIDER  := a registered provider name (llamacpp, openai-compat, openai, anthropic,
                 transformers, or a plugin's)
    MODEL     := the provider's model name; may itself contain ":" (e.g. ollama's "qwen3:8b")
    URL       := an http(s) base URL of an OpenAI-compatible API, e.g. http://gpu1:8000/v1

Examples: ``llamacpp`` (bundled SmolLM2-135M), ``llamacpp:/models/x.gguf``,
``openai-compat:Qwen/Qwen3-8B@http://gpu1:8000/v1,http://gpu2:8000/v1``,
``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-5``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from intima.core.errors import ConfigError
from intima.core.escape import quoted
from intima.core.labels import MAX_LABEL_CHARS, MAX_SPEC_CHARS

_URL_PREFIXES = ("http://", "https://")

#: How a reply schema reaches an OpenAI-compatible server (see ``ModelConfig.structured_output``).
StructuredOutput = Literal["auto", "json_schema", "json_object", "off"]
STRUCTURED_OUTPUT_MODES: tuple[str, ...] = ("auto", "json_schema", "json_object", "off")


class GenerationSettings(BaseModel):
    """Settings that change what a model writes; all are part of the cache key.

    ``None`` means the provider's default, as in the paper (default settings, no system prompt).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    max_tokens: Annotated[int, Field(ge=1, le=131072)] | None = 512
    seed: int | None = 0


class ModelSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    base_urls: tuple[str, ...] = ()

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        spec = spec.strip()
        if not spec:
            raise ConfigError("empty model spec; expected PROVIDER[:MODEL][@URL,...]")
        head, urls = spec, tuple[str, ...]()
        at = _url_split_index(spec)
        if at is not None:
            head, url_text = spec[:at], spec[at + 1 :]
            urls = tuple(u.strip().rstrip("/") for u in url_text.split(",") if u.strip())
            bad = [u for u in urls if not u.startswith(_URL_PREFIXES)]
            if bad or not urls:
                raise ConfigError(
                    f"model spec {quoted(spec)}: base URLs must start with http:// or https://"
                )
            for url in urls:
                _check_url(url)
        provider, _, model = head.partition(":")
        if "://" in model:
            raise ConfigError(
                f"model spec {quoted(spec)}: base URLs must start with http:// or https://"
            )
        if not provider.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"model spec {quoted(spec)}: bad provider name {quoted(provider)}")
        return cls(provider=provider, model=model, base_urls=urls)

    def __str__(self) -> str:
        text = f"{self.provider}:{self.model}" if self.model else self.provider
        return f"{text}@{','.join(self.base_urls)}" if self.base_urls else text


def _check_url(url: str) -> None:
    """A server URL that can be used as it is: a host, a port in range, no credentials (keys go
    in the environment or a key file; a URL is stored, listed and published)."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for 99999 or a non-number
        host = parts.hostname
    except ValueError as exc:
        raise ConfigError(f"server URL {quoted(_redacted(url))}: {exc}") from exc
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ConfigError(
            f"server URL {quoted(_redacted(url))} carries credentials; put the key in an "
            "environment variable (--api-key-env) or a key file (--api-key-file), never in the URL"
        )
    if parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        # A query string is where keys hide (?key=, ?api_key=, ?sig=); a base URL names a server
        # and a path only, and it is stored, listed and published.
        raise ConfigError(
            f"server URL {quoted(_redacted(url))} has a query string or fragment; give the server "
            "and path only (e.g. http://host:8000/v1) and put any key in an environment variable "
            "(--api-key-env) or a key file (--api-key-file)"
        )
    if not host:
        raise ConfigError(f"server URL {quoted(url)} has no host")
    if port == 0:
        raise ConfigError(f"server URL {quoted(url)}: port 0 cannot be connected to")


def _redacted(url: str) -> str:
    """The URL with anything before an '@' in its authority, and its query string and fragment,
    blanked out."""
    url = url.split("?", 1)[0].split("#", 1)[0]
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "[redacted]@" + authority.rsplit("@", 1)[1]
    return f"{scheme}{sep}{authority}{slash}{path}"


def _url_split_index(spec: str) -> int | None:
    """Index of the '@' that starts the URL list (model names may contain '@' too)."""
    for prefix in _URL_PREFIXES:
        idx = spec.find("@" + prefix)
        if idx != -1:
            return idx
    return None


class ModelConfig(BaseModel):
    """One model configuration: a model plus everything that shapes its answers.

    Only ``provider``, ``model``, ``system_prompt`` and ``generation`` reach the cache key.
    Operational knobs (URLs, concurrency, timeouts, retries, the key's variable name, the label)
    do not: running the same model on more servers must reuse the same answers.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: Annotated[str, Field(max_length=MAX_SPEC_CHARS)]
    label: Annotated[str, Field(max_length=MAX_LABEL_CHARS)] | None = None
    system_prompt: str | None = None
    generation: GenerationSettings = GenerationSettings()
    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None
    #: A file holding the API key (its path is stored, the key never is). Operational.
    api_key_file: Path | None = None
    concurrency: Annotated[int, Field(ge=1, le=4096)] | None = None
    timeout_s: Annotated[float, Field(gt=0)] = 120.0
    max_retries: Annotated[int, Field(ge=0, le=50)] = 6
    backoff_s: Annotated[float, Field(gt=0)] = 0.5
    max_backoff_s: Annotated[float, Field(gt=0)] = 30.0
    #: How a JSON schema is sent to OpenAI-compatible servers: ``auto`` (the default: try
    #: ``json_schema``, fall back to ``json_object`` and then to none when the server rejects the
    #: response_format, remembering what works per URL), ``json_schema`` (OpenAI, vLLM, Ollama),
    #: ``json_object`` (``{type: json_object, schema: ...}``, which llama-cpp-python's server
    #: turns into a grammar; it rejects ``json_schema``), or ``off`` (the prompt alone asks for
    #: JSON). Operational: not in the cache key.
    structured_output: StructuredOutput = "auto"
    #: Run even when an OpenAI-compatible server's model list does not name the model. A server
    #: that ignores names (llama.cpp, many proxies) answers with its own model, and the answers
    #: would be stored under the name asked for, so this is refused unless set. Operational.
    allow_unlisted_model: bool = False

    @field_validator("spec")
    @classmethod
    def _spec_parses(cls, value: str) -> str:
        ModelSpec.parse(value)
        return value

    @field_validator("base_urls")
    @classmethod
    def _urls_are_servers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # The same rules as a URL in the spec: --base-url and config files are stored too.
        for url in value:
            if not url.startswith(_URL_PREFIXES):
                raise ValueError(
                    f"base URL {quoted(_redacted(url))} must start with http:// or https://"
                )
            try:
                _check_url(url)
            except ConfigError as exc:  # pydantic reports ValueErrors only
                raise ValueError(str(exc)) from exc
        return value

    @property
    def parsed(self) -> ModelSpec:
        spec = ModelSpec.parse(self.spec)
        if self.base_urls:
            spec = spec.model_copy(
                update={"base_urls": tuple(u.rstrip("/") for u in self.base_urls)}
            )
        return spec

    @property
    def display_name(self) -> str:
        return self.label or str(ModelSpec.parse(self.spec).model_copy(update={"base_urls": ()}))

    def cache_fields(self) -> dict[str, Any]:
        spec = self.parsed
        return {
            "provider": spec.provider,
            "model": spec.model,
            "system_prompt": self.system_prompt,
            "generation": self.generation.model_dump(),
        }

    @property
    def config_key(self) -> str:
        return stable_hash(self.cache_fields())


def read_api_key(config: ModelConfig, default_env: str | None) -> str | None:
    """The key from ``api_key_file`` or the environment; ``None`` if neither names one.

    Keys come only from these two places, so no key ever sits in a config file or a store.
    """
    if config.api_key_file is not None:
        if config.api_key_env is not None:
            raise ConfigError("give either api_key_env or api_key_file, not both")
        try:
            key = config.api_key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the API key file {config.api_key_file}") from exc
        if not key:
            raise ConfigError(f"the API key file {config.api_key_file} is empty")
        return key
    env = config.api_key_env or default_env
    if env is None:
        return None
    from_env = os.environ.get(env)
    if not from_env:
        raise ConfigError(f"missing API key: set the environment variable {env}")
    return from_env


def stable_hash(obj: Any) -> str:
    """sha256 over canonical JSON: the same settings always give the same key."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class RunFile(BaseModel):
    """A TOML config file listing several model configurations for one run."""

    model_config = ConfigDict(extra="forbid")

    models: list[ModelConfig] = Field(min_length=1)
    dataset: str | None = None
    include_memory: bool = False
    cleaned: bool = False
    revision: str | None = None


def load_run_file(path: Path) -> RunFile:
    try:
        data = tomllib.loads(_read_file(path, "config file"))
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"config file {path}: not valid TOML ({str(exc)[:200]})") from exc
    try:
        return RunFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"config file {path}: {_first_problem(exc)}") from exc


def _read_file(path: Path, what: str) -> str:
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give the file")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} {path} does not exist") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({exc.strerror})") from exc


def _first_problem(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


#: USD per million tokens; higher is a typo (and would overflow the cost).
MAX_PRICE_PER_MTOK = 1_000_000.0


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # allow_inf_nan=False: a price of inf made every cost NaN, and --max-cost never stopped.
    # The cap keeps every cost finite (1e308 made it inf, which JSON exports cannot carry); no
    # model costs anywhere near a million dollars per million tokens.
    input_per_mtok: Annotated[float, Field(ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)]
    output_per_mtok: Annotated[float, Field(ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)]

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok
        ) / 1e6


class PriceTable(BaseModel):
    """USD per million tokens, keyed by model name (as in the spec) or ``provider:model``."""

    prices: dict[str, Price] = {}
    #: what the table is, named when a model is missing from it ("the price table FILE")
    source: str | None = None
    #: where each entry came from when tables are layered (key -> source; default: ``source``)
    origins: dict[str, str] = {}

    def _key(self, spec: ModelSpec) -> str | None:
        for key in (f"{spec.provider}:{spec.model}", spec.model):
            if key in self.prices:
                return key
        return None

    def for_model(self, spec: ModelSpec) -> Price | None:
        key = self._key(spec)
        return None if key is None else self.prices[key]

    def priced_by(self, spec: ModelSpec) -> str | None:
        """Which table priced the model (a file, or the default table with its date)."""
        key = self._key(spec)
        return None if key is None else self.origins.get(key, self.source)

    def over(self, base: PriceTable) -> PriceTable:
        """This table's entries over ``base``'s. An entry here wins however it names the model:
        a bare ``gpt-4o`` replaces the base's ``openai:gpt-4o`` too (the qualified key would
        otherwise be looked up first and win)."""
        replaced = set(self.prices)
        kept = {
            k: v
            for k, v in base.prices.items()
            if k not in replaced and k.partition(":")[2] not in replaced
        }
        mine = {k: self.origins.get(k, self.source or "") for k in self.prices}
        theirs = {k: base.origins.get(k, base.source or "") for k in kept}
        return PriceTable(
            prices={**kept, **self.prices},
            source=f"{self.source} over {base.source}",
            origins={**theirs, **mine},
        )


#: The dated list prices shipped with intima (``intima/data/prices.toml``).
DEFAULT_PRICES_FILE = "prices.toml"


def default_price_table() -> PriceTable:
    """The shipped table: the vendors' list prices for the hosted models the providers name,
    as of the date it carries (its source says so, wherever a price from it is shown)."""
    from importlib import resources

    text = resources.files("intima.data").joinpath(DEFAULT_PRICES_FILE).read_text("utf-8")
    data = tomllib.loads(text)
    return PriceTable(
        prices=data["prices"], source=f"the default price table (as of {data['as_of']})"
    )


def price_table_for(path: Path | None) -> PriceTable:
    """What prices a command's requests: the file given with ``--prices`` over the default
    table (the file's entries win), or the default table alone."""
    default = default_price_table()
    return default if path is None else load_price_table(path).over(default)


def load_price_table(path: Path) -> PriceTable:
    """TOML or JSON: ``["gpt-4o-mini"] input_per_mtok = 0.15  output_per_mtok = 0.6``; or the
    default table's dated form, the entries under ``prices`` beside ``as_of`` and ``sources``."""
    text = _read_file(path, "price table")
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"price table {path}: cannot parse ({str(exc)[:200]})") from exc
    source = f"the price table {path}"
    if isinstance(data, dict) and isinstance(data.get("prices"), dict) and "as_of" in data:
        source += f" (as of {data['as_of']})"
        data = data["prices"]
    try:
        return PriceTable.model_validate({"prices": data, "source": source})
    except ValidationError as exc:
        raise ConfigError(f"price table {path}: {_first_problem(exc)}") from exc
