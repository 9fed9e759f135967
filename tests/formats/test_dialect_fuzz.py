"""Fuzz: broken model output never makes a dialect raise.

Well-formed replies of every prompt dialect (text, ``<think>`` blocks, one or more calls)
are mutated the ways real output breaks: cut short anywhere (inside a marker, a key, a
string, an escape, between calls), brackets and quotes swapped, doubled or dropped,
random characters and bytes pushed into calls, markers doubled, nested or moved. Every
mutant goes to every dialect's ``parse`` and to its markup scanner under a random
chunking. Neither may raise; both must return an ``AIMessage`` whose calls are well
formed, and the scanner must give the same for any chunking.

Then one reading on every path: replies of every dialect and of the call formats a
native reply may hold in its text (and ReAct's other shapes) are read by
``Dialect.parse``, ``normalize``, ``with_dialect``'s ``invoke`` and its ``stream``
(chunks added up); all four must give the same text, reasoning, calls and unreadable
calls.

Everything comes from one seeded ``random.Random`` per dialect, so a failure names the
seed and the case number that reproduce it.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from functools import reduce
from typing import Any

import pytest
from dialect_variants import PROMPT_VARIANTS
from langchain_core.messages import AIMessage

from fncall_graph.adapters import (
    Dialect,
    get_dialect,
    normalize,
    with_dialect,
)
from fncall_graph.adapters.formats.base import PromptDialect, text_of
from fncall_graph.adapters.formats.calls import (
    CallEvent,
    ContentDelta,
    InvalidCallEvent,
    ReasoningDelta,
)
from fncall_graph.adapters.formats.stream_reading import restore_read_reply
from fncall_graph.testing import ReplayChatModel

PROMPT_DIALECTS = PROMPT_VARIANTS
ALL_DIALECTS: dict[str, tuple[str, dict[str, Any]]] = {
    **PROMPT_DIALECTS,
    "native": ("native", {}),
}

#: Mutants per source dialect; each is fed to all seven dialects, parse and stream.
CASES_PER_SOURCE = 1700
TOTAL_CASES = CASES_PER_SOURCE * len(PROMPT_DIALECTS)  # 10,200

MARKERS = (
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "✿FUNCTION✿",
    "✿FUNCTION✿:",
    "✿ARGS✿",
    "✿ARGS✿:",
    "✿RESULT✿",
    "✿RESULT✿:",
    "✿RETURN✿",
    "✿RETURN✿:",
    "Action:",
    "Observation:",
    "Thought:",
    "Final Answer:",
    "```",
    "```json",
    "<tool_response>",
)
BRACKETS = "{}[]\"'`"
CJK = "数据库助手查询韩梅梅的年龄记录天气北京广州上海深圳工具输入结果回复"
TOOL_NAMES = ("sqlite-list_tables", "sqlite-read_query", "get_weather", "a", "x_y-z", "工具")


def dialect(key: str) -> Dialect:
    name, options = ALL_DIALECTS[key]
    return get_dialect(name, **options)


# --------------------------------------------------------------------------- sources


def rand_text(rng: random.Random, n: int) -> str:
    alphabet = string.ascii_letters + string.digits + " \n.,:;!?" + CJK
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))


def rand_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.randint(-(10**12), 10**12)
    if kind == 3:
        return rng.uniform(-1e6, 1e6)
    if kind == 4:
        return rand_text(rng, 12) + rng.choice(["", '"', "\\", "{}", "</tool_call>", "✿", "\n"])
    if kind == 5:
        return [rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rand_text(rng, 6): rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def source_output(rng: random.Random, writer: PromptDialect) -> str:
    """A well-formed reply in ``writer``'s dialect, sometimes after a ``<think>`` block."""
    calls = [
        {
            "name": rng.choice(TOOL_NAMES),
            "args": {rand_text(rng, 8) or "k": rand_value(rng) for _ in range(rng.randint(0, 3))},
            "id": f"call_{i}",
            "type": "tool_call",
        }
        for i in range(rng.choice([0, 1, 1, 1, 2, 3]))
    ]
    text = writer.write_assistant(AIMessage(content=rand_text(rng, 40), tool_calls=calls))
    if rng.random() < 0.3:
        text = f"<think>{rand_text(rng, 40)}</think>\n" + text
    return text


# --------------------------------------------------------------------------- mutations


def cut_points(text: str) -> list[int]:
    """Places worth cutting at: inside and around markers, brackets, quotes, escapes."""
    points = [0, len(text)]
    for marker in MARKERS:
        start = text.find(marker)
        while start >= 0:
            points += [start, start + 1, start + len(marker) // 2, start + len(marker)]
            start = text.find(marker, start + 1)
    points += [i for i, ch in enumerate(text) if ch in '{}[]":,\\\n']
    points += [i + 1 for i, ch in enumerate(text) if ch in '{}[]":,\\\n']
    return [p for p in points if 0 <= p <= len(text)]


def truncate(rng: random.Random, text: str) -> str:
    return text[: rng.choice(cut_points(text))]


def swap_bracket(rng: random.Random, text: str) -> str:
    spots = [i for i, ch in enumerate(text) if ch in BRACKETS]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + rng.choice(BRACKETS) + text[i + 1 :]


def duplicate_bracket(rng: random.Random, text: str) -> str:
    spots = [i for i, ch in enumerate(text) if ch in BRACKETS]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[: i + 1] + text[i] * rng.randint(1, 3) + text[i + 1 :]


def remove_bracket(rng: random.Random, text: str) -> str:
    spots = [i for i, ch in enumerate(text) if ch in BRACKETS]
    if not spots:
        return text
    i = rng.choice(spots)
    return text[:i] + text[i + 1 :]


def random_unicode(rng: random.Random) -> str:
    while True:
        cp = rng.choice(
            [
                rng.randint(0, 0x1F),  # control characters, NUL included
                rng.randint(0x20, 0x7E),
                rng.randint(0x80, 0x2FF),
                rng.randint(0x2000, 0x206F),  # spaces, joiners, line/paragraph separators
                rng.randint(0x4E00, 0x9FFF),
                0x273F,  # ✿
                0xFEFF,
                0xFFFD,
                rng.randint(0x1F300, 0x1FAFF),
                rng.randint(0xE000, 0xF8FF),
                0x10FFFF,
            ]
        )
        if not 0xD800 <= cp <= 0xDFFF:  # text decoded from a stream is never a lone surrogate
            return chr(cp)


def insert_junk(rng: random.Random, text: str) -> str:
    if rng.random() < 0.5:
        junk = "".join(random_unicode(rng) for _ in range(rng.randint(1, 6)))
    else:  # raw bytes as a lenient decoder would hand them over
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))).decode(
            "utf-8", errors="replace"
        )
    i = rng.choice(cut_points(text))
    return text[:i] + junk + text[i:]


def insert_marker(rng: random.Random, text: str) -> str:
    i = rng.randint(0, len(text))
    return text[:i] + rng.choice(MARKERS) + text[i:]


def duplicate_marker(rng: random.Random, text: str) -> str:
    found = [(text.find(m), m) for m in MARKERS if m in text]
    if not found:
        return insert_marker(rng, text)
    at, marker = rng.choice(found)
    return text[:at] + marker * rng.randint(2, 3) + text[at + len(marker) :]


def nest(rng: random.Random, text: str) -> str:
    """A copy of the text (or a slice of it) pushed inside itself."""
    i, j = sorted(rng.randint(0, len(text)) for _ in range(2))
    k = rng.randint(0, len(text))
    return text[:k] + text[i:j] + text[k:]


def remove_marker(rng: random.Random, text: str) -> str:
    found = [m for m in MARKERS if m in text]
    if not found:
        return text
    return text.replace(rng.choice(found), "", 1)


def swap_halves(rng: random.Random, text: str) -> str:
    i = rng.randint(0, len(text))
    return text[i:] + text[:i]


def escape_break(rng: random.Random, text: str) -> str:
    """A dangling or bogus escape: ``\\``, ``\\u12``, ``\\x``."""
    i = rng.choice(cut_points(text))
    return text[:i] + rng.choice(["\\", "\\u", "\\u12", "\\ud800", "\\x", '\\"', "\\\\"]) + text[i:]


MUTATIONS: tuple[Callable[[random.Random, str], str], ...] = (
    truncate,
    truncate,
    swap_bracket,
    duplicate_bracket,
    remove_bracket,
    insert_junk,
    insert_junk,
    insert_marker,
    duplicate_marker,
    nest,
    remove_marker,
    swap_halves,
    escape_break,
)


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.choice([1, 1, 2, 3])):
        text = rng.choice(MUTATIONS)(rng, text)
    return text


def chunk(rng: random.Random, text: str) -> list[str]:
    if rng.random() < 0.1:
        return list(text)
    out, i = [], 0
    while i < len(text):
        n = rng.choice([1, 2, 3, 5, 8, 13, 32])
        out.append(text[i : i + n])
        i += n
    return out


# --------------------------------------------------------------------------- checks


def check_message(message: Any, context: str) -> None:
    assert isinstance(message, AIMessage), context
    assert isinstance(message.content, str), context
    for call in message.tool_calls:
        assert isinstance(call["name"], str) and call["name"], context
        assert isinstance(call["args"], dict), context
        json.dumps(call["args"])  # arguments are plain JSON data
    for bad in message.invalid_tool_calls:
        assert isinstance(bad.get("error"), str) and bad["error"], context


def summary(message: AIMessage) -> tuple[Any, ...]:
    return (
        text_of(message.content),
        message.additional_kwargs.get("reasoning_content") or "",
        [(c["name"], c["args"]) for c in message.tool_calls],
        [(c["name"], c["args"], c["error"]) for c in message.invalid_tool_calls],
    )


def scanned(d: Dialect, chunks: list[str]) -> tuple[list[Any], AIMessage]:
    """What the dialect's markup scanner gives for ``chunks``: its events and message."""
    parser = d.stream_parser()
    events = []
    for piece in chunks:
        events += parser.feed(piece)
    events += parser.close()
    return events, parser.message()


def run(d: Dialect, text: str, chunks: list[str], context: str) -> None:
    check_message(d.parse(text), context)  # the reply as the graph reads it

    # the markup scanner: any chunking gives what the whole text gives
    _, whole = scanned(d, [text])
    events, streamed = scanned(d, chunks)
    check_message(whole, context)
    check_message(streamed, context)
    assert summary(streamed) == summary(whole), context
    assert all(
        isinstance(e, ContentDelta | ReasoningDelta | CallEvent | InvalidCallEvent) for e in events
    ), context
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == text_of(
        whole.content
    ), context


@pytest.mark.parametrize("source", list(PROMPT_DIALECTS))
def test_mutated_outputs_never_raise(source: str) -> None:
    """``CASES_PER_SOURCE`` mutants of ``source``'s replies, each fed to every dialect."""
    seed = f"fncall-graph fuzz {source}"
    rng = random.Random(seed)
    writer = dialect(source)
    assert isinstance(writer, PromptDialect)
    readers = {key: dialect(key) for key in ALL_DIALECTS}
    for case in range(CASES_PER_SOURCE):
        text = mutate(rng, source_output(rng, writer))
        chunks = chunk(rng, text)
        for key, reader in readers.items():
            run(reader, text, chunks, f"seed={seed!r} case={case} reader={key} text={text!r}")


def test_case_count() -> None:
    assert TOTAL_CASES >= 10_000


# --------------------------------------------------------------------------- the wrapper

#: Mutants per source dialect read whole and streamed through ``with_dialect``.
WRAPPER_CASES_PER_SOURCE = 60
#: label -> (dialect, options, declared call format): every prompt dialect, and native
#: reading markup in a reply's text, its format known or found
READERS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    **{key: (name, options, None) for key, (name, options) in PROMPT_DIALECTS.items()},
    "native": ("native", {}, None),
    "native, hermes declared": ("native", {}, "hermes"),
    "native, react declared": ("native", {}, "react"),
}


def _tools() -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": n, "description": n, "parameters": {}}}
        for n in TOOL_NAMES
    ]


def _read_summary(message: AIMessage) -> tuple[Any, ...]:
    return (
        *summary(message)[:3],
        [(c.get("name"), c.get("args"), c.get("error")) for c in message.invalid_tool_calls],
        sorted(k for k in message.additional_kwargs if k != "reasoning_content"),
    )


@pytest.mark.parametrize("source", list(PROMPT_DIALECTS))
def test_a_reply_read_whole_is_the_sum_of_its_stream(source: str) -> None:
    """``invoke`` reads a reply whole (a prompt dialect's: one message built at once;
    native: ``normalize``); ``stream`` sends the chunks of the same reading. Their sum, with what chunks cannot carry put back, must
    be the whole reading: text, reasoning, calls, unreadable calls with their errors."""
    seed = f"fncall-graph whole and streamed {source}"
    rng = random.Random(seed)
    writer = dialect(source)
    assert isinstance(writer, PromptDialect)
    for case in range(WRAPPER_CASES_PER_SOURCE):
        text = source_output(rng, writer)
        if rng.random() < 0.7:
            text = mutate(rng, text)
        size = rng.choice([1, 3, 8, 64])
        for key, (name, options, call_format) in READERS.items():
            model = with_dialect(
                ReplayChatModel([text, text], chunk_size=size),
                get_dialect(name, **options),
                call_format=call_format,
            ).bind_tools(_tools())
            whole = model.invoke("go")
            chunks = list(model.stream("go"))
            streamed = restore_read_reply(reduce(lambda a, b: a + b, chunks))
            context = f"seed={seed!r} case={case} reader={key} text={text!r}"
            assert isinstance(streamed, AIMessage), context
            assert _read_summary(whole) == _read_summary(streamed), context


# --------------------------------------------------------------------------- one reading

#: How a reply may write its calls: every prompt dialect's own writing, the call formats
#: a native reply's text holds (its server without a tool parser), and the other shapes
#: of ReAct's action that LangChain's ReAct and JSON-agent parsers read.


def _hermes_text(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    return dialect("hermes").write_assistant(AIMessage(content=text, tool_calls=calls))


def _mistral(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    body = "".join(f"[TOOL_CALLS]{c['name']}[ARGS]{json.dumps(c['args'])}" for c in calls)
    return f"{text}\n{body}" if text else body


def _bare_json(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    items = [{"name": c["name"], "arguments": c["args"]} for c in calls]
    value: Any = items[0] if len(items) == 1 else items
    return json.dumps(value, ensure_ascii=rng.random() < 0.5) if items else text


def _fenced_json(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    return f"{text}\n```json\n{_bare_json(rng, calls, '')}\n```" if calls else text


def _react_blob(call: dict[str, Any]) -> str:
    return json.dumps({"action": call["name"], "action_input": call["args"]}, indent=2)


def _react_fenced(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    """``Thought:`` then a fenced action blob, no ``Action:`` label."""
    if not calls:
        return f"Thought: {text}\nFinal Answer: {rand_text(rng, 20)}"
    tag = rng.choice(["", "json"])
    return f"Thought: {text}\n```{tag}\n{_react_blob(calls[0])}\n```\n"


def _react_final_blob(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    answer = {"action": "Final Answer", "action_input": rand_text(rng, 20)}
    return f"```\n{json.dumps(answer, indent=2)}\n```"


def _react_only_blob(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    return _react_blob(calls[0]) if calls else text


def _react_numbered(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
    if not calls:
        return text
    n = rng.randint(1, 3)
    return (
        f"Thought: {text}\nAction {n}: {calls[0]['name']}\nAction {n} Input: {rand_text(rng, 10)}"
    )


def _writer(key: str) -> Callable[[random.Random, list[dict[str, Any]], str], str]:
    def write(rng: random.Random, calls: list[dict[str, Any]], text: str) -> str:
        return dialect(key).write_assistant(AIMessage(content=text, tool_calls=calls))

    return write


WRITERS: dict[str, Callable[[random.Random, list[dict[str, Any]], str], str]] = {
    **{key: _writer(key) for key in PROMPT_DIALECTS},
    "mistral": _mistral,
    "json": _bare_json,
    "fenced json": _fenced_json,
    "react, fenced blob": _react_fenced,
    "react, final answer blob": _react_final_blob,
    "react, only the blob": _react_only_blob,
    "react, numbered": _react_numbered,
}
#: Replies per writer read on every path.
AGREEMENT_CASES_PER_WRITER = 40


def written(rng: random.Random, writer: str) -> str:
    calls = [
        {
            "name": rng.choice(TOOL_NAMES),
            "args": {rand_text(rng, 8) or "k": rand_value(rng) for _ in range(rng.randint(0, 3))},
            "id": f"call_{i}",
            "type": "tool_call",
        }
        for i in range(rng.choice([0, 1, 1, 1, 2]))
    ]
    text = WRITERS[writer](rng, calls, rand_text(rng, 40))
    if rng.random() < 0.2:
        text = f"<think>{rand_text(rng, 30)}</think>\n" + text
    return mutate(rng, text) if rng.random() < 0.5 else text


def _agreement(text: str, key: str, tools: list[dict[str, Any]] | None, size: int) -> None:
    name, options, call_format = READERS[key]
    d = get_dialect(name, **options)
    model = with_dialect(ReplayChatModel([text, text], chunk_size=size), d, call_format=call_format)
    bound = model.bind_tools(tools) if tools else model
    invoked = bound.invoke("go")
    streamed = restore_read_reply(reduce(lambda a, b: a + b, list(bound.stream("go"))))
    names = [t["function"]["name"] for t in tools] if tools and d.native else None
    # the reply as the server sends it: cut at the dialect's first stop sequence
    text = text[: min((i for s in d.stop if (i := text.find(s)) >= 0), default=len(text))]
    normalized = normalize(
        AIMessage(content=text), d, tools=tools, tool_names=names, call_format=call_format
    )
    context = f"reader={key} tools={bool(tools)} text={text!r}"
    assert isinstance(streamed, AIMessage), context
    readings = {"invoke": invoked, "stream": streamed, "normalize": normalized}
    if not tools and call_format is None:  # parse knows no tools and no declared format
        readings["parse"] = d.parse(text)
    got = {path: _read_summary(m) for path, m in readings.items()}
    assert all(v == got["invoke"] for v in got.values()), (context, got)


@pytest.mark.parametrize("writer", list(WRITERS))
def test_parse_normalize_invoke_and_stream_read_a_reply_alike(writer: str) -> None:
    """One reading on every path: ``Dialect.parse`` = ``normalize`` = the graph's reading
    (``with_dialect`` invoke) = its stream, chunks added up; with tools bound and without."""
    seed = f"fncall-graph one reading {writer}"
    rng = random.Random(seed)
    for case in range(AGREEMENT_CASES_PER_WRITER):
        text = written(rng, writer)
        size = rng.choice([1, 3, 8, 64])
        tools = _tools() if rng.random() < 0.5 else None
        for key in READERS:
            try:
                _agreement(text, key, tools, size)
            except AssertionError as error:
                raise AssertionError(f"seed={seed!r} case={case}: {error}") from None
