"""A local LLM server for tests: Chat Completions, Anthropic Messages, Responses.

Start a :class:`LocalLLMServer`, script replies with :meth:`LocalLLMServer.enqueue`
(or a :class:`Responder`), and point a client at it. With litellm::

    with LocalLLMServer() as server:
        server.enqueue(Reply(text="hello"))
        response = await litellm.acompletion(
            model="openai/test-model",
            api_base=server.base_url,
            api_key="test",
            messages=[{"role": "user", "content": "hi"}],
        )

``model="anthropic/<name>"`` with ``api_base=server.anthropic_base_url`` reaches the
Anthropic Messages endpoint, ``litellm.aresponses(model="openai/<name>",
api_base=server.base_url)`` the Responses endpoint; one :class:`Reply` is rendered in
the format of the endpoint called. The server uses only the standard library and
listens on 127.0.0.1 by default. :func:`screenshot` draws a deterministic PNG of a
page, the image a browser agent sends with its tool results; :func:`small_window` a
configuration whose window a short conversation outgrows.
"""

from ._prefix import PrefixReport
from ._reply import (
    EchoResponder,
    Reply,
    Responder,
    ScriptedResponder,
    SummaryResponder,
    ToolCallSpec,
    content_text,
)
from ._screenshot import screenshot
from ._server import LocalLLMServer, RecordedRequest
from ._window import small_window

__all__ = [
    "EchoResponder",
    "LocalLLMServer",
    "PrefixReport",
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptedResponder",
    "SummaryResponder",
    "ToolCallSpec",
    "content_text",
    "screenshot",
    "small_window",
]
