"""Structured output as JSON for a model with no support of its own.

:meth:`DialectChatModel.with_structured_output
<fncall_graph.adapters.models.chat_model.DialectChatModel.with_structured_output>` asks
for JSON in the prompt (with the schema for ``method="json_schema"``), holds the reply to
it with a grammar where the server takes one, then reads the reply here: JSON repaired
as a model writes it, then checked against the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import partial
from operator import itemgetter
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.output_parsers.openai_tools import JsonOutputKeyToolsParser, PydanticToolsParser
from langchain_core.runnables import (
    Runnable,
    RunnableConfig,
    RunnableLambda,
    RunnableMap,
    RunnablePassthrough,
)
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_core.utils.pydantic import is_basemodel_subclass
from pydantic import BaseModel, ValidationError

from ..formats.base import loads_lenient, text_of, to_tool_spec

__all__ = ["requested_json"]

#: bound keyword argument of a call whose reply is to be JSON: ``{"schema": ...}``
#: (a JSON schema, or ``None`` for any object)
JSON_OUTPUT_KEY = "dialect_json_output"

_ASK_SCHEMA = (
    "Answer with one JSON object that follows this JSON schema, and nothing else: no "
    "prose, no code fence.\n{schema}"
)
_ASK_OBJECT = "Answer with one JSON object, and nothing else: no prose, no code fence."
# beside tools: calls stay as the dialect writes them, the answer is the JSON
_BESIDE_TOOLS = "When you answer rather than call a tool: "
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def asking_for_json(
    messages: list[BaseMessage], schema: Mapping[str, Any] | None, *, beside_tools: bool = False
) -> list[BaseMessage]:
    """``messages`` with the request for JSON (following ``schema``) in the system message;
    ``beside_tools``: for the answer only, the model may call tools first."""
    ask = (
        _ASK_SCHEMA.format(schema=json.dumps(schema, ensure_ascii=False)) if schema else _ASK_OBJECT
    )
    if beside_tools:
        ask = _BESIDE_TOOLS + ask[0].lower() + ask[1:]
    if messages and isinstance(messages[0], SystemMessage):
        first = text_of(messages[0].content)
        return [SystemMessage(f"{first}\n\n{ask}" if first else ask), *messages[1:]]
    return [SystemMessage(ask), *messages]


def requested_json(response_format: Any) -> dict[str, Any] | None:
    """What an OpenAI ``response_format`` asks for, as ``{"schema": ...}`` (``None`` for
    any object), or ``None`` when it asks for no JSON (or is not OpenAI's)."""
    if not isinstance(response_format, Mapping):
        return None
    kind = response_format.get("type")
    if kind == "json_object":
        return {"schema": None}
    spec = response_format.get("json_schema")
    if kind == "json_schema" and isinstance(spec, Mapping):
        return {"schema": spec.get("schema")}
    return None


def repaired_json(text: str) -> str | None:
    """The JSON object ``text`` holds (fenced, or as a model breaks it) as plain JSON,
    or ``None`` when it holds none."""
    fenced = _FENCE.match(text)
    try:
        value = loads_lenient(fenced.group(1) if fenced else text)
    except ValueError:
        return None
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else None


def parse_json_reply(message: BaseMessage, schema: Mapping[str, Any] | type | None) -> Any:
    """The JSON object a reply holds, checked against ``schema``.

    Returns:
        an instance of ``schema`` when it is a pydantic model, else the object.

    Raises:
        OutputParserException: when the reply holds no JSON object, or one that does not
            follow ``schema`` (a pydantic model's validation; a JSON schema's required keys).
    """
    text = text_of(message.content)
    fenced = _FENCE.match(text)
    try:
        value = loads_lenient(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise OutputParserException(
            f"the reply holds no JSON object ({exc}): {text[:200]!r}", llm_output=text
        ) from exc
    if not isinstance(value, dict):
        raise OutputParserException(
            f"the reply's JSON is a {type(value).__name__}, not an object: {text[:200]!r}",
            llm_output=text,
        )
    if isinstance(schema, type) and is_basemodel_subclass(schema):
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            raise OutputParserException(
                f"the reply's JSON does not follow {schema.__name__}: {exc}", llm_output=text
            ) from exc
    if schema is not None:
        required = convert_to_json_schema(schema).get("required") or []
        missing = [k for k in required if k not in value]
        if missing:
            raise OutputParserException(
                f"the reply's JSON lacks the required {', '.join(map(repr, missing))}: "
                f"{text[:200]!r}",
                llm_output=text,
            )
    return value


class ReplyWithoutCall(OutputParserException):
    """A reply that holds no tool call where ``tool_choice`` demanded one; ``reply`` is it."""

    def __init__(self, error: str, *, reply: AIMessage) -> None:
        super().__init__(error, llm_output=text_of(reply.content))
        self.reply = reply


def called(name: str) -> Runnable[BaseMessage, BaseMessage]:
    """The reply as it is when it calls ``name``; else an ``OutputParserException``
    saying what it holds instead (a parser reading the call next would return ``None``)."""

    def check(message: BaseMessage) -> BaseMessage:
        calls = getattr(message, "tool_calls", None) or []
        if any(c["name"] == name for c in calls):
            return message
        text = text_of(message.content)
        invalid = getattr(message, "invalid_tool_calls", None) or []
        why = "; ".join(str(c.get("error")) for c in invalid if c.get("error"))
        other = sorted({c["name"] for c in calls})
        held = f"calls {', '.join(map(repr, other))}, not {name!r}" if other else "holds no call"
        raise OutputParserException(
            f"the reply {held} of {name!r}{f' ({why})' if why else ''}: {text[:200]!r}"
            if not other
            else f"the reply {held}: {text[:200]!r}",
            llm_output=text,
        )

    return RunnableLambda(check, name=f"called_{name}")


def _keeping_the_reply(
    llm: Runnable[LanguageModelInput, Any],
) -> Runnable[LanguageModelInput, Any]:
    """``llm``, whose reply comes back even when it lacks a demanded call (for the parser
    to report), instead of raising :class:`ReplyWithoutCall`."""

    def call(value: LanguageModelInput, config: RunnableConfig) -> Any:
        try:
            return llm.invoke(value, config)
        except ReplyWithoutCall as exc:
            return exc.reply

    async def acall(value: LanguageModelInput, config: RunnableConfig) -> Any:
        try:
            return await llm.ainvoke(value, config)
        except ReplyWithoutCall as exc:
            return exc.reply

    return RunnableLambda(call, afunc=acall, name="raw")


def parsed_or_error(
    llm: Runnable[LanguageModelInput, Any], parser: Runnable[Any, Any], *, include_raw: bool
) -> Runnable[LanguageModelInput, Any]:
    """``llm | parser``; with ``include_raw``, ``{"raw", "parsed", "parsing_error"}`` as
    LangChain's own ``with_structured_output`` returns it: the reply, and either what the
    parser read or the error saying why it read nothing (never raised)."""
    if not include_raw:
        return llm | parser
    parsed = RunnablePassthrough.assign(
        parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
    )
    unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=_keeping_the_reply(llm)) | parsed.with_fallbacks(
        [unparsed], exception_key="parsing_error"
    )


def structured_output(
    model: BaseChatModel,
    wrapped: Runnable,
    schema: dict[str, Any] | type,
    *,
    method: str,
    include_raw: bool,
    strict: bool | None,
    json_by_prompt: bool,
    **kwargs: Any,
) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
    """``model``'s replies as ``schema`` (see
    :meth:`~fncall_graph.adapters.models.chat_model.DialectChatModel.with_structured_output`):
    a forced call of a tool made from ``schema``, ``wrapped``'s own structured output, or
    JSON asked for in the prompt (``json_by_prompt``) and read here.

    Raises:
        ValueError: for an unknown ``method`` or unexpected keyword arguments.
    """
    if kwargs:
        raise ValueError(f"with_structured_output: unexpected arguments {sorted(kwargs)}")
    if method not in ("function_calling", "json_schema", "json_mode"):
        raise ValueError(
            f"with_structured_output: method must be 'function_calling', 'json_schema' "
            f"or 'json_mode', got {method!r}"
        )
    shape = {"kwargs": {"method": method, "strict": strict}, "schema": schema}
    if method == "function_calling":
        name = to_tool_spec(schema).name
        llm = model.bind_tools(
            [schema], tool_choice=name, strict=strict, ls_structured_output_format=shape
        )
        parser: Runnable[Any, Any] = called(name) | (
            PydanticToolsParser(tools=[schema], first_tool_only=True)
            if isinstance(schema, type) and is_basemodel_subclass(schema)
            else JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)
        )
        return parsed_or_error(llm, parser, include_raw=include_raw)
    if not json_by_prompt:
        extra = {} if strict is None else {"strict": strict}
        return wrapped.with_structured_output(
            schema, method=method, include_raw=include_raw, **extra
        )
    wanted = convert_to_json_schema(schema) if method == "json_schema" else None
    llm = model.bind(**{JSON_OUTPUT_KEY: {"schema": wanted}}, ls_structured_output_format=shape)
    read = RunnableLambda(partial(parse_json_reply, schema=schema))
    return parsed_or_error(llm, read, include_raw=include_raw)
