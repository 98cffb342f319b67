"""The demo's frameworks act: the same tool-using conversation through the OpenAI
Agents SDK's ``Runner``, LangChain's ``create_agent`` and PydanticAI's ``Agent``,
each on lossless through its adapter, the project's local server as the model. A
framework that is not installed is skipped, and said so."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from lossless.config import Config
    from lossless.testing import LocalLLMServer

__all__ = ["FrameworksReport", "show_frameworks"]

TURNS = 10
PIN = "Amounts are integers in cents."


@dataclass
class FrameworksReport:
    """Per framework: (requests holding the pin, requests, smallest share of the
    conversation a late request carried); a framework skipped is absent."""

    runs: dict[str, tuple[int, int, float]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(kept == total and share < 1 for kept, total, share in self.runs.values())


async def show_frameworks(db_path: str, console: Console) -> FrameworksReport:
    from lossless.testing import LocalLLMServer, small_window

    console.rule("frameworks: the OpenAI Agents SDK, LangChain, PydanticAI on lossless")
    config = small_window()
    report = FrameworksReport()
    runs: dict[str, Callable[..., Awaitable[list[list[Any]]]]] = {
        "openai-agents": _agents_sdk,
        "langchain": _langchain,
        "pydantic-ai": _pydantic_ai,
    }
    for name, run in runs.items():
        with LocalLLMServer() as server:
            try:
                sent = await run(server, db_path, config)
            except ImportError:
                report.skipped.append(name)
                console.print(f"  {name}: skipped (pip install 'lossless[{name}]')")
                continue
        kept = sum(PIN in json.dumps(request) for request in sent)
        share = len(sent[-1]) / (4 * TURNS)
        report.runs[name] = (kept, len(sent), share)
        console.print(
            f"  {name}: {kept} of {len(sent)} requests held the pinned fact; the last "
            f"carried {len(sent[-1])} of the conversation's {4 * TURNS} messages"
        )
    return report


def _ask(server: LocalLLMServer, n: int) -> str:
    """Queues the model's tool call and answer for turn ``n``; returns its question."""
    from lossless.testing import Reply, ToolCallSpec

    server.enqueue(
        Reply(tool_calls=[ToolCallSpec("balance", json.dumps({"account": f"A-{n}"}))]),
        Reply(text=f"A-{n} holds 1204 cents."),
    )
    return f"What does account A-{n} hold?"


def balance(account: str) -> str:
    """The balance of an account."""
    return f"account {account}: 1204 cents; " + "entry " * 300


async def _agents_sdk(server: LocalLLMServer, db: str, config: Config) -> list[list[Any]]:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    from lossless.integrations.openai_agents import LosslessSession

    set_tracing_disabled(True)
    async with (
        AsyncOpenAI(base_url=server.base_url, api_key="local") as client,
        LosslessSession("demo-agents", model="openai/gpt-4o-mini", db=db, config=config) as memory,
    ):
        await (await memory.session()).pin(PIN)
        agent = Agent(
            name="bookkeeper",
            instructions="You keep the ledger.",
            model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
            tools=[function_tool(balance), *memory.recall_tools()],
        )
        for n in range(TURNS):
            await Runner.run(agent, _ask(server, n), session=memory)
    return [request["input"] for request in server.requests_to("responses")]


async def _langchain(server: LocalLLMServer, db: str, config: Config) -> list[list[Any]]:
    from langchain.agents import create_agent
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    from lossless.integrations.langchain import LosslessMiddleware

    middleware = LosslessMiddleware(model="openai/gpt-4o-mini", db=db, config=config)
    model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key=SecretStr("local"))
    agent = create_agent(
        model, tools=[tool(balance)], system_prompt="You keep the ledger.", middleware=[middleware]
    )
    state: dict[str, Any] = {"messages": []}
    run: RunnableConfig = {"configurable": {"thread_id": "demo-langchain"}}
    for n in range(TURNS):
        state["messages"].append({"role": "user", "content": _ask(server, n)})
        state = await agent.ainvoke(state, config=run)  # type: ignore[call-overload]
        if n == 0:
            await (await middleware.sessions.session("demo-langchain", "You keep the ledger.")).pin(
                PIN
            )
    await middleware.aclose()
    await model.root_async_client.close()
    return [request["messages"] for request in server.requests[2:]]


async def _pydantic_ai(server: LocalLLMServer, db: str, config: Config) -> list[list[Any]]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from lossless.integrations.pydantic_ai import LosslessHistory

    history = LosslessHistory(model="openai/gpt-4o-mini", db=db, config=config, key="demo-pyd")
    provider = OpenAIProvider(base_url=server.base_url, api_key="local")
    agent: Agent[None, str] = Agent(
        OpenAIChatModel("gpt-4o-mini", provider=provider),
        system_prompt="You keep the ledger.",
        capabilities=[history],
        tools=[balance],
    )
    messages: list[Any] = []
    for n in range(TURNS):
        result = await agent.run(_ask(server, n), message_history=messages)
        messages = result.all_messages()
        if n == 0:
            await (await history.sessions.session("demo-pyd", "You keep the ledger.")).pin(PIN)
    await history.aclose()
    await provider.client.close()
    return [request["messages"] for request in server.requests[2:]]
