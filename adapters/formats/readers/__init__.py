"""Readers of the tool-call formats open models write into their text, auto-detected.

A model served without a tool parser (vLLM without ``--tool-call-parser``, llama.cpp
without ``--jinja``, a proxy, a fine-tune) writes its calls into ``content`` in its own
format. :data:`READERS` knows these formats; :class:`AutoReader` reads a reply in any of
them — one scan that looks for every format's markers at once — and its stream parser
gives the same result for any chunking while no markup reaches the streamed text.

One file per format family, one line per family below; Qwen-Agent's ✿ format
(:mod:`.qwen`) is read by the Qwen dialect alone, which detection picks for it. A
family's module is imported when one of its formats is first asked for (the names are
listed here, so that knowing them loads no reader); :data:`READERS`, :data:`AUTO`,
:data:`NO_CALL_MARKUP` and :data:`KNOWN_MARKUP` are built on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..base import PromptDialect

if TYPE_CHECKING:
    from .auto import AutoReader
    from .base import Reader

__all__ = ["CALL_FORMATS", "get_reader"]

#: Each family's module and the readers it holds, in :data:`READERS`' order (where two
#: readers open with the same marker, the first one listed reads it).
_FAMILIES: dict[str, Callable[[ModuleType], tuple[Reader, ...]]] = {
    "tool_call_tag": lambda m: (m.ToolCallTagReader(),),
    "xml_params": lambda m: (
        m.FunctionTagReader(),
        m.SeedOssReader(),
        m.MinimaxReader(),
        m.Step3Reader(),
    ),
    "json_tags": lambda m: tuple(m.JsonTagReader(f) for f in m.JSON_TAG_FORMATS),
    "mistral": lambda m: (m.MistralReader(),),
    "deepseek": lambda m: (m.DeepSeekReader(),),
    "dsml": lambda m: tuple(m.InvokeReader(f) for f in m.INVOKE_FORMATS),
    "gemma": lambda m: (*(m.GemmaReader(f) for f in m.GEMMA_FORMATS), m.GemmaThoughtReader()),
    "kimi": lambda m: (m.KimiReader(), m.KimiK3Reader()),
    "harmony": lambda m: (m.HarmonyReader(),),
    "functionary": lambda m: (m.FunctionaryReader(),),
    "plamo": lambda m: (m.PlamoReader(),),
    "whole_reply": lambda m: (m.PythonicTagReader(),),
}

#: The family of each call format its readers read (a test holds it to the readers' names).
_FAMILY_OF: dict[str, str] = {
    "hermes": "tool_call_tag",
    **dict.fromkeys(("function-tag", "seed-oss", "minimax", "step3"), "xml_params"),
    **dict.fromkeys(
        (
            "tool-calls-tag",
            "hunyuan-labelled",
            "granite",
            "granite-fc",
            "functools",
            "internlm",
            "command-r",
            "llama-python-tag",
            "lfm2",
            "apertus",
            "nemotron",
            "longcat",
            "gigachat3",
        ),
        "json_tags",
    ),
    "mistral": "mistral",
    "deepseek": "deepseek",
    **dict.fromkeys(("dsml", "gcml"), "dsml"),
    **dict.fromkeys(("gemma4", "functiongemma"), "gemma"),
    **dict.fromkeys(("kimi", "kimi-k3"), "kimi"),
    "harmony": "harmony",
    "functionary": "functionary",
    "plamo3": "plamo",
    "pythonic-tag": "whole_reply",
}


@cache
def _family_readers(family: str) -> tuple[Reader, ...]:
    """The readers of one family, its module imported now; built once, shared."""
    return _FAMILIES[family](import_module(f"{__name__}.{family}"))


def all_readers() -> tuple[Reader, ...]:
    """Every family's readers (:data:`READERS`), each module imported on this first call."""
    return tuple(r for family in _FAMILIES for r in _family_readers(family))


def _auto_reader() -> AutoReader:
    from .auto import AutoReader

    return AutoReader(all_readers())


def _no_call_markup() -> AutoReader:
    from .auto import AutoReader, _ReasoningMarkup

    return AutoReader(readers=(_ReasoningMarkup(all_readers()),))


def _known_markup() -> tuple[str, ...]:
    from ..markup import CHATML

    auto = __getattr__("AUTO")
    return tuple(
        dict.fromkeys(
            [*CHATML, *auto.drop_tokens, *(m for b in auto.blocks for m in (b.open, *b.close))]
        )
    )


#: What the module hands out on first use (PEP 562), then keeps as its own attribute.
#: ``READERS``: every reader; ``AUTO``: the auto reader over them; ``NO_CALL_MARKUP``: it
#: reads what needs no call marker (reasoning and channel markup, replies made only of
#: calls), for replies whose call markup (if any) is only quoted; ``KNOWN_MARKUP``: every
#: marker and token of the formats ``AUTO`` reads, and ChatML's turn markers — what the
#: dialects break in text the model did not write (``neutralise``), so that a model
#: echoing a tool result forges no call.
_LAZY: dict[str, Callable[[], Any]] = {
    "READERS": all_readers,
    "AUTO": _auto_reader,
    "NO_CALL_MARKUP": _no_call_markup,
    "KNOWN_MARKUP": _known_markup,
    "AutoReader": lambda: import_module(f"{__name__}.auto").AutoReader,
    "KnownFormat": lambda: import_module(f"{__name__}.auto").KnownFormat,
    "Reader": lambda: import_module(f"{__name__}.base").Reader,
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = _LAZY[name]()
    return value


#: The call formats a reply can be read in, by the names ``normalize`` records in
#: ``response_metadata["fncall_markup_format"]``: the prompt dialects' (``"hermes"`` —
#: ``<tool_call>`` with JSON, Qwen3-Coder XML or GLM pairs inside —, ``"qwen"``,
#: ``"react"``), each reader's above, and ``"json"`` / ``"pythonic"`` for calls written
#: with no markup (Llama 3.x JSON, Llama 3.2/4 pythonic lists).
CALL_FORMATS: frozenset[str] = frozenset({"qwen", "react", "json", "pythonic", *_FAMILY_OF})


#: the readers a format name gathers besides its own: its reasoning companions, and the
#: wrappers its engine's reader also takes (a declared format reads no less than auto on
#: a reply in that format). ``hermes``: llama.cpp's Qwen3-Coder reader (Qwen3-Coder,
#: Qwen3.5+, Nemotron 3 Nano, Step-3.5) reads a bare ``<function=…>`` without its
#: ``<tool_call>``; ``granite``: vLLM's granite reader takes ``<tool_call>`` for
#: ``<|tool_call|>`` (``json``'s xLAM wrappers: :mod:`.bare`)
_COMPANIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "gemma4": (("gemma", "GemmaThoughtReader"),),
    "hermes": (("xml_params", "FunctionTagReader"),),
    "granite": (("tool_call_tag", "ToolCallTagReader"),),
}


@lru_cache(maxsize=64)
def get_reader(name: str) -> PromptDialect:
    """The reader of one call format, which reads only that format, anywhere in a reply.

    ``"qwen"`` and ``"react"`` are those prompt dialects' readers; ``"json"`` and
    ``"pythonic"`` read calls written without markup (:mod:`.bare`); every other name
    (``"hermes"`` among them: ``<tool_call>`` blocks, as the Hermes dialect reads them) is
    :class:`KnownFormat` over that reader alone.

    Args:
        name: one of :data:`CALL_FORMATS` (``"hermes"``, ``"mistral"``, ``"gemma4"``, …).

    Raises:
        ValueError: for an unknown name, listing the known ones.

    Example:
        >>> reader = get_reader("mistral")
        >>> reply = reader.parse('Let me check.\\n[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
        >>> [(c["name"], c["args"]) for c in reply.tool_calls]
        [('get_weather', {'city': 'Paris'})]
        >>> try:
        ...     get_reader("nope")
        ... except ValueError as error:
        ...     print(str(error)[:59])
        unknown call format 'nope'; known call formats: apertus, co
    """
    if name not in CALL_FORMATS:
        known = ", ".join(sorted(CALL_FORMATS))
        raise ValueError(f"unknown call format {name!r}; known call formats: {known}")
    if name in ("qwen", "react"):  # the prompt dialects' own readers
        from ..registry import get_dialect

        dialect = get_dialect(name)
        assert isinstance(dialect, PromptDialect)
        return dialect
    if name in ("json", "pythonic"):
        from .bare import BareCalls

        return BareCalls(name)
    from .auto import KnownFormat

    readers = [r for r in _family_readers(_FAMILY_OF[name]) if r.name == name]
    companions = (
        getattr(import_module(f"{__name__}.{family}"), cls)()
        for family, cls in _COMPANIONS.get(name, ())
    )
    return KnownFormat(name, [*readers, *companions])
