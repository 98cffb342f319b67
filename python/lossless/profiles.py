"""Rendering profiles: what a stricter target needs beyond the request every
provider accepts.

``default`` is valid for every hosted provider litellm serves. Chat templates of
open models are stricter: ``strict`` makes user and assistant turns alternate,
``mistral`` also gives tool calls ids of exactly nine letters and digits, and
``llama3`` also sends one tool call per assistant message. ``auto`` picks one
from the model's name.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["PROFILES", "ProfileName", "profile_for"]

ProfileName = Literal["default", "strict", "mistral", "llama3"]
PROFILES: tuple[ProfileName, ...] = ("default", "strict", "mistral", "llama3")

# Name fragments of model families whose usual chat templates need a profile, most
# specific first. Hosted APIs of these families (through their own providers) take
# the default; the fragments are matched only for OpenAI-compatible servers.
_FAMILIES: tuple[tuple[tuple[str, ...], ProfileName], ...] = (
    (("mistral", "mixtral", "ministral", "codestral", "devstral", "magistral"), "mistral"),
    (("llama-3", "llama3", "llama_3"), "llama3"),
    (("gemma", "llama-2", "llama2", "vicuna", "zephyr"), "strict"),
)
# Providers that run a model's own chat template.
_TEMPLATE_PROVIDERS = ("openai", "hosted_vllm", "ollama", "ollama_chat", "llamafile", "lm_studio")


def profile_for(model: str, setting: ProfileName | Literal["auto"] = "auto") -> ProfileName:
    """The profile for ``model`` (a litellm name): ``setting`` unless it is ``auto``.

    ``auto`` chooses by the model's family when it is served through an
    OpenAI-compatible server (which applies the model's own template), else
    ``default``.
    """
    if setting != "auto":
        return setting
    provider, _, name = model.rpartition("/")
    if provider.split("/")[0] not in _TEMPLATE_PROVIDERS:
        return "default"
    lowered = name.lower()
    for fragments, profile in _FAMILIES:
        if any(fragment in lowered for fragment in fragments):
            return profile
    return "default"
