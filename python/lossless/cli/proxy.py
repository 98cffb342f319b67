"""``lossless proxy``: lossless context management in front of a model server, for a
client that sends its whole history every time."""

from __future__ import annotations

import contextlib
import signal
from typing import Annotated

import typer

from lossless.cli._common import settings, stdout_console

__all__ = ["proxy"]


def proxy(
    ctx: typer.Context,
    upstream: Annotated[
        str,
        typer.Option(
            "--upstream",
            help="The server to send bounded requests to, e.g. https://api.openai.com/v1.",
        ),
    ],
    host: Annotated[str, typer.Option(help="The address to serve on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to serve on (0: any free one).")] = 8787,
    context_limit: Annotated[
        int | None,
        typer.Option(help="The models' context window in tokens, when litellm does not know it."),
    ] = None,
    max_output: Annotated[int | None, typer.Option(help="Tokens kept free for each reply.")] = None,
    max_open_sessions: Annotated[
        int, typer.Option(help="Sessions kept open at once; the least used close first.", min=1)
    ] = 64,
) -> None:
    """Serve /v1/chat/completions, /v1/messages and /v1/responses in front of UPSTREAM.

    Point a client's base URL here: each conversation is kept in a session of the
    database (named by the X-Lossless-Session header, or by its first messages), and
    the upstream gets the bounded request instead of the whole history. Streams,
    errors and every other field pass through unchanged.
    """
    import anyio

    from lossless.config import Config, ModelConfig
    from lossless.proxy import LosslessProxy

    config = None
    if context_limit is not None or max_output is not None:
        model = ModelConfig()
        if context_limit is not None:
            model = model.model_copy(update={"context_limit": context_limit})
        if max_output is not None:
            model = model.model_copy(update={"max_output_tokens": max_output})
        config = Config(model=model)
    server = LosslessProxy(
        upstream=upstream,
        db=settings(ctx).db,
        config=config,
        host=host,
        port=port,
        max_open_sessions=max_open_sessions,
    )

    async def serve() -> None:
        # The first SIGINT or SIGTERM ends the serving loop as a normal return, so
        # the sessions close in order; a KeyboardInterrupt raised wherever the main
        # task happened to be could land inside that closing.
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with server:
                stdout_console().print(
                    f"lossless proxy on {server.url} -> {upstream} (sessions in {settings(ctx).db})"
                )
                async for _ in signals:
                    break

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve)
