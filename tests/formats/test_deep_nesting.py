"""Arguments nested thousands of levels deep make an invalid call, never a crash.

JSON's readers (and ``repr``, ``json.dumps``, json-repair) recurse once per bracket; a
model or provider writing ~1,000 nested arrays would raise ``RecursionError`` out of the
run. Every way such arguments arrive, a provider's ``tool_calls`` field (invoke and
stream), its raw ``additional_kwargs`` calls, a JSON argument string in any content
format, each prompt dialect, gives an ``invalid_tool_calls`` entry saying the arguments
nest too deep; arguments as deep as a tool may take are read as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from fncall_graph.adapters import get_dialect, with_dialect
from fncall_graph.adapters.formats.calls import MAX_ARGS_DEPTH, coerce_args, loads_lenient
from fncall_graph.adapters.formats.normalize import normalize
from fncall_graph.adapters.formats.stream_reading import restore_read_reply

DEPTHS = [990, 1_000, 5_000, 100_000]
TOO_DEEP = f"arguments nest deeper than {MAX_ARGS_DEPTH} levels"
TOOLS = [{"name": "f", "description": "F", "parameters": {"type": "object"}}]


def nested_value(depth: int) -> Any:
    """``{"a": [{"a": [... 1 ...]}]}``, ``depth`` containers deep, built without recursion."""
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


def nested_text(depth: int) -> str:
    """The JSON text of :func:`nested_value`, written without recursion."""
    opens = ['{"a": ' if level % 2 == 0 else "[" for level in range(depth)]
    closes = ["}" if level % 2 == 0 else "]" for level in range(depth)]
    return "".join(reversed(opens)) + "1" + "".join(closes)


class _Fake(BaseChatModel):
    """Returns ``reply``; streamed, its text in pieces, then its calls as call chunks
    whose arguments are ``raw_args`` (the provider's JSON text)."""

    reply: AIMessage
    raw_args: str = ""

    @property
    def _llm_type(self) -> str:
        return "fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> _Fake:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reply)])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        text = self.reply.content if isinstance(self.reply.content, str) else ""
        for i in range(0, len(text), 4096):
            yield ChatGenerationChunk(message=AIMessageChunk(content=text[i : i + 4096]))
        chunks = [
            tool_call_chunk(name=c["name"], args=self.raw_args, id=c["id"], index=i)
            for i, c in enumerate(self.reply.tool_calls)
        ]
        if chunks:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))


def _read(model: BaseChatModel, dialect: str, mode: str) -> AIMessage:
    bound = with_dialect(model, dialect).bind_tools(TOOLS)
    if mode == "invoke":
        return bound.invoke("go")
    total = None
    for chunk in bound.stream("go"):
        total = chunk if total is None else total + chunk
    return restore_read_reply(total)


def _refused(message: AIMessage) -> None:
    assert message.tool_calls == []
    assert len(message.invalid_tool_calls) == 1, message.invalid_tool_calls
    assert TOO_DEEP in (message.invalid_tool_calls[0]["error"] or "")


def _field_reply(depth: int) -> AIMessage:
    reply = AIMessage(content="")
    # set after construction: the message's own validation would walk the arguments
    reply.tool_calls = [
        {"name": "f", "args": {"x": nested_value(depth)}, "id": "c1", "type": "tool_call"}
    ]
    return reply


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_a_provider_field_call_nested_deep_is_invalid(depth: int, mode: str) -> None:
    model = _Fake(reply=_field_reply(depth), raw_args='{"x": ' + nested_text(depth) + "}")
    _refused(_read(model, "native", mode))


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_raw_provider_call_nested_deep_is_invalid_not_lost(depth: int) -> None:
    """LangChain drops a raw OpenAI call whose parsing raised; it is kept as invalid."""
    raw = {"id": "c1", "type": "function"}
    raw["function"] = {"name": "f", "arguments": '{"x": ' + nested_text(depth) + "}"}
    reply = AIMessage(content="", additional_kwargs={"tool_calls": [raw]})
    _refused(_read(_Fake(reply=reply), "native", "invoke"))


def _content_formats(depth: int) -> dict[str, str]:
    args = '{"x": ' + nested_text(depth) + "}"
    value = nested_text(depth)
    return {
        "hermes": f'<tool_call>\n{{"name": "f", "arguments": {args}}}\n</tool_call>',
        "mistral": f'[TOOL_CALLS][{{"name": "f", "arguments": {args}}}]',
        "mistral-v11": f"[TOOL_CALLS]f[ARGS]{args}",
        "json": f'{{"name": "f", "arguments": {args}}}',
        "llama-python-tag": f'<|python_tag|>{{"name": "f", "parameters": {args}}}',
        "harmony": f"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{args}<|call|>",
        "deepseek": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>"
        f"{args}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "functionary": f">>>f\n{args}",
        "qwen": f"✿FUNCTION✿: f\n✿ARGS✿: {args}",
        "function-tag": f"<tool_call>\n<function=f>\n<parameter=x>\n{value}\n</parameter>\n"
        "</function>\n</tool_call>",
        "glm": f"<tool_call>f<arg_key>x</arg_key><arg_value>{value}</arg_value></tool_call>",
        "pythonic": f"[f(x={value})]",
    }


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_a_content_call_nested_deep_is_invalid_in_every_format(depth: int, mode: str) -> None:
    failures = []
    for name, text in _content_formats(depth).items():
        message = _read(_Fake(reply=AIMessage(content=text)), "native", mode)
        errors = [c["error"] or "" for c in message.invalid_tool_calls]
        if message.tool_calls or len(errors) != 1 or TOO_DEEP not in errors[0]:
            failures.append((name, len(message.tool_calls), errors))
    assert not failures, failures


def _dialect_replies(depth: int) -> dict[str, str]:
    args = '{"x": ' + nested_text(depth) + "}"
    return {
        "hermes": f'<tool_call>\n{{"name": "f", "arguments": {args}}}\n</tool_call>',
        "qwen": f"✿FUNCTION✿: f\n✿ARGS✿: {args}",
        "react": f'Thought: go.\nAction:\n```\n{{"action": "f", "action_input": {args}}}\n```',
    }


@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_a_dialect_reads_a_call_nested_deep_as_invalid(dialect: str, depth: int) -> None:
    reply = _dialect_replies(depth)[dialect]
    d = get_dialect(dialect)
    _refused(d.parse(reply))
    parser = d.stream_parser()
    for i in range(0, len(reply), 997):
        parser.feed(reply[i : i + 997])
    parser.close()
    _refused(parser.message())
    for mode in ("invoke", "stream"):
        _refused(_read(_Fake(reply=AIMessage(content=reply)), dialect, mode))


@pytest.mark.parametrize("depth", DEPTHS)
def test_the_json_readers_refuse_deep_text_with_the_reason(depth: int) -> None:
    text = '{"x": ' + nested_text(depth) + "}"
    for read in (loads_lenient, coerce_args):
        with pytest.raises(ValueError, match=TOO_DEEP):
            read(text)
    with pytest.raises(ValueError, match=TOO_DEEP):  # broken JSON, for json-repair
        loads_lenient(text[:-1] + ",}")
    message = normalize(AIMessage(content=f'<tool_call>{{"name": "f", "arguments": {text}}}'))
    _refused(message)


def _two_calls(legal: str, deep: str) -> dict[str, tuple[str, str]]:
    """Replies holding a call with ``legal`` arguments, then one with ``deep`` ones (each
    its own JSON value: a list holding both is one value too deep to read)."""
    return {
        "hermes": (
            "native",
            f'<tool_call>\n{{"name": "f", "arguments": {legal}}}\n</tool_call>\n'
            f'<tool_call>\n{{"name": "f", "arguments": {deep}}}\n</tool_call>',
        ),
        "deepseek": (
            "native",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>"
            f"{legal}<｜tool▁call▁end｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>"
            f"{deep}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        ),
        "qwen": ("qwen", f"✿FUNCTION✿: f\n✿ARGS✿: {legal}\n✿FUNCTION✿: f\n✿ARGS✿: {deep}"),
        "react": (
            "react",
            f'Action:\n```\n{{"action": "f", "action_input": {legal}}}\n```\n'
            f'Action:\n```\n{{"action": "f", "action_input": {deep}}}\n```',
        ),
    }


@pytest.mark.parametrize("mode", ["invoke", "stream"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_a_call_as_deep_as_a_tool_may_take_is_read_next_to_one_too_deep(
    depth: int, mode: str
) -> None:
    """The other side: nesting within the limit is read, and the call too deep beside it
    takes nothing down with it."""
    legal = {"x": nested_value(MAX_ARGS_DEPTH - 1)}  # the object and 63 levels inside it
    deep = '{"x": ' + nested_text(depth) + "}"
    failures = []
    for name, (dialect, reply) in _two_calls(json.dumps(legal), deep).items():
        message = _read(_Fake(reply=AIMessage(content=reply)), dialect, mode)
        errors = [c["error"] or "" for c in message.invalid_tool_calls]
        if [c["args"] for c in message.tool_calls] != [legal] or len(errors) != 1:
            failures.append((name, len(message.tool_calls), errors))
        elif TOO_DEEP not in errors[0]:
            failures.append((name, errors))
    field = _field_reply(depth)
    field.tool_calls = [
        {"name": "f", "args": legal, "id": "c0", "type": "tool_call"},
        *field.tool_calls,
    ]
    message = _read(_Fake(reply=field, raw_args=deep), "native", "invoke")
    if [c["args"] for c in message.tool_calls] != [legal] or len(message.invalid_tool_calls) != 1:
        failures.append(("field", len(message.tool_calls), message.invalid_tool_calls[:1]))
    assert not failures, failures


@pytest.mark.parametrize("depth", [10_000])
def test_a_graph_whose_model_sends_a_field_call_nested_deep_finishes(depth: int) -> None:
    # the model step shows the reply as written (model_output) beside the read one: the
    # arguments JSON cannot write make the reply shown without them, never a crash
    from langchain_core.tools import tool

    from fncall_graph import create_fncall_graph

    @tool
    def f() -> str:
        """F."""
        return "ran"

    model = _Fake(reply=_field_reply(depth), raw_args="")
    graph = create_fncall_graph(model, tools=[f], dialect="native", max_iterations=1)
    out = graph.invoke({"messages": [("user", "go")]})
    replies = [m for m in out["messages"] if isinstance(m, AIMessage)]
    assert replies[0].tool_calls == []
    assert TOO_DEEP in (replies[0].invalid_tool_calls[0]["error"] or "")
