"""What a dialect wrapper is, as LangChain sees it: the chat model inside it (which takes
LangChain's standard constructor parameters), its name, its serialized dialect, the
parameters that key its cache entries and its tracing parameters."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.runnables.configurable import DynamicRunnable

from ..formats.base import Dialect
from ..formats.registry import get_dialect

__all__ = []

#: LangChain's standard chat-model constructor parameters, set on the wrapped model
MODEL_PARAMS = frozenset(
    {
        "temperature",
        "max_tokens",
        "stop",
        "timeout",
        "max_retries",
        "api_key",
        "base_url",
        "streaming",
    }
)


def chat_model_in(model: Any) -> BaseChatModel:
    """The chat model a runnable wraps: itself, a binding's, a configurable one's default.

    Raises:
        TypeError: for a runnable that wraps no chat model.
    """
    inner = model
    while not isinstance(inner, BaseChatModel):
        if isinstance(inner, RunnableBinding):
            inner = inner.bound
        elif isinstance(inner, DynamicRunnable):
            inner = inner.default
        else:
            raise TypeError(
                "with_dialect: model must be a chat model (or one bound with .bind(...) or "
                f"made configurable), got {type(model).__name__}"
            )
    return inner


def with_params(model: Any, params: dict[str, Any]) -> BaseChatModel:
    """``model`` rebuilt with LangChain's standard ``params`` set, each by its field's
    name or alias (``timeout`` is ``ChatOpenAI``'s ``request_timeout``); rebuilt, not
    copied, so that clients made from them (timeouts, retries) are made again.

    Raises:
        TypeError: when ``model`` is not a chat model itself (bound or configurable).
        ValueError: for a parameter the model does not have.
    """
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            f"with_dialect: {', '.join(sorted(params))} can be set here only on a chat model; "
            f"set them on the model before binding or making it configurable "
            f"(got {type(model).__name__})"
        )
    fields = type(model).model_fields
    by_name = bool(
        model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name")
    )

    def key(name: str) -> str:
        field = fields[name]
        return name if by_name or field.alias is None else field.alias

    named: dict[str, str] = {}
    for param in params:
        found = next(
            (n for n, f in fields.items() if param in (n, f.alias) and not f.exclude), None
        )
        if found is None:
            raise ValueError(
                f"with_dialect: {type(model).__name__} has no {param!r} parameter; the "
                "wrapper passes it to the wrapped model and has none of its own"
            )
        named[param] = found
    # what was given when it was made, less runtime state (clients are excluded fields)
    kept = {
        key(n): getattr(model, n)
        for n in model.model_fields_set
        if n in fields and not fields[n].exclude and n not in named.values()
    }
    return type(model)(**kept, **{key(named[p]): v for p, v in params.items()})


def model_name_of(chat: BaseChatModel) -> str:
    """``chat``'s model name, e.g. ``"gpt-4o-mini"`` (its class name when it has none)."""
    for attr in ("model_name", "model", "model_id"):
        value = getattr(chat, attr, None)
        if isinstance(value, str) and value:
            return value
    return chat.get_name()


def dialect_spec(dialect: Dialect) -> dict[str, Any] | None:
    """``dialect`` as its registry name and options, or ``None`` when those do not make
    the same dialect again (a custom dialect)."""
    options = {k: v for k, v in vars(dialect).items() if not k.startswith("_")}
    try:
        again = get_dialect(dialect.name, **options)
    except (TypeError, ValueError):
        return None
    return {"name": dialect.name, **options} if repr(again) == repr(dialect) else None


def identifying_params(
    model: Runnable, dialect: Dialect, call_format: str | None
) -> dict[str, Any]:
    """The wrapper's cache key: the wrapped model's own parameters, so wrappers of two
    models never share a cache entry, with the dialect and what else reads replies."""
    params: dict[str, Any] = {
        "dialect": repr(dialect),
        "model": chat_model_in(model).asdict(),
    }
    if call_format is not None:  # replies are read in it
        params["call_format"] = call_format
    if isinstance(model, RunnableBinding):  # its arguments go with every call
        params["bound"] = repr(sorted(model.kwargs.items()))
    return params


def ls_params(
    chat: BaseChatModel, model_name: str, stop: list[str] | None, kwargs: dict[str, Any]
) -> LangSmithParams:
    """Tracing parameters of the wrapped model ``chat``, seen through the dialect."""
    provider = type(chat).__name__
    provider = provider[4:] if provider.startswith("Chat") else provider.removesuffix("Chat")
    model = kwargs.get("model")
    params = LangSmithParams(
        ls_provider=provider.lower(),
        ls_model_name=model if isinstance(model, str) else model_name,
        ls_model_type="chat",
    )
    for name, key in (("temperature", "ls_temperature"), ("max_tokens", "ls_max_tokens")):
        value = kwargs.get(name, getattr(chat, name, None))
        if isinstance(value, int | float) and not isinstance(value, bool):
            params[key] = value  # type: ignore[literal-required]
    if stop:
        params["ls_stop"] = stop
    return params
