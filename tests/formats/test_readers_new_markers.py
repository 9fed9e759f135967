"""Call formats whose markers no older reader knew: Gemma 4, FunctionGemma, DeepSeek DSML,
LFM2, Apertus, Nemotron Nano v2, LongCat, GigaChat 3, PLaMo 3, Hunyuan and Granite 4.

Each writer below renders calls the way the format's chat template / server parser
describes them (not copied outputs); the tests read them back one-shot and streamed, with
parallel calls, text before them, unicode and nested arguments, and cut short.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from test_readers import (
    CALLS,
    MARKERS,
    _streamed_through_graph,
    arg_key_call,
    calls,
    read,
    streamed,
)

from fncall_graph.adapters.formats.own_calls import markup_dialect
from fncall_graph.adapters.formats.readers import AUTO

Calls = list[tuple[str, dict[str, Any]]]


def parsed(text: str) -> AIMessage:
    return AUTO.parse(text)


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# -- writers, from each format's description


def _gemma(value: Any, q: str) -> str:
    """A value as Gemma's templates write it: strings between ``q``, keys bare."""
    if isinstance(value, str):
        return q + value + q
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_gemma(v, q)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma(v, q) for v in value) + "]"
    return str(value)


def _dsml(cs: Calls, wrapper: str, space: str = "", d: str = "｜DSML｜") -> str:
    """DSML (or GigaChat's GCML): text values marked string="true", others JSON."""
    body = ""
    for n, a in cs:
        body += f'<{d}{space}invoke name="{n}">\n'
        for k, v in a.items():
            s = "true" if isinstance(v, str) else "false"
            text = v if isinstance(v, str) else _j(v)
            body += f'<{d}{space}parameter name="{k}" string="{s}">{text}</{d}{space}parameter>\n'
        body += f"</{d}{space}invoke>\n"
    return f"<{d}{wrapper}>\n{body}</{d}{wrapper}>"


def _pythonic(cs: Calls) -> str:
    return (
        "["
        + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in cs)
        + "]"
    )


def _plamo(cs: Calls) -> str:
    tag = "<|plamo:{}:plamo|>".format
    return (
        tag("begin_tool_requests")
        + "".join(
            f"{tag('begin_tool_request')}{tag('begin_tool_name')}{n}{tag('end_tool_name')}"
            f"{tag('begin_tool_arguments')}<|plamo:constrain|>json<|plamo:msg|>{_j(a)}"
            f"{tag('end_tool_arguments')}"
            f"{tag('end_tool_request')}"
            for n, a in cs
        )
        + tag("end_tool_requests")
    )


Q4, QF = '<|"|>', "<escape>"  # the string delimiters of Gemma 4 and FunctionGemma

WRITERS: dict[str, Callable[[Calls], str]] = {
    "gemma4": lambda cs: "".join(f"<|tool_call>call:{n}{_gemma(a, Q4)}<tool_call|>" for n, a in cs),
    "functiongemma": lambda cs: "".join(
        f"<start_function_call>call:{n}{_gemma(a, QF)}<end_function_call>" for n, a in cs
    ),
    "dsml-v32": lambda cs: _dsml(cs, "function_calls"),
    "dsml-v4": lambda cs: _dsml(cs, "tool_calls"),
    "dsml-v41": lambda cs: _dsml(cs, " calls", " "),
    "gigachat35": lambda cs: _dsml(cs, "tool_calls", d="｜GCML｜"),
    "lfm2-pythonic": lambda cs: f"<|tool_call_start|>{_pythonic(cs)}<|tool_call_end|>",
    "lfm2-json": lambda cs: (
        "<|tool_call_start|>"
        + _j([{"name": n, "arguments": a} for n, a in cs])
        + "<|tool_call_end|>"
    ),
    "apertus": lambda cs: "<|tools_prefix|>" + _j([{n: a} for n, a in cs]) + "<|tools_suffix|>",
    "nemotron": lambda cs: (
        "<TOOLCALL>" + _j([{"name": n, "arguments": a} for n, a in cs]) + "</TOOLCALL>"
    ),
    "longcat": lambda cs: "\n".join(
        f"<longcat_tool_call>\n{_j({'name': n, 'arguments': a})}\n</longcat_tool_call>"
        for n, a in cs
    ),
    "plamo3": _plamo,
    "hunyuan-a13b": lambda cs: (
        "<tool_calls>" + _j([{"name": n, "arguments": a} for n, a in cs]) + "</tool_calls>"
    ),
    "granite4": lambda cs: "\n".join(
        f"<tool_call>{_j({'name': n, 'arguments': a})}</tool_call>" for n, a in cs
    ),
}

# one call per reply: the format has no room for a second
SINGLE: dict[str, Callable[[Calls], str]] = {
    "gigachat3": lambda cs: (
        f"<|message_sep|>\n\nfunction call<|role_sep|>\n{_j({'name': cs[0][0], 'arguments': cs[0][1]})}"
    ),
}

# values written as untyped text: read as JSON where they parse


def _hunyuan(sep: str) -> Callable[[list[tuple[str, dict[str, str]]]], str]:
    """HY v3 writes ``<tool_sep>`` after the name, HY v4 nothing."""
    return lambda cs: (
        "<tool_calls>"
        + "".join(arg_key_call(n, a, after_name=sep) for n, a in cs)
        + "</tool_calls>"
    )


def _hy_labelled(text: str) -> str:
    """Every Hunyuan marker with the label Hy3/Hy4 tokenizers give it (vLLM's HY3 parser)."""
    for stem in ("tool_calls", "tool_call", "tool_sep", "arg_key", "arg_value", "think"):
        text = text.replace(f"<{stem}>", f"<{stem}:opensource>")
        text = text.replace(f"</{stem}>", f"</{stem}:opensource>")
    return text


UNTYPED = {
    "hy-v3": _hunyuan("<tool_sep>"),
    "hy-v4": _hunyuan(""),
    "hy-labelled": lambda cs: _hy_labelled(_hunyuan("<tool_sep>")(cs)),
    "hy-v4-labelled": lambda cs: _hy_labelled(_hunyuan("")(cs)),
}

# formats whose markers are special tokens: a sentence may stand before them on the line
SPECIAL = {
    "gemma4",
    "functiongemma",
    "dsml-v32",
    "dsml-v4",
    "dsml-v41",
    "gigachat35",
    "lfm2-pythonic",
    "lfm2-json",
    "apertus",
    "nemotron",
    "plamo3",
}

W = "get_weather"
TWO: Calls = [(W, {"city": "Paris"}), ("get_time", {"zone": "CET"})]
NESTED: Calls = [
    (
        W,
        {
            "city": "東京 ✈ «ü»",
            "when": {"days": [1, 2], "unit": "°C", "opts": [{"a": None}, {"b": 1.5}]},
            "exact": True,
            "note": 'a "quote", a {brace} and a [bracket]',
        },
    )
]
ALL = {**WRITERS, **SINGLE}


# -- one-shot


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_one_call_and_parallel_calls(fmt):
    write = WRITERS[fmt]
    for cs in (TWO[:1], TWO):
        for message in (read(write(cs)), parsed(write(cs))):
            assert calls(message) == cs, fmt
            assert message.content == "" and not message.invalid_tool_calls
    assert markup_dialect(write(TWO)) is not None


@pytest.mark.parametrize("fmt", list(SINGLE))
def test_single_call_formats(fmt):
    message = read(SINGLE[fmt](TWO[:1]))
    assert calls(message) == TWO[:1] and message.content == ""


@pytest.mark.parametrize("fmt", list(ALL))
def test_unicode_and_nested_arguments(fmt):
    assert calls(read(ALL[fmt](NESTED))) == NESTED
    assert calls(parsed(ALL[fmt](NESTED))) == NESTED


@pytest.mark.parametrize("fmt", list(UNTYPED))
def test_untyped_values_are_read_as_json_where_they_parse(fmt):
    write = UNTYPED[fmt]
    message = read(write([(W, {"city": "巴黎", "days": "3", "opts": '{"unit": "C"}'})]))
    assert calls(message) == [(W, {"city": "巴黎", "days": 3, "opts": {"unit": "C"}})]
    message = read(write([(W, {"city": "Paris"}), ("get_time", {"zone": "CET"})]))
    assert calls(message) == TWO and message.content == ""


@pytest.mark.parametrize("fmt", [*WRITERS, *UNTYPED])
def test_text_before_the_calls_is_kept(fmt):
    write = {**WRITERS, **UNTYPED}[fmt]
    body = write(TWO)
    message = read("我来查一下。\n" + body)
    assert calls(message) == TWO and message.content == "我来查一下。"
    if fmt in SPECIAL:  # a special token counts after a sentence on the same line
        message = read("Let me check. " + body)
        assert calls(message) == TWO and message.content == "Let me check."


def test_gigachat_answer_without_a_call_loses_its_separator():
    assert read("Готово.<|message_sep|>").content == "Готово."


def test_gigachat_text_before_the_call_is_kept():
    text = "Сейчас посмотрю." + SINGLE["gigachat3"](TWO[:1]) + "</s>"
    message = read(text)
    assert calls(message) == TWO[:1] and message.content == "Сейчас посмотрю."


@pytest.mark.parametrize("fmt", [*ALL, *UNTYPED])
def test_a_reply_cut_inside_the_arguments_runs_nothing(fmt):
    write = {**ALL, **UNTYPED}[fmt]
    whole = write([(W, {"city": "Paris", "days": "3"} if fmt in UNTYPED else {"city": "Paris"})])
    cut = whole[: whole.index("Paris") + 3]
    for message in (read(cut), parsed(cut)):
        assert message.tool_calls == [], cut
        assert message.invalid_tool_calls, cut


@pytest.mark.parametrize(
    "fmt",
    [
        "gemma4",
        "functiongemma",
        "dsml-v32",
        "dsml-v41",
        "gigachat35",
        "plamo3",
        "lfm2-json",
        "apertus",
        "nemotron",
        "hunyuan-a13b",
    ],
)
def test_a_trailing_partial_second_call_keeps_the_first(fmt):
    whole = WRITERS[fmt](TWO)
    cut = whole[: whole.index("CET") + 1]
    message = read(cut)
    assert calls(message) == TWO[:1]
    assert len(message.invalid_tool_calls) == 1


# -- per-format details


def test_gemma4_grammar():
    q = Q4
    text = (
        f"<|tool_call>call:search{{query:{q}a, b: {{c}} [d]{q},limit:10,score:-0.5,"
        f"strict:false,tags:[{q}x{q},{q}y{q}],filter:{{lang:{q}de{q},year:null}},"
        f"empty:{{}},none:[]}}<tool_call|>"
    )
    assert calls(read(text)) == [
        (
            "search",
            {
                "query": "a, b: {c} [d]",
                "limit": 10,
                "score": -0.5,
                "strict": False,
                "tags": ["x", "y"],
                "filter": {"lang": "de", "year": None},
                "empty": {},
                "none": [],
            },
        )
    ]
    # a call without arguments, a <turn|> ending, and a missing closer at the reply's end
    assert calls(read("<|tool_call>call:ping{}<tool_call|>")) == [("ping", {})]
    assert calls(read(f"<|tool_call>call:get_time{{zone:{q}CET{q}}}<turn|>")) == TWO[1:]
    assert calls(read(f"<|tool_call>call:get_time{{zone:{q}CET{q}}}")) == TWO[1:]
    assert calls(read(f"<|tool_call>call:get_time{{zone:{q}CET{q}}}}}<tool_call|>")) == TWO[1:]
    # keys written as strings, Python's None for null, and the <|tool_response> that ends the turn
    text = f"<|tool_call>call:f{{{q}a b{q}:None,{q}c{q}:[None]}}<tool_call|><|tool_response>"
    message = read(text)
    assert calls(message) == [("f", {"a b": None, "c": [None]})] and message.content == ""


def test_gemma4_thinking_is_reasoning():
    q = Q4
    call = f"<|tool_call>call:get_time{{zone:{q}CET{q}}}<tool_call|>"
    text = f"<|channel>thought\nThe user wants the time.<channel|>{call}"
    for message in (read(text), parsed(text)):
        assert calls(message) == TWO[1:]
        assert message.additional_kwargs["reasoning_content"] == "The user wants the time."
        assert message.content == ""
    message, shown = streamed(text, list(range(0, len(text), 3)))
    assert calls(message) == TWO[1:] and shown == ""


def test_gemma4_variants_vllm_reads():
    q = Q4
    call = f"<|tool_call>call:get_time{{zone:{q}CET{q}}}<tool_call|>"
    # a call straight after the thought, without <channel|>
    text = "<|channel>thought\nTime first." + call
    message = read(text)
    assert calls(message) == TWO[1:]
    assert message.additional_kwargs["reasoning_content"] == "Time first."
    for size in (1, 2, 5):
        streamed_message, shown = streamed(text, list(range(size, len(text), size)))
        assert calls(streamed_message) == TWO[1:] and shown == ""
    # a channel without the thought label
    message = parsed(f"<|channel>Time first.<channel|>{call}")
    assert calls(message) == TWO[1:] and message.content == ""
    # arguments in parentheses
    message = read(f"<|tool_call>call:get_time(zone:{q}CET{q})<tool_call|>")
    assert calls(message) == TWO[1:]


def test_gemma_arguments_that_are_not_the_grammar_are_invalid():
    message = read("<|tool_call>call:f{no colon here}<tool_call|>")
    assert message.tool_calls == [] and message.invalid_tool_calls
    message = read("<|tool_call>just words<tool_call|>")
    assert message.tool_calls == [] and message.invalid_tool_calls


def test_dsml_values_typed_by_the_string_attribute():
    d = "｜DSML｜"
    text = (
        f'<{d}function_calls>\n<{d}invoke name="f">\n'
        f'<{d}parameter name="n" string="true">42</{d}parameter>\n'
        f'<{d}parameter name="m" string="false">42</{d}parameter>\n'
        f'<{d}parameter name="o" string="false">{{"a": [1, "x"]}}</{d}parameter>\n'
        f'<{d}parameter name="b" string="false">true</{d}parameter>\n'
        f'<{d}parameter name="t" string="true">  two\nlines </{d}parameter>\n'
        f"</{d}invoke>\n</{d}function_calls>"
    )
    assert calls(read(text)) == [
        ("f", {"n": "42", "m": 42, "o": {"a": [1, "x"]}, "b": True, "t": "  two\nlines "})
    ]


def test_gcml_parameters_without_a_string_mark_are_text():
    g = "｜GCML｜"
    text = (
        f'<{g}tool_calls>\n<{g}invoke name="f">\n<{g}parameter name="n">42</{g}parameter>\n'
        f'<{g}parameter name="m" string="false">42</{g}parameter>\n</{g}invoke>\n</{g}tool_calls>'
    )
    assert calls(read("Сейчас.\n" + text + "</s>")) == [("f", {"n": "42", "m": 42})]


def test_plamo_thinking_and_end_of_turn():
    text = (
        "<|plamo:begin_think:plamo|>Need the weather.<|plamo:end_think:plamo|>"
        + _plamo(TWO)
        + "<|plamo:tag|>"
    )
    for message in (read(text), parsed(text)):
        assert calls(message) == TWO and message.content == ""
        assert message.additional_kwargs["reasoning_content"] == "Need the weather."


def test_dsml_json_bodies_and_calls_without_arguments():
    d = "｜DSML｜"
    text = (
        f'<{d} calls>\n<{d} invoke name="get_weather">{{"city": "Paris"}}</{d} invoke>\n'
        f'<{d} invoke name="ping"/>\n</{d} calls>'
    )
    assert calls(read(text)) == [TWO[0], ("ping", {})]
    # the closing tag of the block missing at the end of the reply
    assert calls(read(text.removesuffix(f"</{d} calls>"))) == [TWO[0], ("ping", {})]


def test_dsml_after_thinking():
    body = WRITERS["dsml-v32"](TWO)
    message = read("<think>Weather first, then time.</think>\n\n" + body)
    assert calls(message) == TWO
    assert message.additional_kwargs["reasoning_content"] == "Weather first, then time."


def test_lfm2_pythonic_values_and_text_after_the_call():
    text = (
        '<|tool_call_start|>[search(query="Zürich", limit=3, exact=False, tags=["a", "b"], '
        "where={'lat': 47.4})]<|tool_call_end|>Checking now."
    )
    message = parsed(text)
    assert calls(message) == [
        (
            "search",
            {
                "query": "Zürich",
                "limit": 3,
                "exact": False,
                "tags": ["a", "b"],
                "where": {"lat": 47.4},
            },
        )
    ]
    assert message.content == "Checking now."


def test_lfm2_call_without_the_list_brackets():
    message = read('<|tool_call_start|>get_weather(city="Paris")<|tool_call_end|>')
    assert calls(message) == TWO[:1]


def test_lfm2_block_that_is_not_calls_is_invalid():
    message = read("<|tool_call_start|>[not a call]<|tool_call_end|>")
    assert message.tool_calls == [] and message.invalid_tool_calls


def test_apertus_shape_only_is_read_as_name_and_arguments():
    message = read('<|tools_prefix|>[{"get_time": {}}]<|tools_suffix|>')
    assert calls(message) == [("get_time", {})]
    # the usual {"name", "arguments"} shape still reads
    message = read(
        '<|tools_prefix|>[{"name": "get_time", "arguments": {"zone": "CET"}}]<|tools_suffix|>'
    )
    assert calls(message) == TWO[1:]


def test_apertus_thinking_is_reasoning():
    text = "<|inner_prefix|>Paris, so the weather tool.<|inner_suffix|>" + WRITERS["apertus"](TWO)
    for message in (read(text), parsed(text)):
        assert calls(message) == TWO and message.content == ""
        assert message.additional_kwargs["reasoning_content"] == "Paris, so the weather tool."


def test_hunyuan_a13b_answer_frame():
    body = WRITERS["hunyuan-a13b"](TWO)
    text = f"<think>\nThe user wants weather.\n</think>\n<answer>\n{body}\n</answer>"
    for message in (read(text), parsed(text)):
        assert calls(message) == TWO and message.content == ""
        assert message.additional_kwargs["reasoning_content"] == "The user wants weather."
    message = read("<think>\nEasy.\n</think>\n<answer>\nSunny.\n</answer>")
    assert message.tool_calls == [] and message.content == "Sunny."


def test_hunyuan_calls_without_arguments():
    assert calls(read("<tool_calls><tool_call>get_time</tool_call></tool_calls>")) == [
        ("get_time", {})
    ]
    assert calls(read("<tool_calls><tool_call>get_time<tool_sep></tool_call></tool_calls>")) == [
        ("get_time", {})
    ]


def test_hunyuan_labelled_thinking_is_reasoning():
    text = _hy_labelled("<think>Paris first.</think>") + "Checking." + UNTYPED["hy-labelled"](TWO)
    for message in (read(text), parsed(text)):
        assert calls(message) == TWO and message.content == "Checking."
        assert message.additional_kwargs["reasoning_content"] == "Paris first."


def test_granite4_text_between_calls():
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_time", "arguments": {"zone": "CET"}}</tool_call>'
    )
    message = parsed("Two lookups.\n" + text)
    assert calls(message) == TWO and message.content == "Two lookups."


@pytest.mark.parametrize("fmt", sorted(set(WRITERS) - {"granite4", "hunyuan-a13b"}))
def test_markup_quoted_in_a_code_block_is_not_a_call(fmt):
    example = WRITERS[fmt](TWO)
    for quoted in (
        f"The format looks like this:\n```\n{example}\n```\nThat is all.",
        f"Write `{example}` to call a tool.",
    ):
        message = read(quoted)
        assert message.tool_calls == [] and message.content == quoted


@pytest.mark.parametrize(
    "text",
    [
        "Сейчас.<|message_sep|>\n\nfunction call<|role_sep|>\n"
        '{"name": "get_weather", "arguments": {"city": "Москва"}}</s>',
        UNTYPED["hy-v3"]([(W, {"city": "巴黎", "days": "3"}), ("get_time", {"zone": "CET"})]),
        "先查。\n" + UNTYPED["hy-v4"]([(W, {"city": "巴黎", "opts": '{"a": [1]}'}), ("ping", {})]),
        _hy_labelled("<think>The weather, then.</think>")
        + "先查。"
        + UNTYPED["hy-v4-labelled"]([(W, {"city": "巴黎", "days": "3"}), ("ping", {})]),
    ],
    ids=["gigachat3", "hy-v3", "hy-v4", "hy-labelled"],
)
def test_one_call_and_untyped_formats_stream_the_same_for_any_chunk_size(text):
    whole = read(text)
    assert whole.tool_calls and not whole.invalid_tool_calls
    for size in (1, 2, 3, 5, 8, 13):
        message, shown = streamed(text, list(range(size, len(text), size)))
        assert calls(message) == calls(whole)
        assert message.content == whole.content == shown
        assert not any(m in shown for m in MARKERS)


@pytest.mark.parametrize("fmt", ["gemma4", "functiongemma", "dsml-v41", "lfm2-pythonic", "plamo3"])
def test_a_native_reply_through_the_graph_streams_no_markup(fmt):
    reply = "我来查一下。\n" + WRITERS[fmt](TWO[:1])
    shown, final = _streamed_through_graph(reply)
    assert calls(final) == TWO[:1]
    assert shown.strip() == str(final.content).strip() == "我来查一下。"
    assert not any(m in shown for m in MARKERS)


# -- properties: streaming, and replies cut anywhere


def _safe(fmt: str, cs: Calls) -> bool:
    """Whether ``cs`` can be written in ``fmt`` at all (its strings carry no markup of it)."""
    text = json.dumps(cs, ensure_ascii=False)
    if fmt == "gemma4":
        return Q4 not in text
    if fmt == "functiongemma":
        return QF not in text
    return True


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(fmt=st.sampled_from(sorted(WRITERS)), cs=CALLS, data=st.data())
def test_any_chunking_streams_the_same_message_and_no_markup(fmt, cs, data):
    if fmt.startswith("dsml") or fmt == "gigachat35":  # string values verbatim: no markup
        cs = [
            (n, {k: v for k, v in a.items() if not isinstance(v, str) or "<" not in v})
            for n, a in cs
        ]
    if not _safe(fmt, cs):
        return
    text = "先查一下。\n" + WRITERS[fmt](cs)
    whole = read(text)
    assert calls(whole) == cs
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    message, shown = streamed(text, cuts)
    assert calls(message) == cs
    assert message.content == whole.content == shown
    assert not any(m in shown for m in MARKERS)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(fmt=st.sampled_from(sorted(WRITERS)), cs=CALLS, data=st.data())
def test_a_reply_cut_anywhere_holds_only_calls_of_the_whole_reply(fmt, cs, data):
    if not _safe(fmt, cs):
        return
    text = WRITERS[fmt](cs)
    full = calls(read(text))
    cut = text[: data.draw(st.integers(0, len(text)))]
    message = read(cut)
    for call in calls(message):
        assert call in full, (cut, call)
