"""Grammar builders for constrained decoding: structure, schema coverage, llama.cpp parsing.

Whether a model really decodes under these grammars is tested over HTTP in
``test_local_server.py``; here the grammars are checked as text and, when llama.cpp is
installed, compiled by llama.cpp's own grammar parser.
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from fncall_graph.adapters.formats.grammar import (
    MAX_CALLS,
    MAX_STRING_CHARS,
    MAX_TEXT_CHARS,
    call_grammar,
    grammar_extra_body,
    grammar_max_bytes,
    qwen_call_grammar,
    schema_to_gbnf,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "sqlite-read_query",
            "description": "Execute a SELECT query on the SQLite database",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "sqlite-list_tables",
            "description": "List all tables in the SQLite database",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    },
]

RICH_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["北京", "上海"]},
        "days": {"type": "integer"},
        "units": {"anyOf": [{"const": "c"}, {"const": "f"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"$ref": "#/$defs/Point"},
        "extra": {"type": ["number", "boolean"]},
        "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
        "anything": {},
    },
    "required": ["city"],
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "next": {"$ref": "#/$defs/Point"}},
            "required": ["lat"],
        }
    },
}


def _rules(grammar: str) -> dict[str, str]:
    rules = {}
    for line in grammar.strip().splitlines():
        name, _, body = line.partition(" ::= ")
        assert name not in rules, f"rule {name} defined twice"
        rules[name] = body
    return rules


def _check_references(grammar: str) -> None:
    rules = _rules(grammar)
    assert next(iter(rules)) == "root"
    for body in rules.values():
        # Drop literals and character classes, then every word left must be a rule.
        bare = re.sub(r'"(\\.|[^"\\])*"|\[(\\.|[^\]\\])*\]', " ", body)
        for word in re.findall(r"[A-Za-z][A-Za-z0-9-]*", bare):
            assert word in rules, f"undefined rule {word!r} in {body!r}"


def test_hermes_grammar_shape():
    grammar = call_grammar(TOOLS, before="<tool_call>\n", after="\n</tool_call>")
    _check_references(grammar)
    rules = _rules(grammar)
    assert rules["root"] == "calls | answer"
    assert rules["answer"].startswith("[^\\u003C]")  # text may not open with "<"
    assert '"<tool_call>\\n"' in rules["sqlite-read-query-call"]
    assert '"\\"sqlite-read_query\\""' in rules["sqlite-read-query-call"]
    assert rules["sqlite-list-tables-args"] == '"{" ws "}"'
    assert rules["sqlite-read-query-args"] == '"{" ws "\\"query\\"" ws ":" ws string ws "}"'


def test_allow_text_false_leaves_only_calls():
    grammar = call_grammar(TOOLS, before="<tool_call>\n", after="\n</tool_call>", allow_text=False)
    rules = _rules(grammar)
    assert rules["root"] == "calls"
    assert "answer" not in rules


def test_parallel_calls():
    limited = _rules(call_grammar(TOOLS, before="<a>", after="</a>", max_calls=3))
    assert limited["calls"] == 'call ( "\\n" call ){0,2}'
    # "no limit" is MAX_CALLS: a reply made of calls stays finite
    unlimited = _rules(call_grammar(TOOLS, before="<a>", after="</a>", max_calls=None))
    assert unlimited["calls"] == f'call ( "\\n" call ){{0,{MAX_CALLS - 1}}}'
    with pytest.raises(ValueError):
        call_grammar(TOOLS, before="<a>", after="</a>", max_calls=0)


def test_react_framing_keys_preamble_and_answer():
    grammar = call_grammar(
        TOOLS,
        before="Action:\n```json\n",
        after="\n```",
        name_key="action",
        args_key="action_input",
        preamble="Thought:",
        answer="Final Answer:",
    )
    _check_references(grammar)
    rules = _rules(grammar)
    assert '"\\"action\\""' in rules["sqlite-read-query-call"]
    assert '"\\"action_input\\""' in rules["sqlite-read-query-call"]
    assert rules["preamble"] == f'"Thought:" [^\\n]{{0,{MAX_TEXT_CHARS}}} "\\n"'
    assert rules["calls"] == "preamble call"
    assert rules["answer"] == '( preamble )? "Final Answer:" anything'


def test_qwen_grammar_names_tools_bare():
    grammar = qwen_call_grammar(TOOLS, max_calls=None, text_before_call=True)
    _check_references(grammar)
    rules = _rules(grammar)
    assert rules["sqlite-read-query-call"] == (
        '"✿FUNCTION✿: " "sqlite-read_query" "\\n✿ARGS✿: " sqlite-read-query-args'
    )
    assert rules["lead"] == f"[^\\u273F]{{0,{MAX_TEXT_CHARS}}}"
    assert rules["answer"].startswith("[^\\u273F]")


def test_accepts_other_tool_shapes():
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """获取指定城市的天气信息"""
        return city

    mcp_tool = {"name": "echo", "inputSchema": {"type": "object", "properties": {}}}
    grammar = call_grammar([get_weather, mcp_tool], before="<c>", after="</c>")
    _check_references(grammar)
    assert '"\\"get_weather\\""' in grammar and '"\\"echo\\""' in grammar
    with pytest.raises(ValueError):
        call_grammar([], before="<c>", after="</c>")


def test_schema_coverage():
    grammar = schema_to_gbnf(RICH_SCHEMA)
    _check_references(grammar)
    assert '"\\"北京\\"" | "\\"上海\\""' in grammar
    assert "integer ::=" in grammar and "number ::=" in grammar
    assert '"\\"c\\""' in grammar and "null ::=" in grammar
    # Recursive $ref resolves to one rule that refers to itself.
    point = [n for n in _rules(grammar) if "ref-point" in n and not n.endswith("body")]
    assert point


def test_max_bytes_of_small_grammars():
    assert grammar_max_bytes('root ::= "ab" x{0,3}\nx ::= [a-c] | "yes"') == 11
    assert grammar_max_bytes('root ::= "é"? [^a] "\\n"') == 2 + 4 + 1
    assert grammar_max_bytes('root ::= ( "a" | "bb" ){2}') == 4
    assert grammar_max_bytes('root ::= "a"*') is None
    assert grammar_max_bytes('root ::= "a" root | "b"') is None  # recursion
    assert grammar_max_bytes('root ::= "a"{1,}') is None


def test_every_string_number_and_list_is_bounded():
    rules = _rules(schema_to_gbnf(RICH_SCHEMA))
    assert f"char{{0,{MAX_STRING_CHARS}}}" in rules["string"]
    for name, body in rules.items():
        bare = re.sub(r'"(\\.|[^"\\])*"|\[(\\.|[^\]\\])*\]', " ", body)  # quantifiers only
        assert "*" not in bare and "+" not in bare, (name, body)
    # a schema that refers to itself nests free-form JSON of bounded depth, not itself
    assert grammar_max_bytes(schema_to_gbnf(RICH_SCHEMA)) is not None


@pytest.mark.parametrize("framing", ["hermes", "react", "qwen"])
def test_a_reply_of_calls_has_a_known_length(framing):
    """What lets the model node give a constrained call enough max_tokens to finish."""
    if framing == "qwen":
        grammar = qwen_call_grammar(TOOLS, allow_text=False, max_calls=None)
    elif framing == "react":
        grammar = call_grammar(
            TOOLS, before="Action:\n```\n", after="\n```", preamble="Thought:", allow_text=False
        )
    else:
        grammar = call_grammar(
            TOOLS, before="<tool_call>\n", after="\n</tool_call>", allow_text=False
        )
    size = grammar_max_bytes(grammar)
    assert size is not None
    # at least one string of the largest size fits
    assert size > 4 * MAX_STRING_CHARS
    # a plain answer has no bound: only a reply that must be calls is finite
    assert grammar_max_bytes(grammar.replace("root ::= calls", "root ::= calls | [^<]*")) is None


def test_grammar_extra_body():
    assert grammar_extra_body("root ::= x") == {"grammar": "root ::= x"}


def test_names_and_keys_are_escaped():
    tools = [{"name": 'we"ird\\name', "parameters": {"type": "object", "properties": {}}}]
    grammar = call_grammar(tools, before='<"x">\n', after="\t")
    literal = json.dumps(json.dumps('we"ird\\name'))[1:-1]
    assert literal in grammar
    assert '"<\\"x\\">\\n"' in grammar and '"\\t"' in grammar


# -- llama.cpp's own parser -----------------------------------------------------------

llama_cpp_missing = importlib.util.find_spec("llama_cpp") is None


@pytest.mark.skipif(llama_cpp_missing, reason="llama-cpp-python is not installed")
@pytest.mark.parametrize(
    "grammar",
    [
        call_grammar(TOOLS, before="<tool_call>\n", after="\n</tool_call>", max_calls=None),
        call_grammar(
            TOOLS,
            before="Action:\n```json\n",
            after="\n```",
            name_key="action",
            args_key="action_input",
            preamble="Thought:",
            answer="Final Answer:",
        ),
        qwen_call_grammar(TOOLS, text_before_call=True, max_calls=2),
        schema_to_gbnf(RICH_SCHEMA),
        call_grammar([{"name": "rich", "parameters": RICH_SCHEMA}], before="<c>", after="</c>"),
    ],
    ids=["hermes", "react", "qwen", "schema", "rich-call"],
)
def test_llama_cpp_compiles_grammar(vocab, grammar):
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert sampler, "llama.cpp rejected the grammar"
    llama_cpp.llama_sampler_free(sampler)


@pytest.mark.skipif(llama_cpp_missing, reason="llama-cpp-python is not installed")
def test_llama_cpp_rejects_broken_grammar(vocab):
    import llama_cpp

    assert not llama_cpp.llama_sampler_init_grammar(vocab, b"root ::= nosuchrule", b"root")
