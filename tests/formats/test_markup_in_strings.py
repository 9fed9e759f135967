"""Markup written inside a JSON string argument is that argument's text.

A call that passes source code or prose may hold any format's markers in a string
(``</tool_call>``, ``✿RESULT✿``, ``Observation:``, ``<|call|>``). Such a marker never ends
the call early nor splits it: the call is read whole, one-shot and streamed in chunks of
every size, in every dialect and in every content format a native reply may carry. The
cases are built from the formats' own data: each reader's examples and markers, and
each dialect's markers and stop words.

The other side: a marker right after the JSON closes still ends the call, and a reply
that a server cut at a stop word written inside an argument runs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from fncall_graph.adapters import get_dialect, with_dialect
from fncall_graph.adapters.formats.calls import (
    StreamParser,
    find_unquoted,
    in_json_string,
    split_unquoted,
)
from fncall_graph.adapters.formats.normalize import normalize
from fncall_graph.adapters.formats.readers import AUTO, READERS, Reader
from fncall_graph.adapters.formats.stream_reading import restore_read_reply
from fncall_graph.replay import ReplayChatModel

CHUNK_SIZES = range(1, 14)
TOOLS = [
    {"name": n, "description": n, "parameters": {"type": "object", "properties": {}}}
    for n in ("get_weather", "get_time")
]


def placements(marker: str) -> dict[str, str]:
    """Where in a string the marker may stand, as JSON string contents (escaped)."""
    m = json.dumps(marker, ensure_ascii=False)[1:-1]
    return {
        "start": m + "Paris",
        "middle": "Pa" + m + "ris",
        "end": "Paris" + m,
        "alone": m,
        "after escaped quotes": 'say \\"hi\\" ' + m + " x",
        "after an escaped backslash": "C:\\\\dir\\\\" + m,
        "after unicode escapes": "caf\\u00e9 \\u0022" + m + "\\u0022",
        "after an escaped line break": "line\\n" + m + " next",
        "after a raw line break": "line\n" + m + " next",
    }


def _replaced(args: Any, old: str, new: str) -> Any:
    if isinstance(args, dict):
        return {k: _replaced(v, old, new) for k, v in args.items()}
    if isinstance(args, list):
        return [_replaced(v, old, new) for v in args]
    return new if args == old else args


def _calls(message: AIMessage) -> list[tuple[str, Any]]:
    return [(c["name"], c["args"]) for c in message.tool_calls]


def _chunked(parser: StreamParser, text: str, size: int) -> AIMessage:
    for i in range(0, len(text), size):
        parser.feed(text[i : i + size])
    parser.close()
    return parser.message()


class _Fake(BaseChatModel):
    """Returns one reply, streamed in chunks of ``size`` characters."""

    reply: str
    size: int = 7

    @property
    def _llm_type(self) -> str:
        return "fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> _Fake:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        for i in range(0, len(self.reply), self.size):
            yield ChatGenerationChunk(message=AIMessageChunk(content=self.reply[i : i + self.size]))


def _through(dialect: str, model: BaseChatModel, mode: str) -> AIMessage:
    bound = with_dialect(model, dialect).bind_tools(TOOLS)
    if mode == "invoke":
        return bound.invoke("weather?")
    total = None
    for chunk in bound.stream("weather?"):
        total = chunk if total is None else total + chunk
    return restore_read_reply(total)


# --------------------------------------------------------------------------- the cases

# formats whose strings are Python literals, which cannot hold a raw line break
_PYTHON_LITERALS = ("pythonic-tag", "lfm2")


def _format_cases() -> Iterator[Any]:
    """Every reader example holding a JSON string argument, with every marker of that
    reader put into the string."""
    for reader in READERS:
        markers = sorted(
            {m for b in reader.blocks for m in (b.open, *b.close)} | set(reader.drop_tokens)
        )
        for n, example in enumerate(reader.examples):
            base = normalize(AIMessage(content=example), "native")
            if not base.tool_calls:
                continue
            first = base.tool_calls[0]
            value = next(
                (
                    v
                    for v in first["args"].values()
                    if isinstance(v, str) and json.dumps(v, ensure_ascii=False) in example
                ),
                None,
            )
            if value is None:  # values written as text between tags: no JSON strings
                continue
            yield pytest.param(reader, example, value, markers, id=f"{reader.name}-{n}")


def _cases_of(
    example: str, value: str, markers: list[str], skip: tuple[str, ...] = ()
) -> Iterator[tuple[str, str, str]]:
    """``(label, reply, the string as written)`` for each marker and placement."""
    quoted = json.dumps(value, ensure_ascii=False)
    for marker in markers:
        for where, inner in placements(marker).items():
            if where in skip:
                continue
            reply = example.replace(quoted, '"' + inner + '"', 1)
            yield f"{marker!r} {where}", reply, json.loads(f'"{inner}"', strict=False)


@pytest.mark.parametrize(("reader", "example", "value", "markers"), list(_format_cases()))
def test_a_content_format_reads_markup_in_a_string_whole(
    reader: Reader, example: str, value: str, markers: list[str]
) -> None:
    """A native reply's content in any format: one-shot and in chunks of 1 to 13."""
    base = _calls(normalize(AIMessage(content=example), "native"))
    skip = ("after a raw line break",) if reader.name in _PYTHON_LITERALS else ()
    failures = []
    for label, reply, written in _cases_of(example, value, markers, skip):
        expected = [(base[0][0], _replaced(base[0][1], value, written)), *base[1:]]
        got = _calls(normalize(AIMessage(content=reply), "native"))
        if got != expected:
            failures.append((label, "one-shot", got))
        for size in CHUNK_SIZES:
            got = _calls(_chunked(AUTO.stream_parser(), reply, size))
            if got != expected:
                failures.append((label, f"chunks of {size}", got))
    assert not failures, failures[:5]


@pytest.mark.parametrize(("reader", "example", "value", "markers"), list(_format_cases()))
def test_a_content_format_reads_markup_in_a_string_whole_at_the_model(
    reader: Reader, example: str, value: str, markers: list[str]
) -> None:
    """The same through ``with_dialect(model, "native")``: invoke, and stream in chunks
    of every size for one placement (the others in chunks of 5)."""
    base = _calls(normalize(AIMessage(content=example), "native"))
    skip = ("after a raw line break",) if reader.name in _PYTHON_LITERALS else ()
    failures = []
    for label, reply, written in _cases_of(example, value, markers, skip):
        expected = [(base[0][0], _replaced(base[0][1], value, written)), *base[1:]]
        got = _calls(_through("native", _Fake(reply=reply), "invoke"))
        if got != expected:
            failures.append((label, "invoke", got))
        for size in CHUNK_SIZES if label.endswith("middle") else (5,):
            got = _calls(_through("native", _Fake(reply=reply, size=size), "stream"))
            if got != expected:
                failures.append((label, f"stream in chunks of {size}", got))
    assert not failures, failures[:5]


_DIALECT_REPLIES = {
    "hermes": [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
        '\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}'
        "\n</tool_call>",
    ],
    "qwen": [
        '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Paris"}',
        '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Paris"}\n'
        '✿FUNCTION✿: get_time\n✿ARGS✿: {"zone": "CET"}',
    ],
    "react": [
        "Thought: I need the weather.\nAction:\n```\n"
        '{"action": "get_weather", "action_input": {"city": "Paris"}}\n```',
        'Thought: I need the weather.\nAction:\n```json\n{\n  "action": "get_weather",\n'
        '  "action_input": {\n    "city": "Paris"\n  }\n}\n```',
        'Thought: weather.\nAction: {"action": "get_weather", "action_input": {"city": "Paris"}}',
        'Thought: weather.\nAction: get_weather\nAction Input: {"city": "Paris"}',
        # a bare action_input string: in the blob, not in an arguments object
        'Thought: weather.\nAction:\n```\n{"action": "get_weather", "action_input": "Paris"}\n```',
    ],
}


def _dialect_markers(name: str) -> list[str]:
    """A dialect's own markers, its stop words and its reasoning tags."""
    d = get_dialect(name)
    markers = {m for b in d.blocks for m in (b.open, *(c.strip() for c in b.close))}
    markers |= {t.rstrip(":：") or t for t in d.drop_tokens} | set(d.stop)
    if name == "react":
        markers |= {"Action Input:", "```"}
    if name == "hermes":
        markers |= {"<tool_response>", "</tool_response>"}
    return sorted(m for m in markers if m)


_DIALECT_CASES = [
    pytest.param(name, n, reply, id=f"{name}-{n}")
    for name, replies in _DIALECT_REPLIES.items()
    for n, reply in enumerate(replies)
]


@pytest.mark.parametrize(("name", "n", "reply"), _DIALECT_CASES)
def test_a_dialect_reads_markup_in_a_string_whole(name: str, n: int, reply: str) -> None:
    """Each dialect's markers and stop words in an argument's string: ``parse`` and the
    stream parser in chunks of 1 to 13 read the call whole."""
    d = get_dialect(name)
    base = _calls(d.parse(reply))
    assert base, reply
    failures = []
    for label, text, written in _cases_of(reply, "Paris", _dialect_markers(name)):
        expected = [(n_, _replaced(a, "Paris", written)) for n_, a in base]
        got = _calls(d.parse(text))
        if got != expected:
            failures.append((label, "parse", got))
        for size in CHUNK_SIZES:
            got = _calls(_chunked(d.stream_parser(), text, size))
            if got != expected:
                failures.append((label, f"chunks of {size}", got))
    assert not failures, failures[:5]


@pytest.mark.parametrize(("name", "n", "reply"), _DIALECT_CASES)
def test_a_dialect_reads_markup_in_a_string_whole_at_the_model(
    name: str, n: int, reply: str
) -> None:
    """The same through ``with_dialect(model, name)``: invoke and stream."""
    base = _calls(get_dialect(name).parse(reply))
    failures = []
    for label, text, written in _cases_of(reply, "Paris", _dialect_markers(name)):
        expected = [(n_, _replaced(a, "Paris", written)) for n_, a in base]
        got = _calls(_through(name, _Fake(reply=text), "invoke"))
        if got != expected:
            failures.append((label, "invoke", got))
        for size in CHUNK_SIZES if label.endswith("middle") else (5,):
            got = _calls(_through(name, _Fake(reply=text, size=size), "stream"))
            if got != expected:
                failures.append((label, f"stream in chunks of {size}", got))
    assert not failures, failures[:5]


# --------------------------------------------------------------------------- stop words


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize(
    ("name", "n", "reply"),
    [p for p in _DIALECT_CASES if get_dialect(p.values[0]).stop],
)
def test_a_reply_cut_at_a_stop_word_inside_an_argument_runs_nothing(
    name: str, n: int, reply: str, mode: str
) -> None:
    """A server cuts the reply at the dialect's stop word even inside a string (the
    replay model cuts as one does): the call cut short is invalid, never run."""
    for stop in get_dialect(name).stop:
        written = reply.replace('"Paris"', f'"Pa{stop}ris"', 1)
        model = ReplayChatModel([written], chunk_size=3) if mode == "stream" else None
        read = _through(name, model or ReplayChatModel([written]), mode)
        assert "get_weather" not in [c["name"] for c in read.tool_calls], (stop, read)
        assert read.invalid_tool_calls, (stop, read)
        assert "ended inside" in (read.invalid_tool_calls[0]["error"] or ""), read


# --------------------------------------------------------------------------- the other side

# ``@@`` stands for a string argument: the closer inside it (a line-start closer after a
# raw line break), then an escaped backslash right before its closing quote; the same
# closer follows the JSON and ends the call.
_CLOSED_RIGHT_AFTER = [
    ("hermes", "</tool_call>", '<tool_call>\n{"name": "f", "arguments": {"p": @@}}</tool_call>'),
    ("qwen", "\n✿RESULT✿", '✿FUNCTION✿: f\n✿ARGS✿: {"p": @@}\n✿RESULT✿: x'),
    ("qwen", "\n✿FUNCTION✿", '✿FUNCTION✿: f\n✿ARGS✿: {"p": @@}\n✿FUNCTION✿: g\n✿ARGS✿: {}'),
    (
        "react",
        "```",
        'Action:\n```\n{"action": "f", "action_input": {"p": @@}}\n```\nThought: y',
    ),
    (
        "react",
        "\nObservation:",
        'Action: {"action": "f", "action_input": {"p": @@}}\nObservation: y',
    ),
    ("react", "\nThought:", 'Action: f\nAction Input: {"p": @@}\nThought: y'),
    (
        "auto",
        "<|end_of_text|>",
        '<|tool_call|>[{"name": "f", "arguments": {"p": @@}}]<|end_of_text|>',
    ),
    ("auto", "<|eom_id|>", '<|python_tag|>{"name": "f", "parameters": {"p": @@}}<|eom_id|>'),
    (
        "auto",
        "<|call|>",
        '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"p": @@}<|call|>',
    ),
    (
        "auto",
        "<｜tool▁call▁end｜>",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>"
        '{"p": @@}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    ),
    (
        "auto",
        "<|tool_call_end|>",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
        '<|tool_call_argument_begin|>{"p": @@}<|tool_call_end|><|tool_calls_section_end|>',
    ),
]


@pytest.mark.parametrize(("name", "marker", "template"), _CLOSED_RIGHT_AFTER)
def test_the_closer_right_after_the_json_still_ends_the_call(
    name: str, marker: str, template: str
) -> None:
    """The closer inside the string is text; the same closer right after the JSON (after
    a string ending in an escaped backslash) ends the call, as in any real reply."""
    reply = template.replace("@@", json.dumps(marker + " C:\\", ensure_ascii=False))
    reply = reply.replace("\\n", "\n", 1)  # a line-start closer: a raw line break
    written = marker + " C:\\"
    reader = AUTO if name == "auto" else get_dialect(name)
    for size in (len(reply), *CHUNK_SIZES):
        calls = _calls(_chunked(reader.stream_parser(), reply, size))
        assert calls[0] == ("f", {"p": written}), (size, reply, calls)


# --------------------------------------------------------------------------- the rule


_MARKER = "<|end|>"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.recursive(
        st.lists(st.sampled_from(['"', "\\", "{", "[", "]", "}", "a", "é", _MARKER])).map("".join),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=8,
    ),
    st.booleans(),
)
def test_the_rule_finds_a_marker_only_outside_strings(value: Any, ascii_only: bool) -> None:
    """Whatever strings JSON holds, every marker inside them stands in a string, and the
    one after the JSON is found."""
    text = json.dumps({"v": value}, ensure_ascii=ascii_only)
    assert find_unquoted(text + _MARKER, _MARKER) == len(text)
    assert split_unquoted(text + _MARKER + text, _MARKER) == [text, text]
    assert not in_json_string(text)
    at = text.find(_MARKER)
    while at >= 0:  # JSON writes "<" only inside strings
        assert in_json_string(text[:at]), (text, at)
        at = text.find(_MARKER, at + 1)


def test_the_rule_ignores_quotes_outside_brackets() -> None:
    assert not in_json_string('Action: "search" for "x')
    assert in_json_string('Action: "search" {"q": "x')
    assert find_unquoted('said "</e>" {"a": "</e>"} </e>', "</e>") == 6
