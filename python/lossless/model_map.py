"""Model limits from the model map litellm ships, read without importing litellm.

Importing litellm takes seconds and more than a hundred megabytes, and all a session
needs from it to open is a model's context window and reply limit. Those come from a
JSON file inside litellm's package (the map ``litellm.get_model_info`` answers from
when ``LITELLM_LOCAL_MODEL_COST_MAP`` is set). This module finds that file without
running litellm's ``__init__``, keeps the few fields limits need of each entry, and
looks a name up the way ``get_model_info`` does for the names users pass:

- the name as given, then, for ``provider/name``, the name without the provider
  (Bedrock also drops its routing prefixes, a region path and an ARN's path), then
  the name stripped of what only tells versions apart: a dated snapshot suffix
  (``-2024-08-06``), a fine-tuned model's organisation and id (``ft:gpt-4o:org::id``),
  a numeric version for Vertex AI, Gemini and Databricks (``-002``), Bedrock's
  cross-region and throughput parts;
- keys match case-insensitively, and an entry found under a provider's name must
  belong to that provider (the Bedrock and Vertex AI families match among
  themselves, ``litellm_proxy`` matches any);
- alias rows (``alias_of``, ``aliases``) answer as the entry they name;
- a name no candidate matches takes the map's capability rules (its
  ``fallback_generalizations``), and an entry of a listed provider takes the fields
  it lacks from the flagged rules, as litellm does.

litellm's network lookups (Ollama's server, Hugging Face configs) and its names
known only to its code are left out: such models need limits in the config.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "MAP_FILE",
    "MapEntry",
    "ModelMap",
    "load_model_map",
    "model_map_path",
    "read_model_map",
]

MAP_FILE = "model_prices_and_context_window_backup.json"

# Top-level keys of the file that are not models.
_RULES_KEY = "fallback_generalizations"
_RESERVED_KEYS = frozenset({"sample_spec", _RULES_KEY})

# Providers whose requests match entries of any provider.
_ANY_PROVIDER = frozenset({"litellm_proxy", "github", "nadir"})
# Providers whose model names carry a numeric version the map leaves out.
_NUMBERED_VERSIONS = frozenset({"vertex_ai", "gemini", "databricks"})
_BEDROCK = frozenset({"bedrock", "bedrock_converse"})
_BEDROCK_ROUTES = (
    "bedrock/",
    "chat_completions/",
    "converse/",
    "invoke/",
    "openai/",
    "mantle/",
    "nova-2/",
    "nova/",
)
_BEDROCK_CROSS_REGION = frozenset({"global", "us", "eu", "apac", "jp", "au", "us-gov"})
_AWS_REGION = re.compile(r"[a-z]{2}(?:-gov)?-[a-z]+-\d+")
# Modes whose entries take missing fields from the flagged rules.
_FILLED_MODES = frozenset({"chat", "responses"})

_DATED_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")
_NUMERIC_VERSION = re.compile(r"-\d+$")
_FINE_TUNE_TAIL = re.compile(r"(:[^:]*){3}$")
_THROUGHPUT_SUFFIX = re.compile(r"(:\d+):\d+k$")
_WINDOW_SUFFIX = re.compile(r"\[\w+\]$")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True, slots=True)
class MapEntry:
    """What limits need of one model map entry."""

    provider: str | None = None
    mode: str | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    # Older maps give the window here; litellm's own ``max_tokens`` field is derived.
    max_tokens: int | None = None

    @classmethod
    def of(cls, info: Mapping[str, Any]) -> MapEntry:
        """The limits fields of a map entry or rule; other fields are dropped."""
        provider, mode = info.get("litellm_provider"), info.get("mode")
        return cls(
            # Thousands of entries share a few hundred providers and modes.
            sys.intern(provider) if isinstance(provider, str) else None,
            sys.intern(mode) if isinstance(mode, str) else None,
            _tokens(info.get("max_input_tokens")),
            _tokens(info.get("max_output_tokens")),
            _tokens(info.get("max_tokens")),
        )

    def filled_from(self, other: MapEntry) -> MapEntry:
        """This entry with its missing fields taken from ``other``."""
        missing = {
            field.name: getattr(other, field.name)
            for field in fields(self)
            if getattr(self, field.name) is None
        }
        return replace(self, **missing)


def _tokens(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


@dataclass(frozen=True, slots=True)
class _Rule:
    """A capability rule of the map: entry fields for names its pattern finds."""

    pattern: re.Pattern[str]
    entry: MapEntry
    # Providers whose entries take the fields they lack from this rule.
    fills: frozenset[str]


class ModelMap:
    """The model map's entries and rules, with litellm's lookup rules."""

    def __init__(
        self,
        entries: Mapping[str, MapEntry],
        routing: list[tuple[re.Pattern[str], str]],
        capabilities: list[_Rule],
    ) -> None:
        self._entries = dict(entries)
        self._by_lower = {key.lower(): key for key in entries}
        self._routing = routing
        self._capabilities = capabilities
        providers = {entry.provider for entry in entries.values() if entry.provider}
        self._providers = frozenset(providers) | _ANY_PROVIDER

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, model: str) -> MapEntry | None:
        """The entry litellm's ``get_model_info`` would answer with for ``model``."""
        exact = self._get(model)
        prefix, slash, name = model.partition("/")
        if slash and prefix in self._providers:
            provider: str | None = prefix
        elif exact is not None:
            # A bare name the map knows: litellm infers the provider from that entry.
            return self._filled(*exact)
        else:
            provider, name = self._route(model), model
        candidates = list(_candidates(model, provider, name))
        for candidate in candidates:
            found = self._get(candidate)
            if found is not None and _provider_matches(found[1].provider, provider):
                return self._filled(*found)
        if any(self._get(candidate) is not None for candidate in candidates):
            # Known under another provider: the rules are for names the map lacks.
            return None
        return self._generalised(candidates, provider)

    def _get(self, name: str) -> tuple[str, MapEntry] | None:
        key = name if name in self._entries else self._by_lower.get(name.lower())
        return None if key is None else (key, self._entries[key])

    def _route(self, model: str) -> str | None:
        """The provider litellm's routing rules give a bare name it has no entry for."""
        return next(
            (provider for pattern, provider in self._routing if pattern.search(model)), None
        )

    def _filled(self, key: str, entry: MapEntry) -> MapEntry:
        if (entry.mode or "chat") not in _FILLED_MODES or entry.provider is None:
            return entry
        for rule in reversed(self._capabilities):
            # Later rules win, so they fill first.
            if entry.provider in rule.fills and rule.pattern.search(key):
                entry = entry.filled_from(rule.entry)
        return entry

    def _generalised(self, candidates: list[str], provider: str | None) -> MapEntry | None:
        for candidate in candidates:
            matched = [rule.entry for rule in self._capabilities if rule.pattern.search(candidate)]
            if matched:
                merged = MapEntry(provider)
                for entry in reversed(matched):
                    merged = merged.filled_from(entry)
                return merged
        return None


def _candidates(model: str, provider: str | None, name: str) -> Iterator[str]:
    """Names to try, in litellm's order: as given, without the provider, stripped."""
    yield model
    if provider in _BEDROCK:
        yield _bedrock_model_id(name)
    elif provider is not None:
        yield name
    yield _stripped(model, provider)


def _stripped(model: str, provider: str | None) -> str:
    """``model`` without what tells its versions apart, as litellm strips it."""
    if provider in _BEDROCK:
        return _bedrock_base_model(model)
    if provider in _NUMBERED_VERSIONS:
        return _NUMERIC_VERSION.sub("", model)
    if "ft:" in model:
        return _FINE_TUNE_TAIL.sub("", model)
    return _DATED_SNAPSHOT.sub("", model)


def _without_bedrock_routes(model: str) -> str:
    for route in _BEDROCK_ROUTES:
        if model.startswith(route):
            model = model.split("/", 1)[1]
    return model


def _bedrock_model_id(name: str) -> str:
    """The id Bedrock receives: no routing prefix, region path or ARN path."""
    name = _without_bedrock_routes(name)
    region, slash, model_id = name.partition("/")
    if slash and _AWS_REGION.fullmatch(region):
        name = model_id
    return name.rsplit("/", 1)[-1] if name.startswith("arn:") else name


def _bedrock_base_model(model: str) -> str:
    """A Bedrock id without routing, ARN path, throughput tier or cross-region prefix."""
    model = _without_bedrock_routes(model)
    if "arn" in model.lower():
        model = model.split("/")[-1]
    model = _WINDOW_SUFFIX.sub("", _THROUGHPUT_SUFFIX.sub(r"\1", model))
    region, dot, rest = model.partition(".")
    if dot and region in _BEDROCK_CROSS_REGION:
        return rest
    region, slash, rest = model.partition("/")
    if slash and _AWS_REGION.fullmatch(region):
        return rest
    return model


def _provider_matches(entry_provider: str | None, provider: str | None) -> bool:
    """Whether an entry of ``entry_provider`` answers for a request to ``provider``."""
    if provider is None or entry_provider is None or entry_provider == provider:
        return True
    if provider in _ANY_PROVIDER:
        return True
    if provider in ("vertex_ai", "fireworks_ai"):
        return entry_provider.startswith(provider)
    if provider.startswith("bedrock"):
        return entry_provider.startswith("bedrock")
    return provider == "azure_ai" and entry_provider in ("azure", "openai")


# -- reading the file -----------------------------------------------------------------------


def model_map_path() -> Path | None:
    """The model map file inside the installed litellm package, found without importing it.

    ``find_spec`` of a top-level package locates it without running its ``__init__``.
    """
    spec = importlib.util.find_spec("litellm")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / MAP_FILE
        if path.is_file():
            return path
    return None


class _ObjectReader:
    """Reads a JSON object's members one at a time from a text stream.

    The whole map decoded at once holds about ten megabytes of objects, and even its
    text alone, read in one piece, leaves the allocator holding megabytes it freed.
    This reader keeps a buffer of a few entries and decodes one value at a time, so
    only what is kept of each entry stays.
    """

    _CHUNK = 64 * 1024

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._text = ""
        self._at = 0
        self._decoder = json.JSONDecoder()

    def members(self) -> Iterator[tuple[str, Any]]:
        """Each key and value of the object, in the file's order."""
        self._expect("{")
        while self._peek() != "}":
            key = self._value()
            self._expect(":")
            yield key, self._value()
            if self._peek() == ",":
                self._at += 1
            elif self._peek() != "}":
                raise ValueError(f"the model map is cut short after {key!r}")

    def _more(self) -> bool:
        chunk = self._stream.read(self._CHUNK)
        if chunk:
            self._text = self._text[self._at :] + chunk
            self._at = 0
        return bool(chunk)

    def _peek(self) -> str:
        """The next character that is not white space, reading on as needed."""
        while True:
            space = _JSON_SPACE.match(self._text, self._at)
            self._at = space.end() if space else self._at
            if self._at < len(self._text) or not self._more():
                return self._text[self._at : self._at + 1]

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise ValueError(f"the model map has no {char!r} at character {self._at}")
        self._at += 1

    def _value(self) -> Any:
        self._peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._text, self._at)
            except json.JSONDecodeError:
                # A value cut by the end of the buffer: read on, unless the file ended.
                if not self._more():
                    raise
                continue
            # A number at the end of the buffer may go on in the next chunk.
            if end < len(self._text) or not self._more():
                self._at = end
                return value


def _served_names(
    entries: Mapping[str, MapEntry], pointers: Mapping[str, str], listed: Mapping[str, list[str]]
) -> dict[str, MapEntry]:
    """Every name the map answers to, with the entry it answers as.

    As litellm reads the map: a row whose ``alias_of`` names an entry answers as that
    entry, an entry's ``aliases`` add names for it, and an alias that collides with an
    entry or an earlier alias is dropped.
    """
    owners: dict[str, str] = {}
    for name, aliases in listed.items():
        for alias in aliases:
            if alias not in entries and alias not in owners:
                owners[alias] = name
    for alias, target in pointers.items():
        if target in entries and alias not in owners:
            owners[alias] = target
    return {**entries, **{alias: entries[owner] for alias, owner in owners.items()}}


def _compile_rules(
    rules: object,
) -> tuple[list[tuple[re.Pattern[str], str]], list[_Rule]]:
    """The map's routing rules (bare name -> provider) and capability rules."""
    routing: list[tuple[re.Pattern[str], str]] = []
    capabilities: list[_Rule] = []
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, dict) or "extends" in rule:
            continue
        pattern, info = rule.get("pattern"), rule.get("model_info")
        fills = rule.get("fill_missing_for_providers", [])
        if not isinstance(pattern, str) or not isinstance(info, dict):
            continue
        if not isinstance(fills, list) or not all(isinstance(p, str) for p in fills):
            continue
        try:
            compiled = re.compile(pattern, re.IGNORECASE)
        except re.error:
            continue
        if "litellm_provider" not in info:
            capabilities.append(_Rule(compiled, MapEntry.of(info), frozenset(fills)))
        elif isinstance(info["litellm_provider"], str) and len(info) == 1:
            routing.append((compiled, info["litellm_provider"]))
    return routing, capabilities


def read_model_map(stream: TextIO) -> ModelMap:
    """A :class:`ModelMap` of litellm's model map file, read from ``stream``."""
    entries: dict[str, MapEntry] = {}
    pointers: dict[str, str] = {}
    listed: dict[str, list[str]] = {}
    rules: object = None
    for key, value in _ObjectReader(stream).members():
        if key == _RULES_KEY and isinstance(value, dict):
            rules = value.get("rules")
        elif key in _RESERVED_KEYS or not isinstance(value, dict):
            continue
        elif isinstance(value.get("alias_of"), str):
            pointers[key] = value["alias_of"]
        else:
            entries[key] = MapEntry.of(value)
            aliases = value.get("aliases")
            if isinstance(aliases, list):
                listed[key] = [alias for alias in aliases if isinstance(alias, str)]
    return ModelMap(_served_names(entries, pointers, listed), *_compile_rules(rules))


_loaded: ModelMap | None = None
_loading = threading.Lock()


def load_model_map() -> ModelMap:
    """The model map of the installed litellm, read on first use and kept for the process.

    Reading it takes ~25 ms: async callers make the first call in a worker thread.
    Without the file the map is empty, and every model needs configured limits.
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    with _loading:
        if _loaded is None:
            path = model_map_path()
            with path.open(encoding="utf-8") if path else io.StringIO("{}") as stream:
                _loaded = read_model_map(stream)
        return _loaded
