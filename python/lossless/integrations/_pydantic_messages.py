"""PydanticAI's messages as Chat Completions messages and back, for
:mod:`lossless.integrations.pydantic_ai`.

What lossless stores of a run: system prompts, user prompts (text, images, PDF
documents), the model's text and tool calls, tool results and retry prompts. A
response's thinking parts are not carried: Chat Completions has no field for them
(PydanticAI's own OpenAI chat model drops them too). Audio, video and documents
other than PDF, which lossless does not store, raise :class:`InvalidInputError`
rather than vanish from the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)

from lossless.errors import InvalidInputError

__all__ = ["from_openai", "to_openai"]


def to_openai(messages: Sequence[ModelMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The run's messages as Chat Completions messages, and the leading system text."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            converted.extend(_request_messages(message))
        else:
            converted.append(_response_message(message))
    system = None
    if converted and converted[0]["role"] == "system":
        system = converted[0]["content"]
    return system, converted


def _request_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in request.parts:
        if isinstance(part, SystemPromptPart):
            out.append({"role": "system", "content": part.content})
        elif isinstance(part, UserPromptPart):
            out.append({"role": "user", "content": _user_content(part.content)})
        elif isinstance(part, ToolReturnPart):
            out.append(_tool_return(part))
        elif isinstance(part, RetryPromptPart):
            if part.tool_name is not None:
                out.append(_tool_message(part.tool_call_id, part.model_response()))
            else:
                out.append({"role": "user", "content": part.model_response()})
    return out


def _tool_message(call_id: str, content: str | list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _tool_return(part: ToolReturnPart) -> dict[str, Any]:
    """A tool's result; the images or PDFs it returned as parts of it, which lossless
    keeps with the result (PydanticAI's text names them ``See file <id>.``)."""
    text, files = part.model_response_str_and_user_content()
    # ``files`` frames each file with provenance strings; PydanticAI adds them again
    # when it sends the result back, so only the files are kept.
    media = [_content_part(item) for item in files if not isinstance(item, str)]
    if not media:
        return _tool_message(part.tool_call_id, text)
    return _tool_message(part.tool_call_id, [{"type": "text", "text": text}, *media])


def _user_content(content: str | Sequence[UserContent]) -> str | list[dict[str, Any]]:
    """A user prompt's content: its string as it is, a list as content parts."""
    if isinstance(content, str):
        return content
    return [_content_part(item) for item in content if not isinstance(item, CachePoint)]


def _content_part(item: UserContent) -> dict[str, Any]:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.content}
    if isinstance(item, ImageUrl):
        image: dict[str, Any] = {"url": item.url}
        detail = (item.vendor_metadata or {}).get("detail")
        if detail is not None:
            image["detail"] = detail
        return {"type": "image_url", "image_url": image}
    if isinstance(item, BinaryContent) and item.is_image:
        return {"type": "image_url", "image_url": {"url": item.data_uri}}
    if isinstance(item, BinaryContent) and item.media_type == "application/pdf":
        name = f"{item.identifier}.pdf"
        return {"type": "file", "file": {"file_data": item.data_uri, "filename": name}}
    kind = getattr(item, "media_type", None) or type(item).__name__
    raise InvalidInputError(
        f"a user prompt holds {kind!r} content; lossless stores text, images and PDF "
        "documents, so this message cannot be kept"
    )


def _response_message(response: ModelResponse) -> dict[str, Any]:
    texts = [part.content for part in response.parts if isinstance(part, TextPart)]
    calls = [
        {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
        }
        for part in response.parts
        if isinstance(part, ToolCallPart)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def from_openai(messages: Sequence[dict[str, Any]]) -> list[ModelMessage]:
    """Chat Completions messages as PydanticAI's; the parts between two responses
    (tool results, a user prompt, a system text) go in one request, as PydanticAI
    puts them."""
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    pending: list[ModelRequestPart] = []

    def flush() -> None:
        if pending:
            out.append(ModelRequest(parts=list(pending)))
            pending.clear()

    for message in messages:
        role, content = message["role"], message.get("content")
        if role == "assistant":
            flush()
            out.append(_response(message, names))
        elif role == "tool":
            call_id = message["tool_call_id"]
            name = names.get(call_id, "tool")
            pending.append(ToolReturnPart(name, _tool_content(content), tool_call_id=call_id))
        elif role == "system":
            pending.append(SystemPromptPart(_text(content)))
        else:
            pending.append(UserPromptPart(_user_prompt(content)))
    flush()
    return out


def _response(message: dict[str, Any], names: dict[str, str]) -> ModelResponse:
    text = _text(message.get("content"))
    parts: list[Any] = [TextPart(text)] if text else []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        names[call["id"]] = function["name"]
        parts.append(ToolCallPart(function["name"], function["arguments"], tool_call_id=call["id"]))
    return ModelResponse(parts=parts)


def _user_prompt(content: object) -> str | list[UserContent]:
    """A user message's content as a prompt: images and documents as PydanticAI's."""
    if not isinstance(content, list):
        return _text(content)
    items: list[UserContent] = []
    for block in content:
        kind = block.get("type")
        if kind == "image_url":
            url = block["image_url"]["url"]
            image = BinaryContent.from_data_uri(url) if url.startswith("data:") else ImageUrl(url)
            items.append(image)
        elif kind == "file" and str(block["file"].get("file_data", "")).startswith("data:"):
            items.append(BinaryContent.from_data_uri(block["file"]["file_data"]))
        else:
            items.append(str(block.get("text", "")))
    return items


def _tool_content(content: object) -> str | list[UserContent]:
    """A tool message's content as a tool return's: its text, with its files if any."""
    items = _user_prompt(content)
    if isinstance(items, str) or all(isinstance(item, str) for item in items):
        return _text(content)
    return items


def _text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "" if content is None else str(content)
