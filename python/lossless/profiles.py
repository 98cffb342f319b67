"""Rendering profiles: what a stricter target needs beyond the request every
provider accepts.

``default`` is valid for every hosted provider litellm serves. Chat templates of
open models are stricter: ``strict`` makes user and assistant turns alternate,
``mistral`` also gives tool calls ids of exactly nine letters and digits, and
``llama3`` also sends one tool call per assistant message, and ``strictest`` does
all three (what a session falls back to when a server refuses a request with a
chat-template error); ``plain`` also sends tool exchanges as text, for templates
without tool support (the last fallback). ``auto`` picks one from the model's name
and from how it is served: a model of unknown family behind an OpenAI-compatible
server (which applies the model's own template) gets ``strict``.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["PROFILES", "STRICTEST", "ProfileName", "profile_for", "stricter_profile"]

ProfileName = Literal["default", "strict", "mistral", "llama3", "strictest", "plain"]
PROFILES: tuple[ProfileName, ...] = (
    "default",
    "strict",
    "mistral",
    "llama3",
    "strictest",
    "plain",
)
#: The profile that meets every rule of the others at once, tool calls kept.
STRICTEST: ProfileName = "strictest"
#: ``strictest`` with tool exchanges as text: what a template without tools takes.
PLAIN: ProfileName = "plain"


def stricter_profile(profile: ProfileName) -> ProfileName | None:
    """The profile a session falls back to when a chat template refused what
    ``profile`` rendered: ``strictest``, then ``plain``; None after ``plain``."""
    if profile == PLAIN:
        return None
    return PLAIN if profile == STRICTEST else STRICTEST


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
# Of those, the ones that are an OpenAI-compatible server whatever the endpoint:
# ``openai/`` is one only with an ``api_base`` (without, it is OpenAI's own API).
_LOCAL_PROVIDERS = ("hosted_vllm", "ollama", "ollama_chat", "llamafile", "lm_studio")
# Name prefixes of models only their makers host, whose APIs take the default even
# behind a proxy's ``api_base`` (gpt-oss is open and served by llama.cpp and vLLM).
_HOSTED_FAMILIES = ("gpt-3", "gpt-4", "gpt-5", "chatgpt", "o1", "o3", "o4", "claude", "gemini")


def profile_for(
    model: str, setting: ProfileName | Literal["auto"] = "auto", *, api_base: str | None = None
) -> ProfileName:
    """The profile for ``model`` (a litellm name): ``setting`` unless it is ``auto``.

    ``auto`` chooses by the model's family when it is served through an
    OpenAI-compatible server (which applies the model's own template); a family it
    does not know gets ``strict`` there when the server is a local one
    (``hosted_vllm/``, ``ollama/``, ``lm_studio/``, ``llamafile/``, or ``openai/``
    with an ``api_base``): a server's name (``openai/local``) says nothing of the
    template it runs, and alternating turns are accepted by every template. Hosted
    providers keep ``default``.
    """
    if setting != "auto":
        return setting
    provider, _, name = model.rpartition("/")
    provider = provider.split("/")[0]
    if provider not in _TEMPLATE_PROVIDERS:
        return "default"
    lowered = name.lower()
    for fragments, profile in _FAMILIES:
        if any(fragment in lowered for fragment in fragments):
            return profile
    served_locally = provider in _LOCAL_PROVIDERS or api_base is not None
    if served_locally and not lowered.startswith(_HOSTED_FAMILIES):
        return "strict"
    return "default"
