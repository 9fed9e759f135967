"""Values and repairs as vLLM's tool parsers make them, read through the public path
(``with_dialect(model, "native").bind_tools(tools)``, invoked and streamed).

Written from the kinds of cases of vLLM's parsers and their tests (``vllm/entrypoints/
openai/tool_parsers``: ``qwen3coder_tool_parser.py`` at 0054011d — one newline trimmed
around a value, ``_convert_param_value``'s typing; ``glm4_moe_tool_parser.py``;
``xlam_tool_parser.py``; ``llama_tool_parser.py``), not copied from them. Where this
product keeps a value vLLM changes, the test says so.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from fncall_graph.adapters import with_dialect
from fncall_graph.adapters.formats.stream_reading import restore_read_reply
from fncall_graph.testing import ReplayChatModel

S = {"type": "string"}


def tool(name: str, **props: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": name,
        "parameters": {"type": "object", "properties": props},
    }


def read(text: str, tools: list[dict[str, Any]], fmt: str | None = None) -> list[Any]:
    """The calls of ``text`` as (name, args), the same invoked and streamed."""
    options = {"call_format": fmt} if fmt else {}
    model = with_dialect(ReplayChatModel([text, text], chunk_size=4), "native", **options)
    bound = model.bind_tools(tools)
    invoked = bound.invoke("go")
    streamed = restore_read_reply(reduce(lambda a, b: a + b, bound.stream("go")))
    assert isinstance(invoked, AIMessage)
    calls = [(c["name"], c["args"]) for c in invoked.tool_calls]
    assert calls == [(c["name"], c["args"]) for c in streamed.tool_calls]
    return calls


def q3(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


# ----------------------------------------------------------------- qwen3_coder values


@pytest.mark.parametrize("fmt", [None, "hermes", "function-tag"])
def test_qwen3_coder_trims_exactly_one_newline_around_a_value(fmt: str | None) -> None:
    text = q3("edit", code="\n    if x:\n        y()\n")
    assert read(text, [tool("edit", code=S)], fmt) == [
        ("edit", {"code": "\n    if x:\n        y()\n"})
    ]


@pytest.mark.parametrize(
    ("schema", "written", "value"),
    [
        ({"anyOf": [S, {"type": "null"}]}, "null", None),
        ({"type": ["string", "null"]}, "null", None),
        ({"type": "integer"}, "007", 7),
        ({"type": "integer"}, "-12", -12),
        ({"type": "number"}, "1.5", 1.5),
        ({"type": "number"}, "3", 3),
        ({"type": "boolean"}, "true", True),
        ({"type": "object"}, '{"a": [1, 2]}', {"a": [1, 2]}),
        ({"type": "object"}, "{'check': True}", {"check": True}),  # ast.literal_eval
        ({"type": "array"}, "{'a', 'b'}", ["a", "b"]),  # a set: JSON's list, as written
        ({"type": "string"}, "007", "007"),
        ({"type": "string"}, "  spaced  ", "  spaced  "),
        ({"anyOf": [S, {"type": "integer"}]}, "abc", "abc"),
    ],
)
def test_qwen3_coder_types_a_value_by_its_schema(schema: Any, written: str, value: Any) -> None:
    assert read(q3("f", a=written), [tool("f", a=schema)]) == [("f", {"a": value})]


def test_an_integer_that_is_no_integer_stays_the_text() -> None:
    # vLLM "degenerates to string"; the tool's own check reports it
    assert read(q3("f", a="seven"), [tool("f", a={"type": "integer"})]) == [("f", {"a": "seven"})]


# ----------------------------------------------------------------- qwen3_coder repairs


@pytest.mark.parametrize(
    "text",
    [
        # the parameter regex's (?=<parameter=) ends a value at the next parameter
        "<tool_call>\n<function=w>\n<parameter=city>Dallas<parameter=state>TX</parameter>\n"
        "</function>\n</tool_call>",
        "<tool_call>\n<function=w>\n<parameter=city>\nDallas\n<parameter=state>\nTX\n"
        "</parameter>\n</function>\n</tool_call>",
        # (?=</function>) ends the last one
        "<tool_call>\n<function=w>\n<parameter=city>\nDallas\n</parameter>\n"
        "<parameter=state>\nTX\n</function>\n</tool_call>",
    ],
)
def test_a_missing_parameter_closer_ends_the_value_at_the_next_tag(text: str) -> None:
    tools = [tool("w", city=S, state=S)]
    assert read(text, tools) == [("w", {"city": "Dallas", "state": "TX"})]


def test_a_value_holding_its_format_s_tags_each_closed_is_opaque() -> None:
    # code that quotes the format: its own tags close inside it, the value goes on
    code = "x = '<parameter=a>b</parameter>'\nprint(x)"
    assert read(q3("run", code=code), [tool("run", code=S)]) == [("run", {"code": code})]


def test_a_bare_function_call_is_read_with_the_qwen3_coder_family_declared() -> None:
    text = "<function=w>\n<parameter=city>\nParis\n</parameter>\n</function>"
    for fmt in (None, "hermes", "qwen3-coder", "qwen3.5"):
        assert read(text, [tool("w", city=S)], fmt) == [("w", {"city": "Paris"})], fmt


# ----------------------------------------------------------------- glm4_moe


def test_glm_keeps_a_value_s_spaces_and_repairs_a_last_missing_value_closer() -> None:
    tools = [tool("f", a={"type": "integer"}, b=S)]
    whole = "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n"
    assert read(
        whole + "<arg_key>b</arg_key>\n<arg_value> x </arg_value>\n</tool_call>", tools
    ) == [("f", {"a": 1, "b": " x "})]
    assert read(whole + "<arg_key>b</arg_key>\n<arg_value>x</tool_call>", tools) == [
        ("f", {"a": 1, "b": "x"})
    ]


def test_glm_a_call_closer_inside_a_value_is_the_value_s_text() -> None:
    text = (
        "<tool_call>write<arg_key>content</arg_key><arg_value>a </tool_call> b</arg_value>"
        "</tool_call>"
    )
    assert read(text, [tool("write", content=S)]) == [("write", {"content": "a </tool_call> b"})]


# ----------------------------------------------------------------- step3


def test_step3_keeps_a_value_s_white_space() -> None:
    # vLLM's step3 parser (a8d678d6) and SGLang's detector strip a value; the product
    # keeps what the model wrote: an edit tool's indentation is the edit
    text = (
        "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
        '<steptml:invoke name="edit"><steptml:parameter name="code">    if x:'
        "</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>"
    )
    for fmt in (None, "step3"):
        assert read(text, [tool("edit", code=S)], fmt) == [("edit", {"code": "    if x:"})]


# ----------------------------------------------------------------- JSON lists


@pytest.mark.parametrize("fmt", [None, "json"])
@pytest.mark.parametrize(
    "text",
    [
        '[{"name": "f", "arguments": {"a": "x"}}',  # one ] short
        '[{"name": "f", "arguments": {"a": "x"}}]]',  # one ] over
        '[{"name": "f", "arguments": {"a": "x"}}, {"name": "f", "arguments": {"a": "y"}}',
    ],
)
def test_a_json_call_list_one_bracket_off_is_mended(text: str, fmt: str | None) -> None:
    calls = read(text, [tool("f", a=S)], fmt)
    assert calls and all(name == "f" for name, _ in calls)


def test_a_json_call_list_cut_inside_a_call_runs_nothing_of_it() -> None:
    assert read('[{"name": "f", "arguments": {"a": "x', [tool("f", a=S)]) == []
