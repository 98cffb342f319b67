"""`lossless mcp`: the recall tools over MCP, driven end to end by the official SDK's
own client over stdio, on a real database file that is not in the working directory."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from lossless.demo._config import demo_config
from lossless.demo.trajectory import RECALL_FACT, RECALL_QUERY, RECALL_TURN, generate_trajectory
from lossless.session import Session

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def database(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A compacted session of 240 replayed turns in its own directory."""
    db = tmp_path_factory.mktemp("served") / "agent.db"
    async with Session.open(model="gpt-4o", db=db, config=demo_config(None)) as session:
        for turn in generate_trajectory(turns=240):
            await session.record(turn.role, list(turn.parts))
        await session.compaction.wait_for_pending()
        return db, session.id


@pytest.fixture
async def client(database: tuple[Path, str], tmp_path: Path) -> AsyncIterator[Client]:
    db, _ = database
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lossless", "--db", str(db), "mcp"],
        env=env,
        cwd=str(tmp_path),
    )
    async with Client(server, read_timeout_seconds=60) as connected:
        yield connected


def _answer(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def test_the_server_lists_its_recall_tools(client: Client) -> None:
    listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    assert names >= {"sessions", "grep", "describe", "expand", "read"}
    for tool in listed.tools:
        assert tool.description, tool.name


async def test_a_compacted_fact_is_found_and_read_back(
    client: Client, database: tuple[Path, str], tmp_path: Path
) -> None:
    _, session_id = database
    sessions = _answer(await client.call_tool("sessions", {}))
    assert [row["id"] for row in sessions] == [session_id]
    question = f"Which host did we agree on for {RECALL_QUERY}?"
    hits = _answer(await client.call_tool("grep", {"query": question, "limit": 5}))
    message_hits = [hit for hit in hits if hit["owner_kind"] == "message"]
    assert message_hits and message_hits[0]["covering_summary_id"]
    summary_id = message_hits[0]["covering_summary_id"]
    expansion = _answer(
        await client.call_tool("expand", {"summary_id": summary_id, "max_tokens": 20_000})
    )
    assert any(
        RECALL_FACT in message["text"] and message["seq"] == RECALL_TURN
        for message in expansion["messages"]
    )
    # Focused on the hit: the window holds it whatever the size of the summary.
    around = _answer(
        await client.call_tool(
            "expand",
            {"summary_id": summary_id, "around": message_hits[0]["owner_id"], "max_tokens": 1_000},
        )
    )
    assert around["focus_id"] == message_hits[0]["owner_id"]
    assert any(RECALL_FACT in message["text"] for message in around["messages"])
    page = _answer(await client.call_tool("read", {"message_id": message_hits[0]["owner_id"]}))
    assert RECALL_FACT in page["text"]
    described = _answer(await client.call_tool("describe", {"target": session_id}))
    assert summary_id in {node["id"] for node in described["nodes"]}
    # Serving reads: nothing is created where the server runs.
    assert not any(os.scandir(tmp_path))


async def test_reading_an_image_id_shows_the_image_and_a_document_s_its_bytes(
    tmp_path: Path,
) -> None:
    import base64

    from lossless import MediaPart
    from lossless.testing import screenshot

    db = tmp_path / "shots.db"
    shot = screenshot(200, 120, seed=7)
    pdf = b"%PDF-1.7\n<< /Type /Pages /Count 1 >> << /Type /Page >>\n%%EOF"
    async with Session.open(model="gpt-4o", db=db) as session:
        await session.record(
            "user",
            [
                "The login page, and the contract.",
                MediaPart.image(shot, caption="login page"),
                MediaPart.document(pdf, filename="contract.pdf"),
            ],
        )
        parts = [p for m in session.history() for p in m.parts if isinstance(p, MediaPart)]
    image_id, document_id = (part.media_id for part in parts)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "lossless", "--db", str(db), "mcp"], env=env
    )
    async with Client(server, read_timeout_seconds=60) as client:
        image = await client.call_tool("read", {"message_id": image_id})
        document = await client.call_tool("read", {"message_id": document_id})
        unknown = await client.call_tool("read", {"message_id": "image_" + "0" * 32})
    assert json.loads(image.content[0].text)["caption"] == "login page"
    assert image.content[1].type == "image"
    assert base64.b64decode(image.content[1].data) == shot
    assert image.content[1].mime_type == "image/png"
    assert document.content[1].type == "resource"
    assert base64.b64decode(document.content[1].resource.blob) == pdf
    assert unknown.is_error


async def test_bad_calls_are_error_results_and_the_server_keeps_serving(client: Client) -> None:
    unknown = await client.call_tool("expand", {"summary_id": "sum_missing"})
    assert unknown.is_error
    assert "SummaryNotFoundError" in unknown.content[0].text
    too_many = await client.call_tool("grep", {"query": "parser", "limit": 10_000})
    assert too_many.is_error
    assert "limit" in too_many.content[0].text
    assert _answer(await client.call_tool("sessions", {}))


def test_serving_a_missing_database_fails_naming_it(tmp_path: Path) -> None:
    import subprocess

    missing = tmp_path / "absent.db"
    done = subprocess.run(
        [sys.executable, "-m", "lossless", "--db", str(missing), "mcp"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert done.returncode != 0
    assert str(missing) in done.stderr
    assert not missing.exists()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_over_http_a_token_is_required_when_one_is_set(
    database: tuple[Path, str], tmp_path: Path
) -> None:
    """``lossless mcp --http --token``: the MCP SDK's client with the bearer token
    lists the tools; a request without it gets a 401."""
    import subprocess

    import anyio
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    db, _ = database
    port = _free_port()
    command = [sys.executable, "-m", "lossless", "--db", str(db), "mcp", "--http"]
    process = await anyio.open_process(
        [*command, "--port", str(port), "--token", "s3cret"],
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx.AsyncClient() as plain:
            for _ in range(200):
                try:
                    refused = await plain.post(url, json={})
                    break
                except httpx.ConnectError:
                    await anyio.sleep(0.05)
        assert refused.status_code == 401
        authorised = create_mcp_http_client(headers={"Authorization": "Bearer s3cret"})
        async with (
            authorised,
            streamable_http_client(url, http_client=authorised) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
        assert "grep" in {tool.name for tool in listed.tools}
    finally:
        process.terminate()
        await process.wait()


def test_over_http_another_address_needs_a_token(
    database: tuple[Path, str], tmp_path: Path
) -> None:
    import subprocess

    db, _ = database
    done = subprocess.run(
        [sys.executable, "-m", "lossless", "--db", str(db), "mcp", "--http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "LOSSLESS_MCP_TOKEN"},
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "needs a bearer token" in done.stderr
