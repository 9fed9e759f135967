"""with_dialect(): LangChain's chat-model interface for a model that only writes text.

The inner model is a ReplayChatModel, so the exact prompts it received can be checked
against the dialect's render, and its replies against the dialect's parse.
"""

from __future__ import annotations

import asyncio
import json
from functools import reduce
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from pydantic import BaseModel

from fncall_graph.adapters import get_dialect, with_dialect
from fncall_graph.adapters.formats.stream_reading import READ_REPLY_KEY, restore_read_reply
from fncall_graph.adapters.models.chat_model import DialectChatModel
from fncall_graph.testing import ReplayChatModel


@tool
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return {"北京": "晴，25°C", "广州": "小雨，28°C"}.get(city, "未知")


@tool
def get_time(city: str) -> str:
    """Current local time of a city."""
    return f"{city}: 10:16"


TOOLS = [get_weather, get_time]


def hermes_call(name: str, **args: str) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


REPLY = (
    "<think>Two cities, one tool each.</think>\n先查天气。\n"
    + hermes_call("get_weather", city="北京")
    + "\n"
    + hermes_call("get_time", city="广州")
)


def _sum(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    return reduce(lambda a, b: a + b, chunks)


def _calls(msg: AIMessage) -> list[tuple[str, dict]]:
    return [(c["name"], c["args"]) for c in msg.tool_calls]


def test_invoke_renders_with_the_dialect_and_parses_the_reply() -> None:
    inner = ReplayChatModel([REPLY])
    model = with_dialect(inner, "hermes").bind_tools(TOOLS)
    history = [SystemMessage("你是助手"), HumanMessage("北京天气和广州时间?")]
    msg = model.invoke(history)

    hermes = get_dialect("hermes")
    assert inner.inputs[0] == hermes.render(history, TOOLS)
    assert "tools" not in inner.calls[0]  # the tools went into the prompt
    expected = hermes.parse(REPLY)
    assert msg.content == expected.content == "先查天气。"
    assert _calls(msg) == _calls(expected)
    assert msg.additional_kwargs["reasoning_content"] == "Two cities, one tool each."
    assert len({c["id"] for c in msg.tool_calls}) == 2


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 17, 1000])
def test_stream_adds_up_to_the_parsed_message(chunk_size: int | None) -> None:
    inner = ReplayChatModel([REPLY], chunk_size=chunk_size)
    model = with_dialect(inner, "hermes").bind_tools(TOOLS)
    chunks = list(model.stream("北京天气和广州时间?"))
    total = _sum(chunks)
    expected = get_dialect("hermes").parse(REPLY)
    assert total.content == expected.content
    assert _calls(total) == _calls(expected)
    assert total.additional_kwargs["reasoning_content"] == "Two cities, one tool each."
    # one tool_call_chunk per finished call, each with its own index and whole JSON args
    tcc = [c for ch in chunks for c in ch.tool_call_chunks]
    assert [c["index"] for c in tcc] == [0, 1]
    assert all(json.loads(c["args"]) for c in tcc)
    assert "<tool_call>" not in "".join(str(c.content) for c in chunks)
    assert chunks[-1].chunk_position == "last"


class _Tokens(BaseCallbackHandler):
    """A streaming listener, as LangGraph's ``stream_mode="messages"`` attaches one."""

    def on_llm_new_token(self, token: str, **kwargs: object) -> None:
        pass


NAN_FIELD = {
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": NaN}'},
        }
    ],
}
BROKEN_MARKUP = (
    '先查。\n<tool_call>\n{"name": "get_weather", "arguments": {"city": NaN}}\n</tool_call>'
)


@pytest.mark.parametrize(
    ("dialect", "reply"),
    [("native", NAN_FIELD), ("hermes", BROKEN_MARKUP)],
    ids=["native", "hermes"],
)
@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_unreadable_calls_read_the_same_streamed_or_not(dialect, reply, chunk_size) -> None:
    """Chunks carry no error and must quote an unreadable call's text; the streamed reply
    gets both back, so the model is told why in either case and sees what it wrote."""
    plain = with_dialect(ReplayChatModel([reply]), dialect).bind_tools(TOOLS).invoke("q")
    inner = ReplayChatModel([reply, reply], chunk_size=chunk_size)
    model = with_dialect(inner, dialect).bind_tools(TOOLS)
    streamed = model.invoke("q", {"callbacks": [_Tokens()]})
    summed = restore_read_reply(_sum(list(model.stream("q"))))
    assert plain.tool_calls == [] and len(plain.invalid_tool_calls) == 1
    bad = plain.invalid_tool_calls[0]
    assert "arguments.city is nan" in bad["error"] and "NaN" in bad["args"]
    for other in (streamed, summed):
        assert other.tool_calls == []
        assert [(c["args"], c["error"]) for c in other.invalid_tool_calls] == [
            (bad["args"], bad["error"])
        ]
        assert READ_REPLY_KEY not in other.additional_kwargs


async def test_async_paths_match_the_sync_ones() -> None:
    inner = ReplayChatModel([REPLY, REPLY], chunk_size=4)
    model = with_dialect(inner, "hermes").bind_tools(TOOLS)
    sync = model.invoke("q")
    msg = await model.ainvoke("q")
    assert (msg.content, _calls(msg)) == (sync.content, _calls(sync))
    inner2 = ReplayChatModel([REPLY], chunk_size=4)
    total = _sum([c async for c in with_dialect(inner2, "hermes").bind_tools(TOOLS).astream("q")])
    assert (total.content, _calls(total)) == (sync.content, _calls(sync))


def test_stop_sequences_reach_the_inner_model() -> None:
    qwen = get_dialect("qwen")
    invented = '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "北京"}\n✿RESULT✿: invented\n✿RETURN✿: 晴'
    inner = ReplayChatModel([invented, invented])
    model = with_dialect(inner, qwen).bind_tools(TOOLS)
    msg = model.invoke("北京天气?", stop=["Observation:"])
    assert inner.calls[0]["stop"] == [*qwen.stop, "Observation:"]
    assert _calls(msg) == [("get_weather", {"city": "北京"})]  # cut at ✿RESULT✿, as a server does
    total = _sum(list(model.stream("北京天气?")))
    assert inner.calls[1]["stop"] == list(qwen.stop)
    assert _calls(total) == _calls(msg) and total.content == msg.content


def test_tool_choice_picks_what_is_rendered() -> None:
    inner = ReplayChatModel(
        ["ok", hermes_call("get_time", city="北京"), hermes_call("get_weather", city="北京")]
    )
    wrapper = with_dialect(inner, "hermes")
    wrapper.bind_tools(TOOLS, tool_choice="none").invoke("hi")
    wrapper.bind_tools(TOOLS, tool_choice="get_time").invoke("hi")
    wrapper.bind_tools(TOOLS, tool_choice="any").invoke("hi")
    none, one, every = (call[0].content for call in inner.inputs)
    assert none == "hi" and len(inner.inputs[0]) == 1
    assert '"get_time"' in one and '"get_weather"' not in one
    assert '"get_time"' in every and '"get_weather"' in every
    with pytest.raises(ValueError, match="names none of the bound tools"):
        wrapper.bind_tools(TOOLS, tool_choice="nope").invoke("hi")


class GrammarReplay(ReplayChatModel):
    """A replayed model whose server, like llama.cpp's, applies a request's GBNF grammar."""

    accepts_grammar: bool = True


@pytest.mark.parametrize("choice", ["any", "required", True, "get_time"])
def test_a_forcing_tool_choice_is_asked_again_then_raises(choice: object) -> None:
    inner = ReplayChatModel(["It is sunny.", "Still sunny."])
    model = with_dialect(inner, "hermes").bind_tools(TOOLS, tool_choice=choice)
    with pytest.raises(OutputParserException, match="demanded a tool call"):
        model.invoke("天气?")
    assert len(inner.inputs) == 2  # asked once more, with the demand restated
    assert "call to one of the tools" in inner.inputs[1][-1].content


def test_a_forcing_tool_choice_answered_on_the_second_try() -> None:
    qwen_call = '✿FUNCTION✿: get_time\n✿ARGS✿: {"city": "北京"}'
    inner = ReplayChatModel(["It is sunny.", qwen_call])
    model = with_dialect(inner, "qwen").bind_tools(TOOLS, tool_choice="any")
    assert [c["name"] for c in model.invoke("几点?").tool_calls] == ["get_time"]


def test_a_forcing_tool_choice_sends_the_calls_only_grammar_where_the_server_takes_one() -> None:
    inner = GrammarReplay([hermes_call("get_time", city="北京"), "plain answer"])
    forced = with_dialect(inner, "hermes").bind_tools(TOOLS, tool_choice="get_time")
    assert forced.invoke("几点?").tool_calls[0]["name"] == "get_time"
    grammar = inner.calls[0]["extra_body"]["grammar"]
    assert "get_time" in grammar and "get_weather" not in grammar
    assert "answer" not in grammar.split("\n")[0]  # calls only, no plain answer
    with_dialect(inner, "hermes").bind_tools(TOOLS).invoke("几点?")  # auto: no grammar
    assert "extra_body" not in inner.calls[1]


def test_native_calls_from_the_inner_model_are_merged_without_duplicates() -> None:
    field_call = {"name": "get_weather", "args": {"city": "北京"}, "id": "call_field"}
    inner = ReplayChatModel(
        [
            {"content": hermes_call("get_weather", city="北京"), "tool_calls": [field_call]},
            {"content": hermes_call("get_weather", city="北京"), "tool_calls": [field_call]},
        ]
    )
    model = with_dialect(inner, "hermes").bind_tools(TOOLS)
    msg = model.invoke("q")
    assert [(c["name"], c["id"]) for c in msg.tool_calls] == [("get_weather", "call_field")]
    total = _sum(list(model.stream("q")))
    assert _calls(total) == _calls(msg)


@pytest.mark.parametrize("dialect", ["native", "hermes", "qwen", "react"])
@pytest.mark.parametrize("args", ["", None, '{"city": "北', "[]"])
def test_a_call_the_provider_could_not_read_stays_unreadable_in_every_dialect(dialect, args):
    # a server's tool parser that gave up (arguments empty, cut short, not an object):
    # the call is not run (cut JSON is not completed) and not lost; the model is told why
    field = {"name": "get_weather", "args": args, "id": "call_cut", "error": "cut short"}
    inner = ReplayChatModel([AIMessage("Let me check.", invalid_tool_calls=[field])])
    read = with_dialect(inner, dialect).bind_tools(TOOLS).invoke("天气?")
    assert read.tool_calls == []
    assert [(c["name"], c["args"], c["id"], c["error"]) for c in read.invalid_tool_calls] == [
        ("get_weather", args, "call_cut", "cut short")
    ]


def test_native_dialect_binds_tools_on_the_inner_model_and_reads_markup() -> None:
    # seed 001: a Qwen3 server without a tool parser answers in content despite `tools`
    inner = ReplayChatModel([hermes_call("get_weather", city="北京"), "晴。"])
    model = with_dialect(inner, "native").bind_tools(TOOLS, tool_choice="auto")
    msg = model.invoke([HumanMessage("北京天气?")])
    assert [t["function"]["name"] for t in inner.calls[0]["tools"]] == ["get_weather", "get_time"]
    assert inner.calls[0]["tool_choice"] == "auto"
    assert inner.inputs[0] == [HumanMessage("北京天气?")]
    assert _calls(msg) == [("get_weather", {"city": "北京"})] and msg.content == ""
    assert model.invoke("?").content == "晴。"


def test_wrapper_is_a_chat_model_with_the_dialect_resolved() -> None:
    model = with_dialect(ReplayChatModel(["x"]), "nous")
    assert isinstance(model, DialectChatModel)
    assert model.dialect.name == "hermes"
    with pytest.raises(ValueError, match="unknown dialect"):
        with_dialect(ReplayChatModel(["x"]), "klingon")


# --------------------------------------------------------------------------- LangGraph

# LangGraph's own prebuilt agent, as users of the prebuilt API call it.
prebuilt = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


def _two_tool_replay() -> ReplayChatModel:
    return ReplayChatModel(
        [
            "我先查北京的天气。\n" + hermes_call("get_weather", city="北京"),
            hermes_call("get_time", city="北京"),
            "北京现在 10:16，天气晴，25°C。",
        ],
        chunk_size=3,
    )


@prebuilt
def test_create_react_agent_runs_two_tools_through_hermes_text() -> None:
    from langgraph.prebuilt import create_react_agent

    inner = _two_tool_replay()
    agent = create_react_agent(with_dialect(inner, "hermes"), TOOLS)
    out = agent.invoke({"messages": [HumanMessage("北京的天气和时间?")]})
    msgs = out["messages"]
    assert [m.type for m in msgs] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert msgs[1].tool_calls[0]["name"] == "get_weather"
    assert msgs[2].content == "晴，25°C" and msgs[2].tool_call_id == msgs[1].tool_calls[0]["id"]
    assert msgs[3].tool_calls[0]["name"] == "get_time"
    assert msgs[4].content == "北京: 10:16"
    assert msgs[5].content == "北京现在 10:16，天气晴，25°C。"
    # the model saw the first result as Hermes text in a user message
    second_prompt = inner.inputs[1]
    assert second_prompt[0].content.startswith("# Tools")
    assert second_prompt[-1].type == "human"
    assert second_prompt[-1].content == "<tool_response>\n晴，25°C\n</tool_response>"
    assert len(inner.inputs) == 3


@prebuilt
async def test_create_react_agent_streams_parsed_chunks_only() -> None:
    from langgraph.prebuilt import create_react_agent

    agent = create_react_agent(with_dialect(_two_tool_replay(), "hermes"), TOOLS)
    chunks = [
        msg
        async for msg, meta in agent.astream(
            {"messages": [HumanMessage("北京的天气和时间?")]}, stream_mode="messages"
        )
        if isinstance(msg, AIMessageChunk)
    ]
    text = "".join(str(c.content) for c in chunks)
    assert "<tool_call>" not in text  # the inner model's raw markup is not streamed
    assert "我先查北京的天气。" in text and "北京现在" in text
    names = [c["name"] for ch in chunks for c in ch.tool_call_chunks]
    assert names == ["get_weather", "get_time"]


PROMPT_OPENED_THOUGHT = [
    '我想想。</think>先查。\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京"}}\n</tool_call>',
    "thinking here</think>\n\nThe answer is 4.",
    "Sure.</think>",
]


@pytest.mark.parametrize("text", PROMPT_OPENED_THOUGHT, ids=["call", "answer", "nothing-after"])
@pytest.mark.parametrize("chunk_size", [1, 2, 5, None])
def test_thought_the_prompt_opened_reads_the_same_streamed(text: str, chunk_size) -> None:
    """A chat template that opens ``<think>`` in the prompt makes the reply start with
    reasoning: streamed text shown before ``</think>`` cannot be taken back, so the
    streamed reply carries its answer and ``invoke`` gives the one-shot reading."""
    one = with_dialect(ReplayChatModel([text]), "native").bind_tools(TOOLS).invoke("q")
    inner = ReplayChatModel([text, text], chunk_size=chunk_size)
    model = with_dialect(inner, "native").bind_tools(TOOLS)
    streamed = model.invoke("q", {"callbacks": [_Tokens()]})
    summed = restore_read_reply(_sum(list(model.stream("q"))))
    for other in (streamed, summed):
        assert other.content == one.content
        assert other.additional_kwargs == one.additional_kwargs
        assert _calls(other) == _calls(one)
    assert one.additional_kwargs["reasoning_content"] == text.split("</think>")[0]


def _two_calls() -> str:
    return hermes_call("get_weather", city="北京") + "\n" + hermes_call("get_time", city="广州")


@pytest.mark.parametrize("chunk_size", [None, 4])
def test_parallel_tool_calls_false_runs_the_first_call_of_a_prompt_dialect(chunk_size) -> None:
    inner = ReplayChatModel([_two_calls(), _two_calls()], chunk_size=chunk_size)
    model = with_dialect(inner, "hermes").bind_tools(TOOLS, parallel_tool_calls=False)
    one = model.invoke("q")
    streamed = restore_read_reply(_sum(list(model.stream("q"))))
    for read in (one, streamed):
        assert _calls(read) == [("get_weather", {"city": "北京"})]
        [extra] = read.invalid_tool_calls
        assert extra["name"] == "get_time" and json.loads(extra["args"]) == {"city": "广州"}
        assert "parallel_tool_calls=False" in extra["error"]
    # a shaping option, never a request field
    assert all("parallel_tool_calls" not in c and "strict" not in c for c in inner.calls)


def test_native_bind_tools_options_reach_the_inner_bind_tools() -> None:
    seen: list[dict] = []

    class Inner(ReplayChatModel):
        def bind_tools(self, tools, *, tool_choice=None, **kwargs):  # type: ignore[override]
            seen.append(kwargs)
            return super().bind_tools(tools, tool_choice=tool_choice)

    model = with_dialect(Inner([{"content": "ok"}]), "native")
    bound = model.bind_tools(TOOLS, strict=True, parallel_tool_calls=False)
    assert bound.invoke("q").content == "ok"
    assert seen == [{"strict": True, "parallel_tool_calls": False}]
    assert all(t["function"]["strict"] is True for t in bound.kwargs["tools"])


def test_strict_holds_a_prompt_dialect_to_its_grammar_where_the_server_takes_one() -> None:
    inner = GrammarReplay(["好的。", "好的。"])
    with_dialect(inner, "hermes").bind_tools(TOOLS, strict=True).invoke("q")
    grammar = inner.calls[0]["extra_body"]["grammar"]
    assert "get_time" in grammar and "get_weather" in grammar
    assert "strict" not in inner.calls[0]
    plain = ReplayChatModel(["好的。"])  # no grammar: nothing is sent
    with_dialect(plain, "hermes").bind_tools(TOOLS, strict=True).invoke("q")
    assert "extra_body" not in plain.calls[0] and "strict" not in plain.calls[0]


@pytest.mark.parametrize("dialect", ["hermes", "qwen"])
def test_parallel_tool_calls_false_holds_a_reply_to_one_call_where_the_server_takes_a_grammar(
    dialect: str,
) -> None:
    from fncall_graph.adapters.formats.grammar import grammar_max_bytes

    inner = GrammarReplay(["好的。", "好的。"])
    with_dialect(inner, dialect).bind_tools(TOOLS, parallel_tool_calls=False).invoke("q")
    one = inner.calls[0]["extra_body"]["grammar"]
    assert one == get_dialect(dialect).grammar(TOOLS, one_call=True)
    assert one != get_dialect(dialect).grammar(TOOLS)
    # one call at most: calls-only replies are shorter than where several are admitted
    only = get_dialect(dialect).grammar(TOOLS, require_call=True, one_call=True)
    several = get_dialect(dialect).grammar(TOOLS, require_call=True)
    assert grammar_max_bytes(only) < grammar_max_bytes(several)
    assert "parallel_tool_calls" not in inner.calls[0]


# -- structured output


class Forecast(BaseModel):
    city: str
    days: int


@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react", "native"])
def test_json_schema_output_asks_for_the_schema_and_reads_repaired_json(dialect: str) -> None:
    inner = ReplayChatModel(['```json\n{"city": "北京", "days": 3,}\n```'])
    model = with_dialect(inner, dialect).with_structured_output(Forecast, method="json_schema")
    assert model.invoke([SystemMessage("你是助手"), HumanMessage("北京?")]) == Forecast(
        city="北京", days=3
    )
    system = inner.inputs[0][0].content
    assert system.startswith("你是助手") and '"required": ["city", "days"]' in system
    assert "tools" not in inner.calls[0] and "<tool_call>" not in system  # no tools offered


def test_json_mode_asks_for_an_object_and_checks_it_against_the_schema() -> None:
    inner = ReplayChatModel(['{"city": "x", "days": 1}', '{"city": "x"}'])
    model = with_dialect(inner, "hermes").with_structured_output(Forecast, method="json_mode")
    assert model.invoke("hi") == Forecast(city="x", days=1)
    assert "JSON object, and nothing else" in inner.inputs[0][0].content
    assert '"days"' not in inner.inputs[0][0].content  # json_mode: the schema is not sent
    with pytest.raises(OutputParserException, match="does not follow Forecast"):
        model.invoke("hi")


def test_structured_output_failures_raise_or_go_to_parsing_error() -> None:
    schema = Forecast.model_json_schema()
    inner = ReplayChatModel(["Sunny all week.", '{"city": "x"}', "[1, 2]"])
    model = with_dialect(inner, "qwen")
    raw = model.with_structured_output(schema, method="json_schema", include_raw=True)
    out = raw.invoke("hi")
    assert out["parsed"] is None and out["raw"].content == "Sunny all week."
    assert isinstance(out["parsing_error"], OutputParserException)
    assert "lacks the required 'days'" in str(raw.invoke("hi")["parsing_error"])
    with pytest.raises(OutputParserException, match="not an object"):
        model.with_structured_output(schema, method="json_schema").invoke("hi")


def test_json_output_is_held_to_the_schemas_grammar_where_the_server_takes_one() -> None:
    from fncall_graph.adapters.formats.grammar import schema_to_gbnf

    inner = GrammarReplay(['{"city": "x", "days": 2}'] * 3)
    model = with_dialect(inner.bind(extra_body={"n_probs": 1}), "hermes")
    schema = model.with_structured_output(Forecast, method="json_schema")
    assert schema.invoke("hi") == Forecast(city="x", days=2)
    sent = inner.calls[0]["extra_body"]
    assert sent == {"n_probs": 1, "grammar": schema_to_gbnf(Forecast.model_json_schema())}
    assert "".join(str(c) for c in schema.stream("hi")) == str(Forecast(city="x", days=2))
    model.with_structured_output(Forecast, method="json_mode").invoke("hi")
    assert inner.calls[2]["extra_body"]["grammar"] == schema_to_gbnf({"type": "object"})


class OwnStructuredOutput(GrammarReplay):
    """A replayed model with structured output of its own, as OpenAI's or Ollama's."""

    accepts_grammar: bool = False

    def with_structured_output(self, schema, *, include_raw=False, **kwargs):  # type: ignore[override]
        return RunnableLambda(lambda _: f"own {kwargs['method']} strict={kwargs.get('strict')}")


def test_json_output_uses_the_wrapped_models_own_where_it_has_it() -> None:
    inner = OwnStructuredOutput([])
    for dialect in ("native", "hermes"):
        own = with_dialect(inner, dialect).with_structured_output(
            Forecast, method="json_schema", strict=True
        )
        assert own.invoke("hi") == "own json_schema strict=True"
    # where the server takes a grammar, a prompt dialect holds the reply to the schema itself
    held = OwnStructuredOutput(['{"city": "x", "days": 2}'], accepts_grammar=True)
    model = with_dialect(held, "hermes").with_structured_output(Forecast, method="json_mode")
    assert model.invoke("hi") == Forecast(city="x", days=2)


def test_function_calling_output_passes_strict_to_the_tool_specs() -> None:
    inner = ReplayChatModel([hermes_call("Forecast", city="x", days="2")])
    model = with_dialect(inner, "hermes")
    structured = model.with_structured_output(Forecast, strict=True)
    assert structured.invoke("hi") == Forecast(city="x", days=2)
    assert structured.first.kwargs["tools"][0]["function"]["strict"] is True
    with pytest.raises(ValueError, match="method must be"):
        model.with_structured_output(Forecast, method="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unexpected arguments"):
        model.with_structured_output(Forecast, tool_name="f")


def test_create_agent_asks_a_grammar_server_for_json_by_response_format() -> None:
    # where the server takes a grammar, the wrapper has structured output of its own:
    # create_agent sends response_format, which becomes the JSON request and the grammar
    from langchain.agents import create_agent

    from fncall_graph.adapters.formats.grammar import schema_to_gbnf

    inner = GrammarReplay(['{"city": "北京", "days": 2}'])
    model = with_dialect(inner, "hermes")
    assert model.profile == {"structured_output": True}
    agent = create_agent(model, [], response_format=Forecast)
    result = agent.invoke({"messages": [("user", "北京?")]})
    assert result["structured_response"] == Forecast(city="北京", days=2)
    assert "response_format" not in inner.calls[0]  # not a field this server reads
    grammar = inner.calls[0]["extra_body"]["grammar"]
    assert grammar == schema_to_gbnf(Forecast.model_json_schema())
    assert '"required": ["city", "days"]' in inner.inputs[0][0].content


@pytest.mark.parametrize("chunk_size", [None, 3])
def test_an_answer_asked_for_by_response_format_is_repaired_json(chunk_size) -> None:
    fenced = '```json\n{"city": "x", "days": 2,}\n```'
    inner = GrammarReplay([fenced, fenced], chunk_size=chunk_size)
    asked = {"type": "json_schema", "json_schema": {"name": "F", "schema": {"type": "object"}}}
    model = with_dialect(inner, "qwen").bind(response_format=asked)
    assert model.invoke("hi").content == '{"city": "x", "days": 2}'
    assert restore_read_reply(_sum(list(model.stream("hi")))).content == (
        '{"city": "x", "days": 2}'
    )
    # a model with structured output of its own and no grammar gets the field itself
    own = OwnStructuredOutput(["{}"])
    with_dialect(own, "hermes").bind(response_format=asked).invoke("hi")
    assert own.calls[0]["response_format"] == asked
    assert with_dialect(own, "hermes").profile is None


@pytest.mark.parametrize("dialect", ["native", "hermes"])
def test_callbacks_see_one_run_per_call_and_its_usage_once(dialect: str) -> None:
    """The wrapped model's own run is seen only by handlers that ask for it: a usage
    counter counts a call once, invoke and stream alike, and sees one chat-model run."""
    from langchain_core.callbacks import UsageMetadataCallbackHandler

    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}

    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.starts = 0

        def on_chat_model_start(self, serialized, messages, **kwargs) -> None:  # type: ignore[no-untyped-def]
            self.starts += 1

    class SeesInner(Starts):
        fncall_sees_wrapped_run = True

    for way in ("invoke", "stream"):
        out = {
            "content": "Sunny.",
            "usage_metadata": usage,
            "response_metadata": {"model_name": "m"},
        }
        model = with_dialect(ReplayChatModel([out]), dialect)
        counted, plain, opted = UsageMetadataCallbackHandler(), Starts(), SeesInner()
        config = {"callbacks": [counted, plain, opted]}
        if way == "invoke":
            reply = model.invoke("Weather?", config)
        else:
            reply = _sum(list(model.stream("Weather?", config)))
        assert reply.usage_metadata["total_tokens"] == 15, way
        assert counted.usage_metadata == {"m": usage}, way
        assert plain.starts == 1, way
        assert opted.starts == (2 if way == "invoke" else 1), way


@pytest.mark.parametrize("dialect", ["native", "hermes"])
def test_structured_output_is_one_chat_model_run_as_callbacks_see_it(dialect: str) -> None:
    """Inside ``with_structured_output``'s chain a bound inner model would merge the
    chain step's callbacks into its own run: the handler still sees one run."""
    from pydantic import BaseModel

    class Joke(BaseModel):
        setup: str
        punchline: str

    class Starts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.models: list[str] = []

        def on_chat_model_start(self, serialized, messages, **kwargs) -> None:  # type: ignore[no-untyped-def]
            self.models.append(serialized["id"][-1])

    call = {"name": "Joke", "args": {"setup": "a", "punchline": "b"}, "id": "j1"}
    reply = {"content": "", "tool_calls": [call]}
    if dialect == "hermes":
        reply = '<tool_call>\n{"name": "Joke", "arguments": {"setup": "a", "punchline": "b"}}\n</tool_call>'
    seen = Starts()
    model = with_dialect(ReplayChatModel([reply]), dialect).with_structured_output(Joke)
    assert model.invoke("a joke", {"callbacks": [seen]}) == Joke(setup="a", punchline="b")
    assert seen.models == ["DialectChatModel"]


@pytest.mark.parametrize("dialect", ["native", "hermes"])
@pytest.mark.parametrize("way", ["invoke", "stream", "ainvoke", "astream"])
def test_a_usage_counter_set_in_context_counts_a_call_once(dialect: str, way: str) -> None:
    """``get_usage_metadata_callback()`` registers its handler for every run started
    while it is open, the wrapped model's too: it still counts each call once."""
    from langchain_core.callbacks import get_usage_metadata_callback

    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    out = {"content": "Sunny.", "usage_metadata": usage, "response_metadata": {"model_name": "m"}}
    model = with_dialect(ReplayChatModel([out, out]), dialect)

    async def collect() -> Any:
        if way == "ainvoke":
            return await model.ainvoke("Weather?")
        return _sum([chunk async for chunk in model.astream("Weather?")])

    with get_usage_metadata_callback() as counted:
        if way == "invoke":
            reply = model.invoke("Weather?")
        elif way == "stream":
            reply = _sum(list(model.stream("Weather?")))
        else:
            reply = asyncio.run(collect())
        assert reply.usage_metadata["total_tokens"] == 15
        assert counted.usage_metadata == {"m": usage}
        model.invoke("And tomorrow?")  # still counting after the first call
        assert counted.usage_metadata["m"]["total_tokens"] == 30
