"""The Hermes (Nous) dialect against the Qwen-Agent sqlite session of seed 000.

Golden strings come from ``tests/fixtures/seed000_hermes.json`` (made by
``tests/fixtures/extract_seed000.py`` from the transcript): for every model call, the
messages the model really saw and what it wrote back.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.formats.calls import (
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ReasoningDelta,
)
from fncall_graph.adapters.formats.hermes import HermesDialect

FIXTURE = Path(__file__).parents[1] / "fixtures" / "seed000_hermes.json"
REPLAY = (
    Path(__file__).parents[2] / "fncall_graph" / "data" / "database-assistant_qwen-max_hermes.json"
)
SEED = json.loads(FIXTURE.read_text(encoding="utf-8"))
CALLS: list[dict[str, Any]] = SEED["calls"]

SYSTEM = "你扮演一个数据库助手,你具有查询数据库的能力"


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str] | None):
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return {"name": f"sqlite-{name}", "description": description, "inputSchema": schema}


def _prop(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


# the six tools of mcp-server-sqlite, as MCP lists them, under Qwen-Agent's server-tool names
SQLITE_TOOLS = [
    _tool(
        "read_query",
        "Execute a SELECT query on the SQLite database",
        {"query": _prop("SELECT SQL query to execute")},
        ["query"],
    ),
    _tool(
        "write_query",
        "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
        {"query": _prop("SQL query to execute")},
        ["query"],
    ),
    _tool(
        "create_table",
        "Create a new table in the SQLite database",
        {"query": _prop("CREATE TABLE SQL statement")},
        ["query"],
    ),
    # no "required": the cleaned schema must add it as []
    _tool("list_tables", "List all tables in the SQLite database", {}, None),
    _tool(
        "describe_table",
        "Get the schema information for a specific table",
        {"table_name": _prop("Name of the table to describe")},
        ["table_name"],
    ),
    _tool(
        "append_insight",
        "Add a business insight to the memo",
        {"insight": _prop("Business insight discovered from data analysis")},
        ["insight"],
    ),
]

ROLE = {SystemMessage: "system", HumanMessage: "user", AIMessage: "assistant"}


def _text(content: Any) -> str:
    return content if isinstance(content, str) else "".join(i["text"] for i in content)


def canonical(raw_input: list[dict[str, Any]]) -> list[BaseMessage]:
    """Qwen-Agent's history (one message per call, ``function`` results) as the canonical
    LangChain history: one ``AIMessage`` per turn with all its ``tool_calls``, one
    ``ToolMessage`` per call answering its id."""
    out: list[BaseMessage] = []
    waiting: list[str] = []
    for n, m in enumerate(raw_input):
        text = _text(m["content"])
        if m["role"] == "system":
            out.append(SystemMessage(text))
        elif m["role"] == "user":
            out.append(HumanMessage(text))
        elif m["role"] == "function":
            out.append(ToolMessage(text, tool_call_id=waiting.pop(0), name=m["name"]))
        elif fc := m.get("function_call"):
            call = {"name": fc["name"], "args": json.loads(fc["arguments"]), "id": f"call_{n}"}
            waiting.append(call["id"])
            if out and isinstance(out[-1], AIMessage) and out[-1].tool_calls:
                out[-1] = AIMessage(content=out[-1].content, tool_calls=[*out[-1].tool_calls, call])
            else:
                out.append(AIMessage(content=text, tool_calls=[call]))
        else:
            out.append(AIMessage(text))
    assert not waiting
    return out


def as_dicts(messages: list[BaseMessage]) -> list[dict[str, str]]:
    return [{"content": m.content, "role": ROLE[type(m)]} for m in messages]  # type: ignore[misc]


@pytest.fixture
def hermes() -> HermesDialect:
    return HermesDialect()


def ids(calls: list[dict[str, Any]]) -> list[str]:
    return [f"round{c['round']}-{i}" for i, c in enumerate(CALLS)]


# --------------------------------------------------------------------------- the seed


def test_seed_has_three_rounds_of_model_calls() -> None:
    # round 1: call + answer; round 2: 3 parallel calls + answer; round 3: two serial calls + answer
    assert [c["round"] for c in CALLS] == [1, 1, 2, 2, 3, 3, 3]
    replay = json.loads(REPLAY.read_text(encoding="utf-8"))
    assert replay["dialect"] == "hermes"
    printed = [c["raw_output"] for c in CALLS]
    # the replay adds the describe round's two outputs before round 3 (see the extractor)
    assert replay["outputs"][:4] + replay["outputs"][6:] == printed


def test_round1_by_hand(hermes: HermesDialect) -> None:
    history = [
        SystemMessage(SYSTEM),
        HumanMessage("数据库有几张表"),
        AIMessage("", tool_calls=[{"name": "sqlite-list_tables", "args": {}, "id": "call_a"}]),
        ToolMessage(
            "[{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]",
            tool_call_id="call_a",
        ),
    ]
    assert as_dicts(hermes.render(history, SQLITE_TOOLS)) == CALLS[1]["model_input"]


@pytest.mark.parametrize("call", CALLS, ids=ids(CALLS))
def test_render_matches_seed_byte_for_byte(hermes: HermesDialect, call: dict[str, Any]) -> None:
    rendered = hermes.render(canonical(call["raw_input"]), SQLITE_TOOLS)
    assert all(isinstance(m.content, str) for m in rendered)
    assert as_dicts(rendered) == call["model_input"]


@pytest.mark.parametrize("call", CALLS, ids=ids(CALLS))
def test_parse_matches_seed_postprocessing(hermes: HermesDialect, call: dict[str, Any]) -> None:
    msg = hermes.parse(call["raw_output"])
    expected_calls = [m["function_call"] for m in call["post_output"] if m.get("function_call")]
    assert [(c["name"], c["args"]) for c in msg.tool_calls] == [
        (fc["name"], json.loads(fc["arguments"])) for fc in expected_calls
    ]
    texts = [_text(m["content"]) for m in call["post_output"] if not m.get("function_call")]
    assert msg.content == "".join(texts)
    assert not msg.invalid_tool_calls
    assert "reasoning_content" not in msg.additional_kwargs


@pytest.mark.parametrize("call", CALLS, ids=ids(CALLS))
def test_seed_outputs_round_trip(hermes: HermesDialect, call: dict[str, Any]) -> None:
    # what the model wrote is exactly what we write back for the next model call
    assert hermes.write_assistant(hermes.parse(call["raw_output"])) == call["raw_output"]


def test_parallel_results_render_in_call_order(hermes: HermesDialect) -> None:
    history = canonical(CALLS[3]["raw_input"])
    results = history[-3:]
    shuffled = [*history[:-3], results[2], results[0], results[1]]
    assert as_dicts(hermes.render(shuffled, SQLITE_TOOLS)) == CALLS[3]["model_input"]


def test_tools_prompt_without_system_message(hermes: HermesDialect) -> None:
    seed_system = CALLS[0]["model_input"][0]["content"]
    rendered = hermes.render([HumanMessage("数据库有几张表")], SQLITE_TOOLS)
    assert isinstance(rendered[0], SystemMessage)
    assert rendered[0].content == seed_system.removeprefix(SYSTEM + "\n\n")
    assert rendered[1].content == "数据库有几张表"


def test_tool_lines_use_default_json_separators(hermes: HermesDialect) -> None:
    system = hermes.render([HumanMessage("hi")], SQLITE_TOOLS)[0].content
    assert isinstance(system, str)
    lines = system.split("<tools>\n")[1].split("\n</tools>")[0].split("\n")
    assert [json.loads(line)["function"]["name"] for line in lines] == [
        t["name"] for t in SQLITE_TOOLS
    ]
    assert all(json.dumps(json.loads(line), ensure_ascii=False) == line for line in lines)


def test_registry_names() -> None:
    assert isinstance(get_dialect("hermes"), HermesDialect)
    assert isinstance(get_dialect("nous"), HermesDialect)
    assert get_dialect("hermes").stop == ()
    with pytest.raises(ValueError, match="lang"):
        HermesDialect(lang="fr")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- render details


def test_text_and_reasoning_of_an_earlier_turn(hermes: HermesDialect) -> None:
    turn = AIMessage(
        "我先查一下。",
        tool_calls=[{"name": "sqlite-list_tables", "args": {}, "id": "c1"}],
        additional_kwargs={"reasoning_content": "用户想知道表的数量"},
    )
    history = [HumanMessage("数据库有几张表"), turn, ToolMessage("[]", tool_call_id="c1")]
    rendered = hermes.render(history, SQLITE_TOOLS)
    assert rendered[2].content == (
        '我先查一下。\n<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}\n</tool_call>'
    )
    assert rendered[2].additional_kwargs == {"reasoning_content": "用户想知道表的数量"}
    assert not isinstance(rendered[2], AIMessage) or not rendered[2].tool_calls
    assert rendered[3].content == "<tool_response>\n[]\n</tool_response>"


def test_invalid_call_is_written_back_as_the_model_wrote_it(hermes: HermesDialect) -> None:
    msg = hermes.parse("<tool_call>\n{oops\n</tool_call>")
    assert msg.invalid_tool_calls
    assert hermes.write_assistant(msg) == "<tool_call>\n{oops\n</tool_call>"


@pytest.mark.parametrize(
    ("lang", "call_text", "result_text"),
    [
        (
            "en",
            '\n\nThe tool "sqlite-read_query" was called with these arguments: \n{"query": "SELECT 1"}',
            "\n\nThe tool has returned the following result: \n[{'1': 1}]",
        ),
        (
            "zh",
            '\n\n工具"sqlite-read_query"被调用时使用了以下参数：\n{"query": "SELECT 1"}',
            "\n\n该工具返回了以下结果：\n[{'1': 1}]",
        ),
    ],
)
def test_history_without_tools_is_told_as_user_text(
    lang: str, call_text: str, result_text: str
) -> None:
    history = [
        SystemMessage(SYSTEM),
        HumanMessage("q"),
        AIMessage(
            "", tool_calls=[{"name": "sqlite-read_query", "args": {"query": "SELECT 1"}, "id": "c"}]
        ),
        ToolMessage("[{'1': 1}]", tool_call_id="c"),
        AIMessage("一"),
        HumanMessage("again"),
        HumanMessage("and again"),
    ]
    rendered = HermesDialect(lang=lang).render(history, None)  # type: ignore[arg-type]
    assert [(ROLE[type(m)], m.content) for m in rendered] == [
        ("system", SYSTEM),
        ("user", "q" + call_text + result_text),
        ("assistant", "一"),
        ("user", "again"),
        ("assistant", "..."),
        ("user", "and again"),
    ]


# --------------------------------------------------------------------------- parse


def call_pairs(msg: AIMessage) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["args"]) for c in msg.tool_calls]


def test_text_before_and_after_calls_is_content(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '我来查询。\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>\n稍等。'
    )
    assert call_pairs(msg) == [("a", {"x": 1}), ("b", {})]
    assert msg.content.startswith("我来查询。") and msg.content.endswith("稍等。")
    assert "<" not in msg.content
    assert len({c["id"] for c in msg.tool_calls}) == 2


def test_think_is_reasoning_and_its_calls_are_not_run(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '<think>\n也许应该 <tool_call>{"name": "sqlite-write_query", "arguments": {}}</tool_call>\n'
        "不,先读。\n</think>\n\n"
        '<tool_call>\n{"name": "sqlite-read_query", "arguments": {"query": "SELECT 1"}}\n</tool_call>'
    )
    assert call_pairs(msg) == [("sqlite-read_query", {"query": "SELECT 1"})]
    reasoning = msg.additional_kwargs["reasoning_content"]
    assert "sqlite-write_query" in reasoning and "不,先读。" in reasoning
    assert msg.content == ""


def test_unclosed_last_call_with_complete_json_is_a_call(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {"q": "x"}}\n'
    )
    assert call_pairs(msg) == [("a", {}), ("b", {"q": "x"})]
    assert not msg.invalid_tool_calls


def test_truncated_json_is_not_completed_into_a_call(hermes: HermesDialect) -> None:
    msg = hermes.parse('<tool_call>\n{"name": "sqlite-write_query", "arguments": {"query": "DELETE')
    assert msg.tool_calls == []
    (bad,) = msg.invalid_tool_calls
    assert "before its JSON was complete" in bad["error"]
    assert bad["args"].strip().startswith('{"name": "sqlite-write_query"')


def test_closed_block_missing_a_brace_is_repaired(hermes: HermesDialect) -> None:
    msg = hermes.parse('<tool_call>\n{"name": "a", "arguments": {"q": "x"}\n</tool_call>')
    assert call_pairs(msg) == [("a", {"q": "x"})]


def test_arguments_as_json_string(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '<tool_call>\n{"name": "sqlite-read_query", "arguments": "{\\"query\\": \\"SELECT 1\\"}"}\n'
        "</tool_call>"
    )
    assert call_pairs(msg) == [("sqlite-read_query", {"query": "SELECT 1"})]


@pytest.mark.parametrize(
    "body",
    [
        "{'name': 'f', 'arguments': {'flag': True, 'none': None, 'off': False}}",
        '{"name": "f", "arguments": {"flag": true, "none": null, "off": false,},}',
        '```json\n{"name": "f", "arguments": {"flag": true, "none": null, "off": false}}\n```',
    ],
)
def test_common_breakage_is_repaired(hermes: HermesDialect, body: str) -> None:
    msg = hermes.parse(f"<tool_call>\n{body}\n</tool_call>")
    assert call_pairs(msg) == [("f", {"flag": True, "none": None, "off": False})]


def test_nested_braces_and_braces_in_strings(hermes: HermesDialect) -> None:
    args = {"query": "SELECT '{x}' AS a WHERE b = '}'", "opts": {"deep": {"list": [1, {"k": "{"}]}}}
    raw = json.dumps({"name": "f", "arguments": args}, ensure_ascii=False)
    assert call_pairs(hermes.parse(f"<tool_call>\n{raw}\n</tool_call>")) == [("f", args)]
    assert call_pairs(hermes.parse(f"<tool_call>\n{raw}")) == [("f", args)]  # unclosed too


def test_chinese_arguments(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '<tool_call>\n{"name": "sqlite-write_query", "arguments": '
        '{"query": "INSERT INTO log (action) VALUES (\'查询了韩梅梅的年龄\')"}}\n</tool_call>'
    )
    assert msg.tool_calls[0]["args"] == {
        "query": "INSERT INTO log (action) VALUES ('查询了韩梅梅的年龄')"
    }


def test_unknown_tool_name_is_still_a_call(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '<tool_call>\n{"name": "sqlite-drop_everything", "arguments": {}}\n</tool_call>'
    )
    assert call_pairs(msg) == [("sqlite-drop_everything", {})]


def test_several_objects_in_one_block(hermes: HermesDialect) -> None:
    msg = hermes.parse(
        '<tool_call>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}\n</tool_call>'
    )
    assert call_pairs(msg) == [("a", {}), ("b", {})]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("<tool_call>\nthis is not json at all\n</tool_call>", "JSON"),
        ('<tool_call>\n{"arguments": {}}\n</tool_call>', "missing tool name"),
        ('<tool_call>\n{"name": "f", "arguments": [1, 2]}\n</tool_call>', "bad arguments"),
        ("<tool_call>\n[]\n</tool_call>", "no tool call"),
        ('<tool_call>\n"just a string"\n</tool_call>', "expected a JSON object"),
    ],
)
def test_garbage_is_an_invalid_call_not_an_exception(
    hermes: HermesDialect, reply: str, error: str
) -> None:
    msg = hermes.parse(reply)
    assert msg.tool_calls == []
    (bad,) = msg.invalid_tool_calls
    assert error in bad["error"]
    assert bad["id"]


def test_stray_closing_tags_do_not_reach_content(hermes: HermesDialect) -> None:
    assert hermes.parse("答案</tool_call>是 6。</think>").content == "答案是 6。"


def test_empty_block_is_ignored(hermes: HermesDialect) -> None:
    msg = hermes.parse("好的<tool_call>\n</tool_call>")
    assert (msg.content, msg.tool_calls, msg.invalid_tool_calls) == ("好的", [], [])


def test_ids_are_unique_across_parses(hermes: HermesDialect) -> None:
    reply = CALLS[2]["raw_output"]
    first, second = hermes.parse(reply), hermes.parse(reply)
    all_ids = [c["id"] for c in first.tool_calls + second.tool_calls]
    assert len(all_ids) == len(set(all_ids)) == 6


# --------------------------------------------------------------------------- streaming

MIXED = (
    "<think>先看看有哪些表。</think>\n好的,我来查。\n"
    '<tool_call>\n{"name": "sqlite-read_query", "arguments": {"query": "SELECT \'}\' FROM t"}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}\n</tool_call>\n查完告诉你。'
)
MARKUP = ("<tool_call>", "</tool_call>", "<think>", "</think>")


def stream(dialect: HermesDialect, chunks: list[str]) -> tuple[list[Any], AIMessage]:
    parser = dialect.stream_parser()
    events: list[Any] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    return events, parser.message()


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def summary(msg: AIMessage) -> tuple[Any, ...]:
    return (
        msg.content,
        [(c["name"], c["args"]) for c in msg.tool_calls],
        [(c["args"], c["error"]) for c in msg.invalid_tool_calls],
        msg.additional_kwargs,
    )


@pytest.mark.parametrize("size", [1, 2, 3, 5, 11])
def test_tags_split_across_chunks_never_leak(hermes: HermesDialect, size: int) -> None:
    chunks = [MIXED[i : i + size] for i in range(0, len(MIXED), size)]
    events, msg = stream(hermes, chunks)
    deltas = [e.text for e in events if isinstance(e, ContentDelta)]
    assert not any(tag in "".join(deltas) for tag in MARKUP)
    assert not any(d and d in tag for d in deltas for tag in MARKUP if d.startswith("<"))
    assert "".join(deltas) == msg.content
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "先看看有哪些表。"
    assert [e.call["name"] for e in events if isinstance(e, CallEvent)] == [
        "sqlite-read_query",
        "sqlite-list_tables",
    ]
    assert summary(msg) == summary(hermes.parse(MIXED))


def test_calls_are_emitted_as_soon_as_their_block_closes(hermes: HermesDialect) -> None:
    parser = hermes.stream_parser()
    head, _, tail = MIXED.partition("</tool_call>")
    assert not any(isinstance(e, CallEvent) for e in parser.feed(head))
    assert any(isinstance(e, CallEvent) for e in parser.feed("</tool_call>"))
    parser.feed(tail)
    parser.close()


def test_truncated_stream_reports_invalid_call_on_close(hermes: HermesDialect) -> None:
    parser = hermes.stream_parser()
    parser.feed('<tool_call>\n{"name": "f", "argu')
    assert any(isinstance(e, InvalidCallEvent) for e in parser.close())


SAMPLES = [c["raw_output"] for c in CALLS] + [
    MIXED,
    '前言<tool_call>\n{"name": "b", "arguments": {"q": "x"}}\n',
    '<tool_call>\n{"name": "f", "arguments": {"q": "SEL',
    "<tool_call>\nnot json\n</tool_call>尾巴</tool_call>",
]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES), st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_chunking_gives_the_same_message(text: str, cuts: list[int]) -> None:
    dialect = HermesDialect()
    _, msg = stream(dialect, split(text, cuts))
    assert summary(msg) == summary(stream(dialect, [text])[1])


def test_mutated_outputs_never_raise(hermes: HermesDialect) -> None:
    rng = random.Random(0)
    alphabet = "<>/{}[]\":,\\'\n tool_call think 韩梅梅"
    for _ in range(300):
        chars = list(rng.choice(SAMPLES))
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(chars) + 1)
            op = rng.random()
            if op < 0.4 and chars:
                del chars[min(i, len(chars) - 1)]
            elif op < 0.8:
                chars.insert(i, rng.choice(alphabet))
            else:
                chars = chars[:i]
        msg = hermes.parse("".join(chars))
        assert isinstance(msg, AIMessage)
        assert all(c["error"] for c in msg.invalid_tool_calls)


def test_markup_inside_argument_strings_round_trips(hermes: HermesDialect) -> None:
    args = {"</tool_call>": "<tool_call>\n{}\n</tool_call>", "t": "<think>x</think>"}
    turn = AIMessage("", tool_calls=[{"name": "f", "args": args, "id": "c"}])
    written = hermes.write_assistant(turn)
    assert written.count("</tool_call>") == 1
    assert call_pairs(hermes.parse(written)) == [("f", args)]


def test_markup_after_the_json_of_an_unclosed_block_is_not_content(hermes: HermesDialect) -> None:
    msg = hermes.parse('<tool_call>\n{"name": "f", "arguments": {}}<think>\n稍等')
    assert call_pairs(msg) == [("f", {})]
    assert msg.content == "稍等"


def test_back_to_back_ai_turns_are_one_assistant_message(hermes: HermesDialect) -> None:
    history = [
        HumanMessage("q"),
        AIMessage("先说明一下。"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c"}]),
        ToolMessage("ok", tool_call_id="c"),
    ]
    rendered = hermes.render(history, SQLITE_TOOLS)
    assert [(ROLE[type(m)], m.content) for m in rendered[1:]] == [
        ("user", "q"),
        ("assistant", '先说明一下。\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'),
        ("user", "<tool_response>\nok\n</tool_response>"),
    ]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ('{"x": NaN}', "arguments.x is nan, which is not a JSON number"),
        ('{"x": Infinity}', "arguments.x is inf"),
        ('{"x": {"y": [1e400]}}', "arguments.x.y[0] is inf"),
        ('{"x": ' + "[" * 10_000 + "]" * 10_000 + "}", "arguments nest deeper than 64 levels"),
        ('{"x": ' + "[" * 70 + "]" * 70 + "}", "arguments nest deeper than 64 levels"),
    ],
    ids=["nan", "infinity", "overflow", "10k-deep", "70-deep"],
)
def test_arguments_json_cannot_carry_make_the_call_invalid(
    hermes: HermesDialect, arguments: str, error: str
) -> None:
    message = hermes.parse(f'<tool_call>\n{{"name": "f", "arguments": {arguments}}}\n</tool_call>')
    assert message.tool_calls == []
    assert error in message.invalid_tool_calls[0]["error"]
