"""create_fncall_graph's behaviour: calls in tool_calls or in content, errors the model can
act on, the iteration limit, parallel dispatch, and what the factory accepts or refuses.

Models are replays; tools are local (the seed's six sqlite tools on a real SQLite file,
and small tools written here).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field
from seed_db import make_database
from sqlite_tools import SqliteTools

from fncall_graph import create_fncall_graph
from fncall_graph.adapters import get_dialect
from fncall_graph.graphs.factory import DEFAULT_MAX_ITERATIONS
from fncall_graph.nodes.model import STOP_REASON_KEY
from fncall_graph.testing import ReplayChatModel

AGE_QUERY = "SELECT age FROM students WHERE name = '韩梅梅'"
LOG_QUERY = "INSERT INTO log (action) VALUES ('查询了韩梅梅的年龄')"
ANSWER = "韩梅梅的年龄是 6 岁,并且我已经在 `log` 表里记录下了这次查询操作。"


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def hermes_call(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def native_call(name: str, args: dict[str, Any] | str, call_id: str) -> dict[str, Any]:
    """One entry of an OpenAI chat-completions ``tool_calls`` list."""
    arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_messages(messages: list[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


async def run(graph: Any, text: str, mode: str, config: dict[str, Any] | None = None) -> Any:
    payload = {"messages": [("user", text)]}
    if mode == "invoke":
        return graph.invoke(payload, config)
    return await graph.ainvoke(payload, config)


MODES = pytest.mark.parametrize("mode", ["invoke", "ainvoke"])


# --------------------------------------------------------------------------- seed 001


def native_replies() -> list[dict[str, Any]]:
    """Round 3 of the seed session as a server with a tool parser returns it (seed 001)."""
    return [
        {
            "content": None,
            "reasoning_content": "先查年龄。",
            "tool_calls": [native_call("sqlite-read_query", {"query": AGE_QUERY}, "call_a")],
        },
        {
            "content": None,
            "tool_calls": [native_call("sqlite-write_query", {"query": LOG_QUERY}, "call_b")],
        },
        {"content": ANSWER},
    ]


def markup_replies() -> list[str]:
    """The same round as Qwen-Max wrote it into ``content`` (seed 000's raw outputs)."""
    return [
        hermes_call("sqlite-read_query", {"query": AGE_QUERY}),
        hermes_call("sqlite-write_query", {"query": LOG_QUERY}),
        ANSWER,
    ]


@MODES
async def test_calls_in_tool_calls_or_in_content_give_the_same_turn(tmp_path, mode) -> None:
    question = "查询韩梅梅的年龄,然后在log表里记录下"
    results: dict[str, list[str]] = {}
    for kind, replies in (("native", native_replies()), ("markup", markup_replies())):
        tools = SqliteTools(make_database(tmp_path / f"{kind}.db"))
        model = ReplayChatModel(replies)
        graph = create_fncall_graph(
            model, tools.tools(), dialect="native", checkpointer=InMemorySaver()
        )
        out = await run(graph, question, mode, cfg(kind))
        messages = out["messages"]
        assert messages[-1].content == ANSWER
        assert [type(m) for m in messages] == [
            HumanMessage,
            AIMessage,
            ToolMessage,
            AIMessage,
            ToolMessage,
            AIMessage,
        ], kind
        calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
        assert [c["name"] for c in calls] == ["sqlite-read_query", "sqlite-write_query"]
        assert [t.tool_call_id for t in tool_messages(messages)] == [c["id"] for c in calls]
        # the canonical history holds no markup, whichever way the calls arrived
        assert all("<tool_call>" not in str(m.content) for m in messages)
        assert tools.log_rows()[1:] == ["查询了韩梅梅的年龄"]
        results[kind] = [t.content for t in tool_messages(messages)]

        state = graph.get_state(cfg(kind)).values
        if kind == "native":
            assert state["dialect"] == "native"
            assert all(c.get("tools") for c in model.calls)
            assert messages[1].additional_kwargs["reasoning_content"] == "先查年龄。"
        else:
            # the first reply showed the model writes Hermes: the thread speaks it now
            assert state["dialect"] == "hermes"
            assert model.calls[0].get("tools")
            assert not any(c.get("tools") for c in model.calls[1:])
            assert model.inputs[1][0].content.startswith("# Tools")
            assert model.inputs[1][-1].content == "<tool_response>\n[{'age': 6}]\n</tool_response>"
    assert results["native"] == results["markup"] == ["[{'age': 6}]", "[{'affected_rows': 1}]"]


# --------------------------------------------------------------------------- error paths


class WeatherArgs(BaseModel):
    city: str = Field(description="city name")
    days: int = Field(1, description="days ahead")


def weather(city: str, days: int = 1) -> str:
    return f"{city}: 晴 ({days} 天)"


WEATHER = StructuredTool.from_function(
    func=weather, name="get_weather", description="天气", args_schema=WeatherArgs
)


@tool
def flaky(table: str) -> str:
    """Read a table."""
    if table == "locked":
        raise RuntimeError("database is locked")
    return f"rows of {table}"


class Hang:
    """A tool that waits for an event nobody sets, so only the timeout ends its call."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def tool(self) -> BaseTool:
        def wait_forever(job: str) -> str:
            self.release.wait()
            return f"{job} done"

        return StructuredTool.from_function(
            func=wait_forever, name="slow_report", description="A report that never ends."
        )


@pytest.fixture
def hang() -> Iterator[Hang]:
    h = Hang()
    yield h
    h.release.set()  # let the abandoned worker thread finish


@pytest.fixture
def sqlite(tmp_path) -> SqliteTools:
    return SqliteTools(make_database(tmp_path / "test.db"))


async def turn_with_error(
    bad: str, fixed: str, tools: list[BaseTool], mode: str, **kwargs: Any
) -> tuple[ToolMessage, ToolMessage, ReplayChatModel]:
    """A turn whose first call fails and whose corrected call works; both results back."""
    model = ReplayChatModel([bad, fixed, "好了"])
    graph = create_fncall_graph(model, tools, dialect="hermes", **kwargs)
    out = await run(graph, "go", mode)
    messages = out["messages"]
    assert messages[-1].content == "好了"
    assert len(model.inputs) == 3
    error, ok = tool_messages(messages)
    assert error.status == "error"
    assert ok.status == "success"
    # each result answers its own call
    calls = [
        m for m in messages if isinstance(m, AIMessage) and (m.tool_calls or m.invalid_tool_calls)
    ]
    first = (calls[0].tool_calls or calls[0].invalid_tool_calls)[0]
    assert error.tool_call_id == first["id"]
    assert ok.tool_call_id == calls[1].tool_calls[0]["id"]
    # the model saw the error text in its next input (Hermes: a tool_response)
    # the model reads the error, its markup written broken so it cannot pass for a call
    assert get_dialect("hermes").neutralise(error.content) in model.inputs[1][-1].content
    return error, ok, model


@MODES
async def test_unknown_tool_lists_the_available_ones(mode) -> None:
    error, ok, _ = await turn_with_error(
        hermes_call("get_wether", {"city": "北京"}),
        hermes_call("get_weather", {"city": "北京"}),
        [WEATHER, flaky],
        mode,
    )
    assert "get_wether" in error.content
    assert "get_weather" in error.content and "flaky" in error.content
    assert ok.content == "北京: 晴 (1 天)"


@MODES
@pytest.mark.parametrize(
    ("args", "words"),
    [({}, ["city", "required"]), ({"city": "北京", "days": "many"}, ["days", "integer"])],
    ids=["missing", "wrong-type"],
)
async def test_bad_arguments_pydantic_schema(mode, args, words) -> None:
    error, ok, _ = await turn_with_error(
        hermes_call("get_weather", args),
        hermes_call("get_weather", {"city": "北京", "days": 2}),
        [WEATHER],
        mode,
    )
    assert "get_weather" in error.content
    for word in words:
        assert word in error.content
    assert error.content.count("try again") == 1
    assert ok.content == "北京: 晴 (2 天)"


@MODES
@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({}, ["'query' is a required property"]),
        ({"query": 5}, ["at query", "not of type 'string'"]),
    ],
    ids=["missing", "wrong-type"],
)
async def test_bad_arguments_dict_schema(sqlite, mode, args, words) -> None:
    error, ok, _ = await turn_with_error(
        hermes_call("sqlite-read_query", args),
        hermes_call("sqlite-read_query", {"query": AGE_QUERY}),
        sqlite.tools(),
        mode,
    )
    assert "sqlite-read_query" in error.content
    for word in words:
        assert word in error.content
    assert ok.content == "[{'age': 6}]"
    # the bad call never reached the tool
    assert [args for _, args, _, _ in sqlite.timeline] == [
        json.dumps({"query": AGE_QUERY}, ensure_ascii=False)
    ]


@MODES
async def test_tool_that_raises(mode) -> None:
    error, ok, _ = await turn_with_error(
        hermes_call("flaky", {"table": "locked"}),
        hermes_call("flaky", {"table": "students"}),
        [flaky],
        mode,
    )
    assert "RuntimeError" in error.content and "database is locked" in error.content
    assert ok.content == "rows of students"


@MODES
def test_tool_over_the_timeout(hang, mode) -> None:
    """The stuck call is answered with an error and abandoned.

    The turn runs under ``asyncio.run`` in a thread of its own: ``asyncio.run`` also
    waits for the loop's executor threads at shutdown, so a stuck call left there would
    keep it from returning. The join's bound only keeps a regression from hanging the
    suite; the tool itself never returns.
    """
    outcome: dict[str, Any] = {}

    def turn() -> None:
        outcome["result"] = asyncio.run(
            turn_with_error(
                hermes_call("slow_report", {"job": "全年"}),
                hermes_call("flaky", {"table": "students"}),
                [hang.tool(), flaky],
                mode,
                tool_timeout=0.3,
            )
        )

    runner = threading.Thread(target=turn, daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "the turn (or its event loop's shutdown) waited for the tool"
    error, ok, _ = outcome["result"]
    assert "slow_report" in error.content and "0.3 s" in error.content
    assert ok.content == "rows of students"
    assert not hang.release.is_set()


@MODES
async def test_malformed_call_is_answered(mode) -> None:
    error, ok, _ = await turn_with_error(
        "<tool_call>{not json",
        hermes_call("flaky", {"table": "students"}),
        [flaky],
        mode,
    )
    assert "could not be read" in error.content and "{not json" in error.content
    assert ok.content == "rows of students"


@MODES
async def test_native_call_with_unreadable_arguments(mode) -> None:
    """Seed 001: QwQ's bad third call came back as an error and it corrected itself."""
    model = ReplayChatModel(
        [
            {"content": None, "tool_calls": [native_call("flaky", '{"table": students', "c1")]},
            {"content": None, "tool_calls": [native_call("flaky", {"table": "students"}, "c2")]},
            {"content": "好了"},
        ]
    )
    graph = create_fncall_graph(model, [flaky], dialect="native")
    out = await run(graph, "go", mode)
    error, ok = tool_messages(out["messages"])
    assert (error.status, error.tool_call_id) == ("error", "c1")
    assert "could not be read" in error.content
    assert (ok.status, ok.tool_call_id, ok.content) == ("success", "c2", "rows of students")
    assert out["messages"][-1].content == "好了"
    # the native model got the error back as a tool message for its call
    assert isinstance(model.inputs[1][-1], ToolMessage)
    assert model.inputs[1][-1].tool_call_id == "c1"


DEEP = "[" * 300 + "]" * 300


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ('{"table": NaN}', "arguments.table is nan"),
        ('{"table": "students", "n": Infinity}', "arguments.n is inf"),
        ('{"table": ' + DEEP + "}", "nest deeper than 64 levels"),
    ],
    ids=["nan", "infinity", "300-deep"],
)
def test_field_calls_get_the_argument_checks_of_text_calls(stream, arguments, words) -> None:
    """A provider's ``tool_calls`` can carry what JSON cannot (Python's reader takes NaN):
    the call is answered as unreadable and never reaches the tool, streamed or not, and
    the thread's checkpoint is written (300-deep arguments once broke its serializer)."""
    seen: list[str] = []

    @tool
    def read_table(table: str) -> str:
        """Read a table."""
        seen.append(table)
        return f"rows of {table}"

    model = ReplayChatModel(
        [
            {"content": None, "tool_calls": [native_call("read_table", arguments, "c1")]},
            {"content": None, "tool_calls": [native_call("read_table", {"table": "t"}, "c2")]},
            {"content": "好了"},
        ]
    )
    graph = create_fncall_graph(model, [read_table], dialect="native", checkpointer=InMemorySaver())
    payload, config = {"messages": [("user", "go")]}, cfg(f"field-checks-{stream}")
    if stream:
        for _ in graph.stream(payload, config, stream_mode="messages"):
            pass
        out = graph.get_state(config).values
    else:
        out = graph.invoke(payload, config)
    error, ok = tool_messages(out["messages"])
    assert (error.status, error.tool_call_id) == ("error", "c1")
    assert words in error.content and "read_table" in error.content
    assert (ok.status, ok.content) == ("success", "rows of t")
    assert seen == ["t"]
    assert out["messages"][-1].content == "好了"


# --------------------------------------------------------------------------- max_iterations

STOPPED = "max_iterations"


@MODES
@pytest.mark.parametrize("limit", [3, None], ids=["3", "default"])
async def test_max_iterations_ends_the_turn_cleanly(mode, limit) -> None:
    model = ReplayChatModel([hermes_call("flaky", {"table": f"t{i}"}) for i in range(60)])
    kwargs = {} if limit is None else {"max_iterations": limit}
    graph = create_fncall_graph(
        model, [flaky], dialect="hermes", checkpointer=InMemorySaver(), **kwargs
    )
    out = await run(graph, "loop", mode, cfg("loop"))
    n = limit or DEFAULT_MAX_ITERATIONS
    assert len(model.inputs) == n
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    assert f"{n} model calls" in last.content and "max_iterations" in last.content
    assert last.additional_kwargs.get("fncall_stop_reason") == STOPPED
    # every call made was answered; the history stays canonical
    assert len(tool_messages(out["messages"])) == n
    # the next turn starts a fresh count
    model_calls = len(model.inputs)
    out = await run(graph, "again", mode, cfg("loop"))
    assert len(model.inputs) - model_calls == n
    assert out["messages"][-1].additional_kwargs.get("fncall_stop_reason") == STOPPED


# --------------------------------------------------------------------------- parallel dispatch


class Rendezvous:
    """Tools that only return when ``parties`` of them run at once (no timing assumptions)."""

    def __init__(self, parties: int, timeout: float) -> None:
        self.barrier = threading.Barrier(parties, timeout=timeout)
        self.lock = threading.Lock()
        self.active = 0
        self.most_active = 0

    def tool(self) -> BaseTool:
        def meet(who: str) -> str:
            with self.lock:
                self.active += 1
                self.most_active = max(self.most_active, self.active)
            try:
                self.barrier.wait()
                return f"{who} met"
            finally:
                with self.lock:
                    self.active -= 1

        return StructuredTool.from_function(func=meet, name="meet", description="Meet the others.")


THREE_CALLS = "我同时查三个。\n" + "\n".join(hermes_call("meet", {"who": w}) for w in "abc")


@MODES
async def test_three_calls_run_concurrently(mode) -> None:
    meet = Rendezvous(3, timeout=5)
    model = ReplayChatModel([THREE_CALLS, "都见到了"])
    graph = create_fncall_graph(model, [meet.tool()], dialect="hermes")
    out = await run(graph, "go", mode)
    call_msg = out["messages"][1]
    results = tool_messages(out["messages"])
    # all three were inside the tool at once, or the barrier would have broken
    assert [r.content for r in results] == ["a met", "b met", "c met"]
    assert [r.status for r in results] == ["success"] * 3
    assert [r.tool_call_id for r in results] == [c["id"] for c in call_msg.tool_calls]
    assert meet.most_active == 3
    # the three results went back to the model in one message, in call order
    assert model.inputs[1][-1].content.count("<tool_response>") == 3


@MODES
async def test_max_concurrency_one_runs_serially(mode) -> None:
    meet = Rendezvous(2, timeout=0.3)
    model = ReplayChatModel([THREE_CALLS, "没见到"])
    graph = create_fncall_graph(model, [meet.tool()], dialect="hermes", max_concurrency=1)
    out = await run(graph, "go", mode)
    results = tool_messages(out["messages"])
    # no call ever found a partner: they never overlapped
    assert meet.most_active == 1
    assert [r.status for r in results] == ["error"] * 3
    assert all("BrokenBarrierError" in r.content for r in results)
    assert [r.tool_call_id for r in results] == [c["id"] for c in out["messages"][1].tool_calls]


@MODES
async def test_results_in_call_order_when_they_finish_in_reverse(mode) -> None:
    """Call i waits for call i+1 to finish, so they end c, b, a; results stay a, b, c."""
    done = {w: threading.Event() for w in "abc"}
    finished: list[str] = []
    after = {"a": "b", "b": "c", "c": None}

    def step(who: str) -> str:
        if after[who] is not None and not done[after[who]].wait(5):
            raise TimeoutError(f"{after[who]} never finished")
        finished.append(who)
        done[who].set()
        return f"{who} finished"

    chain = StructuredTool.from_function(func=step, name="meet", description="Finish in turn.")
    model = ReplayChatModel([THREE_CALLS, "ok"])
    graph = create_fncall_graph(model, [chain], dialect="hermes")
    out = await run(graph, "go", mode)
    assert finished == ["c", "b", "a"]
    results = tool_messages(out["messages"])
    assert [r.content for r in results] == ["a finished", "b finished", "c finished"]
    assert [r.tool_call_id for r in results] == [c["id"] for c in out["messages"][1].tool_calls]
    # and the model reads them in call order
    text = model.inputs[1][-1].content
    assert text.index("a finished") < text.index("b finished") < text.index("c finished")


@MODES
async def test_sqlite_parallel_round_overlaps(tmp_path, mode) -> None:
    """Seed 000's parallel round: three COUNT queries, their [start, end] intervals overlap."""
    sqlite = SqliteTools(make_database(tmp_path / "test.db"), delay=0.2)
    tables = ["students", "sqlite_sequence", "log"]
    reply = "\n".join(
        hermes_call("sqlite-read_query", {"query": f"SELECT COUNT(*) FROM {t}"}) for t in tables
    )
    model = ReplayChatModel([reply, "students 2, sqlite_sequence 1, log 1"])
    graph = create_fncall_graph(model, sqlite.tools(), dialect="hermes")
    out = await run(graph, "分别有多少条记录", mode)
    assert [r.content for r in tool_messages(out["messages"])] == [
        "[{'COUNT(*)': 2}]",
        "[{'COUNT(*)': 1}]",
        "[{'COUNT(*)': 1}]",
    ]
    spans = [(start, end) for _, _, start, end in sqlite.timeline]
    assert len(spans) == 3
    # every call started before any of them ended
    assert max(s for s, _ in spans) < min(e for _, e in spans)


# --------------------------------------------------------------------------- the factory


def test_custom_dialect_object_system_prompt_and_plain_functions() -> None:
    def get_current_weather(location: str) -> str:
        """获取当前天气"""
        return f"{location}: 晴"

    qwen_zh = get_dialect("qwen", lang="zh")
    reply = '✿FUNCTION✿: get_current_weather\n✿ARGS✿: {"location": "上海"}'
    model = ReplayChatModel([reply, "上海晴。"])
    graph = create_fncall_graph(
        model,
        [get_current_weather],
        dialect=qwen_zh,
        system_prompt="你是天气助手。",
        checkpointer=InMemorySaver(),
    )
    out = graph.invoke({"messages": [("user", "上海天气如何?")]}, cfg("q"))
    assert out["messages"][-1].content == "上海晴。"
    assert [t.content for t in tool_messages(out["messages"])] == ["上海: 晴"]
    system = model.inputs[0][0]
    assert isinstance(system, SystemMessage)
    assert system.content.startswith("你是天气助手。")
    assert "## 你拥有如下工具：" in system.content and "### get_current_weather" in system.content
    assert model.calls[0]["stop"] == list(qwen_zh.stop)
    # the call and its result written back the ✿ way
    assert model.inputs[1][-1].content.endswith("✿RESULT✿: 上海: 晴\n✿RETURN✿")
    assert graph.get_state(cfg("q")).values["dialect"] == "qwen"


def test_history_with_its_own_system_message_keeps_it() -> None:
    model = ReplayChatModel(["ok"])
    graph = create_fncall_graph(model, [flaky], dialect="hermes", system_prompt="unused")
    graph.invoke({"messages": [("system", "自己的"), ("user", "hi")]})
    assert model.inputs[0][0].content.startswith("自己的")
    assert "unused" not in model.inputs[0][0].content


def test_factory_refuses_bad_arguments() -> None:
    model = ReplayChatModel(["x"])

    @tool("flaky")
    def twin(table: str) -> str:
        """Another tool with the same name."""
        return table

    with pytest.raises(ValueError, match=r"share the name.*flaky"):
        create_fncall_graph(model, [flaky, twin])
    with pytest.raises(TypeError, match="BaseTool instances or functions"):
        create_fncall_graph(model, [{"name": "describe_only"}])
    with pytest.raises(TypeError, match="BaseTool instances or functions"):
        create_fncall_graph(model, [42])
    with pytest.raises(ValueError, match="max_iterations must be at least 1, got 0"):
        create_fncall_graph(model, [flaky], max_iterations=0)
    with pytest.raises(ValueError, match="max_concurrency must be at least 1, got -2"):
        create_fncall_graph(model, [flaky], max_concurrency=-2)
    with pytest.raises(ValueError, match="tool_timeout must be positive"):
        create_fncall_graph(model, [flaky], tool_timeout=0)
    with pytest.raises(ValueError, match="unknown dialect 'klingon'; known dialects: hermes"):
        create_fncall_graph(model, [flaky], dialect="klingon")
    with pytest.raises(ValueError, match="fallback must be a prompt dialect"):
        create_fncall_graph(model, [flaky], fallback="native")


def test_a_huge_tool_result_is_cut_for_the_model_and_kept_whole() -> None:
    from langchain_core.tools import tool

    @tool
    def dump() -> str:
        """Everything."""
        return "x" * 250_000

    model = ReplayChatModel(
        ['<tool_call>\n{"name": "dump", "arguments": {}}\n</tool_call>', "done"]
    )
    graph = create_fncall_graph(model, [dump], dialect="hermes", max_result_chars=1_000)
    messages = graph.invoke({"messages": [("user", "dump it")]})["messages"]
    result = messages[2]
    assert result.content.startswith("x" * 1_000)
    assert "[result truncated: 249,000 of 250,000 characters left out" in result.content
    assert result.artifact["full_content"] == "x" * 250_000
    # the model saw the cut text, not the whole
    assert len(model.inputs[1][-1].content) < 2_000


@pytest.mark.parametrize(
    ("returned", "shown", "kept"),
    [
        ("价格: 5 元".encode(), "价格: 5 元", None),
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\xff",
            "[binary: 11 bytes; not shown]",
            b"\x89PNG\r\n\x1a\n\x00\x00\xff",
        ),
        (
            "b'not bytes, a string that looks like them",
            "b'not bytes, a string that looks like them",
            None,
        ),
    ],
)
def test_bytes_results_reach_the_model_as_text_or_a_note(returned, shown, kept) -> None:
    from langchain_core.tools import tool

    @tool
    def fetch() -> Any:
        """Fetch a file."""
        return returned

    model = ReplayChatModel(['<tool_call>\n{"name": "fetch", "arguments": {}}\n</tool_call>', "ok"])
    messages = create_fncall_graph(model, [fetch], dialect="hermes").invoke(
        {"messages": [("user", "fetch")]}
    )["messages"]
    assert messages[2].content == shown
    assert shown in model.inputs[1][-1].content
    if kept is not None:
        assert messages[2].artifact["bytes"] == kept


def test_an_empty_reply_is_tried_again_then_answered_with_a_notice() -> None:
    model = ReplayChatModel(["", "三张表"])
    graph = create_fncall_graph(model, [], dialect="hermes")
    assert graph.invoke({"messages": [("user", "q")]})["messages"][-1].content == "三张表"

    model = ReplayChatModel(["", "  "])
    last = create_fncall_graph(model, [], dialect="hermes").invoke({"messages": [("user", "q")]})[
        "messages"
    ][-1]
    assert last.additional_kwargs[STOP_REASON_KEY] == "empty_reply"
    assert "empty reply twice" in last.content
    assert model.position == 2


def test_a_server_that_stays_down_is_not_the_call_s_fault() -> None:
    from fncall_graph.adapters.mcp import MCPServerError
    from fncall_graph.nodes.tools import tool_error_message

    text = tool_error_message(MCPServerError("sqlite", "died and could not be restarted"))
    assert "the tool is unavailable: MCP server 'sqlite'" in text
    assert "do not retry it now" in text and "fix the call" not in text


def _weather_turn() -> list[Any]:
    call = native_call("get_weather", {"city": "北京"}, "call_1")
    return [{"content": "", "tool_calls": [call]}, {"content": "晴"}]


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city}: 晴"


def test_a_model_call_starts_by_a_plain_edge() -> None:
    """A prompt dialect's thread never speaks native again, so its calls start at the
    adapter; a native graph's start at the model, which sends a thread that switched to
    a prompt dialect on to the adapter. Plain edges: LangGraph takes them without
    reading the state."""

    def edges(dialect: str) -> set[tuple[str, str, bool]]:
        graph = create_fncall_graph(ReplayChatModel([]), [get_weather], dialect=dialect)
        return {(e.source, e.target, e.conditional) for e in graph.get_graph().edges}

    hermes, native = edges("hermes"), edges("native")
    assert {("__start__", "adapter", False), ("tools", "adapter", False)} <= hermes
    assert not {e for e in hermes if e[1] == "model" and e[0] in ("__start__", "tools")}
    assert not {e for e in hermes if e[0] == "model" and e[1] == "adapter"}
    assert {
        ("__start__", "model", False),
        ("tools", "model", False),
        ("model", "adapter", True),
        ("adapter", "model", False),
        ("react_fallback", "adapter", False),
    } <= native
    assert not {e for e in native if e[1] == "adapter" and e[0] in ("__start__", "tools")}


def test_the_model_step_says_where_the_run_goes_without_an_edge_reading_the_state() -> None:
    """The model node's update comes with where the run goes next (its calls, the
    approval, the end), so no conditional edge copies every channel to read the state
    after each model call; Studio still draws those ways out of ``model``."""
    for dialect in ("native", "hermes"):
        graph = create_fncall_graph(
            ReplayChatModel(_weather_turn()),
            [get_weather],
            dialect=dialect,
            interrupt_on={"get_weather": False},
            checkpointer=InMemorySaver(),
        )
        assert "model" not in graph.builder.branches
        drawn = {(e.source, e.target, e.conditional) for e in graph.get_graph().edges}
        assert {
            ("model", "tools", True),
            ("model", "approve", True),
            ("model", "__end__", True),
            ("model", "react_fallback", True),
        } <= drawn, dialect
        config = {"configurable": {"thread_id": dialect}}
        updates = list(
            graph.stream({"messages": [("user", "北京天气怎么样?")]}, config, stream_mode="updates")
        )
        assert [next(iter(u)) for u in updates if "adapter" not in u] == [
            "model",
            "tools",
            "model",
        ], dialect


def test_a_thread_saved_native_goes_on_in_a_prompt_dialect_s_graph() -> None:
    """The adapter leaves a thread another graph saved native as it is: its model call
    is native, as the thread's dialect says."""
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    question = {"messages": [("user", "北京天气怎么样?")]}
    native = create_fncall_graph(
        ReplayChatModel(_weather_turn()), [get_weather], dialect="native", checkpointer=saver
    )
    native.invoke(question, config)
    hermes = create_fncall_graph(
        ReplayChatModel(_weather_turn()), [get_weather], dialect="hermes", checkpointer=saver
    )
    steps = [next(iter(u)) for u in hermes.stream(question, config, stream_mode="updates")]
    assert steps == ["adapter", "model", "tools", "adapter", "model"]
    state = hermes.get_state(config).values
    assert state["dialect"] == "native"
    assert [m.content for m in state["messages"] if isinstance(m, ToolMessage)] == ["北京: 晴"] * 2
    assert state["messages"][-1].content == "晴"
