"""Images and documents: stored once by content, read back byte for byte, refused
with a typed error when they cannot be taken, costed by each provider's published
rule, the newest sent inline and the older ones as a reference line in requests
that the ``openai`` types and litellm's Anthropic transformation accept, through
the own loop and ``send``, and kept by name through compaction."""

from __future__ import annotations

import base64
import itertools
import random
import sqlite3
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from conftest import make_config
from lossless import MediaPart, _native
from lossless.config import CompactionConfig, Config, MediaConfig, ModelConfig
from lossless.errors import InvalidInputError, MediaInputError, NotFoundError
from lossless.recall import read_media
from lossless.session import BuiltContext, Session
from lossless.testing import LocalLLMServer, Reply, SummaryResponder, ToolCallSpec
from lossless.testing.conformance import check_request

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

MODEL = "openai/vision-test"
INSTRUCTION = "Log in to the dashboard and download the March invoice."
MESSAGES = TypeAdapter(list[ChatCompletionMessageParam])


def png(width: int, height: int, seed: int) -> bytes:
    """A real PNG of random pixels: incompressible, so its bytes are its own."""
    rng = random.Random(seed)
    rows = b"".join(b"\0" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 0))
        + chunk(b"IEND", b"")
    )


def pdf(pages: int) -> bytes:
    objects = " ".join("<< /Type /Page >>" for _ in range(pages))
    return f"%PDF-1.7\n<< /Type /Pages /Count {pages} >> {objects}\n%%EOF".encode()


def data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "screenshot", "arguments": "{}"},
    }


def screenshot_turn(n: int, shot: bytes) -> list[dict[str, Any]]:
    """An assistant call to a computer-use tool and its result: text and a screenshot."""
    return [
        {"role": "assistant", "content": None, "tool_calls": [call(f"call_{n}")]},
        {
            "role": "tool",
            "tool_call_id": f"call_{n}",
            "content": [
                {"type": "text", "text": f"screen after step {n}"},
                {"type": "image_url", "image_url": {"url": data_url("image/png", shot)}},
            ],
        },
    ]


def config(window: int = 32_000, **media: Any) -> Config:
    return Config(
        model=ModelConfig(
            context_limit=window, max_output_tokens=1_000, token_correction=1.0, profile="default"
        ),
        compaction=CompactionConfig(output_budget=1_000),
        media=MediaConfig(**media),
    )


def image_urls(context: BuiltContext | list[dict[str, Any]]) -> list[str]:
    messages = context.messages if isinstance(context, BuiltContext) else context
    urls = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            urls += [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    return urls


def anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages litellm's Anthropic transformation makes of a request, offline."""
    import litellm

    request = litellm.AnthropicConfig().transform_request(
        model="claude-sonnet-4-5",
        messages=messages,
        optional_params={"max_tokens": 1_000},
        litellm_params={},
        headers={},
    )
    return list(request["messages"])


def anthropic_images(messages: list[dict[str, Any]]) -> list[bytes]:
    images = []
    for message in anthropic_messages(messages):
        for block in message["content"] if isinstance(message["content"], list) else []:
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for inner in [block, *(nested if isinstance(nested, list) else [])]:
                if inner.get("type") == "image":
                    images.append(base64.b64decode(inner["source"]["data"]))
    return images


# -- storage ----------------------------------------------------------------------------


async def test_bytes_read_back_exactly_and_are_stored_once(db: Path | str) -> None:
    shot, document = png(24, 16, seed=1), pdf(3)
    async with Session.open(model=MODEL, db=db, config=config()) as session:
        await session.record_messages(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": INSTRUCTION},
                        {"type": "image_url", "image_url": {"url": data_url("image/png", shot)}},
                        {
                            "type": "file",
                            "file": {
                                "file_data": data_url("application/pdf", document),
                                "filename": "march.pdf",
                            },
                        },
                    ],
                }
            ]
        )
        await session.record("user", [MediaPart.image(shot, caption="the login page")])
        parts = [part for message in session.history() for part in message.parts]
        media = [part for part in parts if isinstance(part, MediaPart)]
        assert [part.media_kind for part in media] == ["image", "document", "image"]
        image, doc, again = media
        assert image.media_id == again.media_id and image.media_id.startswith("image_")
        assert (image.width, image.height, image.byte_size) == (24, 16, len(shot))
        assert (doc.pages, doc.filename, doc.media_type) == (3, "march.pdf", "application/pdf")
        assert again.caption == "the login page" and image.data is None
        assert await session.read_media(image.media_id) == shot
        assert await session.read_media(doc.media_id) == document
        whole = read_media(image.media_id, db=session)
        assert whole.data == shot and whole.media_type == "image/png"
        with pytest.raises(NotFoundError):
            await session.read_media("image_" + "0" * 32)


@pytest.mark.sqlite_only(reason="reads the raw bytes of the SQLite file")
async def test_the_sqlite_file_holds_an_image_once_and_checks_out(tmp_path: Path) -> None:
    shot = png(20, 20, seed=7)
    path = tmp_path / "once.db"
    async with Session.open(model=MODEL, db=path, config=config()) as session:
        for turn in range(3):
            await session.record_messages(
                [{"role": "user", "content": f"look again ({turn})"}, *screenshot_turn(turn, shot)]
            )
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert raw.execute("SELECT count(*) FROM media").fetchone() == (1,)
    raw.close()
    assert len(shot) < 4_000, "the image fits one page of the file"
    assert path.read_bytes().count(shot) == 1


# -- refusals ---------------------------------------------------------------------------


BAD_INPUTS = {
    "bytes that are no image": (
        lambda: [{"type": "image_url", "image_url": {"url": data_url("image/png", b"hello")}}],
        "is not an image",
    ),
    "a declared type the bytes disagree with": (
        lambda: [{"type": "image_url", "image_url": {"url": data_url("image/jpeg", png(4, 4, 1))}}],
        "declared image/jpeg, but the bytes are image/png",
    ),
    "a data URL that is not base64": (
        lambda: [{"type": "image_url", "image_url": {"url": "data:image/png,%89PNG"}}],
        "must be base64",
    ),
    "a document over the limit": (
        lambda: [{"type": "file", "file": {"file_data": data_url("application/pdf", pdf(80))}}],
        "max_document_bytes",
    ),
    "an audio part": (
        lambda: [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}],
        "'input_audio' content parts are not supported",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
async def test_bad_media_is_refused_with_a_typed_error_and_nothing_is_stored(
    db: Path | str, case: str
) -> None:
    content, message = BAD_INPUTS[case]
    async with Session.open(model=MODEL, db=db, config=config(max_document_bytes=1_000)) as session:
        good = {"role": "user", "content": "this turn comes first in the list"}
        with pytest.raises(MediaInputError, match=message):
            await session.record_messages([good, {"role": "user", "content": content()}])
        assert session.history() == []
        with pytest.raises(InvalidInputError):
            await session.record("user", [MediaPart(data=b"GIF89a")])
        assert session.history() == []


# -- cost -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "size", "detail", "tokens"),
    [
        # OpenAI: 85 + 170 per 512-pixel tile after fitting 2048 and a 768 short side.
        ("gpt-4o", (1024, 1024), "high", 85 + 170 * 4),  # 768 x 768: 2 x 2 tiles
        ("gpt-4o", (2048, 4096), None, 85 + 170 * 6),  # 1024 x 2048 -> 768 x 1536: 2 x 3
        ("gpt-4o", (400, 300), None, 85 + 170 * 1),
        ("gpt-4o", (4000, 3000), "low", 85),
        # Anthropic: width x height / 750 after its downscale.
        ("anthropic/claude-sonnet-4-5", (1000, 1000), None, 1334),  # 1,000,000 / 750
        ("claude-opus-4-1", (200, 200), None, 54),  # 40,000 / 750
        ("bedrock/anthropic.claude-3-5-sonnet", (1092, 1092), None, 1590),
        # Gemini: 258 up to 384 x 384, else 258 per 768 x 768 tile.
        ("gemini/gemini-2.5-pro", (384, 384), None, 258),
        ("gemini/gemini-2.5-pro", (1280, 800), None, 258 * 4),
    ],
)
async def test_each_provider_counts_an_image_by_its_published_rule(
    model: str, size: tuple[int, int], detail: str | None, tokens: int
) -> None:
    assert _native.image_tokens(*size, model, detail) == tokens


# -- requests ---------------------------------------------------------------------------


async def test_the_newest_screenshots_go_inline_and_older_ones_as_references(
    db: Path | str,
) -> None:
    shots = [png(32, 20, seed=n) for n in range(5)]
    async with Session.open(model=MODEL, db=db, config=config(max_inline=2)) as session:
        messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION}]
        for n, shot in enumerate(shots):
            messages += screenshot_turn(n, shot)
        await session.record_messages(messages)
        context = session.build_context()
        MESSAGES.validate_python(context.messages)
        check_request(context.messages)
        assert image_urls(context) == [data_url("image/png", shot) for shot in shots[-2:]]
        # Every screenshot is named by its reference line, old or new.
        ids = [
            part.media_id
            for message in session.history()
            for part in message.parts
            if isinstance(part, MediaPart)
        ]
        text = "\n".join(str(message["content"]) for message in context.messages)
        assert all(f"[image {media_id} 32×20 png" in text for media_id in ids)
        # The images of a turn's results follow its tool messages, as a user's.
        roles = [message["role"] for message in context.messages]
        assert roles[-2:] == ["tool", "user"]
        assert anthropic_images(context.messages) == shots[-2:]
        assert context.tokens <= context.budget


@pytest.mark.parametrize("profile", ["strict", "strictest", "plain"])
async def test_a_strict_template_gets_a_screenshot_in_alternating_turns(
    db: Path | str, profile: str
) -> None:
    """Chat templates that want user and assistant turns to alternate get a tool
    result's screenshot merged into the user turn around it, never a second user
    turn in a row."""
    shots = [png(32, 20, seed=n) for n in range(2)]
    strict = config(max_inline=2).model_copy(
        update={"model": config().model.model_copy(update={"profile": profile})}
    )
    async with Session.open(model=MODEL, db=db, config=strict) as session:
        messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION}]
        for n, shot in enumerate(shots):
            messages += screenshot_turn(n, shot)
        messages.append({"role": "user", "content": "Now download the invoice."})
        await session.record_messages(messages)
        context = session.build_context()
        roles = [m["role"] for m in context.messages if m["role"] != "system"]
        assert all(a != b for a, b in itertools.pairwise(roles)), roles
        assert image_urls(context) == [data_url("image/png", shot) for shot in shots]
        assert "Now download the invoice." in str(context.messages[-1]["content"])


async def test_an_aged_image_leaves_only_its_attachment(db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config(max_inline=1)) as session:
        await session.record_messages(
            [{"role": "user", "content": INSTRUCTION}, *screenshot_turn(0, png(8, 8, 1))]
        )
        before = session.build_context().messages
        await session.record_messages(screenshot_turn(1, png(8, 8, 2)))
        after = session.build_context().messages
        # The first screenshot's tool message reads the same; its images message went.
        assert before[2] == after[2] and before[3]["role"] == "user"
        assert after[3]["role"] == "assistant"
        assert image_urls(after) == [data_url("image/png", png(8, 8, 2))]


# A screenshot or none per step, and the size of each step's text.
STEPS = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=10, max_value=400)), min_size=1, max_size=14
)


@pytest.mark.sqlite_only(reason="many sessions per example; the rules are the backends' own")
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS, inline=st.integers(min_value=0, max_value=3), seed=st.integers(0, 1_000))
async def test_every_request_of_a_screenshot_loop_holds_its_promises(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[bool, int]],
    inline: int,
    seed: int,
) -> None:
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("loop") / "loop.db"
    async with Session.open(
        model=MODEL,
        db=path,
        config=config(6_000, max_inline=inline),
        system_prompt="You operate a browser.",
    ) as session:
        await session.record_messages([{"role": "user", "content": INSTRUCTION}])
        shots: list[bytes] = []
        for n, (with_shot, words) in enumerate(steps):
            text = " ".join(
                rng.choice(["click", "scroll", "menu", "invoice"]) for _ in range(words)
            )
            content: list[dict[str, Any]] = [{"type": "text", "text": text}]
            if with_shot:
                shots.append(png(rng.randint(8, 40), rng.randint(8, 40), seed=seed * 100 + n))
                content.append(
                    {"type": "image_url", "image_url": {"url": data_url("image/png", shots[-1])}}
                )
            await session.record_messages(
                [
                    {"role": "assistant", "content": None, "tool_calls": [call(f"c{n}")]},
                    {"role": "tool", "tool_call_id": f"c{n}", "content": content},
                ]
            )
            context = await session.context()
            assert context.tokens <= context.budget
            texts = "\n".join(str(message["content"]) for message in context.messages)
            assert INSTRUCTION in texts
            newest = {data_url("image/png", shot) for shot in shots[max(0, len(shots) - inline) :]}
            assert set(image_urls(context)) <= (newest if inline else set())
            MESSAGES.validate_python(context.messages)
            anthropic_messages(context.messages)
            check_request(context.messages)


async def test_send_sends_the_newest_screenshot_to_the_model(
    server: LocalLLMServer, db: Path | str
) -> None:
    shots = [png(16, 12, seed=n) for n in range(3)]
    for n in range(3):
        server.enqueue(Reply(text="", tool_calls=[ToolCallSpec("screenshot", {"n": n})]))
    server.enqueue(Reply(text="The invoice is downloaded."))
    cfg = make_config(
        server,
        model=ModelConfig(context_limit=16_000, max_output_tokens=1_000, token_correction=1.0),
        media=MediaConfig(max_inline=1),
    )
    async with Session.open(model=MODEL, db=db, config=cfg) as session:
        result = await session.send(INSTRUCTION)
        for shot in shots:
            call_id = result.tool_calls[0].call_id
            await session.update_tool(
                call_id,
                status="completed",
                output="the screen now",
                media=[MediaPart.image(shot, caption="the browser window")],
            )
            result = await session.respond()
        assert result.text == "The invoice is downloaded."
    requests = server.requests
    assert [image_urls(body["messages"]) for body in requests] == [
        [],
        [data_url("image/png", shots[0])],
        [data_url("image/png", shots[1])],
        [data_url("image/png", shots[2])],
    ]
    for body in requests:
        MESSAGES.validate_python(body["messages"])


async def test_reading_an_image_id_shows_the_image_to_the_model(
    server: LocalLLMServer, db: Path | str
) -> None:
    shot = png(12, 12, seed=3)
    cfg = make_config(
        server,
        model=ModelConfig(context_limit=16_000, max_output_tokens=1_000),
        media=MediaConfig(max_inline=1),
    )
    async with Session.open(model=MODEL, db=db, config=cfg) as session:
        await session.record("user", [MediaPart.image(shot, caption="the error dialog")])
        media_id = session.history()[0].parts[0].media_id
        await session.record("assistant", "Noted.")
        await session.record("user", [MediaPart.image(png(12, 12, seed=4))])
        server.enqueue(
            Reply(text="", tool_calls=[ToolCallSpec("lossless_read", {"message_id": media_id})])
        )
        server.enqueue(Reply(text="The dialog says the card expired."))
        result = await session.send("What did the first dialog say?", tools="recall")
        assert result.text == "The dialog says the card expired."
    last = server.requests[-1]["messages"]
    assert image_urls(last)[-1] == data_url("image/png", shot)


# -- compaction -------------------------------------------------------------------------


async def test_a_summary_names_the_images_of_its_span(db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config(8_000)) as session:
        shot = png(10, 10, seed=9)
        await session.record("user", [INSTRUCTION, MediaPart.image(shot, caption="login form")])
        for n in range(12):
            await session.record("assistant", "step " + "scroll " * 150)
            await session.record("user", f"go on {n}")
        media_id = session.history()[0].parts[1].media_id
        result = await session.compact()
        assert result.status == "completed", result.reason
        summaries = [row["text"] for row in session.store.describe(session.id)]
        assert any(media_id in text for text in summaries)
        assert any("login form" in text for text in summaries)
        assert all(base64.b64encode(shot).decode()[:40] not in text for text in summaries)
        assert await session.read_media(media_id) == shot


async def test_a_model_summariser_reads_the_reference_line_never_the_bytes(
    server: LocalLLMServer, db: Path | str
) -> None:
    server.responder = SummaryResponder()
    cfg = make_config(
        server,
        model=ModelConfig(context_limit=8_000, max_output_tokens=1_000, token_correction=1.0),
        compaction=CompactionConfig(
            output_budget=1_000, model="openai/lossless-summariser", model_context_limit=100_000
        ),
    )
    shot = png(10, 10, seed=11)
    async with Session.open(model=MODEL, db=db, config=cfg) as session:
        await session.record("user", [INSTRUCTION, MediaPart.image(shot, caption="cart page")])
        for n in range(12):
            await session.record("assistant", "step " + "scroll " * 150)
            await session.record("user", f"go on {n}")
        media_id = session.history()[0].parts[1].media_id
        result = await session.compact()
        assert result.status == "completed", result.reason
    sent = "\n".join(
        str(message["content"]) for body in server.requests for message in body["messages"]
    )
    assert f"[image {media_id} 10×10 png, 1 KB: cart page]" in sent
    assert base64.b64encode(shot).decode()[:40] not in sent
