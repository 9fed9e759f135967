"""The repeat guard: a call made again in the same user turn, after its result is in the
thread, is answered with that result and not run; the ``max_repeats``-th repeat ends the
turn with an assistant message saying why."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from fncall_graph import create_fncall_graph
from fncall_graph.graphs.factory import DEFAULT_MAX_ITERATIONS
from fncall_graph.nodes.model import STOP_REASON_KEY
from fncall_graph.testing import ReplayChatModel

MODES = pytest.mark.parametrize("mode", ["invoke", "ainvoke"])


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def hermes_call(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


async def run(graph: Any, text: str, mode: str, config: dict[str, Any]) -> Any:
    payload = {"messages": [("user", text)]}
    if mode == "invoke":
        return graph.invoke(payload, config)
    return await graph.ainvoke(payload, config)


class Counted:
    """A read tool that counts its runs and can be made to fail."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self.fail = 0

    def tool(self) -> Any:
        from langchain_core.tools import tool

        @tool
        def read_rows(table: str, limit: int = 10) -> str:
            """Read rows of a table."""
            self.runs.append({"table": table, "limit": limit})
            if self.fail:
                self.fail -= 1
                raise RuntimeError("database is locked")
            return f"{limit} rows of {table}"

        return read_rows


def turn_messages(messages: list[Any]) -> list[Any]:
    last_user = max(i for i, m in enumerate(messages) if m.type == "human")
    return messages[last_user + 1 :]


def assert_canonical(messages: list[Any]) -> None:
    """One ToolMessage per call, answering it."""
    asked = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(asked) == sorted(answered)


@MODES
async def test_twenty_repeats_run_the_tool_once_and_end_the_turn(mode) -> None:
    counted = Counted()
    model = ReplayChatModel([hermes_call("read_rows", {"table": "t"})] * 20)
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "how many rows?", mode, cfg("r"))
    assert counted.runs == [{"table": "t", "limit": 10}]
    # call 1 runs, call 2 is answered with its result, call 3 (the 2nd repeat) ends it
    assert len(model.inputs) == 3
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    assert last.additional_kwargs[STOP_REASON_KEY] == "max_repeats"
    assert "read_rows" in last.content and "max_repeats=2" in last.content
    assert_canonical(out["messages"])
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results[0].content == "10 rows of t" and results[0].status == "success"
    assert "Not run again" in results[1].content and "10 rows of t" in results[1].content
    assert results[2].status == "error" and "Not run" in results[2].content
    # the model saw the earlier result in the note
    assert "10 rows of t" in str(model.inputs[2][-1].content)


@MODES
async def test_max_repeats_is_configurable_and_none_turns_it_off(mode) -> None:
    counted = Counted()
    model = ReplayChatModel([hermes_call("read_rows", {"table": "t"})] * 6)
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver(), max_repeats=4
    )
    out = await run(graph, "q", mode, cfg("c"))
    assert len(counted.runs) == 1 and len(model.inputs) == 5
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_repeats"

    counted = Counted()
    model = ReplayChatModel([hermes_call("read_rows", {"table": "t"})] * 4)
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", max_repeats=None, max_iterations=4
    )
    out = await run(graph, "q", mode, cfg("off"))
    assert len(counted.runs) == 4
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_iterations"


@MODES
async def test_other_arguments_run_and_key_order_does_not_matter(mode) -> None:
    counted = Counted()
    model = ReplayChatModel(
        [
            hermes_call("read_rows", {"table": "a", "limit": 5}),
            hermes_call("read_rows", {"table": "b", "limit": 5}),
            hermes_call("read_rows", {"limit": 5, "table": "a"}),  # same call as the first
            "done",
        ]
    )
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("d"))
    assert counted.runs == [{"table": "a", "limit": 5}, {"table": "b", "limit": 5}]
    assert out["messages"][-1].content == "done"
    assert_canonical(out["messages"])


@MODES
async def test_a_failed_call_runs_again(mode) -> None:
    counted = Counted()
    counted.fail = 3
    model = ReplayChatModel([hermes_call("read_rows", {"table": "t"})] * 5 + ["done"])
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("f"))
    # three failures and a success: each attempt ran; the repeat after the success not
    assert len(counted.runs) == 4
    assert "Not run again" in out["messages"][-2].content
    assert out["messages"][-1].content == "done"


@MODES
async def test_a_new_user_turn_runs_the_same_call_again(mode) -> None:
    counted = Counted()
    call = hermes_call("read_rows", {"table": "t"})
    model = ReplayChatModel([call, "first answer", call, call, "second answer"])
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    await run(graph, "q1", mode, cfg("n"))
    out = await run(graph, "q2 (the table may have changed)", mode, cfg("n"))
    # once per turn: the second turn's repeat is answered from its own first run
    assert len(counted.runs) == 2
    assert "Not run again" in out["messages"][-2].content
    assert out["messages"][-1].content == "second answer"
    assert turn_messages(out["messages"])[1].content == "10 rows of t"


@MODES
async def test_the_ending_reply_runs_none_of_its_calls(mode) -> None:
    counted = Counted()
    same = hermes_call("read_rows", {"table": "t"})
    both = same + "\n" + hermes_call("read_rows", {"table": "other"})
    model = ReplayChatModel([same, same, both, "unused"])
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("e"))
    assert counted.runs == [{"table": "t", "limit": 10}]
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_repeats"
    assert_canonical(out["messages"])
    last_results = [m for m in out["messages"][-3:-1]]
    assert all(isinstance(m, ToolMessage) and m.status == "error" for m in last_results)


def test_one_max_iterations_default() -> None:
    counted = Counted()
    model = ReplayChatModel(
        [hermes_call("read_rows", {"table": f"t{i}"}) for i in range(DEFAULT_MAX_ITERATIONS + 5)]
    )
    graph = create_fncall_graph(model, [counted.tool()], dialect="hermes")
    out = graph.invoke({"messages": [("user", "q")]})
    assert len(model.inputs) == DEFAULT_MAX_ITERATIONS
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_iterations"


def test_bad_max_repeats_is_refused() -> None:
    model = ReplayChatModel(["x"])
    with pytest.raises(ValueError, match="max_repeats must be at least 1 or None, got 0"):
        create_fncall_graph(model, [Counted().tool()], max_repeats=0)
