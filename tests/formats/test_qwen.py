"""The Qwen ✿FUNCTION✿ dialect against seed 003 and against Qwen-Agent's own prompt code."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.formats.base import ToolSpec, dumps, to_tool_spec
from fncall_graph.adapters.formats.calls import ContentDelta
from fncall_graph.adapters.formats.qwen import QwenDialect, describe_tool
from fncall_graph.adapters.formats.readers.qwen import FN_ARGS, FN_EXIT, FN_NAME, FN_RESULT

FIXTURES = Path(__file__).parents[1] / "fixtures"
DATA: dict[str, Any] = json.loads((FIXTURES / "seed003_qwen.json").read_text(encoding="utf-8"))
SEED = DATA["seed"]
WEATHER = DATA["weather_tool"]  # the seed's @mcp.tool as FastMCP lists it
GOLDEN = DATA["golden"]


def _extractor() -> Any:
    spec = importlib.util.spec_from_file_location(
        "extract_seed003", FIXTURES / "extract_seed003.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXTRACT = _extractor()
QA = EXTRACT.load_qwen_agent()
needs_qwen_agent = pytest.mark.skipif(QA is None, reason="qwen_agent not installed")


def ascii_punct(text: str) -> str:
    """What the article's scraper did to the prompt text."""
    return text.replace("：", ":").replace("，", ",")


def squash(text: str) -> str:
    """The text without line breaks (the scraper lost some of them)."""
    return text.replace("\n", "")


def qa_function(tool: dict[str, Any]) -> dict[str, Any]:
    spec = to_tool_spec(tool)
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def from_openai(history: list[dict[str, Any]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in history:
        if m["role"] == "system":
            out.append(SystemMessage(m["content"]))
        elif m["role"] == "user":
            out.append(HumanMessage(m["content"]))
        elif m["role"] == "assistant":
            calls = [{**c, "type": "tool_call"} for c in m.get("tool_calls", [])]
            out.append(AIMessage(m["content"], tool_calls=calls))
        else:
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))
    return out


def pairs(messages: list[BaseMessage]) -> list[list[str]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [[roles[m.type], m.content] for m in messages]  # type: ignore[list-item]


ASK = [HumanMessage("上海天气如何")]
VARIANTS = [("zh", False), ("zh", True), ("en", False), ("en", True)]


# --------------------------------------------------------------------------- fixture


def test_fixture_says_where_it_came_from() -> None:
    assert "extract_seed003.py" in DATA["source"]
    assert SEED["markers"] == {
        "FN_NAME": FN_NAME,
        "FN_ARGS": FN_ARGS,
        "FN_RESULT": FN_RESULT,
        "FN_EXIT": FN_EXIT,
    }
    assert WEATHER["name"] == "get_weather"
    assert WEATHER["description"] == "获取指定城市的天气信息"


def test_fixture_tool_is_what_fastmcp_lists() -> None:
    pytest.importorskip("mcp.server.fastmcp")
    assert EXTRACT.fastmcp_weather_tool(SEED["tool_docstring"]) == WEATHER


# --------------------------------------------------------------------------- render: system prompt


def test_zh_system_prompt_for_seed_weather_tool() -> None:
    system, user = QwenDialect(lang="zh", parallel=False).render(ASK, [WEATHER])
    assert isinstance(system, SystemMessage) and isinstance(user, HumanMessage)
    assert system.content == GOLDEN["system_prompts"]["zh_single"]
    assert system.content.startswith(
        "# 工具\n\n## 你拥有如下工具：\n\n### get_weather\n\n"
        "get_weather: 获取指定城市的天气信息 输入参数："
        '{"type": "object", "properties": {"city": {"title": "City", "type": "string"}}, '
        '"required": ["city"]} 此工具的输入应为JSON对象。\n\n'
        "## 你可以在回复中插入零次、一次或多次以下命令以调用工具：\n\n"
        "✿FUNCTION✿: 工具名称，必须是[get_weather]之一。\n"
    )
    assert user.content == "上海天气如何"


@pytest.mark.parametrize(("lang", "parallel"), VARIANTS)
def test_system_prompt_variants_match_golden(lang: str, parallel: bool) -> None:
    key = f"{lang}_{'parallel' if parallel else 'single'}"
    system = QwenDialect(lang=lang, parallel=parallel).render(ASK, [WEATHER])[0]
    assert system.content == GOLDEN["system_prompts"][key]


@needs_qwen_agent
@pytest.mark.parametrize(("lang", "parallel"), VARIANTS)
def test_system_prompt_variants_match_qwen_agent(lang: str, parallel: bool) -> None:
    tools: list[Any] = [
        WEATHER,
        {"name": "get_current_time", "description": "获取当前时间", "parameters": {}},
    ]
    ours = QwenDialect(lang=lang, parallel=parallel).render(ASK, tools)
    theirs = EXTRACT.qwen_agent_render(
        QA,
        [{"role": "user", "content": "上海天气如何"}],
        [qa_function(t) for t in tools],
        lang=lang,
        parallel=parallel,
    )
    assert pairs(ours) == theirs


@needs_qwen_agent
def test_tool_description_matches_qwen_agent_per_language() -> None:
    spec = to_tool_spec(WEATHER)
    for lang in ("zh", "en"):
        assert describe_tool(spec, lang) == QA.get_function_description(qa_function(WEATHER), lang)


def test_seed_transcript_differs_only_in_full_width_punctuation() -> None:
    """The article shows the same template with ASCII ':' and ',' (and lost line breaks)."""
    spec = to_tool_spec(WEATHER)
    names = {"name_for_human": spec.name, "name_for_model": spec.name}
    for lang in ("zh", "en"):
        seed_desc = (
            SEED["tool_desc"][lang]
            .replace("\\n", "\n")
            .format(
                **names,
                description_for_model=spec.description,
                parameters=dumps(spec.parameters),
                args_format=SEED["args_format"][lang],
            )
        )
        assert ascii_punct(describe_tool(spec, lang)) == seed_desc

    m = SEED["markers"]
    order = {
        "FMT_ZH": ("FN_NAME", "FN_ARGS", "FN_RESULT", "FN_EXIT"),
        "FMT_EN": ("FN_NAME", "FN_ARGS", "FN_RESULT", "FN_EXIT"),
    }
    order["FMT_PARA_ZH"] = order["FMT_PARA_EN"] = (
        ("FN_NAME", "FN_ARGS") * 3 + ("FN_RESULT",) * 3 + ("FN_EXIT",)
    )
    t = SEED["templates"]
    for lang, parallel, fmt in [
        ("zh", False, "FMT_ZH"),
        ("zh", True, "FMT_PARA_ZH"),
        ("en", False, "FMT_EN"),
        ("en", True, "FMT_PARA_EN"),
    ]:
        ours = QwenDialect(lang=lang, parallel=parallel).render(ASK, [WEATHER])[0].content
        info = t[f"INFO_{lang.upper()}"]
        seed_text = (info + "\n\n" + t[fmt] % tuple(m[k] for k in order[fmt])).format(
            tool_descs=ascii_punct(describe_tool(spec, lang)), tool_names=spec.name
        )
        assert squash(ascii_punct(ours)) == squash(seed_text)
        if lang == "zh":  # the product keeps the trained-on full-width punctuation
            assert "：" in ours and "，" in ours
            assert squash(ours) != squash(seed_text)


def test_seed_printed_prompt_shares_the_structure() -> None:
    """The article's printed system message comes from an older Qwen-Agent.

    Same headings, tool blocks and ✿FUNCTION✿/✿ARGS✿ lines, modulo punctuation and the
    blank lines the scraper dropped; its tool lines have no args_format sentence yet and
    its ✿RESULT✿/✿RETURN✿ lines were worded differently.
    """
    tools = [
        ToolSpec(
            "get_current_weather",
            "基于给定的城市获取天气",
            {
                "type": "object",
                "properties": {"location": {"type": "string", "description": "城市名称"}},
                "required": ["location"],
            },
        ),
        ToolSpec("get_current_time", "获取当前时间", {}),  # type: ignore[arg-type]
    ]
    system_text, *_ = SEED["printed_system"].split("\n")
    rendered = QwenDialect(lang="zh", parallel=False).render(
        [SystemMessage(system_text), HumanMessage(SEED["printed_user"])], tools
    )
    ours = [ascii_punct(line) for line in rendered[0].content.split("\n") if line]
    seed_lines = SEED["printed_system"].split("\n")
    assert seed_lines[:4] == ours[:4]
    assert ours[4] == seed_lines[4] + " 此工具的输入应为JSON对象。"
    assert seed_lines[7:10] == ours[7:10]
    assert seed_lines[10:] == [
        "✿RESULT✿: 工具结果,需将图片用![](url)渲染出来。",
        "✿RETURN✿: 根据工具结果进行回复",
    ]
    assert ours[10:] == [
        "✿RESULT✿: 工具结果",
        "✿RETURN✿: 根据工具结果进行回复,需将图片用![](url)渲染出来",
    ]


def test_system_message_is_extended_and_no_tools_adds_nothing() -> None:
    d = QwenDialect(lang="en")
    out = d.render([SystemMessage("Be brief."), HumanMessage("hi")], [WEATHER])
    assert out[0].content.startswith("Be brief.\n\n# Tools\n\n## You have access")
    assert pairs(d.render([HumanMessage("hi")], None)) == [["user", "hi"]]


def test_auto_language_follows_the_user() -> None:
    d = QwenDialect()
    assert d.render(ASK, [WEATHER])[0].content.startswith("# 工具")
    assert d.render([HumanMessage("weather?")], [WEATHER])[0].content.startswith("# Tools")


# --------------------------------------------------------------------------- render: history


def test_history_renders_as_qwen_agent_golden() -> None:
    ours = QwenDialect(lang="zh", parallel=True).render(from_openai(GOLDEN["history"]), [WEATHER])
    assert pairs(ours) == GOLDEN["history_rendered"]
    # results are folded into the assistant turn; the pending turn goes into the user turn
    assert [r for r, _ in pairs(ours)] == ["system", "user", "assistant", "user"]
    assert ours[-1].content.endswith(f"{FN_RESULT}: 小雨,温度 28°C\n{FN_EXIT}")


HISTORIES = {
    "golden": GOLDEN["history"],
    "calls_without_text_then_more_calls": [
        {"role": "user", "content": "weather in Paris, then Rome"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "name": "get_weather", "args": {"city": "Paris"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "b", "name": "get_weather", "args": {"city": "Rome"}}],
        },
        {"role": "tool", "tool_call_id": "b", "content": ""},
        {"role": "assistant", "content": "Paris is sunny; Rome unknown."},
    ],
    "text_then_call_after_result": [
        {"role": "user", "content": "two steps"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "name": "get_weather", "args": {"city": "A"}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "rain"},
        {
            "role": "assistant",
            "content": "Now B.",
            "tool_calls": [{"id": "b", "name": "get_weather", "args": {"city": "B"}}],
        },
        {"role": "tool", "tool_call_id": "b", "content": "snow"},
    ],
}


@needs_qwen_agent
@pytest.mark.parametrize("name", list(HISTORIES))
@pytest.mark.parametrize(("lang", "parallel"), VARIANTS)
def test_history_renders_as_qwen_agent(name: str, lang: str, parallel: bool) -> None:
    history = HISTORIES[name]
    ours = QwenDialect(lang=lang, parallel=parallel).render(from_openai(history), [WEATHER])
    theirs = EXTRACT.qwen_agent_render(
        QA, history, [qa_function(WEATHER)], lang=lang, parallel=parallel
    )
    assert pairs(ours) == theirs


def test_prefill_keeps_the_pending_assistant_turn() -> None:
    d = QwenDialect(lang="zh", fold_continuation=False)
    out = d.render(from_openai(GOLDEN["history"]), [WEATHER])
    assert isinstance(out[-1], AIMessage)
    assert out[-1].content.startswith(f"{FN_NAME}: get_weather\n")
    assert out[-1].content.endswith(f"\n{FN_EXIT}")
    assert out[-2].content == "广州呢?"


# --------------------------------------------------------------------------- parse


def test_parse_seed_example() -> None:
    msg = QwenDialect(lang="zh").parse(SEED["model_output"])
    assert msg.content == ""
    assert [(c["name"], c["args"], c["type"]) for c in msg.tool_calls] == [
        ("get_current_weather", {"location": "上海"}, "tool_call")
    ]
    # the article printed {'name': '上海'}; its own ✿ARGS✿ line says "location"
    assert "'args': {'name': '上海'}" in SEED["parsed_printed"]


def test_parse_seed_full_exchange_drops_invented_result_and_reply() -> None:
    msg = QwenDialect(lang="zh").parse(SEED["model_output_full"])
    assert [c["args"] for c in msg.tool_calls] == [{"location": "上海"}]
    assert msg.content == ""
    assert not msg.invalid_tool_calls


def test_parse_parallel_calls_with_text_before() -> None:
    text = (
        '我来查一下。\n✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "北京"}\n'
        '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "上海"}\n'
    )
    msg = QwenDialect().parse(text)
    assert msg.content == "我来查一下。"
    assert [c["args"]["city"] for c in msg.tool_calls] == ["北京", "上海"]
    assert len({c["id"] for c in msg.tool_calls}) == 2


def test_single_mode_changes_the_prompt_only() -> None:
    text = "✿FUNCTION✿: a\n✿ARGS✿: {}\n✿FUNCTION✿: b\n✿ARGS✿: {}"
    assert [c["name"] for c in QwenDialect(parallel=False).parse(text).tool_calls] == ["a", "b"]


def test_parse_return_answer_and_continuation_colon() -> None:
    d = QwenDialect()
    assert d.parse("✿RETURN✿: 上海多云。").content == "上海多云。"
    assert d.parse("✿RETURN✿：上海多云。").content == "上海多云。"
    # the prompt ended in "✿RETURN✿", so the model starts with ": "
    assert d.parse(": 上海多云，25°C。").content == "上海多云，25°C。"
    assert d.parse("：上海多云").content == "上海多云"
    assert d.parse("Ratio 3:1").content == "Ratio 3:1"


def test_parse_invented_result_is_dropped() -> None:
    msg = QwenDialect().parse(
        '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "上海"}\n✿RESULT✿: 晴\n'
        "✿FUNCTION✿: get_weather\n✿ARGS✿: {}\n✿RETURN✿: 晴天"
    )
    assert len(msg.tool_calls) == 1 and msg.content == ""


def test_parse_unknown_tool_is_still_a_call() -> None:
    msg = QwenDialect().parse('✿FUNCTION✿: no_such_tool\n✿ARGS✿: {"x": 1}')
    assert msg.tool_calls[0]["name"] == "no_such_tool"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("{'city': '上海',}", {"city": "上海"}),
        ('{"city": "上海"', {"city": "上海"}),
        ('```json\n{"city": "上海"}\n```', {"city": "上海"}),
        ('{"city": "上海"} <!-- an example -->', {"city": "上海"}),
        ('{"city": "上海"}\n好的,我等待结果。', {"city": "上海"}),
        ('"{\\"city\\": \\"上海\\"}"', {"city": "上海"}),
        ("", {}),
    ],
)
def test_parse_repairs_arguments(args: str, expected: dict[str, Any]) -> None:
    msg = QwenDialect().parse(f"✿FUNCTION✿: get_weather\n✿ARGS✿: {args}")
    assert [c["args"] for c in msg.tool_calls] == [expected]
    assert msg.content == ""


def test_parse_spacing_and_full_width_colons() -> None:
    for text in (
        '✿FUNCTION✿：get_weather\n✿ARGS✿：{"city": "上海"}',
        '✿FUNCTION✿:get_weather\n\n✿ARGS✿ :  {"city": "上海"}  \n',
        '  ✿FUNCTION✿: get_weather ✿ARGS✿: {"city": "上海"}',
    ):
        msg = QwenDialect().parse(text)
        assert [(c["name"], c["args"]) for c in msg.tool_calls] == [
            ("get_weather", {"city": "上海"})
        ], text


def test_markers_inside_argument_strings_stay_arguments() -> None:
    args = {"note": "✿FUNCTION✿: x\n✿ARGS✿: {}\n✿RESULT✿ ✿RETURN✿"}
    d = QwenDialect()
    text = (
        d.write_assistant(AIMessage("", tool_calls=[{"name": "f", "args": args, "id": "1"}]))
        + "\n✿FUNCTION✿: g\n✿ARGS✿: {}"
    )
    msg = d.parse(text)
    assert [(c["name"], c["args"]) for c in msg.tool_calls] == [("f", args), ("g", {})]
    assert msg.content == ""


def test_markers_on_the_same_line_as_the_arguments() -> None:
    msg = QwenDialect().parse(
        '✿FUNCTION✿: a ✿ARGS✿: {} ✿FUNCTION✿: b ✿ARGS✿: {"k": 1} ✿RETURN✿: done'
    )
    assert [(c["name"], c["args"]) for c in msg.tool_calls] == [("a", {}), ("b", {"k": 1})]
    assert msg.content == "done"
    msg = QwenDialect().parse("✿FUNCTION✿: a\n✿ARGS✿: {}✿RESULT✿: made up ✿RETURN✿: also")
    assert len(msg.tool_calls) == 1 and msg.content == ""


def test_parse_missing_args() -> None:
    d = QwenDialect()
    assert d.parse("✿FUNCTION✿: list_tables\n").tool_calls[0]["args"] == {}
    bad = d.parse("✿FUNCTION✿: get_weather\n北京").invalid_tool_calls
    assert bad[0]["name"] == "get_weather" and "✿ARGS✿" in bad[0]["error"]


def test_parse_several_args_under_one_name() -> None:
    msg = QwenDialect().parse('✿FUNCTION✿: f\n✿ARGS✿: {"a": 1}\n✿ARGS✿: {"a": 2}')
    assert [(c["name"], c["args"]) for c in msg.tool_calls] == [("f", {"a": 1}), ("f", {"a": 2})]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("✿FUNCTION✿: get_weather\n✿ARGS✿: 北京 please", "get_weather"),
        ("✿FUNCTION✿: \n✿ARGS✿: {}", "missing tool name"),
        ("✿FUNCTION✿: get weather now\n✿ARGS✿: {}", "unreadable tool name"),
        ("✿FUNCTION✿: f\n✿ARGS✿: [1, 2]", "JSON object"),
    ],
)
def test_parse_garbage_becomes_invalid_call(text: str, needle: str) -> None:
    msg = QwenDialect().parse(text)
    assert not msg.tool_calls
    (bad,) = msg.invalid_tool_calls
    assert needle in bad["error"] or needle == bad["name"]
    assert bad["error"] and bad["args"].startswith(FN_NAME)


def test_think_is_kept_apart() -> None:
    msg = QwenDialect().parse(
        "<think>用户要上海天气 ✿FUNCTION✿ 不在这里</think>\n"
        '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "上海"}'
    )
    assert msg.additional_kwargs["reasoning_content"] == "用户要上海天气 ✿FUNCTION✿ 不在这里"
    assert msg.content == "" and len(msg.tool_calls) == 1


STREAM_SAMPLES = [
    '我来查一下。\n✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "北京"}\n'
    '✿FUNCTION✿：get_weather\n✿ARGS✿：{"city": "上海"}\n✿RESULT✿: 晴',
    ": 北京晴天✿RETURN✿: 上海多云✿",
    "<think>x</think>先说✿ARGS✿: 说完✿RETURN✿",
    "✿FUNCTION✿: f\n✿ARGS✿: {bad json\n✿RETURN✿: ok",
]


def _strip_ids(msg: AIMessage) -> tuple[Any, ...]:
    return (
        msg.content,
        [(c["name"], c["args"]) for c in msg.tool_calls],
        [(c["name"], c["args"], c["error"]) for c in msg.invalid_tool_calls],
        msg.additional_kwargs.get("reasoning_content"),
    )


@pytest.mark.parametrize("text", STREAM_SAMPLES)
@pytest.mark.parametrize("parallel", [True, False])
def test_any_chunking_gives_the_same_message_and_no_marker_leaks(text: str, parallel: bool) -> None:
    d = QwenDialect(parallel=parallel)
    whole = _strip_ids(d.parse(text))
    splits = [[text[:i], text[i:j], text[j:]] for i in range(len(text)) for j in (i + 1, i + 3)]
    splits.append(list(text))
    for chunks in splits:
        parser = d.stream_parser()
        events = [e for ch in chunks for e in parser.feed(ch)] + parser.close()
        deltas = "".join(e.text for e in events if isinstance(e, ContentDelta))
        assert "✿" not in deltas.replace("✿RETURN✿", "").replace("上海多云✿", "")
        for marker in (FN_NAME, FN_ARGS, FN_RESULT, FN_EXIT):
            assert marker not in deltas
        assert deltas == whole[0]
        assert _strip_ids(parser.message()) == whole, chunks


# --------------------------------------------------------------------------- write-back


def test_write_assistant_round_trips() -> None:
    d = QwenDialect()
    msg = AIMessage(
        "我来查一下。",
        tool_calls=[
            {"name": "get_weather", "args": {"city": "北京"}, "id": "1"},
            {"name": "list_tables", "args": {}, "id": "2"},
        ],
    )
    text = d.write_assistant(msg)
    assert text == (
        '我来查一下。\n✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "北京"}\n'
        "✿FUNCTION✿: list_tables\n✿ARGS✿: {}"
    )
    back = d.parse(text)
    assert back.content == msg.content
    assert [(c["name"], c["args"]) for c in back.tool_calls] == [
        (c["name"], c["args"]) for c in msg.tool_calls
    ]


def test_write_assistant_keeps_invalid_calls_visible() -> None:
    msg = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "f", "args": "{bad", "id": "x", "error": "e", "type": "invalid_tool_call"}
        ],
    )
    assert QwenDialect().write_assistant(msg) == "✿FUNCTION✿: f\n✿ARGS✿: {bad"


def test_registry_and_stop() -> None:
    d = get_dialect("qwen", lang="zh", parallel=False)
    assert isinstance(d, QwenDialect) and d.lang == "zh" and not d.parallel
    assert d.stop == ("✿RESULT✿", "✿RETURN✿")
    with pytest.raises(ValueError):
        QwenDialect(lang="fr")  # type: ignore[arg-type]
