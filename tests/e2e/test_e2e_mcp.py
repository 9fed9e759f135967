"""The graph end to end over real MCP servers started by the tests.

- Seed 000's database session over mcp-server-sqlite (stdio), configured as the seed
  configures it: four questions in one thread, the model's recorded Hermes outputs
  replayed, every model input compared with the seed's pre-processed input; async and
  sync; with the server killed between rounds.
- Seed 003's FastMCP weather server over streamable HTTP on loopback, through the Qwen
  ✿FUNCTION✿ dialect: the call, its result, the rendered tool prompt, the resources.
- Errors over MCP: an SQL error from the server, arguments that break the tool schema,
  an MCP ``isError`` result.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import psutil
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from seed_db import SEED_LIST_TABLES, make_database, sqlite_config

from fncall_graph import create_fncall_graph
from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.mcp import MCPToolkit
from fncall_graph.testing import ReplayChatModel

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures"
SYSTEM = "你扮演一个数据库助手,你具有查询数据库的能力"
CALLS = json.loads((FIXTURES / "seed000_hermes.json").read_text("utf-8"))["calls"]
SEED003 = json.loads((FIXTURES / "seed003_qwen.json").read_text("utf-8"))

# The transcript prints the model calls of rounds 1, 2 and 3 (fixture indices); the
# describe round between 2 and 3 shows only as history in round 3's input, which gives
# its two model outputs. The third field: tool calls of the round that run at once.
DESCRIBE = "这几个表的结构分别是什么样的"
ROUNDS: list[tuple[str, list[int | None], int]] = [
    ("数据库有几张表", [0, 1], 1),
    ("分别有多少条记录", [2, 3], 3),
    (DESCRIBE, [None, None], 3),
    ("查询韩梅梅的年龄,然后在log表里记录下", [4, 5, 6], 1),
]
LOG_ACTION = "查询了韩梅梅的年龄"


def session_outputs() -> list[str]:
    """The model's raw outputs for the four rounds, in call order."""
    history = CALLS[4]["model_input"]
    describe = [m["content"] for m in history[10:13:2]]
    return [c["raw_output"] for c in CALLS[:4]] + describe + [c["raw_output"] for c in CALLS[4:]]


def as_pairs(messages: list[Any]) -> list[tuple[str, str]]:
    role = {"system": "system", "human": "user", "ai": "assistant"}
    return [(role[m.type], m.content) for m in messages]


def assert_seed_inputs(model: ReplayChatModel) -> None:
    """Every model call the transcript prints saw exactly the seed's pre-processed input."""
    printed = [i for _, indices, _ in ROUNDS for i in indices]
    assert len(model.inputs) == len(printed) == 9
    for position, fixture_index in enumerate(printed):
        if fixture_index is None:
            continue
        expected = [(m["role"], m["content"]) for m in CALLS[fixture_index]["model_input"]]
        assert as_pairs(model.inputs[position]) == expected, f"model call {position + 1}"


def log_actions(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT action FROM log ORDER BY id").fetchall()
    conn.close()
    return [r[0] for r in rows]


def sqlite_server(db: Path) -> psutil.Process:
    """The one live mcp-server-sqlite process serving `db` (a child of this process)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and str(db) in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:  # exited while we looked
            continue
    assert len(found) == 1, found
    return found[0]


def is_gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# --------------------------------------------------------------------------- concurrency


class ToolTimes(BaseCallbackHandler):
    """perf_counter at each tool run's start and end, by tool_call_id."""

    run_inline = True  # take the times when the events happen, not in an executor

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[UUID, tuple[str, float]] = {}
        self.spans: dict[str, tuple[float, float]] = {}

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, **kw: Any) -> None:
        with self.lock:
            self.started[run_id] = (kw.get("tool_call_id") or str(run_id), time.perf_counter())

    def on_tool_end(self, output: Any, *, run_id: UUID, **kw: Any) -> None:
        with self.lock:
            call_id, start = self.started.pop(run_id)
            self.spans[call_id] = (start, time.perf_counter())

    on_tool_error = on_tool_end  # a call held at the barrier until it timed out ends here

    def take(self) -> dict[str, tuple[float, float]]:
        with self.lock:
            spans, self.spans = self.spans, {}
        return spans


class Gate:
    """Holds each tool call until `n` calls are in flight at once, then lets all through.

    Timing alone cannot prove that calls overlap: on a fast loopback the server might
    answer the first call before the third one starts, and the measured intervals would
    say nothing either way. A barrier of n passes only when n calls are waiting at the
    same moment, so a round whose calls ran one after another would fail here (the
    barrier times out) instead of passing by luck. Disarmed, calls go straight through.
    """

    TIMEOUT = 15.0

    def __init__(self) -> None:
        self.n = 0
        self._async: asyncio.Barrier | None = None
        self._sync: threading.Barrier | None = None
        self._lock = threading.Lock()
        self.passed = 0

    def _count(self) -> None:
        with self._lock:
            self.passed += 1

    def arm(self, n: int) -> None:
        self.n = n
        self._async = asyncio.Barrier(n) if n > 1 else None
        self._sync = threading.Barrier(n, timeout=self.TIMEOUT) if n > 1 else None

    async def await_all(self) -> None:
        if self._async is not None:
            await asyncio.wait_for(self._async.wait(), self.TIMEOUT)
            self._count()

    def wait_all(self) -> None:
        if self._sync is not None:
            self._sync.wait()
            self._count()


def gated(tool: BaseTool, gate: Gate) -> BaseTool:
    """The same MCP tool (name, description, dict schema) with `gate` before each call."""
    assert isinstance(tool, StructuredTool) and tool.func and tool.coroutine
    func, coroutine = tool.func, tool.coroutine

    def run(**kwargs: Any) -> Any:
        gate.wait_all()
        return func(**kwargs)

    async def arun(**kwargs: Any) -> Any:
        await gate.await_all()
        return await coroutine(**kwargs)

    return tool.model_copy(update={"func": run, "coroutine": arun})


def assert_overlap(spans: dict[str, tuple[float, float]], n: int) -> None:
    """All n calls started before any of them ended."""
    assert len(spans) == n
    assert max(s for s, _ in spans.values()) < min(e for _, e in spans.values()), spans


# --------------------------------------------------------------------------- the seed session


def make_graph(tools: list[BaseTool]) -> tuple[Any, ReplayChatModel]:
    model = ReplayChatModel(session_outputs())
    graph = create_fncall_graph(
        model, tools, dialect="hermes", system_prompt=SYSTEM, checkpointer=InMemorySaver()
    )
    return graph, model


def check_round(result: dict[str, Any], round_index: int) -> None:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    if round_index == 0:
        tool_results = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert tool_results[-1].content == SEED_LIST_TABLES


def check_session(graph: Any, cfg: dict[str, Any], model: ReplayChatModel, db: Path) -> None:
    assert_seed_inputs(model)
    history = graph.get_state(cfg).values["messages"]
    final = history[-1].content
    assert "6" in final and "韩梅梅" in final
    tool_results = [m for m in history if isinstance(m, ToolMessage)]
    assert len(tool_results) == 9 and all(m.status == "success" for m in tool_results)
    turns = [[c["name"] for c in m.tool_calls] for m in history if isinstance(m, AIMessage)]
    # rounds 2 and 2b: three calls in one turn; round 3: read, then write in a later turn
    assert turns[2] == ["sqlite-read_query"] * 3
    assert turns[4] == ["sqlite-describe_table"] * 3
    assert turns[6:] == [["sqlite-read_query"], ["sqlite-write_query"], []]
    age = history.index(tool_results[-2])
    assert history[age].content == "[{'age': 6}]"
    assert history[age + 1].tool_calls[0]["args"] == {
        "query": f"INSERT INTO log (action) VALUES ('{LOG_ACTION}')"
    }
    assert tool_results[-1].content == "[{'affected_rows': 1}]"
    assert log_actions(db) == ["创建数据库", LOG_ACTION]


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    return make_database(tmp_path / "test.db")


async def test_seed_session_async_over_stdio(seed_db: Path) -> None:
    """The four rounds in one thread; the parallel rounds' calls shown to run at once.

    Concurrency is shown twice: the tools' start/end times from callbacks overlap (all
    three started before any ended), and a barrier before each call (see `Gate`) lets
    the calls through only when all three are in flight, so the proof does not depend
    on how fast the server answers.
    """
    gate, times = Gate(), ToolTimes()
    async with MCPToolkit.from_config(sqlite_config(seed_db), include_resources=False) as toolkit:
        assert [t.name for t in toolkit.tools] == [
            "sqlite-read_query",
            "sqlite-write_query",
            "sqlite-create_table",
            "sqlite-list_tables",
            "sqlite-describe_table",
            "sqlite-append_insight",
        ]
        graph, model = make_graph([gated(t, gate) for t in toolkit.tools])
        cfg = {"configurable": {"thread_id": "seed"}, "callbacks": [times]}
        calls_per_round = []
        for i, (question, _, parallel) in enumerate(ROUNDS):
            gate.arm(parallel)
            before = len(model.inputs)
            result = await graph.ainvoke({"messages": [("user", question)]}, cfg)
            calls_per_round.append(len(model.inputs) - before)
            check_round(result, i)
            spans = times.take()
            if parallel > 1:
                # the barrier let all three through together, and the spans overlap
                assert_overlap(spans, parallel)
        assert calls_per_round == [2, 2, 2, 3]
        assert gate.passed == 6
        check_session(graph, cfg, model, seed_db)


def test_seed_session_sync_over_stdio(seed_db: Path) -> None:
    gate, times = Gate(), ToolTimes()
    with MCPToolkit.from_config(sqlite_config(seed_db), include_resources=False) as toolkit:
        graph, model = make_graph([gated(t, gate) for t in toolkit.tools])
        cfg = {"configurable": {"thread_id": "seed"}, "callbacks": [times]}
        for i, (question, _, parallel) in enumerate(ROUNDS):
            gate.arm(parallel)
            check_round(graph.invoke({"messages": [("user", question)]}, cfg), i)
            spans = times.take()
            if parallel > 1:
                assert_overlap(spans, parallel)
        assert gate.passed == 6
        check_session(graph, cfg, model, seed_db)


async def test_killed_server_between_rounds_is_restarted(seed_db: Path) -> None:
    """SIGKILL the server before the parallel round and before the serial round.

    The first call after a kill finds the session dead only once it is sent, so it may
    run again after the restart only if it may run twice: the reads are declared so
    (mcp-server-sqlite does not annotate its tools)."""
    reads = ["sqlite-read_query", "sqlite-list_tables", "sqlite-describe_table"]
    async with MCPToolkit.from_config(
        sqlite_config(seed_db), include_resources=False, idempotent_tools=reads
    ) as toolkit:
        graph, model = make_graph(toolkit.tools)
        cfg = {"configurable": {"thread_id": "seed"}}
        killed: list[psutil.Process] = []
        for i, (question, _, _) in enumerate(ROUNDS):
            if i in (1, 3):
                server = sqlite_server(seed_db)
                os.kill(server.pid, signal.SIGKILL)
                killed.append(server)
            check_round(await graph.ainvoke({"messages": [("user", question)]}, cfg), i)
            if i in (1, 3):
                # the round's calls found the session dead, started a new server and ran
                assert sqlite_server(seed_db).pid != killed[-1].pid
        assert all(is_gone(old) for old in killed)
        check_session(graph, cfg, model, seed_db)
    # the write of round 3 ran once: the kill came before it, not during it
    assert log_actions(seed_db).count(LOG_ACTION) == 1


# --------------------------------------------------------------------------- seed 003 over HTTP

QWEN_ZH = {"lang": "zh", "parallel": False}  # the template seed 003 prints


def weather_config(url: str) -> dict[str, Any]:
    return {"mcpServers": {"weather": {"url": url, "type": "streamable-http"}}}


def ascii_punct(text: str) -> str:
    """The article's scrape turned the prompt's full-width ':' and ',' into ASCII."""
    return text.replace("：", ":").replace("，", ",")


def seed_tool_block(tool: BaseTool) -> str:
    """Seed 003's tool description template, filled in for `tool` as the toolkit names it."""
    template = SEED003["seed"]["tool_desc"]["zh"].replace("\\n", "\n")
    return template.format(
        name_for_human=tool.name,
        name_for_model=tool.name,
        description_for_model=tool.description,
        parameters=json.dumps(tool.args_schema, ensure_ascii=False),
        args_format=SEED003["seed"]["args_format"]["zh"],
    )


def tool_block(system_prompt: str, name: str) -> str:
    start = system_prompt.index(f"### {name}\n\n")
    ends = [system_prompt.find(m, start + 1) for m in ("\n\n### ", "\n\n## ")]
    return system_prompt[start : min(e for e in ends if e != -1)]


async def test_seed003_weather_over_streamable_http(weather_http: str) -> None:
    async with MCPToolkit.from_config(weather_config(weather_http)) as toolkit:
        get_weather = toolkit.get_tool("weather-get_weather")
        model = ReplayChatModel(
            [
                '✿FUNCTION✿: weather-get_weather\n✿ARGS✿: {"city": "上海"}',
                "上海现在多云,温度 25°C。",
            ]
        )
        graph = create_fncall_graph(model, [get_weather], dialect=get_dialect("qwen", **QWEN_ZH))
        result = await graph.ainvoke({"messages": [("user", "上海天气如何?")]})

    messages = result["messages"]
    call = messages[1]
    assert isinstance(call, AIMessage)
    assert [(c["name"], c["args"]) for c in call.tool_calls] == [
        ("weather-get_weather", {"city": "上海"})
    ]
    answer = messages[2]
    assert isinstance(answer, ToolMessage) and answer.status == "success"
    assert answer.tool_call_id == call.tool_calls[0]["id"]
    assert answer.content == "多云,温度 25°C"  # the server's text for 上海
    assert messages[-1].content == "上海现在多云,温度 25°C。"
    assert len(model.inputs) == 2
    assert "多云,温度 25°C" in model.inputs[1][-1].content  # the model saw the result

    # The rendered prompt, tool named as the toolkit names MCP tools (server-tool):
    # byte for byte Qwen-Agent's text for this tool, and seed 003's printed template
    # modulo the full-width ':' and ',' that the article's scrape turned into ASCII.
    system = model.inputs[0][0]
    assert system.type == "system"
    golden = SEED003["golden"]["system_prompts"]["zh_single"]
    assert system.content == golden.replace("get_weather", "weather-get_weather")
    block = tool_block(system.content, "weather-get_weather")
    assert ascii_punct(block) == seed_tool_block(get_weather)
    assert block == (
        "### weather-get_weather\n\nweather-get_weather: 获取指定城市的天气信息 输入参数："
        '{"type": "object", "properties": {"city": {"title": "City", "type": "string"}}, '
        '"required": ["city"]} 此工具的输入应为JSON对象。'
    )


async def test_weather_resources_through_the_graph(weather_http: str) -> None:
    calls = (
        "✿FUNCTION✿: weather-list_resources\n✿ARGS✿: {}\n"
        '✿FUNCTION✿: weather-read_resource\n✿ARGS✿: {"uri": "resource://cities"}'
    )
    async with MCPToolkit.from_config(weather_config(weather_http)) as toolkit:
        model = ReplayChatModel([calls, "支持北京、上海、广州、深圳。"])
        graph = create_fncall_graph(
            model, toolkit.tools, dialect=get_dialect("qwen", lang="zh", parallel=True)
        )
        result = await graph.ainvoke({"messages": [("user", "支持哪些城市?")]})
        system = model.inputs[0][0].content
        # every tool of the server, the get_weather block as in the one-tool prompt
        for tool in toolkit.tools:
            assert ascii_punct(tool_block(system, tool.name)) == seed_tool_block(tool)

    listing, cities = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert listing.status == cities.status == "success"
    payload = json.loads(listing.content)
    assert "resource://cities" in {r["uri"] for r in payload["resources"]}
    assert [t["uriTemplate"] for t in payload["resource_templates"]] == [
        "resource://{city}/weather"
    ]
    assert cities.content == "Cities: 北京, 上海, 广州, 深圳"
    assert "Cities: 北京, 上海, 广州, 深圳" in model.inputs[1][-1].content
    assert result["messages"][-1].content == "支持北京、上海、广州、深圳。"


# --------------------------------------------------------------------------- errors over MCP


def hermes_calls(*calls: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': n, 'arguments': a}, ensure_ascii=False)}\n</tool_call>"
        for n, a in calls
    )


async def test_sql_error_and_bad_arguments_reach_the_model(seed_db: Path) -> None:
    model = ReplayChatModel(
        [
            hermes_calls(
                ("sqlite-read_query", {"query": "SELECT * FROM nope"}),
                ("sqlite-read_query", {}),
            ),
            "没有 nope 这张表。",
        ]
    )
    async with MCPToolkit.from_config(sqlite_config(seed_db), include_resources=False) as toolkit:
        graph = create_fncall_graph(model, toolkit.tools, dialect="hermes", system_prompt=SYSTEM)
        result = await graph.ainvoke({"messages": [("user", "nope 表里有什么")]})

    sql_error, bad_args = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    # mcp-server-sqlite answers an SQL error with a plain text result (its handler
    # catches sqlite3.Error; the MCP result has no isError), so the toolkit passes the
    # server's words on as they are.
    assert sql_error.content == "Database error: no such table: nope"
    # the missing argument is refused by the graph against the cleaned dict schema,
    # before the server is asked
    assert bad_args.status == "error"
    assert bad_args.content.startswith(
        "Error: invalid arguments for tool 'sqlite-read_query' at arguments: "
        "'query' is a required property."
    )
    # the model saw both, in one user message, and the turn completed
    seen = model.inputs[1][-1]
    assert seen.type == "human"
    assert "<tool_response>\nDatabase error: no such table: nope\n</tool_response>" in seen.content
    assert "'query' is a required property" in seen.content
    assert result["messages"][-1].content == "没有 nope 这张表。"


async def test_mcp_is_error_result_is_an_error_tool_message(weather_http: str) -> None:
    async with MCPToolkit.from_config(weather_config(weather_http)) as toolkit:
        model = ReplayChatModel(
            [hermes_calls(("weather-broken_tool", {"reason": "维护中"})), "天气服务暂不可用。"]
        )
        graph = create_fncall_graph(model, toolkit.tools, dialect="hermes")
        result = await graph.ainvoke({"messages": [("user", "上海天气如何?")]})
    [failed] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert failed.status == "error"
    assert "weather service unavailable: 维护中" in failed.content
    assert "weather service unavailable: 维护中" in model.inputs[1][-1].content
    assert result["messages"][-1].content == "天气服务暂不可用。"
