"""Formats that write values as text get JSON types from the tool's schema.

The same reading for ``normalize(..., tools=...)``, ``with_dialect(...).bind_tools(tools)``
invoked and streamed in any chunking, and the graph's model node (which goes through
the same boundary)."""

from __future__ import annotations

from functools import reduce

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk

from fncall_graph import with_dialect
from fncall_graph.adapters import normalize
from fncall_graph.adapters.formats.arg_types import typed_args
from fncall_graph.testing import ReplayChatModel

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "metric": {"type": "boolean"},
        "ratio": {"type": "number"},
        "when": {"type": "object", "properties": {"hour": {"type": "integer"}}},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "note": {"anyOf": [{"type": "integer"}, {"type": "null"}, {"type": "string"}]},
    },
    "required": ["city"],
}
TOOL = {"name": "forecast", "description": "Weather forecast.", "inputSchema": SCHEMA}
VALUES = {
    "city": "123",
    "days": "3",
    "metric": "false",
    "ratio": "0.5",
    "when": '{"hour": "9"}',
    "tags": "[1, 2]",
    "note": "null",
}
TYPED = {
    "city": "123",
    "days": 3,
    "metric": False,
    "ratio": 0.5,
    "when": {"hour": "9"},  # inside JSON the model typed the value itself
    "tags": [1, 2],
    "note": None,
}


def _pairs(fmt: str) -> str:
    return "".join(fmt.format(k=k, v=v) for k, v in VALUES.items())


FORMATS = {
    "qwen3-xml": "<tool_call>\n<function=forecast>\n"
    + _pairs("<parameter={k}>\n{v}\n</parameter>\n")
    + "</function>\n</tool_call>",
    "glm": "<tool_call>forecast\n"
    + _pairs("<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n")
    + "</tool_call>",
    "minimax": '<minimax:tool_call>\n<invoke name="forecast">\n'
    + _pairs('<parameter name="{k}">{v}</parameter>\n')
    + "</invoke>\n</minimax:tool_call>",
    "dsml": '<｜DSML｜function_calls>\n<｜DSML｜invoke name="forecast">\n'
    + _pairs('<｜DSML｜parameter name="{k}" string="false">{v}</｜DSML｜parameter>\n')
    + "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    "step3": '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="forecast">'
    + _pairs('<steptml:parameter name="{k}">{v}</steptml:parameter>')
    + "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
    "hunyuan": "<tool_calls><tool_call>forecast<tool_sep>"
    + _pairs("<arg_key>{k}</arg_key><arg_value>{v}</arg_value>")
    + "</tool_call></tool_calls>",
    "kimi-k3": '<|open|>tools<|sep|><|open|>call tool="forecast" index="1"<|sep|>'
    + _pairs('<|open|>argument key="{k}"<|sep|>{v}<|close|>argument<|sep|>')
    + "<|close|>call<|sep|><|close|>tools<|sep|>",
    "seed-oss": "<seed:tool_call>\n<function=forecast>\n"
    + _pairs("<parameter={k}>{v}</parameter>\n")
    + "</function>\n</seed:tool_call>",
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_untyped_values_get_the_schema_types(fmt: str) -> None:
    message = normalize(AIMessage(FORMATS[fmt]), None, tools=[TOOL])
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("forecast", TYPED)]
    if fmt != "kimi-k3":  # Kimi-K3 types its values with a ``type`` attribute instead
        # without the schema the text is read as JSON where it parses: "123" is a number
        untyped = normalize(AIMessage(FORMATS[fmt]), None)
        assert untyped.tool_calls[0]["args"]["city"] == 123


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_with_dialect_types_the_same_invoked_and_streamed(fmt: str, chunk_size: int | None) -> None:
    model = with_dialect(ReplayChatModel([FORMATS[fmt]] * 2, chunk_size=chunk_size), "native")
    bound = model.bind_tools([TOOL])
    invoked = bound.invoke("weather?")
    streamed = reduce(lambda a, b: a + b, bound.stream("weather?"))
    assert isinstance(streamed, AIMessageChunk)
    assert [c["args"] for c in invoked.tool_calls] == [c["args"] for c in streamed.tool_calls]
    assert invoked.tool_calls[0]["args"] == TYPED


def test_prompt_dialect_stream_types_each_call() -> None:
    reply = FORMATS["qwen3-xml"]
    model = with_dialect(ReplayChatModel([reply] * 2, chunk_size=5), "hermes").bind_tools([TOOL])
    invoked = model.invoke("weather?")
    streamed = reduce(lambda a, b: a + b, model.stream("weather?"))
    assert invoked.tool_calls[0]["args"] == TYPED
    assert streamed.tool_calls[0]["args"] == TYPED


def test_typed_args_rules() -> None:
    schema = {
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "s": {"type": "string"},
            "b": {"type": ["boolean", "null"]},
            "one": {"oneOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"}]},
            "py": {"type": "object"},
            "e": {"enum": ["1", 2]},
            "free": {},
        }
    }
    texts = {
        "n": "4.0",
        "x": "1e3",
        "s": "true",
        "b": "None",
        "one": "7",
        "py": "{'check': True}",
        "e": "2",
        "free": "[1]",
    }
    read = {"n": 4.0, "x": 1000.0, "s": True, "b": "None", "one": 7, "py": "{'check': True}"}
    read |= {"e": 2, "free": [1]}
    assert typed_args(read, texts, schema) == {
        "n": 4,
        "x": 1000.0,
        "s": "true",
        "b": None,
        "one": 7,
        "py": {"check": True},
        "e": 2,
        "free": [1],  # no type asked: read as JSON
    }
    # a value that fits no allowed type keeps its reading, for the tool's check to report
    bad = {"n": "four", "x": "nan", "py": "[1"}
    assert typed_args(dict(bad), bad, schema) == bad
    # values the format typed itself (no text given) are left as the model wrote them
    assert typed_args({"s": 5}, {}, schema) == {"s": 5}
