"""Every call format the readers know, read from a native reply's ``content``.

Cases are written from the formats' public descriptions (model cards, chat templates,
vLLM's and llama.cpp's parsers): for each format one call, parallel calls, text around
the calls, unicode and nested arguments, a reply cut short, and quoting; then properties
over all of them: any chunking streams to the same message with no markup in the streamed
text, and a reply cut anywhere never yields a call that the whole reply does not hold.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from fncall_graph.adapters.formats.calls import ContentDelta
from fncall_graph.adapters.formats.normalize import normalize
from fncall_graph.adapters.formats.own_calls import markup_dialect
from fncall_graph.adapters.formats.readers import AUTO, READERS

MARKERS = sorted(
    {b.open for b in AUTO.blocks}
    | {c for b in AUTO.blocks for c in b.close}
    | set(AUTO.drop_tokens),
    key=len,
    reverse=True,
)


def read(text: str) -> AIMessage:
    return normalize(AIMessage(content=text), None)


def calls(message: AIMessage) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["args"]) for c in message.tool_calls]


def streamed(text: str, cuts: list[int]) -> tuple[AIMessage, str]:
    """Parse ``text`` in the chunks ``cuts`` makes; the message and the streamed text."""
    parser = AUTO.stream_parser()
    bounds = [0, *sorted(set(cuts)), len(text)]
    events = []
    for a, b in itertools.pairwise(bounds):
        events += parser.feed(text[a:b])
    events += parser.close()
    shown = "".join(e.text for e in events if isinstance(e, ContentDelta))
    return parser.message(), shown


# -- writers: a call in each format, for the property tests

W = "get_weather"


def _j(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False)


WRITERS: dict[str, Callable[[list[tuple[str, dict[str, Any]]]], str]] = {
    "hermes": lambda cs: "\n".join(
        f"<tool_call>\n{_j({'name': n, 'arguments': a})}\n</tool_call>" for n, a in cs
    ),
    "hermes-parameters": lambda cs: "\n".join(
        f"<tool_call>{_j({'name': n, 'parameters': a})}</tool_call>" for n, a in cs
    ),
    "llama-function": lambda cs: "".join(f"<function={n}>{_j(a)}</function>" for n, a in cs),
    "mistral-list": lambda cs: "[TOOL_CALLS]" + _j([{"name": n, "arguments": a} for n, a in cs]),
    "mistral-v11": lambda cs: "".join(f"[TOOL_CALLS]{n}[ARGS]{_j(a)}" for n, a in cs),
    "deepseek-v3": lambda cs: (
        "<｜tool▁calls▁begin｜>"
        + "".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{_j(a)}\n```<｜tool▁call▁end｜>"
            for n, a in cs
        )
        + "<｜tool▁calls▁end｜>"
    ),
    "deepseek-v31": lambda cs: (
        "<｜tool▁calls▁begin｜>"
        + "".join(
            f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}<｜tool▁call▁end｜>" for n, a in cs
        )
        + "<｜tool▁calls▁end｜>"
    ),
    "kimi": lambda cs: (
        "<|tool_calls_section_begin|>"
        + "".join(
            f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|>"
            for i, (n, a) in enumerate(cs)
        )
        + "<|tool_calls_section_end|>"
    ),
    "harmony": lambda cs: "".join(
        f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json"
        f"<|message|>{_j(a)}<|call|>"
        for n, a in cs
    ),
    "functionary": lambda cs: "".join(f">>>{n}\n{_j(a)}" for n, a in cs),
    "jamba": lambda cs: (
        "<tool_calls>" + _j([{"name": n, "arguments": a} for n, a in cs]) + "</tool_calls>"
    ),
    "minimax-lines": lambda cs: (
        "<tool_calls>\n"
        + "\n".join(_j({"name": n, "arguments": a}) for n, a in cs)
        + "\n</tool_calls>"
    ),
    "granite": lambda cs: "<|tool_call|>" + _j([{"name": n, "arguments": a} for n, a in cs]),
    "functools": lambda cs: "functools" + _j([{"name": n, "arguments": a} for n, a in cs]),
    "internlm": lambda cs: "".join(
        f"<|action_start|><|plugin|>\n{_j({'name': n, 'parameters': a})}<|action_end|>"
        for n, a in cs
    ),
    "command-r": lambda cs: (
        "<|START_ACTION|>"
        + _j(
            [
                {"tool_call_id": str(i), "tool_name": n, "parameters": a}
                for i, (n, a) in enumerate(cs)
            ]
        )
        + "<|END_ACTION|>"
    ),
    "python-tag": lambda cs: (
        "<|python_tag|>" + "; ".join(_j({"name": n, "parameters": a}) for n, a in cs)
    ),
    "xlam": lambda cs: _j([{"name": n, "arguments": a} for n, a in cs]),
    "fenced-json": lambda cs: (
        "```json\n" + _j([{"name": n, "arguments": a} for n, a in cs]) + "\n```"
    ),
    "pythonic": lambda cs: (
        "["
        + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in cs)
        + "]"
    ),
}


# formats whose parameter values are untyped text: their writers and values differ
def arg_key_call(name: str, args: dict[str, Any], *, after_name: str = "", sep: str = "") -> str:
    """One GLM/Hunyuan-style call: ``<tool_call>name<arg_key>k</arg_key><arg_value>v…``."""
    pairs = "".join(
        f"<arg_key>{k}</arg_key>{sep}<arg_value>{v}</arg_value>{sep}" for k, v in args.items()
    )
    return f"<tool_call>{name}{after_name}{pairs}</tool_call>"


def seed_oss(cs: list[tuple[str, dict[str, Any]]]) -> str:
    """Seed-OSS: one ``<seed:tool_call>`` block per call, ``<parameter=k>`` values."""
    return "".join(
        f"<seed:tool_call>\n<function={n}>\n"
        + "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in a.items())
        + "</function>\n</seed:tool_call>"
        for n, a in cs
    )


def minimax_xml(cs: list[tuple[str, dict[str, Any]]]) -> str:
    """MiniMax-M1/M2's ``<minimax:tool_call>`` block of ``<invoke>``/``<parameter>`` calls."""
    invokes = "".join(
        f'<invoke name="{n}">\n'
        + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in a.items())
        + "</invoke>\n"
        for n, a in cs
    )
    return f"<minimax:tool_call>\n{invokes}</minimax:tool_call>"


XML_WRITERS: dict[str, Callable[[list[tuple[str, dict[str, str]]]], str]] = {
    "qwen3-coder": lambda cs: "\n".join(
        "<tool_call>\n<function="
        + n
        + ">\n"
        + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>"
        for n, a in cs
    ),
    "seed-oss": seed_oss,
    "glm": lambda cs: "\n".join(arg_key_call(n, a, after_name="\n", sep="\n") for n, a in cs),
    "minimax-xml": minimax_xml,
}

TWO = [(W, {"city": "Paris"}), ("get_time", {"zone": "CET"})]
NESTED = [(W, {"city": "東京 ✈", "when": {"days": [1, 2], "unit": "°C"}, "exact": True})]
TEXT_TWO = [(W, {"city": "Paris"}), ("get_time", {"zone": "CET"})]


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_one_call_and_parallel_calls(fmt):
    write = WRITERS[fmt]
    one = read(write(TWO[:1]))
    assert calls(one) == TWO[:1] and one.content == "" and not one.invalid_tool_calls
    two = read(write(TWO))
    assert calls(two) == TWO and two.content == ""
    assert markup_dialect(write(TWO)) is not None


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_unicode_and_nested_arguments(fmt):
    assert calls(read(WRITERS[fmt](NESTED))) == NESTED


@pytest.mark.parametrize("fmt", list(XML_WRITERS))
def test_untyped_formats_read_json_values_as_json(fmt):
    write = XML_WRITERS[fmt]
    message = read(write([(W, {"city": "巴黎", "days": "3", "opts": '{"unit": "C"}'})]))
    assert calls(message) == [(W, {"city": "巴黎", "days": 3, "opts": {"unit": "C"}})]
    assert calls(read(write(TEXT_TWO))) == TEXT_TWO
    assert read(write(TEXT_TWO)).content == ""


# formats whose markers start on a line of their own when text comes first
LINE = {"functionary", "functools", "xlam", "fenced-json", "pythonic"}


@pytest.mark.parametrize("fmt", sorted(set(WRITERS) - {"xlam", "fenced-json", "pythonic"}))
def test_text_before_the_calls_is_kept(fmt):
    body = WRITERS[fmt](TWO)
    if fmt == "functionary":
        body = body.replace(">>>", ">>>", 1)
        text = ">>>all\n我来查一下。" + body
    else:
        text = "我来查一下。\n" + body
    message = read(text)
    assert calls(message) == TWO
    assert message.content == "我来查一下。"


def test_text_between_and_after_calls_is_kept_where_the_format_has_room():
    message = read(
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}] then more'
    )
    assert calls(message) == TWO[:1] and message.content == "then more"
    message = read('>>>all\nfirst>>>get_weather\n{"city": "Paris"}>>>all\nafter')
    assert calls(message) == TWO[:1] and message.content == "firstafter"
    message = read(
        "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>"
        "Sunny.<|return|>"
    )
    assert message.content == "Sunny." and message.additional_kwargs["reasoning_content"] == "think"


@pytest.mark.parametrize("fmt", [*WRITERS, *XML_WRITERS])
def test_a_reply_cut_short_runs_no_half_written_call(fmt):
    write = {**WRITERS, **XML_WRITERS}[fmt]
    whole = write(
        [(W, {"city": "Paris", "days": "3"} if fmt in XML_WRITERS else {"city": "Paris"})]
    )
    full = calls(read(whole))
    assert len(full) == 1
    cut = whole[: whole.index("Paris") + 3]  # inside the arguments
    message = read(cut)
    assert message.tool_calls == []
    if fmt not in ("xlam", "fenced-json"):  # a bare reply cut before "name" is plain text
        assert message.invalid_tool_calls, cut
        assert (
            "not run" in message.invalid_tool_calls[0]["error"]
            or "ended" in message.invalid_tool_calls[0]["error"]
        )


def test_every_example_of_every_reader_reads_clean():
    for reader in READERS:
        assert reader.examples, reader.name
        for example in reader.examples:
            message = read(example)
            assert message.tool_calls and not message.invalid_tool_calls, (reader.name, example)
            assert not any(m in message.content for m in MARKERS), (reader.name, message.content)


# -- reasoning


def test_reasoning_before_an_unopened_think_and_calls_inside_it():
    text = 'The user wants weather.</think>\n[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    message = read(text)
    assert calls(message) == TWO[:1]
    assert message.additional_kwargs["reasoning_content"] == "The user wants weather."
    # a call written while thinking is not a call
    thinking = '<think>maybe [TOOL_CALLS]get_time[ARGS]{"zone": "UTC"}</think>Sunny.'
    message = read(thinking)
    assert message.tool_calls == [] and message.content == "Sunny."
    harmony = (
        '<|channel|>analysis<|message|>call to=functions.get_time <|message|>{"zone": "UTC"}'
        "<|end|><|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
    )
    message = read(harmony)
    assert message.tool_calls == [] and message.content == "Sunny."


# -- quoting: an answer that shows a format runs nothing


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.name)
def test_markup_quoted_in_a_code_block_or_backticks_is_not_a_call(reader):
    example = reader.examples[0]
    for quoted in (
        f"The format looks like this:\n```\n{example}\n```\nThat is all.",
        f"Write `{example}` to call a tool.",
    ):
        message = read(quoted)
        assert message.tool_calls == [] and message.invalid_tool_calls == [], quoted
        assert message.content == quoted


@pytest.mark.parametrize("reader", [r for r in READERS if not r.special], ids=lambda r: r.name)
def test_plain_text_markup_mid_sentence_is_not_a_call(reader):
    quoted = f"You would write {reader.examples[0]} in such a reply."
    message = read(quoted)
    assert message.tool_calls == [] and message.content == quoted


def test_json_that_is_not_calls_stays_an_answer():
    for answer in (
        '{"name": "Bob", "age": 3}',
        "[1, 2, 3]",
        '```json\n{"rows": 3}\n```',
        "[Paris, Berlin]",
        '{"name": "f", "arguments": {}} is how a call looks.',
    ):
        message = read(answer)
        assert message.tool_calls == [] and message.content == answer, answer


# -- properties over every format: streaming, and replies cut short

ARGS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=6),
    st.one_of(
        st.text(max_size=12).filter(lambda s: "\x00" not in s),
        st.integers(-1000, 1000),
        st.booleans(),
        st.lists(st.integers(0, 9), max_size=3),
    ),
    max_size=3,
)
CALLS = st.lists(
    st.tuples(st.sampled_from(["get_weather", "log_it"]), ARGS), min_size=1, max_size=3
)


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(fmt=st.sampled_from(sorted(set(WRITERS) - {"pythonic"})), cs=CALLS, data=st.data())
def test_any_chunking_streams_the_same_message_and_no_markup(fmt, cs, data):
    text = (
        "先查一下。\n" + WRITERS[fmt](cs)
        if fmt not in ("xlam", "fenced-json")
        else WRITERS[fmt](cs)
    )
    whole = read(text)
    assert calls(whole) == cs
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    message, shown = streamed(text, cuts)
    assert calls(message) == cs
    assert message.content == whole.content
    assert shown == whole.content
    assert not any(m in shown for m in MARKERS)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(fmt=st.sampled_from(sorted(WRITERS)), cs=CALLS, data=st.data())
def test_a_reply_cut_anywhere_holds_only_calls_of_the_whole_reply(fmt, cs, data):
    text = WRITERS[fmt](cs)
    full = calls(read(text))
    cut = text[: data.draw(st.integers(0, len(text)))]
    for call in calls(read(cut)):
        assert call in full, (cut, call)


# -- a native reply streamed through the graph shows no markup


def _streamed_through_graph(reply: str) -> tuple[str, AIMessage]:
    from langchain_core.messages import AIMessageChunk
    from langchain_core.tools import tool

    from fncall_graph import create_fncall_graph
    from fncall_graph.testing import ReplayChatModel

    @tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"{city}: 晴"

    model = ReplayChatModel([reply, "好"])
    graph = create_fncall_graph(model, [get_weather], dialect="native")
    shown: list[str] = []
    replies: list[AIMessage] = []
    for mode, chunk in graph.stream(
        {"messages": [("user", "q")]}, stream_mode=["messages", "updates"]
    ):
        if mode == "messages":
            message, meta = chunk
            first_call = meta.get("langgraph_node") == "model" and not replies
            if first_call and isinstance(message, AIMessageChunk):
                shown.append(str(message.content))
        elif chunk.get("model"):  # a step that sends a call on to be rendered writes nothing
            replies += chunk["model"]["messages"]
    final = replies[0]
    return "".join(shown), final


@pytest.mark.parametrize(
    "reply",
    [
        '我来查一下。\n[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        "<think>the user wants weather</think>\n"
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
    ],
)
def test_a_native_reply_streams_its_answer_text_and_never_its_markup(reply):
    shown, final = _streamed_through_graph(reply)
    assert [c["name"] for c in final.tool_calls] == ["get_weather"]
    assert shown.strip() == str(final.content).strip()
    assert not any(m in shown for m in MARKERS)


def test_a_native_answer_that_quotes_markup_streams_it_as_the_answer():
    reply = 'Write it like this:\n```\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n```'
    shown, final = _streamed_through_graph(reply)
    assert final.tool_calls == [] and final.content == reply
    assert shown == reply


def test_a_plain_native_answer_still_streams_as_it_comes():
    reply = "Sunny in Paris today, 22 degrees, with a light breeze from the west."
    shown, final = _streamed_through_graph(reply)
    assert shown == reply == final.content


def test_the_format_table_lists_every_call_format() -> None:
    """The docs' format table (README or docs/) has a row for each reader of calls."""
    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    rows = [
        line.split("|")[1]
        for page in pages
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `")
    ]
    listed = set(re.findall(r"`([\w-]+)`", " ".join(rows)))
    readers = [r.name for r in READERS if any(b.kind == "call" for b in r.blocks)]
    assert [name for name in readers if name not in listed] == []
