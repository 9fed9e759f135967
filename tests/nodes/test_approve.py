"""interrupt_on: one interrupt per reply, decisions approve / edit / reject / respond.

The seed's sqlite tools run for real on a SQLite file (tests/sqlite_tools.py); the model
is a ReplayChatModel speaking Hermes. ``SqliteTools.timeline`` records every tool run,
so the tests see exactly when (and how often) each call ran.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pg_server import postgres_url  # noqa: F401  (the fixture)
from pydantic import ValidationError
from seed_db import make_database
from sqlite_tools import SqliteTools

from fncall_graph import StaleApproval, bind_decisions, create_fncall_graph
from fncall_graph.adapters.checkpoint import postgres_saver, sqlite_saver
from fncall_graph.guarantees import normalize_interrupt_on, review_token
from fncall_graph.testing import ReplayChatModel

TASK = "查询韩梅梅的年龄,然后在log表里记录下"
READ = {"query": "SELECT age FROM students WHERE name = '韩梅梅'"}
WRITE = {"query": "INSERT INTO log (action) VALUES ('查询了韩梅梅的年龄')"}
FINAL = "韩梅梅的年龄是 6 岁,并且我已经在 `log` 表里记录下了这次查询操作。"
CFG = {"configurable": {"thread_id": "t"}}


def hermes(*calls: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(
        "<tool_call>\n"
        + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        + "\n</tool_call>"
        for name, args in calls
    )


SERIAL = [hermes(("sqlite-read_query", READ)), hermes(("sqlite-write_query", WRITE)), FINAL]


def build(tmp_path, outputs, interrupt_on, checkpointer=None, **options):
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    model = ReplayChatModel(outputs)
    graph = create_fncall_graph(
        model,
        tools.tools(),
        dialect="hermes",
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(),
        interrupt_on=interrupt_on,
        **options,
    )
    return graph, model, tools


def ran(tools: SqliteTools) -> list[tuple[str, str]]:
    return [(name, args) for name, args, _, _ in tools.timeline]


def messages(graph) -> list[Any]:
    return graph.get_state(CFG).values["messages"]


# ---------------------------------------------------------------- configuration


def test_interrupt_on_needs_a_checkpointer(tmp_path):
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    # None may be a parent graph's: refused when a run has none at all, before it runs
    graph = create_fncall_graph(
        ReplayChatModel(SERIAL), tools.tools(), interrupt_on={"sqlite-write_query": True}
    )
    with pytest.raises(ValueError, match="interrupt_on needs a checkpointer"):
        graph.invoke({"messages": [("user", "hi")]})
    with pytest.raises(ValueError, match="interrupt_on needs a checkpointer"):
        create_fncall_graph(
            ReplayChatModel(SERIAL),
            tools.tools(),
            interrupt_on={"sqlite-write_query": True},
            checkpointer=False,
        )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"allowed_decisions": []}, "non-empty list"),
        ({"allowed_decisions": ["approve", "maybe"]}, "unknown decision types"),
        ({"allowed_decisions": ["approve"], "args_schema": {}}, "unsupported keys"),
        ({"allowed_decisions": ["approve"], "when": "always"}, "'when' must be a function"),
        ("yes", "must be True, False or a dict"),
    ],
)
def test_bad_interrupt_on_is_refused(config, message):
    with pytest.raises(ValueError, match=message):
        normalize_interrupt_on({"sqlite-write_query": config})


def test_drawn_graph_shows_model_approve_tools(tmp_path):
    graph, _, _ = build(tmp_path, SERIAL, {"sqlite-write_query": True})
    edges = {(e.source, e.target) for e in graph.get_graph().edges}
    # all rejected: back to the next model call, which a Hermes thread starts at the adapter
    assert {("model", "approve"), ("approve", "tools"), ("approve", "adapter")} <= edges
    assert ("model", "tools") in edges  # replies with no gated call go straight on


# ---------------------------------------------------------------- the interrupt


def test_interrupt_lists_the_gated_call_and_approve_runs_it(tmp_path):
    graph, model, tools = build(tmp_path, SERIAL, {"sqlite-write_query": True})
    r = graph.invoke({"messages": [("user", TASK)]}, CFG)
    [pending] = r["__interrupt__"]
    assert pending.value["action_requests"] == [
        {
            "name": "sqlite-write_query",
            "args": WRITE,
            "description": f"Tool execution requires approval\n\nTool: sqlite-write_query\nArgs: {WRITE}",
            "tool_call_id": messages(graph)[-1].tool_calls[0]["id"],
        }
    ]
    assert pending.value["review_token"] == review_token(messages(graph)[-1].tool_calls)
    assert pending.value["review_configs"] == [
        {"action_name": "sqlite-write_query", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    assert pending.response_schema["required"] == ["decisions"]  # a form clients can render
    assert ran(tools) == [("read_query", json.dumps(READ, ensure_ascii=False))]
    assert graph.get_state(CFG).next == ("approve",)

    r = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    assert "__interrupt__" not in r
    assert r["messages"][-1].content == FINAL
    assert [n for n, _ in ran(tools)] == ["read_query", "write_query"]
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]
    assert model.remaining == 0


def test_edit_replaces_the_call_in_place(tmp_path):
    graph, model, tools = build(tmp_path, SERIAL, {"sqlite-write_query": True})
    graph.invoke({"messages": [("user", TASK)]}, CFG)
    before = messages(graph)
    ai_before = before[-1]
    edited = {"query": "INSERT INTO log (action) VALUES ('韩梅梅 6')"}
    graph.invoke(
        Command(
            resume={
                "decisions": [
                    {
                        "type": "edit",
                        "edited_action": {"name": "sqlite-write_query", "args": edited},
                    }
                ]
            }
        ),
        CFG,
    )
    after = messages(graph)
    ai_after = after[len(before) - 1]
    assert ai_after.id == ai_before.id  # replaced, not appended
    assert ai_after.tool_calls[0]["id"] == ai_before.tool_calls[0]["id"]
    assert ai_after.tool_calls[0]["args"] == edited
    assert sum(bool(isinstance(m, AIMessage) and m.tool_calls) for m in after) == 2
    assert tools.log_rows()[1:] == ["韩梅梅 6"]
    # the model's next input shows the edited call, written back in Hermes
    assert "韩梅梅 6" in str(model.inputs[-1][-2].content)


def test_reject_answers_the_call_without_running_it(tmp_path):
    outputs = [*SERIAL[:2], "好的,我不记录。韩梅梅 6 岁。"]
    graph, model, tools = build(tmp_path, outputs, {"sqlite-write_query": True})
    graph.invoke({"messages": [("user", TASK)]}, CFG)
    r = graph.invoke(
        Command(resume={"decisions": [{"type": "reject", "message": "不要写日志"}]}), CFG
    )
    assert r["messages"][-1].content == outputs[-1]
    answer = r["messages"][-2]
    assert isinstance(answer, ToolMessage)
    assert answer.status == "error" and answer.content == "不要写日志"
    assert answer.tool_call_id == r["messages"][-3].tool_calls[0]["id"]
    assert [n for n, _ in ran(tools)] == ["read_query"]
    assert tools.log_rows() == ["创建数据库"]
    assert "不要写日志" in str(model.inputs[-1][-1].content)  # the model was told


def test_one_interrupt_per_reply_and_ungated_siblings_run_once(tmp_path):
    counts = [
        ("sqlite-read_query", {"query": "SELECT COUNT(*) FROM students"}),
        ("sqlite-write_query", {"query": "INSERT INTO log (action) VALUES ('one')"}),
        ("sqlite-read_query", {"query": "SELECT COUNT(*) FROM log"}),
        ("sqlite-write_query", {"query": "INSERT INTO log (action) VALUES ('two')"}),
    ]
    graph, _, tools = build(tmp_path, [hermes(*counts), "done"], {"sqlite-write_query": True})
    r = graph.invoke({"messages": [("user", "count and log")]}, CFG)
    [pending] = r["__interrupt__"]
    assert [a["args"]["query"][-7:] for a in pending.value["action_requests"]] == [
        "('one')",
        "('two')",
    ]
    assert ran(tools) == []  # nothing runs before the decision, ungated calls included

    r = graph.invoke(Command(resume={"decisions": [{"type": "approve"}, {"type": "reject"}]}), CFG)
    assert r["messages"][-1].content == "done"
    assert sorted(q for _, q in ran(tools)) == sorted(
        json.dumps(args, ensure_ascii=False) for _, args in counts[:3]
    )
    assert tools.log_rows()[1:] == ["one"]
    history = messages(graph)
    ids = [c["id"] for c in history[1].tool_calls]
    answered = [m.tool_call_id for m in history if isinstance(m, ToolMessage)]
    assert sorted(answered) == sorted(ids)  # one answer per call, rejected one included
    rejected = next(m for m in history if isinstance(m, ToolMessage) and m.status == "error")
    assert rejected.tool_call_id == ids[3] and "rejected" in rejected.content


def test_all_rejected_goes_back_to_the_model(tmp_path):
    graph, model, tools = build(
        tmp_path,
        [hermes(("sqlite-write_query", WRITE)), "ok, not logged"],
        {"sqlite-write_query": True},
    )
    graph.invoke({"messages": [("user", "log it")]}, CFG)
    r = graph.invoke(Command(resume={"decisions": [{"type": "reject"}]}), CFG)
    assert r["messages"][-1].content == "ok, not logged"
    assert ran(tools) == [] and model.remaining == 0


def test_ungated_calls_do_not_interrupt(tmp_path):
    graph, _, _ = build(
        tmp_path, [hermes(("sqlite-read_query", READ)), "6"], {"sqlite-write_query": True}
    )
    r = graph.invoke({"messages": [("user", "age?")]}, CFG)
    assert "__interrupt__" not in r and r["messages"][-1].content == "6"


# ---------------------------------------------------------------- bad answers


@pytest.mark.parametrize(
    ("resume", "message"),
    [
        ({"decisions": []}, "0 decision"),
        ({"decisions": [{"type": "approve"}, {"type": "approve"}]}, "2 decision"),
        (
            {
                "decisions": [
                    {"type": "edit", "edited_action": {"name": "sqlite-write_query", "args": {}}}
                ]
            },
            "not allowed",
        ),
        ({"decisions": [{"type": "respond", "message": "x"}]}, "not allowed"),
        ({"decisions": [{"type": "maybe"}]}, "maybe"),
        ({"verdict": "yes"}, "decisions"),
    ],
)
def test_bad_decisions_are_refused_and_can_be_answered_again(tmp_path, resume, message):
    graph, _, tools = build(
        tmp_path,
        SERIAL,
        {
            "sqlite-write_query": {
                "allowed_decisions": ["approve", "reject"],
                "description": "写日志",
            }
        },
    )
    r = graph.invoke({"messages": [("user", TASK)]}, CFG)
    assert r["__interrupt__"][0].value["action_requests"][0]["description"] == "写日志"
    with pytest.raises(ValidationError, match=message):
        graph.invoke(Command(resume=resume), CFG)
    assert graph.get_state(CFG).next == ("approve",)  # nothing was saved
    assert tools.log_rows() == ["创建数据库"]
    r = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    assert r["messages"][-1].content == FINAL
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]


def test_edit_into_an_unknown_tool_is_refused(tmp_path):
    graph, _, _ = build(tmp_path, SERIAL, {"sqlite-write_query": True})
    graph.invoke({"messages": [("user", TASK)]}, CFG)
    bad = {"type": "edit", "edited_action": {"name": "rm_rf", "args": {}}}
    with pytest.raises(ValidationError, match="unknown tool 'rm_rf'"):
        graph.invoke(Command(resume={"decisions": [bad]}), CFG)


def test_respond_and_description_function(tmp_path):
    def describe(call, state, runtime):
        return f"{call['name']} after {len(state['messages'])} messages"

    graph, _, tools = build(
        tmp_path,
        SERIAL,
        {"sqlite-write_query": {"allowed_decisions": ["respond"], "description": describe}},
    )
    r = graph.invoke({"messages": [("user", TASK)]}, CFG)
    assert r["__interrupt__"][0].value["action_requests"][0]["description"] == (
        "sqlite-write_query after 4 messages"
    )
    r = graph.invoke(
        Command(resume={"decisions": [{"type": "respond", "message": "[{'affected_rows': 1}]"}]}),
        CFG,
    )
    assert r["messages"][-2].status == "success"
    assert tools.log_rows() == ["创建数据库"]  # answered by the person, not run


async def test_async_pause_and_resume_on_a_sqlite_file(tmp_path):
    from fncall_graph.adapters.checkpoint import async_sqlite_saver

    tools = SqliteTools(make_database(tmp_path / "test.db"))
    async with async_sqlite_saver(tmp_path / "ck.db") as saver:
        graph = create_fncall_graph(
            ReplayChatModel(SERIAL),
            tools.tools(),
            dialect="hermes",
            checkpointer=saver,
            interrupt_on={"sqlite-write_query": True},
        )
        r = await graph.ainvoke({"messages": [("user", TASK)]}, CFG)
        assert r["__interrupt__"][0].value["action_requests"][0]["args"] == WRITE
    # a new saver and a new graph on the same file pick the thread up
    async with async_sqlite_saver(tmp_path / "ck.db") as saver:
        graph = create_fncall_graph(
            ReplayChatModel(SERIAL[2:]),
            tools.tools(),
            dialect="hermes",
            checkpointer=saver,
            interrupt_on={"sqlite-write_query": True},
        )
        r = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
        assert r["messages"][-1].content == FINAL
    assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]


def test_sync_sqlite_saver_keeps_the_pause(tmp_path):
    tools = SqliteTools(make_database(tmp_path / "test.db"))
    with sqlite_saver(tmp_path / "ck.db") as saver:
        graph = create_fncall_graph(
            ReplayChatModel(SERIAL),
            tools.tools(),
            dialect="hermes",
            checkpointer=saver,
            interrupt_on={"sqlite-write_query": True},
        )
        graph.invoke({"messages": [("user", TASK)]}, CFG)
    with sqlite_saver(tmp_path / "ck.db") as saver:
        graph = create_fncall_graph(
            ReplayChatModel(SERIAL[2:]),
            tools.tools(),
            dialect="hermes",
            checkpointer=saver,
            interrupt_on={"sqlite-write_query": True},
        )
        state = graph.get_state(CFG)
        assert state.next == ("approve",)
        assert state.interrupts[0].value["action_requests"][0]["name"] == "sqlite-write_query"
        r = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    assert r["messages"][-1].content == FINAL


def test_a_gate_that_names_no_tool_is_refused_with_a_suggestion() -> None:
    from langchain_core.tools import tool

    @tool("sqlite-write_query")
    def write_query(query: str) -> str:
        """Write."""
        return "ok"

    with pytest.raises(ValueError) as info:
        create_fncall_graph(
            ReplayChatModel(["x"]),
            [write_query],
            interrupt_on={"write_query": True},
            checkpointer=InMemorySaver(),
        )
    message = str(info.value)
    assert "'write_query'" in message and "did you mean 'sqlite-write_query'?" in message
    assert "Tools: sqlite-write_query" in message


# ---------------------------------------------------------------- answers bound to the review

DROP = {"query": "INSERT INTO log (action) VALUES ('DROP TABLE log')"}
TWO_TURNS = [
    hermes(("sqlite-write_query", WRITE)),
    "记录好了。",
    hermes(("sqlite-write_query", DROP)),
    "也记录好了。",
]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def saver(request, tmp_path):
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with sqlite_saver(tmp_path / "ck.db") as s:
            yield s
    else:
        with postgres_saver(fresh_database(request.getfixturevalue("postgres_url"))) as s:
            yield s


def fresh_database(url: str) -> str:
    """A new database on the PostgreSQL server of ``url`` (the tests' threads are all "t")."""
    import uuid

    import psycopg

    name = f"approve_{uuid.uuid4().hex}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def writes(tools: SqliteTools) -> list[str]:
    return [json.loads(args)["query"] for name, args in ran(tools) if name == "write_query"]


def paused_on_second_write(tmp_path, saver):
    """Turn 1's write approved and run; turn 2 waits on a different write."""
    graph, _, tools = build(tmp_path, TWO_TURNS, {"sqlite-write_query": True}, saver)
    first = graph.invoke({"messages": [("user", "记一下")]}, CFG)["__interrupt__"][0]
    graph.invoke(Command(resume=bind_decisions(first.value, [{"type": "approve"}])), CFG)
    second = graph.invoke({"messages": [("user", "再记一下")]}, CFG)["__interrupt__"][0]
    assert second.value["action_requests"][0]["args"] == DROP
    assert writes(tools) == [WRITE["query"]]
    return graph, tools, first, second


# decisions alone, sent again on the next turn's first review: test_plain_answers.py
@pytest.mark.parametrize("form", ["bound", "interrupt_id", "call_ids"])
def test_a_retried_approve_does_not_approve_the_next_write(tmp_path, saver, form):
    graph, tools, first, second = paused_on_second_write(tmp_path, saver)
    retry = {
        "bound": bind_decisions(first.value, [{"type": "approve"}]),
        "unbound": {"decisions": [{"type": "approve"}]},
        "interrupt_id": {first.id: {"decisions": [{"type": "approve"}]}},
        "call_ids": {
            "decisions": [
                {
                    "type": "approve",
                    "tool_call_id": first.value["action_requests"][0]["tool_call_id"],
                }
            ]
        },
    }[form]
    with pytest.raises(StaleApproval) as info:
        graph.invoke(Command(resume=retry), CFG)
    assert info.value.pending == (second.value["action_requests"][0]["tool_call_id"],)
    assert writes(tools) == [WRITE["query"]]  # the DROP did not run
    state = graph.get_state(CFG)
    assert state.next == ("approve",) and state.interrupts[0].value == second.value
    # the review pending can still be answered, and only it runs
    r = graph.invoke(Command(resume=bind_decisions(second.value, [{"type": "reject"}])), CFG)
    assert r["messages"][-1].content == "也记录好了。"
    assert writes(tools) == [WRITE["query"]]


@pytest.mark.parametrize("bound", [True, False])
def test_a_late_reject_after_another_approve_is_an_error(tmp_path, saver, bound):
    graph, _, tools = build(tmp_path, SERIAL, {"sqlite-write_query": True}, saver)
    seen = graph.invoke({"messages": [("user", TASK)]}, CFG)["__interrupt__"][0]
    # reviewer 1 approves; reviewer 2 saw the same interrupt and rejects after
    graph.invoke(Command(resume=bind_decisions(seen.value, [{"type": "approve"}])), CFG)
    late = [{"type": "reject", "message": "不要写"}]
    with pytest.raises(StaleApproval, match="no pending interrupt"):
        graph.invoke(
            Command(resume=bind_decisions(seen.value, late) if bound else {"decisions": late}),
            CFG,
        )
    assert [n for n, _ in ran(tools)] == ["read_query", "write_query"]
    assert messages(graph)[-1].content == FINAL


def test_a_run_retried_after_it_took_its_answer_and_finished_is_done(tmp_path, saver):
    """LangGraph Server may run a run again that was cancelled as it ended (its run_id
    the same): the answer was taken by that run, so the retry succeeds and runs
    nothing; another run's copy of the answer is still stale."""
    graph, model, tools = build(tmp_path, SERIAL, {"sqlite-write_query": True}, saver)
    seen = graph.invoke({"messages": [("user", TASK)]}, CFG)["__interrupt__"][0]
    answer = Command(resume=bind_decisions(seen.value, [{"type": "approve"}]))
    graph.invoke(answer, {**CFG, "metadata": {"run_id": "run-1"}})
    left = model.remaining
    done = graph.invoke(answer, {**CFG, "metadata": {"run_id": "run-1"}})
    assert done["messages"][-1].content == FINAL and "__interrupt__" not in done
    assert model.remaining == left  # the model was not asked again
    with pytest.raises(StaleApproval, match="no pending interrupt"):
        graph.invoke(answer, {**CFG, "metadata": {"run_id": "run-2"}})
    assert [n for n, _ in ran(tools)] == ["read_query", "write_query"]
    assert messages(graph)[-1].content == FINAL


def test_a_resume_with_nothing_pending_is_an_error(tmp_path, saver):
    graph, model, tools = build(tmp_path, SERIAL, {"sqlite-write_query": True}, saver)
    with pytest.raises(StaleApproval, match="'t' has no pending interrupt"):
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    assert ran(tools) == [] and model.remaining == len(SERIAL)


async def test_a_stale_answer_is_an_error_async(tmp_path):
    graph, _, tools = build(tmp_path, TWO_TURNS, {"sqlite-write_query": True})
    first = (await graph.ainvoke({"messages": [("user", "记一下")]}, CFG))["__interrupt__"][0]
    await graph.ainvoke(Command(resume=bind_decisions(first.value, [{"type": "approve"}])), CFG)
    with pytest.raises(StaleApproval, match="no pending interrupt"):
        await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    await graph.ainvoke({"messages": [("user", "再记一下")]}, CFG)
    with pytest.raises(StaleApproval):
        await graph.ainvoke(Command(resume=bind_decisions(first.value, [{"type": "approve"}])), CFG)
    assert writes(tools) == [WRITE["query"]]


def test_an_unbound_answer_is_taken_for_a_thread_s_first_review(tmp_path, saver):
    # nothing else it could be meant for; answers bound by call ids alone are taken too
    graph, _, tools = build(tmp_path, TWO_TURNS, {"sqlite-write_query": True}, saver)
    graph.invoke({"messages": [("user", "记一下")]}, CFG)
    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    second = graph.invoke({"messages": [("user", "再记一下")]}, CFG)["__interrupt__"][0]
    call_id = second.value["action_requests"][0]["tool_call_id"]
    graph.invoke(Command(resume={"decisions": [{"type": "approve", "tool_call_id": call_id}]}), CFG)
    assert writes(tools) == [WRITE["query"], DROP["query"]]


def test_bind_decisions_needs_one_decision_per_call():
    request = {"action_requests": [{"name": "w", "args": {}, "tool_call_id": "c1"}]}
    with pytest.raises(ValueError, match="2 decision"):
        bind_decisions(request, [{"type": "approve"}, {"type": "approve"}])


def test_an_answer_another_run_took_first_is_an_error(tmp_path, saver):
    # the thread was pending when this run checked, and another run answered it before
    # this one started: this run takes nothing, runs nothing, and says so
    from langgraph.graph.state import CompiledStateGraph

    from fncall_graph.guarantees import resume_guard

    graph, _, tools = build(tmp_path, SERIAL, {"sqlite-write_query": True}, saver)
    seen = graph.invoke({"messages": [("user", TASK)]}, CFG)["__interrupt__"][0]
    mine = Command(resume=bind_decisions(seen.value, [{"type": "reject"}]))
    run_config, after = resume_guard(graph.get_state(CFG), mine.resume, CFG)
    graph.invoke(Command(resume=bind_decisions(seen.value, [{"type": "approve"}])), CFG)
    list(CompiledStateGraph.stream(graph, mine, run_config))
    with pytest.raises(StaleApproval, match="answered by another run meanwhile"):
        after()
    assert [n for n, _ in ran(tools)] == ["read_query", "write_query"]


def test_a_run_does_not_apply_an_answer_it_did_not_send():
    from fncall_graph.guarantees import decision_response_schema, note_answer, own_answer_taken
    from fncall_graph.guarantees.approvals import RunAnswer

    call = {"name": "w", "args": {}, "id": "c1", "type": "tool_call"}
    schema = decision_response_schema(
        [call], [["approve", "reject"]], frozenset(), token=review_token([call]), first_review=True
    )
    config = {
        "configurable": {
            "__fncall_approval_answers": RunAnswer([{"decisions": [{"type": "approve"}]}])
        }
    }
    note_answer(config, schema, schema.model_validate({"decisions": [{"type": "reject"}]}))
    with pytest.raises(StaleApproval, match="replaced this one"):
        own_answer_taken(config)  # the reject another run sent is not this run's answer
    note_answer(config, schema, schema.model_validate({"decisions": [{"type": "approve"}]}))
    own_answer_taken(config)


# ---------------------------------------------------------------- LangChain's per_call and when

PAIR = [
    hermes(("sqlite-write_query", WRITE), ("sqlite-write_query", DROP)),
    "都处理好了。",
]


def test_per_call_asks_once_per_gated_call_in_langchain_s_shape(tmp_path, saver):
    graph, _, tools = build(
        tmp_path,
        PAIR,
        {"sqlite-write_query": {"allowed_decisions": ["approve", "reject"]}},
        saver,
        interrupt_mode="per_call",
    )
    # both asked at once (tests/nodes/test_per_call_interrupts.py has the rest)
    first, asked = graph.invoke({"messages": [("user", "记两条")]}, CFG)["__interrupt__"]
    calls = messages(graph)[-1].tool_calls
    assert asked.value["tool_call_id"] == calls[1]["id"]
    assert first.value == {
        "type": "tool_approval",
        "tool_call_id": calls[0]["id"],
        "name": "sqlite-write_query",
        "args": WRITE,
        "description": f"Tool execution requires approval\n\nTool: sqlite-write_query\nArgs: {WRITE}",
        "review_token": review_token(calls[:1]),
    }
    assert first.response_schema["discriminator"]["propertyName"] == "type"
    # one decision, keyed by the interrupt id, as LangChain's clients send it
    [second] = graph.invoke(Command(resume={first.id: {"type": "approve"}}), CFG)["__interrupt__"]
    assert second.id == asked.id and second.value["args"] == DROP
    assert writes(tools) == []  # nothing runs before every gated call is decided
    # a not-allowed decision is refused before it is saved; the same interrupt stays
    with pytest.raises(ValidationError, match="'edit' is not allowed"):
        graph.invoke(
            Command(
                resume={
                    second.id: {
                        "type": "edit",
                        "tool_call_id": calls[1]["id"],
                        "edited_action": {"name": "sqlite-write_query", "args": {}},
                    }
                }
            ),
            CFG,
        )
    # the answer to the first call, retried: its interrupt is answered; nothing runs
    with pytest.raises(StaleApproval):
        graph.invoke(Command(resume={first.id: {"type": "approve"}}), CFG)
    with pytest.raises(StaleApproval):
        graph.invoke(Command(resume={"type": "approve"}), CFG)  # unbound, not the first
    r = graph.invoke(
        Command(resume={second.id: {"type": "reject", "tool_call_id": calls[1]["id"]}}), CFG
    )
    assert r["messages"][-1].content == "都处理好了。"
    assert writes(tools) == [WRITE["query"]]
    [rejected] = [m for m in r["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert rejected.tool_call_id == calls[1]["id"]


def test_when_reviews_only_the_calls_it_picks(tmp_path, saver):
    seen = []

    def risky(request) -> bool:
        seen.append((request.tool.name, request.runtime.tool_call_id, type(request.state)))
        return "DROP" in request.tool_call["args"]["query"]

    graph, _, tools = build(
        tmp_path,
        PAIR,
        {"sqlite-write_query": {"allowed_decisions": ["approve", "reject"], "when": risky}},
        saver,
    )
    pending = graph.invoke({"messages": [("user", "记两条")]}, CFG)["__interrupt__"][0]
    assert [a["args"] for a in pending.value["action_requests"]] == [DROP]
    assert seen and seen[0][0] == "sqlite-write_query" and seen[0][1]
    graph.invoke(Command(resume=bind_decisions(pending.value, [{"type": "reject"}])), CFG)
    assert writes(tools) == [WRITE["query"]]  # the unpicked call ran without review
