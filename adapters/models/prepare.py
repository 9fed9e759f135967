"""A dialect wrapper's call made ready: the history rendered once (unless given), the
tools a ``tool_choice`` leaves, the grammar the server is held to, the provider bound
for native calling, and what reading the reply needs, as one :class:`ModelCall`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig

from ..formats.base import Dialect
from ..formats.grammar import schema_to_gbnf
from ..formats.normalize import used_call_ids
from ..formats.reading import Echoes, echo_sources
from ..formats.schema import to_tool_specs
from .binding import GIVEN_TOOLS, TOOL_OPTIONS, NativeBindings, chosen_tools, forces_a_call
from .call_format import resolve_call_format
from .capabilities import accepts_grammar
from .identity import chat_model_in
from .pipeline import ModelCall
from .structured_output import JSON_OUTPUT_KEY, asking_for_json, requested_json

__all__ = []


def prepare_call(
    messages: list[BaseMessage],
    stop: list[str] | None,
    kwargs: dict[str, Any],
    config: RunnableConfig,
    *,
    dialect: Dialect,
    model: Runnable,
    call_format: str | None,
    json_by_prompt: bool,
    bindings: NativeBindings,
    rendered: Sequence[BaseMessage] | None = None,
    render_only: bool = False,
) -> ModelCall:
    """What to call, with what input and arguments, and how to read the reply.

    Args:
        messages: the canonical history.
        stop: the caller's stop sequences (the dialect's are added).
        kwargs: the call's arguments, as bound (``bind_tools``' among them).
        config: the config the provider is called with.
        dialect: the wrapper's dialect.
        model: the wrapped model (bound or configurable as given).
        call_format: the wrapper's declared call format, if any.
        json_by_prompt: whether JSON output is asked for in the prompt (and held to a
            grammar where the server takes one) rather than by the model's own.
        bindings: the wrapper's native bindings, reused across calls.
        rendered: the history as already rendered for this same call.
        render_only: stop once the input is rendered (the reading is not set up).
    """
    chat = chat_model_in(model)
    kwargs = dict(kwargs)
    formatted = kwargs.pop("tools", None) or None
    tools = kwargs.pop(GIVEN_TOOLS, None) or formatted
    tool_choice = kwargs.pop("tool_choice", None)
    options: dict[str, Any] = kwargs.pop(TOOL_OPTIONS, None) or {}
    json_output = kwargs.pop(JSON_OUTPUT_KEY, None)
    json_answer = False
    if json_output is not None:
        # with_structured_output: the answer is to be JSON, no tools offered
        formatted = tools = None
    elif json_by_prompt and (wanted := requested_json(kwargs.get("response_format"))):
        # an OpenAI ``response_format`` (create_agent's provider strategy) this model
        # cannot take as a request field: asked for in the prompt instead
        del kwargs["response_format"]
        json_output, json_answer = wanted, True
    if json_output is not None:
        if rendered is None:
            messages = asking_for_json(messages, json_output["schema"], beside_tools=bool(tools))
        if not tools and accepts_grammar(chat):
            grammar = schema_to_gbnf(json_output["schema"] or {"type": "object"})
            _with_grammar(kwargs, grammar, model)
    inner: Runnable[LanguageModelInput, BaseMessage] = model
    names = None
    forced = False
    if dialect.native:
        rendered = dialect.render(messages, tools) if rendered is None else rendered
        if tools:
            inner = bindings.bound(model, chat, tools, tool_choice, options)
            # the OpenAI forms when bound, cheaper to read than the tools as given
            names = [spec.name for spec in to_tool_specs(formatted or tools)]
    else:
        tools = chosen_tools(tools, tool_choice)
        rendered = dialect.render(messages, tools) if rendered is None else rendered
        forced = bool(tools) and forces_a_call(tool_choice)
        one_call = options.get("parallel_tool_calls") is False
        if (
            (forced or one_call or options.get("strict") or json_answer)
            and accepts_grammar(chat)
            and "grammar" not in (kwargs.get("extra_body") or {})
        ):
            # the server can hold the reply to the chosen tools' calls and schemas,
            # and an answer asked for as JSON to its schema
            answer = (json_output or {}).get("schema") or {"type": "object"}
            grammar = dialect.grammar(
                tools,
                require_call=forced,
                one_call=one_call,
                answer_json=answer if json_answer else None,
            )
            if grammar is not None:
                _with_grammar(kwargs, grammar, model)
    merged = list(dict.fromkeys([*dialect.stop, *(stop or [])]))
    if merged:
        kwargs["stop"] = merged
    kwargs["config"] = config
    call = ModelCall(dialect, inner, list(rendered), kwargs, tools, names, set())
    if render_only:
        return call
    call.taken = used_call_ids(messages)
    call.forced = not dialect.native and forced
    call.one_call = not dialect.native and options.get("parallel_tool_calls") is False
    call.json_answer = json_answer
    call.call_format = (
        resolve_call_format(chat, declared=call_format).name if dialect.native else call_format
    )
    call.echoes = Echoes(echo_sources(messages))
    return call


def _with_grammar(kwargs: dict[str, Any], grammar: str, model: Runnable) -> None:
    """Put ``grammar`` in the request's ``extra_body`` unless the caller sent one; the
    model's own ``extra_body`` (bound, or its field) is kept."""
    extra = (
        kwargs.get("extra_body")
        or (model.kwargs.get("extra_body") if isinstance(model, RunnableBinding) else None)
        or getattr(chat_model_in(model), "extra_body", None)
        or {}
    )
    if "grammar" not in extra:
        kwargs["extra_body"] = {**extra, "grammar": grammar}
