"""No reply raises: whatever a model writes, reading it gives calls whose arguments JSON
can carry, or unreadable calls that say why.

Random text and bytes mixed with every reader's markup (each format's markers, its
examples cut and spliced, Python literals JSON has no value for) go through the public
path, ``with_dialect(model, "native").bind_tools(tools)``, invoked and streamed.
"""

from __future__ import annotations

import json
from functools import reduce

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from fncall_graph.adapters import with_dialect
from fncall_graph.adapters.formats.readers import CALL_FORMATS, KNOWN_MARKUP, READERS
from fncall_graph.adapters.formats.stream_reading import restore_read_reply
from fncall_graph.testing import ReplayChatModel

TOOLS = [
    {
        "name": name,
        "description": name,
        "parameters": {"type": "object", "properties": props},
    }
    for name, props in (
        ("get_candidate_status", {"candidate_id": {"type": "string"}}),
        ("f", {"tags": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}}),
    )
]
EXAMPLES = [e for r in READERS for e in r.examples]
# what JSON has no value for, written the ways models write Python
ODD = ["b'z'", "{'urgent', 'bug'}", "(1, 2)", "1j", "float('nan')", "...", "{1: 2}", "set()"]


def _fragments() -> st.SearchStrategy[str]:
    raw = st.binary(max_size=12).map(lambda b: b.decode("utf-8", "replace"))
    cut = st.tuples(st.sampled_from(EXAMPLES), st.integers(0, 400), st.integers(0, 400)).map(
        lambda t: t[0][min(t[1], t[2]) : max(t[1], t[2])]
    )
    return st.one_of(
        st.sampled_from(KNOWN_MARKUP),
        st.sampled_from(EXAMPLES),
        cut,
        st.sampled_from(ODD),
        st.sampled_from(['"', "'", "{", "}", "[", "]", "(", ")", ",", ":", "=", "\n", "<", ">"]),
        st.text(max_size=12),
        raw,
    )


replies = st.lists(_fragments(), max_size=12).map("".join)


def _check(message: AIMessage) -> None:
    for call in message.tool_calls:
        assert isinstance(call["args"], dict), call
        json.dumps(call["args"], allow_nan=False)  # JSON can carry it
        assert isinstance(call["name"], str) and call["name"]
    for bad in message.invalid_tool_calls:
        assert bad.get("error"), bad


def _read_both(text: str, call_format: str | None = None) -> tuple[AIMessage, AIMessage]:
    options = {"call_format": call_format} if call_format else {}
    model = with_dialect(ReplayChatModel([text, text], chunk_size=3), "native", **options)
    bound = model.bind_tools(TOOLS)
    invoked = bound.invoke("go")
    streamed = restore_read_reply(reduce(lambda a, b: a + b, bound.stream("go")))
    assert isinstance(invoked, AIMessage) and isinstance(streamed, AIMessage)
    return invoked, streamed


def _calls(message: AIMessage) -> list[tuple[str, object]]:
    return [(c["name"], c["args"]) for c in message.tool_calls]


def test_a_call_list_with_a_bytes_argument_runs_the_readable_call_only() -> None:
    text = (
        "<|tool_call_start|>[get_candidate_status(candidate_id='12345'), bad(x=b'z')]"
        "<|tool_call_end|>"
    )
    for message in _read_both(text):
        assert _calls(message) == [("get_candidate_status", {"candidate_id": "12345"})]
        [bad] = message.invalid_tool_calls
        assert bad["name"] == "bad" and "bytes" in (bad["error"] or "")


def test_a_set_literal_is_a_list_in_invoke_and_stream_alike() -> None:
    text = "<|tool_call_start|>[f(tags={'urgent', 'bug'})]<|tool_call_end|>"
    invoked, streamed = _read_both(text)
    assert _calls(invoked) == _calls(streamed) == [("f", {"tags": ["urgent", "bug"]})]


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=replies, fmt=st.sampled_from([None, *sorted(CALL_FORMATS)]))
@example(text="<|tool_call_start|>[f(x=b'z')]<|tool_call_end|>", fmt=None)
@example(text="<|tool_call_start|>[f(tags={'a', 'b'}, n=1j)]<|tool_call_end|>", fmt="lfm2")
@example(
    text="<tool_call>\n<function=f>\n<parameter=tags>\n{'a', 'b'}\n</parameter>\n</function>",
    fmt="hermes",
)
def test_no_reply_raises_and_every_call_is_json(text: str, fmt: str | None) -> None:
    # auto-detected, and read as each declared format
    invoked, streamed = _read_both(text, fmt)
    _check(invoked)
    _check(streamed)
    assert _calls(invoked) == _calls(streamed)
