"""What fncall_graph._compat relies on still holds in the installed LangGraph and LangChain.

Each test fails loudly when a release moves or changes one of the private pieces, so
the change is seen here and not as a quiet change of behaviour.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import InjectedState
from langgraph.prebuilt.tool_node import ToolRuntime
from langgraph.types import Command
from typing_extensions import TypedDict

from fncall_graph._compat import (
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    ChatOpenAIMaxTokens,
    DeltaSnapshot,
    has_own_async,
    messages_delta_reducer,
    streams_tokens,
    task_position,
)


class _State(TypedDict):
    n: int


def _graph(saver: InMemorySaver) -> object:
    builder = StateGraph(_State)
    builder.add_node("a", lambda s: {"n": s["n"] + 1})
    builder.add_node("b", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=saver)


@pytest.mark.parametrize(("durability", "checkpoints"), [("exit", 1), ("sync", 4)])
def test_langgraph_reads_the_default_durability_from_the_config_key(
    durability: str, checkpoints: int
) -> None:
    saver = InMemorySaver()
    graph = _graph(saver).with_config(configurable={CONFIG_KEY_DURABILITY: durability})
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"n": 0}, config) == {"n": 2}
    assert len(list(saver.list(config))) == checkpoints


def test_chat_openai_request_payload_is_overridable() -> None:
    model = ChatOpenAIMaxTokens(
        model="x", base_url="http://127.0.0.1:1/v1", api_key="k", max_tokens=8
    )
    payload = model._get_request_payload("hi")
    assert payload["max_tokens"] == 8
    assert "max_completion_tokens" not in payload
    assert model._get_request_payload("hi", max_tokens=99)["max_tokens"] == 99


def test_async_implementations_are_told_apart() -> None:
    @tool
    def sync_tool(x: int) -> int:
        """Sync."""
        return x

    @tool
    async def async_tool(x: int) -> int:
        """Async."""
        await asyncio.sleep(0)
        return x

    class OwnAsync(BaseTool):
        name: str = "own"
        description: str = "own"

        def _run(self, x: int) -> int:
            return x

        async def _arun(self, x: int) -> int:
            return x

    class SyncOnly(BaseTool):
        name: str = "sync_only"
        description: str = "sync only"

        def _run(self, x: int) -> int:
            return x

    assert isinstance(sync_tool, StructuredTool)
    assert not has_own_async(sync_tool)
    assert has_own_async(async_tool)
    assert has_own_async(OwnAsync())
    assert not has_own_async(SyncOnly())


def test_a_task_knows_its_thread_step_and_checkpointer() -> None:
    """task_position and CONFIG_KEY_CHECKPOINTER: what the tools node claims calls by."""
    seen: list[tuple[object, object]] = []

    def node(state: _State, config: RunnableConfig) -> _State:
        seen.append((task_position(config), config["configurable"].get(CONFIG_KEY_CHECKPOINTER)))
        return {"n": state["n"] + 1}

    saver = InMemorySaver()
    inner = StateGraph(_State)
    inner.add_node("leaf", node)
    inner.add_edge(START, "leaf")
    outer = StateGraph(_State)
    outer.add_node("root", node)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "root")
    outer.add_edge("root", "sub")
    graph = outer.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 0}, config)

    (root, root_saver), (leaf, leaf_saver) = seen
    assert root_saver is saver and leaf_saver is saver
    steps = {c.config["configurable"]["checkpoint_id"]: c for c in saver.list(config)}
    # the root task runs from the checkpoint of its step (step 0: the input applied)
    assert root[:2] == ("t", "")
    assert steps[root[2]].metadata["step"] == 0
    thread, namespace, step = leaf
    assert thread == "t" and namespace.startswith("sub:") and "|" not in namespace
    sub_steps = saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": namespace}})
    assert step in [c.config["configurable"]["checkpoint_id"] for c in sub_steps]
    assert task_position({"configurable": {}}) is None


def test_a_node_knows_when_its_interrupt_is_answered_by_id() -> None:
    """LangGraph hands a resume map's value to the interrupt of that id, and the node's
    config shows it (``resumed_by_id``): for its first and later interrupts, not for an
    answer without an id, nor for another interrupt's id."""
    from langgraph.types import Command, interrupt

    from fncall_graph._compat import resumed_by_id

    seen: list[tuple[bool, bool]] = []

    def ask(state: _State, config: RunnableConfig) -> _State:
        seen.append((resumed_by_id(config, 0), resumed_by_id(config, 1)))
        interrupt("first")
        interrupt("second")
        return {"n": state["n"] + 1}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    [first] = graph.invoke({"n": 0}, config)["__interrupt__"]
    graph.invoke(Command(resume={"0" * 32: "elsewhere"}), config)  # another id
    graph.invoke(Command(resume="plain"), config)  # no id
    [second] = graph.get_state(config).interrupts
    assert second.id != first.id
    graph.invoke(Command(resume={second.id: "yes"}), config)
    assert seen == [(False, False), (False, False), (False, False), (False, True)]
    # the map of a run resumed by the first interrupt's id
    graph2 = builder.compile(checkpointer=InMemorySaver())
    [first2] = graph2.invoke({"n": 0}, config)["__interrupt__"]
    seen.clear()
    graph2.invoke(Command(resume={first2.id: "yes"}), config)
    assert seen == [(True, False)]


def test_pause_stops_a_task_as_interrupt_does_without_taking_an_answer() -> None:
    """``pause`` raises the interrupt ``interrupt`` would (same id, value and schema, so
    an answer by that id reaches it), while an answer without an id waiting at the
    checkpoint is left alone."""
    from langgraph.types import Command, interrupt

    from fncall_graph._compat import pause

    got: list[object] = []

    def ask(state: _State, config: RunnableConfig) -> _State:
        got.append(interrupt("first", response_schema=str))
        if state["n"] == 0:
            pause(config, "second", 1, str)
        got.append(interrupt("second", response_schema=str))
        return {"n": state["n"] + 1}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    [first] = graph.invoke({"n": 0}, config)["__interrupt__"]
    [paused] = graph.invoke(Command(resume="a"), config)["__interrupt__"]
    assert paused.value == "second" and paused.response_schema == {"type": "string"}
    graph.invoke(Command(resume="waiting"), config)  # no id: pause leaves it
    [still] = graph.get_state(config).interrupts
    assert still.id == paused.id != first.id
    graph.invoke(Command(update={"n": 1}, resume={paused.id: "b"}), config)
    assert got[-2:] == ["a", "b"]


def test_a_task_asks_several_interrupts_at_once_and_keeps_the_answers_it_took() -> None:
    """``pause_all`` raises several interrupts with the ids ``interrupt`` gives its
    interrupts 0 and 1, and saves the answers given with the task; ``task_answers`` reads
    those back, apart from the answers a run brings by id (LangGraph's own pick for the
    next interrupt included); ``plain_answer`` takes an answer without an id."""
    from langgraph.types import Command, interrupt

    from fncall_graph._compat import pause_all, plain_answer, task_answers

    mode = ["together"]
    seen: list[tuple[list[object], dict[int, object], object]] = []
    got: list[object] = []

    def ask(state: _State, config: RunnableConfig) -> _State:
        if mode[0] == "one by one":
            got.append(interrupt("q0"))
            got.append(interrupt("q1"))
            return {"n": state["n"] + 1}
        saved, brought = task_answers(config, 2)
        plain = None if brought else plain_answer(config)
        seen.append((saved, brought, plain))
        answers = [s if s is not None else brought.get(n) for n, s in enumerate(saved)]
        if plain is not None:
            answers[answers.index(None)] = plain
        if None in answers:
            asks = [(f"q{n}", n, str) for n, a in enumerate(answers) if a is None]
            pause_all(config, asks, answers)
        return {"n": state["n"] + 1}

    builder = StateGraph(_State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())

    # the ids are interrupt's own: its interrupt 0 takes the first id's answer, and its
    # interrupt 1, asked next, has the second id
    ids = {"configurable": {"thread_id": "ids"}}
    p0, p1 = graph.invoke({"n": 0}, ids)["__interrupt__"]
    assert (p0.value, p1.value, p0.response_schema) == ("q0", "q1", {"type": "string"})
    mode[0] = "one by one"
    [then] = graph.invoke(Command(resume={p0.id: "A"}), ids)["__interrupt__"]
    assert (then.value, then.id, got) == ("q1", p1.id, ["A"])
    mode[0] = "together"

    config = {"configurable": {"thread_id": "t"}}
    seen.clear()
    first, second = graph.invoke({"n": 0}, config)["__interrupt__"]
    [left] = graph.invoke(Command(resume={second.id: "B"}), config)["__interrupt__"]
    assert (left.value, left.id) == ("q0", first.id)
    assert graph.invoke(Command(resume="A"), config)["n"] == 1
    assert seen == [
        ([None, None], {}, None),
        ([None, None], {1: "B"}, None),
        ([None, "B"], {}, "A"),
    ]
    # the first answered first: LangGraph adds its answer to the task's own; read apart
    config = {"configurable": {"thread_id": "t2"}}
    seen.clear()
    first, second = graph.invoke({"n": 0}, config)["__interrupt__"]
    graph.invoke(Command(resume={first.id: "A"}), config)
    assert graph.invoke(Command(resume={second.id: "B"}), config)["n"] == 1
    assert seen[1:] == [([None, None], {0: "A"}, None), (["A", None], {1: "B"}, None)]


def test_an_answer_is_checked_as_interrupt_checks_it() -> None:
    from langgraph.errors import is_invalid_resume
    from pydantic import ValidationError

    from fncall_graph._compat import validate_answer

    assert validate_answer(int, "3") == 3
    with pytest.raises(ValidationError) as refused:
        validate_answer(int, "three")
    assert is_invalid_resume(refused.value)


def test_an_mcp1_session_keeps_its_pending_requests_where_the_answer_looks() -> None:
    from importlib.metadata import version

    if int(version("mcp").split(".")[0]) >= 2:
        pytest.skip("the mcp 1.x stack only")
    import anyio
    from mcp import ClientSession, McpError
    from mcp.types import ErrorData

    from fncall_graph._compat import answer_mcp1_request

    async def run() -> str:
        # a session whose server never answers: the request waits until answered here
        to_server, from_client = anyio.create_memory_object_stream(8)
        to_client, from_server = anyio.create_memory_object_stream(8)
        async with ClientSession(from_server, to_server) as session:

            async def answer() -> None:
                await from_client.receive()  # the request was sent and is pending
                said = ErrorData(code=-32603, message="answered")
                assert await answer_mcp1_request(session, 0, said)
                assert not await answer_mcp1_request(session, 99, said)  # none waits

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(answer)
                with pytest.raises(McpError) as failed:
                    await session.send_ping()
        to_client.close()
        return str(failed.value)

    assert asyncio.run(run()) == "answered"


def test_a_node_knows_whether_its_model_s_tokens_are_watched() -> None:
    """streams_tokens: what the model node reads to show a streamed reply, read (the
    ``messages`` stream and ``astream_events`` watch tokens; ``invoke`` does not)."""
    seen: list[bool] = []

    def node(state: _State, config: RunnableConfig) -> _State:
        seen.append(streams_tokens(config.get("callbacks")))
        return {"n": state["n"] + 1}

    builder = StateGraph(_State)
    builder.add_node("a", node)
    builder.add_edge(START, "a")
    graph = builder.compile()
    graph.invoke({"n": 0})
    list(graph.stream({"n": 0}, stream_mode="updates"))
    list(graph.stream({"n": 0}, stream_mode="messages"))

    async def events() -> None:
        async for _ in graph.astream_events({"n": 0}, version="v2"):
            pass

    asyncio.run(events())
    assert seen == [False, False, True, True]
    assert not streams_tokens(None) and not streams_tokens([])


def test_messages_replay_through_langgraph_s_delta_reducer_with_their_ids() -> None:
    """The history's channel reducer: ``add_messages``'s rules over a batch of writes,
    the same however the writes are batched, and ids LangGraph gives before a write is
    saved, so a thread read back twice has the same messages with the same ids."""
    first = [HumanMessage("hi", id="h"), AIMessage("hello", id="a")]
    writes = [first, [AIMessage("hello again", id="a")], [RemoveMessage(id="h")]]
    once = messages_delta_reducer([], writes)
    assert [(m.id, m.content) for m in once] == [("a", "hello again")]
    assert messages_delta_reducer(messages_delta_reducer([], writes[:1]), writes[1:]) == once

    class State(TypedDict):
        messages: Annotated[list, DeltaChannel(messages_delta_reducer)]

    builder = StateGraph(State)
    builder.add_node("answer", lambda s: {"messages": [("ai", "hello")]})
    builder.add_edge(START, "answer")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "hi")]}, config)
    read = [graph.get_state(config).values["messages"] for _ in range(2)]
    assert [m.id for m in read[0]] == [m.id for m in read[1]]
    assert all(m.id for m in read[0])
    # the checkpoints hold no copy of the history but the thread's first
    stored = [t.checkpoint["channel_values"] for t in saver.list(config)]
    assert sum("messages" in values for values in stored) <= 1


def test_a_delta_channel_s_full_copy_is_the_snapshot_type() -> None:
    """What a ``DeltaChannel`` saves as its full copy, as the messages-once savers find it."""
    channel = DeltaChannel(messages_delta_reducer)
    restored = channel.from_checkpoint(DeltaSnapshot([1, 2]))
    assert restored.get() == [1, 2]
    assert DeltaSnapshot([1]).value == [1]


# ToolNode's per-call code, run in the caller's thread (run_tool_calls_here)


def _tool_runtime_keywords(function: object) -> set[str]:
    """The keywords a function's ``ToolRuntime(...)`` call passes."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return {
        k.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ToolRuntime"
        for k in node.keywords
    }


def test_tool_node_builds_each_call_s_runtime_as_run_tool_calls_here_does() -> None:
    import dataclasses
    import inspect

    from langgraph.prebuilt.tool_node import ToolNode, ToolRuntime

    from fncall_graph._compat import run_tool_calls_here

    fields = {f.name for f in dataclasses.fields(ToolRuntime)}
    # a new field of ToolRuntime, or one ToolNode fills differently, must be passed here too
    assert _tool_runtime_keywords(ToolNode._func) == fields
    assert _tool_runtime_keywords(run_tool_calls_here) == fields
    source = inspect.getsource(ToolNode._func)
    for step in ("_parse_input", "_extract_state", "_run_one", "_combine_tool_outputs"):
        assert f"self.{step}(" in source or f"self.{step}," in source, step


def test_run_tool_calls_here_gives_what_tool_node_gives() -> None:
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import ToolNode

    from fncall_graph._compat import run_tool_calls_here

    @tool
    def count(state: Annotated[dict, InjectedState]) -> str:
        """Count the messages."""
        return str(len(state["messages"]))

    @tool
    def who(call_id: Annotated[str, InjectedToolCallId], runtime: ToolRuntime) -> str:
        """Say the call's id and the tools beside it."""
        return f"{call_id} {runtime.tool_call_id} {sorted(t.name for t in runtime.tools)}"

    @tool
    def jump(call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Answer with a Command."""
        return Command(update={"messages": [ToolMessage("jumped", tool_call_id=call_id)]})

    @tool
    def fail(x: int) -> str:
        """Fail."""
        raise ValueError("no")

    calls = [
        {"name": "count", "args": {}, "id": "c1"},
        {"name": "who", "args": {}, "id": "c2"},
        {"name": "jump", "args": {}, "id": "c3"},
        {"name": "fail", "args": {"x": 1}, "id": "c4"},
    ]
    node = ToolNode([count, who, jump, fail], handle_tool_errors=True)

    def run(here: bool) -> list[tuple[str, str, str]]:
        builder = StateGraph(MessagesState)
        if here:
            builder.add_node("tools", lambda s, config: run_tool_calls_here(node, s, config))
        else:
            builder.add_node("tools", node)
        builder.add_edge(START, "tools")
        out = builder.compile().invoke(
            {"messages": [HumanMessage("go"), AIMessage("", tool_calls=calls)]}
        )
        return [(m.tool_call_id, m.content, m.status) for m in out["messages"][2:]]

    assert run(here=True) == run(here=False)
    assert len(run(here=True)) == 4
