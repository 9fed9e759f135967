"""Threads on a real PostgreSQL server through AsyncPostgresSaver.

The server is a throwaway cluster on loopback (tests/pg_server.py); the test FAILS if
PostgreSQL is not installed (run scripts/system-deps.sh). Tools are the seed's six
sqlite tools on a SQLite file (tests/sqlite_tools.py); models replay recorded outputs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langgraph.types import Command
from pg_server import postgres_url  # noqa: F401  (the fixture)
from seed_db import CALLS, ROUNDS, SYSTEM, as_pairs, make_database, session_outputs
from sqlite_tools import SqliteTools

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import async_postgres_saver, postgres_saver
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow


async def test_seed_session_in_one_thread(postgres_url, tmp_path):  # noqa: F811
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    model = ReplayChatModel(session_outputs())
    cfg = {"configurable": {"thread_id": "seed"}}
    async with async_postgres_saver(postgres_url) as saver:
        graph = create_fncall_graph(
            model, tools.tools(), dialect="hermes", system_prompt=SYSTEM, checkpointer=saver
        )
        per_round = []
        for question, _ in ROUNDS:
            before = len(model.inputs)
            result = await graph.ainvoke({"messages": [("user", question)]}, cfg)
            per_round.append(len(model.inputs) - before)
    assert per_round == [2, 2, 2, 3]
    printed = [i for _, idx in ROUNDS for i in idx]
    for position, fixture_index in enumerate(printed):
        if fixture_index is not None:
            expected = [(m["role"], m["content"]) for m in CALLS[fixture_index]["model_input"]]
            assert as_pairs(model.inputs[position]) == expected, f"model call {position + 1}"
    assert "6" in result["messages"][-1].content
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]

    # a new connection (sync saver this time) reads the same thread back
    with postgres_saver(postgres_url) as saver:
        graph = create_fncall_graph(
            ReplayChatModel([]), tools.tools(), dialect="hermes", checkpointer=saver
        )
        history = graph.get_state(cfg).values["messages"]
    ids = [c["id"] for m in history if isinstance(m, AIMessage) for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 9
    assert sorted(m.tool_call_id for m in history if isinstance(m, ToolMessage)) == sorted(ids)
    assert [m.content for m in history if isinstance(m, HumanMessage)] == [q for q, _ in ROUNDS]


async def test_interrupt_and_resume_on_a_new_connection(postgres_url, tmp_path):  # noqa: F811
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    outputs = session_outputs()[-3:]  # round 3: read, write, answer
    cfg = {"configurable": {"thread_id": "approve"}}
    gate = {"sqlite-write_query": True}
    async with async_postgres_saver(postgres_url) as saver:
        graph = create_fncall_graph(
            ReplayChatModel(outputs), tools.tools(), dialect="hermes", checkpointer=saver,
            interrupt_on=gate,
        )  # fmt: skip
        r = await graph.ainvoke({"messages": [("user", ROUNDS[3][0])]}, cfg)
        [pending] = r["__interrupt__"]
        assert pending.value["action_requests"][0]["name"] == "sqlite-write_query"
        assert tools.log_rows() == ["创建数据库"]

    async with async_postgres_saver(postgres_url) as saver:
        graph = create_fncall_graph(
            ReplayChatModel(outputs[2:]), tools.tools(), dialect="hermes", checkpointer=saver,
            interrupt_on=gate,
        )  # fmt: skip
        state = await graph.aget_state(cfg)
        assert state.next == ("approve",)
        r = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
    assert "6" in r["messages"][-1].content
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]


class PerQuestionReplay(BaseChatModel):
    """Replays a recording chosen by the question in the model input, so concurrent
    threads on one graph each get their own outputs whatever the interleaving."""

    replays: dict[str, list[str]]

    @property
    def _llm_type(self) -> str:
        return "per-question-replay"

    def _pick(self, messages: Sequence[BaseMessage]) -> AIMessage:
        question = next(m.content for m in messages if m.type == "human")
        answered = sum(str(m.content).count("<tool_response>") for m in messages)
        key = next(k for k in self.replays if k in str(question))
        return AIMessage(content=self.replays[key][answered])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        from langchain_core.outputs import ChatGeneration

        return ChatResult(generations=[ChatGeneration(message=self._pick(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(0)  # yield to the other threads, as a network call would
        return self._generate(messages, stop, **kwargs)


def question(i: int) -> str:
    return f"<q{i}> {i} 的平方是多少?"


def replay(i: int) -> list[str]:
    call = {"name": "sqlite-read_query", "arguments": {"query": f"SELECT {i} * {i} AS sq"}}
    return [
        f"<tool_call>\n{json.dumps(call)}\n</tool_call>",
        f"<a{i}> {i} 的平方是 {i * i}。",
    ]


async def test_fifty_concurrent_threads_on_one_graph(postgres_url, tmp_path):  # noqa: F811
    n = 50
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    model = PerQuestionReplay(replays={f"<q{i}>": replay(i) for i in range(n)})
    async with async_postgres_saver(postgres_url, max_connections=10) as saver:
        graph = create_fncall_graph(model, tools.tools(), dialect="hermes", checkpointer=saver)

        def cfg(i: int) -> dict[str, Any]:
            return {"configurable": {"thread_id": f"concurrent-{i}"}}

        results = await asyncio.gather(
            *(graph.ainvoke({"messages": [("user", question(i))]}, cfg(i)) for i in range(n))
        )
        states = [await graph.aget_state(cfg(i)) for i in range(n)]

    assert len(tools.timeline) == n
    seen_ids: set[str] = set()
    for i, (result, state) in enumerate(zip(results, states, strict=True)):
        assert result["messages"][-1].content == f"<a{i}> {i} 的平方是 {i * i}。"
        history = state.values["messages"]
        assert [type(m).__name__ for m in history] == [
            "HumanMessage",
            "AIMessage",
            "ToolMessage",
            "AIMessage",
        ]
        text = " ".join(str(m.content) for m in history) + json.dumps(
            [m.tool_calls for m in history if isinstance(m, AIMessage)]
        )
        others = [j for j in range(n) if j != i and (f"<q{j}>" in text or f"<a{j}>" in text)]
        assert others == [], f"thread {i} holds messages of threads {others}"
        assert history[2].content == str([{"sq": i * i}])
        assert history[1].tool_calls[0]["args"]["query"] == f"SELECT {i} * {i} AS sq"
        ids = {m.id for m in history} | {history[1].tool_calls[0]["id"]}
        assert not ids & seen_ids, "a message or call id appears in two threads"
        seen_ids |= ids
