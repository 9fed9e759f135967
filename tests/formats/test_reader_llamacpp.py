"""Values and repairs as llama.cpp's chat parsers make them, read through the public path
(``with_dialect(model, "native").bind_tools(tools)``, invoked and streamed).

Written from the kinds of cases of llama.cpp's ``common/parsers/`` (``gemma4.cpp`` at
3a10bf62: a string runs to its closing ``<|"|>``; ``kimi-k3.cpp`` at 78b4c52c: an
argument runs to ``<|close|>argument<|sep|>``; ``lfm2.cpp``: Python-style calls;
``qwen3-coder.cpp``: a call may come without its ``<tool_call>``), not copied from them.
A value is opaque until its own closer: markup inside it is its text, never a call.
"""

from __future__ import annotations

import pytest
from test_reader_vllm import S, read, tool

Q = '<|"|>'
NOTE = [tool("note", text=S), tool("f")]


# ----------------------------------------------------------------- Gemma 4


@pytest.mark.parametrize("fmt", [None, "gemma4"])
@pytest.mark.parametrize(
    "value",
    [
        "see <|tool_call>call:f{} here",
        "see <|tool_call>call:f{}<tool_call|> here",  # the call's closer inside the string
        "a } b , c: d",
        "<start_function_call>call:f{}<end_function_call>",
    ],
)
def test_gemma4_a_string_holds_call_markup_as_its_text(value: str, fmt: str | None) -> None:
    text = f"<|tool_call>call:note{{text:{Q}{value}{Q}}}<tool_call|>"
    assert read(text, NOTE, fmt) == [("note", {"text": value})]


@pytest.mark.parametrize("fmt", [None, "gemma4"])
@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("'hello'", "hello"),
        ("'it''s'", "it''s"),  # a quote no , } follows is the string's
        (f"'hello{Q}'", "hello"),  # a delimiter token stuck to the quote is a stray
        (f"'hello'{Q}", "hello"),
        ("'a, b'", "a, b"),
    ],
)
def test_gemma4_single_quoted_values_lose_their_quotes(written: str, value: str, fmt) -> None:
    text = f"<|tool_call>call:note{{text:{written}}}<tool_call|>"
    assert read(text, NOTE, fmt) == [("note", {"text": value})]


def test_gemma4_a_string_cut_by_the_reply_s_end_runs_nothing() -> None:
    assert read(f"<|tool_call>call:note{{text:{Q}half", NOTE) == []


# ----------------------------------------------------------------- Kimi-K3


def _k3(value: str) -> str:
    return (
        '<|open|>tools<|sep|><|open|>call tool="note" index="1"<|sep|>'
        f'<|open|>argument key="text" type="string"<|sep|>{value}<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    )


@pytest.mark.parametrize("fmt", [None, "kimi-k3"])
@pytest.mark.parametrize(
    "value",
    [
        'write <|open|>call tool="f"<|sep|> then <|close|>call<|sep|>',
        "a <|close|>tools<|sep|> b",
        '<|open|>argument key="x"<|sep|>y',
    ],
)
def test_kimi_k3_an_argument_holds_control_markers_as_its_text(value: str, fmt) -> None:
    assert read(_k3(value), NOTE, fmt) == [("note", {"text": value})]


def test_kimi_k3_typed_arguments_and_two_calls() -> None:
    text = (
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>'
        '<|open|>argument key="n" type="integer"<|sep|>3<|close|>argument<|sep|>'
        '<|close|>call<|sep|><|open|>call tool="note" index="2"<|sep|>'
        '<|open|>argument key="text" type="string"<|sep|>007<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    )
    assert read(text, NOTE) == [("f", {"n": 3}), ("note", {"text": "007"})]


# ----------------------------------------------------------------- LFM2


@pytest.mark.parametrize(
    ("body", "args"),
    [
        ('f(text="a\nb")', {"text": "a\nb"}),  # a raw newline inside a string
        ("f(text='it's ok')", {"text": "it's ok"}),  # a quote of the string's own kind
        ('f(text="say "hi" now", n=2)', {"text": 'say "hi" now', "n": 2}),
        ("f(tags={'urgent', 'bug'})", {"tags": ["urgent", "bug"]}),  # a set: a list
        ("f(point=(1, 2), on=true, off=None)", {"point": [1, 2], "on": True, "off": None}),
    ],
)
def test_lfm2_python_style_values_and_repairs(body: str, args: dict) -> None:
    tools = [tool("f", text=S, n={"type": "integer"}, tags={"type": "array"})]
    for fmt in (None, "lfm2"):
        assert read(f"<|tool_call_start|>[{body}]<|tool_call_end|>", tools, fmt) == [("f", args)]


@pytest.mark.parametrize("odd", ["b'z'", "1j", "{1: 2}"])
def test_lfm2_a_value_json_cannot_carry_makes_that_call_unreadable(odd: str) -> None:
    text = f"<|tool_call_start|>[note(text='ok'), f(x={odd})]<|tool_call_end|>"
    assert read(text, NOTE) == [("note", {"text": "ok"})]
