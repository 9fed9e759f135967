"""The call format a model writes its calls in, known before its reply is read.

A model served without a tool parser writes its calls into ``content`` in its own format;
knowing the format reads only the model's own calls. :func:`resolve_call_format` finds it
once per model and process (cached: never one request per call), in this order:

1. ``dialect``: a prompt dialect the caller renders itself (``hermes``, ``qwen``,
   ``react``): its own format;
2. ``declared``: ``call_format=`` given by the caller, or a model spec's ``?format=``
   (kept in the model's ``metadata`` under :data:`CALL_FORMAT_KEY`);
3. ``server``: what the server says it renders with: llama.cpp's ``GET /props``
   (``chat_template``), Ollama's ``POST /api/show`` (the modelfile's ``PARSER``, else the
   ``template``), or a local model's
   GGUF ``tokenizer.chat_template`` / ``tokenizer_config.json`` (``model_path``), read by
   the template's markers (:func:`~fncall_graph.adapters.formats.chat_templates.format_of_template`);
4. ``name``: the model's name (the spec's ``#NAME``, ``/v1/models`` when it has none)
   against :data:`FAMILIES`, one table of model families and their formats;
5. none of these: ``CallFormat(None, "unknown")``; a graph then learns the format in a
   thread from the first call it reads there (source ``learned``).

Example:
    >>> from fncall_graph.replay import ReplayChatModel
    >>> resolve_call_format(ReplayChatModel([]), dialect="hermes")
    CallFormat(name='hermes', source='dialect', detail='the hermes dialect renders it')
    >>> format_of_name("hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M").format
    'hermes'
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Literal

from langchain_core.language_models import BaseChatModel

from ..formats.base import Dialect
from ..formats.chat_templates import format_of_template
from ..formats.readers import CALL_FORMATS

__all__ = ["CallFormat", "check_call_format", "resolve_call_format"]

#: The key of a model's ``metadata`` that declares its call format (a spec's ``?format=``).
CALL_FORMAT_KEY = "fncall_call_format"

Source = Literal["dialect", "declared", "server", "name", "learned", "unknown"]

# the prompt dialects: what each writes calls as (ReAct's blob is its own format)
_PROMPT_FORMATS = {"hermes": "hermes", "nous": "hermes", "qwen": "qwen", "react": "react"}
_TIMEOUT = 5.0  # seconds for one question to a server; it is asked once per process


@dataclass(frozen=True, slots=True)
class CallFormat:
    """A model's call format and where it was learned.

    Attributes:
        name: the format (``"hermes"``, ``"mistral"``, …), ``None`` when nothing said it.
        source: ``"dialect"``, ``"declared"``, ``"server"``, ``"name"``, ``"learned"``
            or ``"unknown"``.
        detail: what said it, for people (``"llama.cpp GET /props chat_template"``).
    """

    name: str | None
    source: Source
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Family:
    """One row of :data:`FAMILIES`: the models whose name matches ``pattern`` write
    calls in ``format``, as ``source`` says."""

    family: str
    pattern: str
    format: str
    source: str


_VLLM = "vLLM docs/features/tool_calling.md"
_LCPP = "llama.cpp common/chat.cpp"
_FMT_GCML = "the gcml reader's format (docs/dialects.md: GigaChat 3.5)"
_FMT = "the model's chat template, as the plamo3 reader reads it (no server doc read)"

#: Model families and their call formats; the first row whose pattern is found in the
#: model's name (lower case, less its organisation, registry and tag) wins, so fine-tunes
#: named after their base (``Hermes-3-Llama-3.1``, ``Llama-xLAM``) come first.
FAMILIES: tuple[Family, ...] = (
    # fine-tunes named after their base model
    Family("Hermes 2 Pro / 3 / 4", r"hermes-?[234]", "hermes", f"{_VLLM}: hermes"),
    Family(
        "xLAM",
        r"xlam",
        "json",
        f"{_VLLM}: xlam (a JSON list, also behind [TOOL_CALLS] or in <tool_call> tags)",
    ),
    Family("ToolACE", r"toolace", "pythonic", f"{_VLLM}: pythonic"),
    Family("Functionary v3.2", r"functionary", "functionary", f"{_LCPP}: Functionary v3.2"),
    Family("FireFunction v2", r"firefunction", "functools", f"{_LCPP}: Firefunction v2"),
    Family(
        "DeepSeek V3.2 / V4",
        r"deepseek-?v(3\.2|4)",
        "dsml",
        f"{_VLLM}: deepseekv32; {_LCPP}: DeepSeek V3.2/V4",
    ),
    Family(
        "DeepSeek V3 / V3.1 / R1",
        r"deepseek-?(v3|r1)",
        "deepseek",
        f"{_VLLM}: deepseek_v3, deepseek_v31; {_LCPP}: DeepSeek R1",
    ),
    # Qwen: the XML calls of Qwen3-Coder and Qwen3.5+ stand inside <tool_call>
    Family(
        "Qwen3-Coder",
        r"qwen3-coder",
        "hermes",
        f"{_VLLM}: qwen3_coder; {_LCPP}: Qwen3-Coder XML (also a bare <function=…>)",
    ),
    Family(
        "Qwen3.5 and later",
        r"qwen3\.[5-9]|qwen[4-9]",
        "hermes",
        f"{_LCPP}: Qwen3-Coder XML, also Qwen3.5 (also a bare <function=…>)",
    ),
    Family("Qwen2.5 / Qwen3 / QwQ", r"qwen2\.5|qwen3|qwq", "hermes", f"{_VLLM}: hermes (Qwen)"),
    Family(
        "GLM-4.5 / 4.6 / 4.7",
        r"glm-?4(\.[5-9]|-[5-7]\b)|glm-?5",  # glm_4_5 too; not GLM-4-9B
        "hermes",
        f"{_VLLM}: glm45, glm47 (arg_key pairs in the tool_call tag)",
    ),
    Family(
        "Magistral / Devstral / Ministral / Mistral / Mixtral / Codestral",
        r"magistral|devstral|ministral|mistral|mixtral|codestral|pixtral",
        "mistral",
        f"{_VLLM}: mistral; {_LCPP}: Mistral Nemo (one format, list or per-call by "
        "tokenizer version; the mistral reader takes both)",
    ),
    Family(
        "Nemotron 3 Nano", r"nemotron-?3|nemotron-nano-3", "hermes", f"{_LCPP}: Qwen3-Coder XML"
    ),
    # Nemotron Nano v2 and the Llama-based Nemotron Super / Ultra: <TOOLCALL>
    Family("Nemotron Nano v2 / Super", r"nemotron", "nemotron", f"{_LCPP}: Nemotron V2"),
    Family("Llama 4", r"llama-?4", "pythonic", f"{_VLLM}: llama4_pythonic"),
    # Llama 3.0 has no tool calls
    Family("Llama 3.1 / 3.2 / 3.3", r"llama-?3[.-][1-3]\b", "json", f"{_VLLM}: llama3_json"),
    Family("FunctionGemma", r"functiongemma", "functiongemma", f"{_VLLM}: functiongemma"),
    Family("Gemma 4", r"gemma-?4", "gemma4", f"{_LCPP}: Gemma4"),
    Family("LFM2 / LFM2.5", r"lfm-?2", "lfm2", f"{_LCPP}: LFM2, LFM2.5"),
    Family("Kimi K3", r"kimi-?k3", "kimi-k3", f"{_LCPP}: Kimi K3"),
    Family("Kimi K2", r"kimi-?k2", "kimi", f"{_VLLM}: kimi_k2; {_LCPP}: Kimi K2"),
    Family("MiniMax-M2 / M3", r"minimax-?m[23]", "minimax", f"{_VLLM}: minimax_m2; {_LCPP}"),
    Family("MiniMax-M1", r"minimax-?m1|minimax-text", "tool-calls-tag", f"{_VLLM}: minimax"),
    Family("gpt-oss", r"gpt-?oss", "harmony", f"{_VLLM}: openai; {_LCPP}: GPT-OSS"),
    Family(
        "Granite 20B function calling",
        r"granite-20b-function",
        "granite-fc",
        f"{_VLLM}: granite-20b-fc",
    ),
    Family("Granite 4", r"granite-?4", "hermes", f"{_VLLM}: granite4 (the tool_call tag)"),
    Family(
        "Granite 3.x",
        r"granite-?3",
        "granite",
        f"{_VLLM}: granite (<|tool_call|> or <tool_call> before the JSON list)",
    ),
    Family("Hunyuan A13B", r"hunyuan", "tool-calls-tag", f"{_VLLM}: hunyuan_a13b"),
    Family("Step-3.5", r"step-?3\.5", "hermes", f"{_LCPP}: Qwen3-Coder XML, also StepFun-3.5"),
    Family("Step-3", r"step-?3", "step3", f"{_VLLM}: step3"),
    Family("OLMo 3", r"olmo-?3", "pythonic-tag", f"{_VLLM}: olmo3"),
    Family("Seed-OSS", r"seed-?oss", "seed-oss", f"{_VLLM}: seed_oss"),
    Family("Phi-4-mini", r"phi-?4-mini", "functools", f"{_VLLM}: phi4_mini_json"),
    Family("InternLM 2 / 2.5", r"internlm-?2", "internlm", f"{_VLLM}: internlm"),
    Family("Command R7B / A", r"command-?(r7b|a)", "command-r", f"{_LCPP}: Command R7B"),
    Family("Jamba 1.5", r"jamba", "tool-calls-tag", f"{_VLLM}: jamba"),
    Family("Apertus", r"apertus", "apertus", f"{_VLLM}: apertus"),
    Family("LongCat-Flash", r"longcat", "longcat", f"{_VLLM}: longcat"),
    Family("GigaChat 3.5", r"gigachat-?3\.5", "gcml", f"{_FMT_GCML}"),
    Family(
        "GigaChat 3.1",
        r"gigachat-?3\.1",
        "gigachat3",
        f"{_VLLM}: gigachat3 (<|function_call|> before the call object)",
    ),
    Family("GigaChat 3", r"gigachat-?3", "gigachat3", f"{_VLLM}: gigachat3"),
    Family("PLaMo 3", r"plamo-?3", "plamo3", _FMT),
)


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[re.Pattern[str], Family], ...]:
    """:data:`FAMILIES`' patterns, compiled when a model's name is first looked up."""
    return tuple((re.compile(f.pattern), f) for f in FAMILIES)


def _plain_name(name: str) -> str:
    """A model's name as the table matches it: lower case, ``_`` as ``-``, less its
    registry, organisation, ``:tag`` (Ollama's tag, a quantisation) and ``.gguf``."""
    text = name.strip().lower().replace("_", "-")
    text = text.rsplit("/", 1)[-1]  # hf.co/unsloth/…, Qwen/…, registry.ollama.ai/library/…
    text = text.split(":", 1)[0]
    return text.removesuffix(".gguf")


def format_of_name(name: str | None) -> Family | None:
    """The row of :data:`FAMILIES` a model's name belongs to, if any.

    >>> format_of_name("Qwen/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M").family
    'Qwen3-Coder'
    >>> format_of_name("llama3.1:8b").format, format_of_name("smollm2") is None
    ('json', True)
    """
    if not name:
        return None
    plain = _plain_name(name)
    for pattern, family in _compiled():
        if pattern.search(plain):
            return family
    return None


def check_call_format(name: str, where: str = "call_format") -> str:
    """``name`` as a format: a format name (:data:`CALL_FORMATS`), or a model family's
    name that :data:`FAMILIES` knows (``"qwen3-coder"`` → ``"hermes"``).

    Raises:
        ValueError: saying ``where`` and the known names, for any other name.
    """
    text = name.strip() if isinstance(name, str) else name
    if isinstance(text, str) and text in (*CALL_FORMATS, "react"):
        return text
    family = format_of_name(text) if isinstance(text, str) else None
    if family is not None:
        return family.format
    raise ValueError(
        f"{where}: unknown call format {name!r}; give one of {', '.join(sorted(CALL_FORMATS))}, "
        "or a model family's name (e.g. 'qwen3-coder', 'glm-4.5')"
    )


def declared_call_format(model: BaseChatModel) -> str | None:
    """The call format ``model``'s ``metadata`` declares (a spec's ``?format=``), if any."""
    metadata = getattr(model, "metadata", None)
    value = metadata.get(CALL_FORMAT_KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


# ---------------------------------------------------------------------------- the cache

_cache: dict[tuple[Any, ...], CallFormat] = {}
_cache_lock = threading.Lock()
_key_locks: dict[tuple[Any, ...], threading.Lock] = {}
# the same model object asked again (every model call): its answer without reading its
# attributes for the key (pydantic's attribute reads are most of a call's cost)
_by_model: dict[int, tuple[weakref.ref[BaseChatModel], CallFormat]] = {}


def forget_call_formats() -> None:
    """Forget what was resolved in this process (a server now serves another model)."""
    with _cache_lock:
        _cache.clear()
        _key_locks.clear()
        _by_model.clear()


def resolve_call_format(
    model: BaseChatModel, *, dialect: str | Dialect | None = None, declared: str | None = None
) -> CallFormat:
    """The call format ``model`` writes its calls in, and where that was learned.

    Asked once per model and process: the answer is cached by the model's class, server
    and name, so a graph's every model call and every thread reuse it.

    Args:
        model: the chat model (the wrapped one, not a :class:`DialectChatModel`).
        dialect: the dialect the caller renders (a name or an instance); a prompt
            dialect's format is its own.
        declared: a format the caller declares (``call_format=``); wins over the model's
            ``metadata`` and whatever its server or name say. A model family's name is
            taken for its format (see :func:`check_call_format`).

    Returns:
        A :class:`CallFormat`; its ``name`` is ``None`` when nothing tells the format.

    Raises:
        ValueError: ``declared`` (or the model's declared format) names no format.
    """
    if isinstance(dialect, Dialect) and not dialect.native:
        dialect = dialect.name
    if isinstance(dialect, str) and dialect != "native" and dialect != "auto":
        fmt = _PROMPT_FORMATS.get(dialect, dialect)  # a custom prompt dialect: its name
        return CallFormat(fmt, "dialect", f"the {dialect} dialect renders it")
    if declared is not None:
        return CallFormat(check_call_format(declared), "declared", "call_format=")
    own = declared_call_format(model)
    if own is not None:
        return CallFormat(check_call_format(own, "the model spec's ?format="), "declared", "spec")
    seen = _by_model.get(id(model))
    if seen is not None and seen[0]() is model:
        return seen[1]
    key = _key(model)
    with _cache_lock:
        found = _cache.get(key)
        lock = _key_locks.setdefault(key, threading.Lock())
    if found is None:
        with lock:  # one question per model, however many threads ask at once
            with _cache_lock:
                found = _cache.get(key)
            if found is None:
                found = _asked(model)
                with _cache_lock:
                    _cache[key] = found
    ident = id(model)
    try:
        ref = weakref.ref(model, lambda _: _by_model.pop(ident, None))
    except TypeError:  # an object that takes no weak reference: asked by its key each time
        return found
    with _cache_lock:
        _by_model[ident] = (ref, found)
    return found


def _key(model: BaseChatModel) -> tuple[Any, ...]:
    return (type(model).__name__, _base_url(model), _model_name(model), _model_path(model))


def _asked(model: BaseChatModel) -> CallFormat:
    """What the server (or the model's files), then the model's name, say."""
    said = _ask_server(model)
    if said is not None:
        return said
    name = _model_name(model)
    if name in (None, "default") and _base_url(model) and _is_openai(model):
        name = _served_name(model) or name
    family = format_of_name(name)
    if family is not None:
        return CallFormat(family.format, "name", f"{name}: {family.family} ({family.source})")
    return CallFormat(None, "unknown", "no declaration, server template or known model name")


def _ask_server(model: BaseChatModel) -> CallFormat | None:
    kind = type(model).__name__
    template: str | None = None
    detail = ""
    if _is_openai(model) and _base_url(model):
        template, detail = _llamacpp_template(model), "llama.cpp GET /props chat_template"
    elif kind == "ChatOllama":
        shown = _ollama_show(model)
        parser = _OLLAMA_PARSER.search(shown.get("modelfile") or "")
        if parser is not None and parser.group(1) in OLLAMA_PARSERS:
            # the parser Ollama reads this model's replies with: what it writes
            where = f"Ollama POST /api/show modelfile PARSER {parser.group(1)}"
            return CallFormat(OLLAMA_PARSERS[parser.group(1)], "server", where)
        template, detail = shown.get("template"), "Ollama POST /api/show template"
    fmt = format_of_template(template)
    if fmt is not None:
        return CallFormat(fmt, "server", detail)
    path = _model_path(model)
    if path:
        fmt = format_of_template(chat_template_of_file(path))
        if fmt is not None:
            local = Path(path)
            where = (
                f"{local.name}/tokenizer_config.json chat_template"
                if local.is_dir()
                else f"{local.name} chat_template"
            )
            return CallFormat(fmt, "server", where)
    return None


# ------------------------------------------------------------------------- the servers


def _is_openai(model: BaseChatModel) -> bool:
    return hasattr(model, "openai_api_base")


def _base_url(model: BaseChatModel) -> str | None:
    for attr in ("openai_api_base", "base_url"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value.rstrip("/")
    return None


def _model_name(model: BaseChatModel) -> str | None:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return None


def _model_path(model: BaseChatModel) -> str | None:
    value = getattr(model, "model_path", None)
    return str(value) if value else None


def _headers(model: BaseChatModel) -> dict[str, str]:
    key = getattr(model, "openai_api_key", None)
    secret = key.get_secret_value() if key is not None and hasattr(key, "get_secret_value") else ""
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def _get_json(url: str, headers: dict[str, str]) -> Any:
    """The JSON at ``url``, or ``None`` when the server does not answer it (not this
    server's endpoint, not reachable): a server that says nothing tells no format."""
    import httpx

    try:
        response = httpx.get(url, headers=headers, timeout=_TIMEOUT)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None


def _llamacpp_template(model: BaseChatModel) -> str | None:
    """llama.cpp's ``GET /props`` (at the server's root, beside ``/v1``): ``chat_template``."""
    base = _base_url(model) or ""
    root = re.sub(r"/v1$", "", base)
    props = _get_json(f"{root}/props", _headers(model))
    template = props.get("chat_template") if isinstance(props, dict) else None
    return template if isinstance(template, str) else None


def _served_name(model: BaseChatModel) -> str | None:
    """The first model an OpenAI-compatible server lists at ``/v1/models``."""
    listing = _get_json(f"{_base_url(model)}/models", _headers(model))
    data = listing.get("data") if isinstance(listing, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        ident = data[0].get("id")
        return ident if isinstance(ident, str) else None
    return None


#: Ollama's built-in parsers (``PARSER`` in a model's modelfile; ollama
#: ``model/parsers/parsers.go``) and the formats of the models they read.
OLLAMA_PARSERS = {
    "qwen3": "hermes",
    "qwen3-thinking": "hermes",
    "qwen3.5": "hermes",
    "qwen3-coder": "hermes",
    "qwen3-vl-instruct": "hermes",
    "qwen3-vl-thinking": "hermes",
    "nemotron-3-nano": "hermes",
    "glm-4.7": "hermes",
    "ministral": "mistral",
    "harmony": "harmony",
    "deepseek3": "deepseek",
    "olmo3": "pythonic-tag",
    "olmo3-think": "pythonic-tag",
    "functiongemma": "functiongemma",
    "lfm2": "lfm2",
    "lfm2-thinking": "lfm2",
}
_OLLAMA_PARSER = re.compile(r'(?im)^PARSER\s+"?([^\s"]+)"?\s*$')


def _ollama_show(model: BaseChatModel) -> dict[str, str]:
    """Ollama's ``POST /api/show`` through the ``ollama`` client (it reads ``OLLAMA_HOST``
    as ``ChatOllama`` does): the model's ``template`` and ``modelfile``."""
    try:
        from ollama import Client, ResponseError
    except ImportError:
        return {}
    import httpx

    client_kwargs = dict(getattr(model, "client_kwargs", None) or {})
    client_kwargs.setdefault("timeout", _TIMEOUT)
    try:
        shown = Client(host=getattr(model, "base_url", None), **client_kwargs).show(
            _model_name(model) or ""
        )
    except (ResponseError, httpx.HTTPError, ConnectionError):
        return {}
    fields = {"template": getattr(shown, "template", None), "modelfile": shown.modelfile}
    return {k: v for k, v in fields.items() if isinstance(v, str)}


# ------------------------------------------------------------------------ model files


def chat_template_of_file(path: str | os.PathLike[str]) -> str | None:
    """The chat template of a local model: a GGUF file's ``tokenizer.chat_template``, or
    the ``chat_template`` of a ``tokenizer_config.json`` (the file, or in the folder).

    ``None`` when the file has none or cannot be read as either.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer_config.json"
    try:
        if p.suffix == ".json":
            data = json.loads(p.read_text(encoding="utf-8"))
            template = data.get("chat_template") if isinstance(data, dict) else None
            if isinstance(template, list):  # named templates: the default one
                named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
                template = named.get("tool_use") or named.get("default")
            return template if isinstance(template, str) else None
        with p.open("rb") as handle:
            return _gguf_string(handle, "tokenizer.chat_template")
    except (OSError, ValueError, struct.error):
        return None


# GGUF value types: fixed-size ones by their struct code; 8 string, 9 array
_GGUF_FIXED = {
    0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"
}  # fmt: skip


def _gguf_string(handle: BinaryIO, wanted: str) -> str | None:
    """The string value of metadata key ``wanted`` in a GGUF (v2, v3) file."""

    def read(fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        data = handle.read(size)
        if len(data) != size:
            raise ValueError("truncated GGUF file")
        return struct.unpack("<" + fmt, data)[0]

    def string() -> bytes:
        return handle.read(read("Q"))

    def skip(kind: int) -> None:
        if kind in _GGUF_FIXED:
            handle.seek(struct.calcsize("<" + _GGUF_FIXED[kind]), os.SEEK_CUR)
        elif kind == 8:
            handle.seek(read("Q"), os.SEEK_CUR)
        elif kind == 9:
            item, count = read("I"), read("Q")
            if item in _GGUF_FIXED:
                handle.seek(count * struct.calcsize("<" + _GGUF_FIXED[item]), os.SEEK_CUR)
            else:
                for _ in range(count):
                    skip(item)
        else:
            raise ValueError(f"unknown GGUF value type {kind}")

    if handle.read(4) != b"GGUF" or read("I") < 2:
        return None
    read("Q")  # tensor count
    for _ in range(read("Q")):
        key = string().decode("utf-8", "replace")
        kind = read("I")
        if key == wanted and kind == 8:
            return string().decode("utf-8")
        skip(kind)
    return None
