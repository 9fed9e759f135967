"""The repeat guard: a read made again in the same user turn, after its result is in the
thread and with nothing written since, is answered with that result and not run; the
``max_repeats``-th repeat ends the turn with an assistant message saying why. A write
always runs (or is asked about), a read after a write that may touch it runs again, a
failed read runs once more, and no one is asked about a call the guard answers."""

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

        read_rows.metadata = {"readOnlyHint": True}  # the tool's author says it only reads
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
async def test_a_failed_read_runs_once_more(mode) -> None:
    counted = Counted()
    counted.fail = 1
    model = ReplayChatModel([hermes_call("read_rows", {"table": "t"})] * 3 + ["done"])
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("f"))
    # a failure and a success: both ran; the repeat after the success not
    assert len(counted.runs) == 2
    assert "Not run again" in out["messages"][-2].content
    assert out["messages"][-1].content == "done"


@MODES
async def test_a_read_that_failed_twice_is_not_run_a_third_time(mode) -> None:
    counted = Counted()
    counted.fail = 10
    model = ReplayChatModel([hermes_call("read_rows", {"table": "t"})] * 6)
    graph = create_fncall_graph(
        model, [counted.tool()], dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("f2"))
    # the first run and one retry; then answered with the failure, then the turn ends
    assert len(counted.runs) == 2
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["error"] * 4
    assert "failed 2 times" in results[2].content and "database is locked" in results[2].content
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_repeats"
    assert_canonical(out["messages"])


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


class Table:
    """A table behind a read tool and a write tool, as one server's or not."""

    def __init__(self, server: str | None = None, *, read_server: str | None = None) -> None:
        self.rows: list[str] = []
        self.counts = 0
        self.appends: list[str] = []
        self.server, self.read_server = server, read_server or server

    def tools(self) -> list[Any]:
        from langchain_core.tools import StructuredTool

        def count_rows() -> str:
            """Count the rows."""
            self.counts += 1
            return f"{len(self.rows)} rows"

        def append_row(value: str) -> str:
            """Append a row."""
            self.appends.append(value)
            self.rows.append(value)
            return f"appended {value}"

        def meta(server: str | None, **more: Any) -> dict[str, Any]:
            return {**({"mcp_server": server} if server else {}), **more}

        return [
            StructuredTool.from_function(
                count_rows, metadata=meta(self.read_server, readOnlyHint=True)
            ),
            StructuredTool.from_function(append_row, metadata=meta(self.server)),
        ]


def results_of(messages: list[Any]) -> list[str]:
    return [m.content for m in messages if isinstance(m, ToolMessage)]


COUNT = hermes_call("count_rows", {})


@MODES
@pytest.mark.parametrize("server", [None, "db"])
async def test_a_read_after_a_write_runs_again(mode, server) -> None:
    table = Table(server)
    model = ReplayChatModel([COUNT, hermes_call("append_row", {"value": "x"}), COUNT, "done"])
    graph = create_fncall_graph(
        model, table.tools(), dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "count, append x, count", mode, cfg(f"rw-{server}"))
    # the second count is not answered with the stale "0 rows"
    assert table.counts == 2
    assert results_of(out["messages"]) == ["0 rows", "appended x", "1 rows"]
    assert out["messages"][-1].content == "done"
    assert_canonical(out["messages"])


@MODES
async def test_a_read_beside_a_write_in_one_reply_runs_again(mode) -> None:
    table = Table("db")
    both = COUNT + "\n" + hermes_call("append_row", {"value": "x"})
    model = ReplayChatModel([COUNT, both, COUNT, "done"])
    graph = create_fncall_graph(
        model, table.tools(), dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("beside"))
    # the count beside the append may have read before or after it: the next one runs
    assert table.counts == 3
    assert results_of(out["messages"])[-1] == "1 rows"
    assert_canonical(out["messages"])


@MODES
async def test_a_write_to_another_server_leaves_the_read_answered(mode) -> None:
    table = Table("other", read_server="db")
    model = ReplayChatModel([COUNT, hermes_call("append_row", {"value": "x"}), COUNT, "done"])
    graph = create_fncall_graph(
        model, table.tools(), dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "q", mode, cfg("other"))
    assert table.counts == 1
    assert "Not run again" in results_of(out["messages"])[-1]


@MODES
async def test_a_write_made_twice_runs_twice(mode) -> None:
    table = Table("db")
    append = hermes_call("append_row", {"value": "x"})
    model = ReplayChatModel([append, append, "appended twice"])
    graph = create_fncall_graph(
        model, table.tools(), dialect="hermes", checkpointer=InMemorySaver()
    )
    out = await run(graph, "append x twice", mode, cfg("twice"))
    assert table.appends == ["x", "x"]
    assert results_of(out["messages"]) == ["appended x", "appended x"]
    assert out["messages"][-1].content == "appended twice"
    assert STOP_REASON_KEY not in out["messages"][-1].additional_kwargs


@MODES
async def test_a_looping_write_is_stopped_by_max_iterations_only(mode) -> None:
    table = Table()
    model = ReplayChatModel([hermes_call("append_row", {"value": "x"})] * 20)
    graph = create_fncall_graph(
        model, table.tools(), dialect="hermes", checkpointer=InMemorySaver(), max_iterations=4
    )
    out = await run(graph, "q", mode, cfg("loop"))
    assert table.appends == ["x"] * 4
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_iterations"


@MODES
async def test_a_failure_told_in_the_text_is_retried_once(mode) -> None:
    from langchain_core.tools import StructuredTool

    answers = ["Error: database is locked", "Error: database is locked", "3 rows", "4 rows"]
    runs: list[str] = []

    def count_rows() -> str:
        """Count the rows."""
        runs.append(answers[len(runs)])
        return runs[-1]

    tool = StructuredTool.from_function(count_rows, metadata={"readOnlyHint": True})
    model = ReplayChatModel([COUNT] * 5 + ["unused"])
    graph = create_fncall_graph(model, [tool], dialect="hermes", checkpointer=InMemorySaver())
    out = await run(graph, "q", mode, cfg("text"))
    # two text failures ran (the call and its one retry); then answered, then the end
    assert runs == answers[:2]
    assert out["messages"][-1].additional_kwargs[STOP_REASON_KEY] == "max_repeats"

    runs.clear()
    answers[1] = "3 rows"
    model = ReplayChatModel([COUNT] * 3 + ["done"])
    graph = create_fncall_graph(model, [tool], dialect="hermes", checkpointer=InMemorySaver())
    out = await run(graph, "q", mode, cfg("text2"))
    assert runs == ["Error: database is locked", "3 rows"]
    assert "Not run again" in results_of(out["messages"])[-1]
    assert out["messages"][-1].content == "done"


async def _answer(
    graph: Any, out: Any, mode: str, config: dict[str, Any], decision: str = "approve"
) -> Any:
    from langgraph.types import Command

    from fncall_graph import bind_decisions

    review = out["__interrupt__"][0].value
    answer = Command(
        resume=bind_decisions(review, [{"type": decision}] * len(review["action_requests"]))
    )
    if mode == "invoke":
        return graph.invoke(answer, config)
    return await graph.ainvoke(answer, config)


@MODES
async def test_no_approval_is_asked_for_a_read_the_guard_answers(mode) -> None:
    counted = Counted()
    read = hermes_call("read_rows", {"table": "t"})
    model = ReplayChatModel([read, read, "done"])
    graph = create_fncall_graph(
        model,
        [counted.tool()],
        dialect="hermes",
        checkpointer=InMemorySaver(),
        interrupt_on={"read_rows": True},
    )
    config = cfg("ask")
    out = await run(graph, "q", mode, config)
    assert len(out["__interrupt__"][0].value["action_requests"]) == 1
    out = await _answer(graph, out, mode, config)
    # the repeat is answered by the guard: no second question, one run
    assert "__interrupt__" not in out
    assert len(counted.runs) == 1
    assert "Not run again" in results_of(out["messages"])[-1]
    assert out["messages"][-1].content == "done"
    assert_canonical(out["messages"])


def gated_append(model: Any, table: Table) -> Any:
    """The table's tools in a graph that asks before each append."""
    return create_fncall_graph(
        model,
        table.tools(),
        dialect="hermes",
        checkpointer=InMemorySaver(),
        interrupt_on={"append_row": True},
    )


@MODES
async def test_a_gated_write_made_again_is_asked_again_and_runs(mode) -> None:
    table = Table("db")
    append = hermes_call("append_row", {"value": "x"})
    model = ReplayChatModel([append, append, "done"])
    graph = gated_append(model, table)
    config = cfg("ask-write")
    out = await run(graph, "append x twice", mode, config)
    out = await _answer(graph, out, mode, config)
    assert "__interrupt__" in out  # asked again for the second append
    out = await _answer(graph, out, mode, config)
    assert table.appends == ["x", "x"]
    assert out["messages"][-1].content == "done"
    assert_canonical(out["messages"])


@MODES
async def test_a_write_a_person_rejected_leaves_the_read_answered(mode) -> None:
    """A rejected write ran nothing, so the read before it is still true: its repeat is
    answered from it (a weak model that loops on reads around rejected writes, as the
    demo's bundled model does, is still stopped)."""
    table = Table("db")
    model = ReplayChatModel([COUNT, hermes_call("append_row", {"value": "x"}), COUNT, "done"])
    graph = gated_append(model, table)
    config = cfg("rejected-write")
    out = await run(graph, "count, append x, count", mode, config)
    out = await _answer(graph, out, mode, config, "reject")
    assert table.appends == [] and table.counts == 1
    assert "Not run again" in results_of(out["messages"])[-1]
    assert out["messages"][-1].content == "done"
    assert_canonical(out["messages"])


@MODES
async def test_a_read_beside_a_rejected_write_answers_its_repeat(mode) -> None:
    """A reply that reads and writes, its write rejected, made again: its read is
    answered from the first (the write beside it ran nothing)."""
    table = Table("db")
    both = COUNT + "\n" + hermes_call("append_row", {"value": "x"})
    model = ReplayChatModel([both, both, "done"])
    graph = gated_append(model, table)
    config = cfg("beside-rejected")
    out = await run(graph, "count and append x", mode, config)
    out = await _answer(graph, out, mode, config, "reject")
    out = await _answer(graph, out, mode, config, "reject")  # the write is asked again
    assert table.appends == [] and table.counts == 1
    assert out["messages"][-1].content == "done"
    assert_canonical(out["messages"])


def test_the_review_and_the_dispatch_decide_alike() -> None:
    """One decision for both: the calls a review may ask about are those dispatch runs."""
    from fncall_graph.guarantees import calls_that_run, repeat_answers

    table = Table("db")
    tools = {t.name: t for t in table.tools()}
    first = AIMessage("", id="a1", tool_calls=[{"name": "count_rows", "args": {}, "id": "c1"}])
    again = AIMessage(
        "",
        id="a2",
        tool_calls=[
            {"name": "count_rows", "args": {}, "id": "c2"},
            {"name": "append_row", "args": {"value": "x"}, "id": "c3"},
        ],
    )
    from langchain_core.messages import HumanMessage

    history = [HumanMessage("q"), first, ToolMessage("0 rows", tool_call_id="c1"), again]
    answered = repeat_answers(again, history, 2, tools)
    runs = calls_that_run(again, again.tool_calls, history, 2, tools)
    assert not answered  # the count beside the append runs
    assert [c["id"] for c in runs] == ["c2", "c3"]
    alone = again.model_copy(update={"tool_calls": again.tool_calls[:1], "id": "a3"})
    history[-1] = alone
    assert list(repeat_answers(alone, history, 2, tools)) == ["c2"]
    assert calls_that_run(alone, alone.tool_calls, history, 2, tools) == []
