"""Constrained decoding for prompt dialects on llama.cpp servers.

llama.cpp's server and llama-cpp-python's server accept a GBNF ``grammar`` field in a
chat-completion request and only let the model produce text that the grammar allows.
The helpers here build grammars that admit *either* a plain answer *or* a tool call
written the way a dialect writes it, with the tool name limited to the offered tools
and the arguments limited to that tool's JSON schema.

* :func:`call_grammar` serves dialects that frame a JSON object, e.g. Hermes
  (``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``) or LangChain's
  JSON-blob ReAct (``{"action": ..., "action_input": {...}}`` in a fence after
  ``Action:``);
* :func:`qwen_call_grammar` serves Qwen's ``✿FUNCTION✿: name\\n✿ARGS✿: {...}``;
* :func:`schema_to_gbnf` turns one JSON schema into GBNF;
* :func:`grammar_extra_body` is what ``ChatOpenAI`` must send.

Example:
    >>> tools = [{"type": "function", "function": {"name": "list_tables",
    ...     "description": "List tables", "parameters": {"type": "object", "properties": {}}}}]
    >>> g = call_grammar(tools, before="<tool_call>\\n", after="\\n</tool_call>")
    >>> print(g.splitlines()[0])
    root ::= calls | answer
    >>> model = model.bind(extra_body=grammar_extra_body(g))  # doctest: +SKIP

The schema support covers what tool schemas use: ``type`` (one or a list), ``properties``
and ``required`` (properties are written required first, then optional ones, in their
declared order; other keys are not admitted), ``items``, ``enum``, ``const``, ``anyOf``,
``oneOf``, a one-element ``allOf``, local ``$ref`` (``#/$defs/...``) and
``additionalProperties`` on objects without ``properties``. Constraints that GBNF would
only approximate (``pattern``, ``minLength``, ``minimum``, ``format``...) are not
enforced; an unknown construct admits any JSON value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .readers.qwen import FN_ARGS, FN_NAME

__all__ = ["grammar_max_bytes", "schema_to_gbnf"]

#: Most characters in one JSON string a grammar admits.
MAX_STRING_CHARS = 128
#: Most digits in the integer, fraction and exponent parts of one JSON number.
MAX_DIGITS = 15
#: Most items in one JSON array, and most members in one free-form JSON object.
MAX_ITEMS = 8
#: How deep free-form JSON (a value whose schema says nothing) may nest.
MAX_DEPTH = 2
#: Most characters of free text before a call (a ``Thought:`` line, thinking aloud).
MAX_TEXT_CHARS = 200
#: Most calls in one reply when a dialect writes calls in parallel.
MAX_CALLS = 4

# Every repetition is bounded, so a reply that must be calls (``allow_text=False``) is
# complete within a known number of bytes (see grammar_max_bytes): a small model cannot
# run to max_tokens inside an endless string. Whitespace too: small models left free to
# emit spaces sometimes never stop.
_BASE_RULES = {
    "ws": '" "?',
    "string": f'"\\"" char{{0,{MAX_STRING_CHARS}}} "\\""',
    # raw UTF-8 or a one-letter escape; no \\uXXXX, which would triple a character's cost
    "char": '[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" ["\\\\/bfnrt]',
    "integer": f'"-"? ( "0" | [1-9] [0-9]{{0,{MAX_DIGITS - 1}}} )',
    "number": f'integer ( "." [0-9]{{1,{MAX_DIGITS}}} )? ( [eE] [-+]? [0-9]{{1,3}} )?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "scalar": "string | number | boolean | null",
}
# Which base rules each base rule needs, so a grammar only carries what it uses.
_BASE_DEPS = {
    "string": ["char"],
    "number": ["integer"],
    "scalar": ["string", "number", "boolean", "null"],
}


def _level(depth: int) -> str:
    return "" if depth == 0 else f"-{depth}"


def _inner(depth: int) -> str:
    """What a free-form container at ``depth`` holds: deeper containers, at the bottom scalars."""
    return "scalar" if depth + 1 >= MAX_DEPTH else f"value{_level(depth + 1)}"


# Free-form JSON (``value``, ``object``, ``array``) nests at most MAX_DEPTH levels.
for _depth in range(MAX_DEPTH):
    _s, _in, _more = _level(_depth), _inner(_depth), MAX_ITEMS - 1
    _BASE_RULES[f"value{_s}"] = f"object{_s} | array{_s} | scalar"
    _BASE_RULES[f"object{_s}"] = (
        f'"{{" ws ( string ws ":" ws {_in} ( ws "," ws string ws ":" ws {_in} ){{0,{_more}}} )? '
        'ws "}"'
    )
    _BASE_RULES[f"array{_s}"] = f'"[" ws ( {_in} ( ws "," ws {_in} ){{0,{_more}}} )? ws "]"'
    _BASE_DEPS[f"value{_s}"] = [f"object{_s}", f"array{_s}", "scalar"]
    _BASE_DEPS[f"object{_s}"] = ["ws", "string", _in]
    _BASE_DEPS[f"array{_s}"] = ["ws", _in]


def _literal(text: str) -> str:
    """A GBNF string literal matching ``text`` exactly."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def _char_escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def _rule_name(text: str) -> str:
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in text).strip("-")
    return name.lower() or "x"


class _Grammar:
    """Collects named GBNF rules; JSON schemas are visited into rules on demand."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self._refs: dict[str, str] = {}
        self._root_schema: Mapping[str, Any] = {}

    def base(self, name: str) -> str:
        if name not in self.rules:
            self.rules[name] = _BASE_RULES[name]
            for dep in _BASE_DEPS.get(name, []):
                self.base(dep)
        return name

    def add(self, hint: str, body: str) -> str:
        base = _rule_name(hint)
        name, n = base, 1
        while name in self.rules or name in _BASE_RULES:
            if self.rules.get(name) == body:
                return name
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        return name

    def render(self, root: str) -> str:
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        return "\n".join(lines) + "\n"

    # -- JSON schema --------------------------------------------------------------------

    def visit_root(self, schema: Any, hint: str) -> str:
        """Visit a top-level schema: its ``$ref``s resolve against it."""
        self._root_schema = schema if isinstance(schema, Mapping) else {}
        self._refs = {}
        return self.visit(schema, hint)

    def visit(self, schema: Any, hint: str) -> str:
        """Return a rule expression (usually a rule name) for ``schema``."""
        if not isinstance(schema, Mapping) or not schema:
            return self.base("value")
        if "$ref" in schema:
            return self._ref(str(schema["$ref"]), hint)
        if "const" in schema:
            return self.add(hint, _literal(json.dumps(schema["const"], ensure_ascii=False)))
        if "enum" in schema:
            options = [_literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]]
            return self.add(hint, " | ".join(options) if options else '"null"')
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                alts = [self.visit(s, f"{hint}-{i}") for i, s in enumerate(schema[key])]
                return self.add(hint, " | ".join(alts))
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.visit(all_of[0], hint)
        kind = schema.get("type")
        if isinstance(kind, list):
            alts = [self.visit({**schema, "type": t}, f"{hint}-{t}") for t in kind]
            return self.add(hint, " | ".join(alts)) if alts else self.base("value")
        if kind is None and "properties" in schema:
            kind = "object"
        if kind == "object":
            return self._object(schema, hint)
        if kind == "array":
            items = schema.get("items")
            if not isinstance(items, Mapping):
                return self.base("array")
            item = self.visit(items, f"{hint}-item")
            self.base("ws")
            more = MAX_ITEMS - 1
            return self.add(hint, f'"[" ws ( {item} ( ws "," ws {item} ){{0,{more}}} )? ws "]"')
        if kind in ("string", "integer", "number", "boolean", "null"):
            return self.base(kind)
        return self.base("value")

    def _ref(self, ref: str, hint: str) -> str:
        if ref in self._refs:
            name = self._refs[ref]
            # a schema that refers to itself: its inner copies are bounded free-form JSON,
            # so the grammar keeps a finite length
            return self.base("value") if self.rules[name].startswith("pending ") else name
        target: Any = None
        if ref.startswith("#/"):
            target = self._root_schema
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            return self.base("value")
        # Reserve the name first so recursive schemas refer to it instead of looping.
        name = self.add(f"{hint}-ref-{ref.rsplit('/', 1)[-1]}", f"pending {ref}")
        self._refs[ref] = name
        self.rules[name] = self.visit(target, f"{name}-body")
        return name

    def _object(self, schema: Mapping[str, Any], hint: str) -> str:
        self.base("ws")
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            extra = schema.get("additionalProperties")
            if extra is False or (properties is not None and extra is None):
                # Declared properties, none of them: MCP's way of saying "no arguments".
                return self.add(hint, '"{" ws "}"')
            if isinstance(extra, Mapping) and extra:
                val = self.visit(extra, f"{hint}-value")
                self.base("string")
                kv = f'string ws ":" ws {val}'
                more = MAX_ITEMS - 1
                body = f'"{{" ws ( {kv} ( ws "," ws {kv} ){{0,{more}}} )? ws "}}"'
                return self.add(hint, body)
            return self.base("object")
        required = set(schema.get("required") or [])
        kvs: dict[str, str] = {}
        for prop, prop_schema in properties.items():
            value = self.visit(prop_schema, f"{hint}-{prop}")
            kvs[prop] = f'{_literal(json.dumps(prop, ensure_ascii=False))} ws ":" ws {value}'
        req = [kvs[p] for p in properties if p in required]
        opt = [kvs[p] for p in properties if p not in required]
        body = '"{" ws '
        if req:
            body += ' ws "," ws '.join(req)
            body += "".join(f' ( ws "," ws {kv} )?' for kv in opt)
        elif opt:
            chains = []
            for i, first in enumerate(opt):
                chains.append(first + "".join(f' ( ws "," ws {kv} )?' for kv in opt[i + 1 :]))
            body += "( " + " | ".join(f"( {c} )" for c in chains) + " )?"
        body += ' ws "}"'
        return self.add(hint, body)


def schema_to_gbnf(schema: Mapping[str, Any]) -> str:
    """GBNF grammar whose ``root`` is one JSON value valid for ``schema``.

    Example:
        >>> print(schema_to_gbnf({"type": "boolean"}), end="")
        root ::= boolean
        boolean ::= "true" | "false"
    """
    grammar = _Grammar()
    return grammar.render(grammar.visit_root(schema, "root-value"))


def _functions(tools: Iterable[Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, parameters) of each tool; accepts OpenAI tool dicts and what converts to one."""
    out = []
    for tool in tools:
        if isinstance(tool, Mapping) and tool.get("type") == "function" and "function" in tool:
            function = tool["function"]
        elif isinstance(tool, Mapping) and "name" in tool:
            function = tool
        else:
            from langchain_core.utils.function_calling import convert_to_openai_tool

            function = convert_to_openai_tool(tool)["function"]
        params = function.get("parameters") or function.get("inputSchema") or {}
        out.append((str(function["name"]), params))
    if not out:
        raise ValueError("a call grammar needs at least one tool")
    return out


def _assemble(
    grammar: _Grammar,
    call_alternatives: Sequence[str],
    *,
    opening: str,
    allow_text: bool,
    max_calls: int | None,
    separator: str,
    text_before_call: bool,
    preamble: str | None,
    answer: str | None,
    answer_json: Mapping[str, Any] | None = None,
) -> str:
    call = grammar.add("call", " | ".join(call_alternatives))
    max_calls = MAX_CALLS if max_calls is None else max_calls
    if max_calls < 1:
        raise ValueError("max_calls must be at least 1")
    calls_body = call
    if max_calls > 1:
        calls_body += f" ( {_literal(separator)} {call} ){{0,{max_calls - 1}}}"
    lead = ""
    if preamble is not None:
        lead = (
            grammar.add("preamble", f'{_literal(preamble)} [^\\n]{{0,{MAX_TEXT_CHARS}}} "\\n"')
            + " "
        )
    elif text_before_call:
        # Free text may precede the call as long as it does not open a call itself.
        lead = grammar.add("lead", f"[^{_char_escape(opening[0])}]{{0,{MAX_TEXT_CHARS}}}") + " "
    calls = grammar.add("calls", lead + calls_body)
    if not allow_text:
        return grammar.render(calls)
    if answer_json is not None:
        # the answer is one JSON value of the schema (after ``answer``, where one opens it)
        value = grammar.visit_root(answer_json, "answer-json")
        opt_lead = f"( {lead.strip()} )? " if preamble is not None else ""
        opener = f"{_literal(answer)} ws " if answer is not None else ""
        grammar.add("answer", f"{opt_lead}{opener}{value}")
        return grammar.render(f"{calls} | answer")
    anything = grammar.add("anything", "[^\\x00]*")
    if answer is not None:
        opt_lead = f"( {lead.strip()} )? " if preamble is not None else ""
        text = f"{opt_lead}{_literal(answer)} {anything}"
    else:
        first = (preamble or opening)[0]
        text = f"[^{_char_escape(first)}] {anything}"
    grammar.add("answer", text)
    return grammar.render(f"{calls} | answer")


def call_grammar(
    tools: Iterable[Any],
    *,
    before: str,
    after: str,
    name_key: str = "name",
    args_key: str = "arguments",
    allow_text: bool = True,
    max_calls: int | None = 1,
    separator: str = "\n",
    text_before_call: bool = False,
    preamble: str | None = None,
    answer: str | None = None,
    answer_json: Mapping[str, Any] | None = None,
) -> str:
    """GBNF for "a plain answer, or tool calls framed as ``before`` JSON ``after``".

    Each call is the JSON object ``{name_key: <tool name>, args_key: <arguments>}``
    where the name is one of ``tools`` and the arguments follow that tool's schema.

    Args:
        tools: OpenAI tool dicts ``{"type": "function", "function": {...}}`` (bare
            function dicts, MCP tool dicts and LangChain tools are accepted too).
        before: literal text that opens a call, e.g. ``"<tool_call>\\n"``.
        after: literal text that closes a call, e.g. ``"\\n</tool_call>"``.
        name_key: key of the tool name (``"action"`` for ReAct).
        args_key: key of the arguments (``"action_input"`` for ReAct).
        allow_text: also admit a plain answer. Without ``answer`` it is any text that
            does not begin with the first character of the call branch.
        max_calls: most calls in one reply (``None``: no limit), joined by ``separator``.
        text_before_call: admit free text before the first call, as long as it holds
            no first character of ``before`` (thinking aloud before ``<tool_call>``).
        preamble: a literal that opens one free-text line before the call, e.g.
            ``"Thought:"`` for ReAct; the line ends at a newline.
        answer: a literal that must open the plain answer, e.g. ``"Final Answer:"``;
            with ``preamble``, the answer may follow a preamble line too.
        answer_json: the plain answer is one JSON value of this schema (after
            ``answer``, where given), e.g. a structured final answer beside tool calls.

    Returns:
        The grammar text, rule ``root`` first.

    Examples:
        Hermes, as Qwen2.5/Qwen3 write it::

            call_grammar(tools, before="<tool_call>\\n", after="\\n</tool_call>", max_calls=None)

        LangChain's JSON-blob ReAct::

            call_grammar(tools, before="Action:\\n```json\\n", after="\\n```",
                         name_key="action", args_key="action_input",
                         preamble="Thought:", answer="Final Answer:")
    """
    grammar = _Grammar()
    grammar.base("ws")
    alternatives = []
    for name, params in _functions(tools):
        args = grammar.visit_root(params, f"{name}-args")
        body = (
            f'"{{" ws {_literal(json.dumps(name_key))} ws ":" ws '
            f"{_literal(json.dumps(name, ensure_ascii=False))} ws "
            f'"," ws {_literal(json.dumps(args_key))} ws ":" ws {args} ws "}}"'
        )
        obj = grammar.add(f"{name}-call", f"{_literal(before)} {body} {_literal(after)}")
        alternatives.append(obj)
    return _assemble(
        grammar,
        alternatives,
        opening=before,
        allow_text=allow_text,
        max_calls=max_calls,
        separator=separator,
        text_before_call=text_before_call,
        preamble=preamble,
        answer=answer,
        answer_json=answer_json,
    )


def qwen_call_grammar(
    tools: Iterable[Any],
    *,
    allow_text: bool = True,
    max_calls: int | None = 1,
    text_before_call: bool = False,
    answer_json: Mapping[str, Any] | None = None,
) -> str:
    """GBNF for "a plain answer, or Qwen ✿ calls" (``✿FUNCTION✿: name\\n✿ARGS✿: {...}``).

    The name is written bare, as Qwen-Agent's prompt asks, and the arguments follow the
    named tool's schema. Parallel calls (``max_calls`` > 1 or ``None``) are separated by
    a newline. ``✿RESULT✿`` is left to the dialect's stop words: the grammar ends after
    the arguments. With ``answer_json`` the plain answer is one JSON value of that schema.

    Example:
        >>> tools = [{"name": "get_weather", "parameters": {"type": "object",
        ...     "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
        >>> "✿FUNCTION✿: " in qwen_call_grammar(tools)
        True
    """
    grammar = _Grammar()
    opening, then_args = f"{FN_NAME}: ", f"\n{FN_ARGS}: "
    alternatives = []
    for name, params in _functions(tools):
        args = grammar.visit_root(params, f"{name}-args")
        alternatives.append(
            grammar.add(
                f"{name}-call",
                f"{_literal(opening)} {_literal(name)} {_literal(then_args)} {args}",
            )
        )
    return _assemble(
        grammar,
        alternatives,
        opening=opening,
        allow_text=allow_text,
        max_calls=max_calls,
        separator="\n",
        text_before_call=text_before_call,
        preamble=None,
        answer=None,
        answer_json=answer_json,
    )


def grammar_extra_body(grammar: str) -> dict[str, Any]:
    """What a ``ChatOpenAI`` request must carry for a llama.cpp server to apply ``grammar``.

    Pass it as ``ChatOpenAI(extra_body=...)``, ``model.bind(extra_body=...)`` or
    ``model.invoke(..., extra_body=...)``.

    Example:
        >>> grammar_extra_body('root ::= "yes" | "no"')
        {'grammar': 'root ::= "yes" | "no"'}
    """
    return {"grammar": grammar}


# --------------------------------------------------------------------------- length

_TOKEN = re.compile(
    r'\s+|"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[A-Za-z0-9_-]+|\{\d+(?:,\d*)?\}|[()|?*+]'
)


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = body[i + 1]
        width = {"x": 2, "u": 4, "U": 8}.get(kind)
        if width:
            out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
            i += 2 + width
        else:
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(kind, kind))
            i += 2
    return "".join(out)


def _class_bytes(body: str) -> int:
    """Most UTF-8 bytes one character of the class ``[body]`` can take."""
    if body.startswith("^"):
        return 4
    return max((len(c.encode()) for c in _unescape(body)), default=0)


def grammar_max_bytes(grammar: str) -> int | None:
    """The most UTF-8 bytes a text admitted by ``grammar`` can have (``None``: no limit).

    A model's tokens each write at least one byte, so a request whose ``max_tokens`` is
    at least this number always ends on a complete match, never cut off half-way.
    Reads the GBNF this module writes (literals, classes, groups, ``? * + {m,n}``).

    Example:
        >>> grammar_max_bytes('root ::= "ab" x{0,3}\\nx ::= [a-c] | "yes"')
        11
        >>> grammar_max_bytes('root ::= [a]*') is None
        True
    """
    rules: dict[str, list[str]] = {}
    for line in grammar.splitlines():
        if "::=" in line:
            name, body = line.split("::=", 1)
            rules[name.strip()] = [t for t in _TOKEN.findall(body) if not t.isspace()]
    memo: dict[str, float] = {}
    visiting: set[str] = set()

    def rule(name: str) -> float:
        if name in memo:
            return memo[name]
        if name in visiting:
            return float("inf")  # recursion: no bound
        visiting.add(name)
        value, _ = alternatives(rules[name], 0)
        visiting.discard(name)
        memo[name] = value
        return value

    def alternatives(tokens: list[str], i: int) -> tuple[float, int]:
        best, i = sequence(tokens, i)
        while i < len(tokens) and tokens[i] == "|":
            value, i = sequence(tokens, i + 1)
            best = max(best, value)
        return best, i

    def sequence(tokens: list[str], i: int) -> tuple[float, int]:
        total = 0.0
        while i < len(tokens) and tokens[i] not in ("|", ")"):
            token = tokens[i]
            if token == "(":
                value, i = alternatives(tokens, i + 1)
                i += 1  # the closing parenthesis
            elif token.startswith('"'):
                value, i = len(_unescape(token[1:-1]).encode()), i + 1
            elif token.startswith("["):
                value, i = _class_bytes(token[1:-1]), i + 1
            else:
                value, i = rule(token), i + 1
            if i < len(tokens):
                quantifier = tokens[i]
                if quantifier in ("*", "+"):
                    value, i = (float("inf") if value else 0.0), i + 1
                elif quantifier == "?":
                    i += 1
                elif quantifier.startswith("{"):
                    upper = quantifier[1:-1].split(",")[-1]
                    value = value * int(upper) if upper else (float("inf") if value else 0.0)
                    i += 1
            total += value
        return total, i

    result = rule("root")
    return None if result == float("inf") else int(result)
