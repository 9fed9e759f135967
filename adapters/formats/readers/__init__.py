"""Readers of the tool-call formats open models write into their text, auto-detected.

A model served without a tool parser (vLLM without ``--tool-call-parser``, llama.cpp
without ``--jinja``, a proxy, a fine-tune) writes its calls into ``content`` in its own
format. :data:`READERS` knows these formats; :class:`AutoReader` reads a reply in any of
them — one scan that looks for every format's markers at once — and its stream parser
gives the same result for any chunking while no markup reaches the streamed text.

One file per format family, one line per reader below; Qwen-Agent's ✿ format
(:mod:`.qwen`) is read by the Qwen dialect alone, which detection picks for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage

from ..base import PromptDialect
from ..calls import CallEvent, ContentDelta, InvalidCallEvent, ParseEvent, StreamParser
from ..markup import CHATML, THINK, Block
from ..scanner import MarkupStreamParser
from .bare import BareCalls
from .base import Reader
from .deepseek import DeepSeekReader
from .dsml import INVOKE_FORMATS, InvokeReader
from .functionary import MARKER, FunctionaryReader, bare_recipient
from .gemma import GEMMA_FORMATS, GemmaReader, GemmaThoughtReader
from .harmony import HarmonyReader
from .json_tags import JSON_TAG_FORMATS, JsonTagReader
from .kimi import KimiK3Reader, KimiReader
from .mistral import MistralReader
from .plamo import PlamoReader
from .repairs import json_call_repaired
from .tool_call_tag import ToolCallTagReader
from .whole_reply import PythonicTagReader, may_be_calls_only, read_whole_reply
from .xml_params import FunctionTagReader, MinimaxReader, SeedOssReader, Step3Reader

__all__ = ["CALL_FORMATS", "get_reader"]

READERS: tuple[Reader, ...] = (
    ToolCallTagReader(),
    FunctionTagReader(),
    SeedOssReader(),
    MinimaxReader(),
    Step3Reader(),
    *(JsonTagReader(f) for f in JSON_TAG_FORMATS),
    MistralReader(),
    DeepSeekReader(),
    *(InvokeReader(f) for f in INVOKE_FORMATS),
    *(GemmaReader(f) for f in GEMMA_FORMATS),
    GemmaThoughtReader(),
    KimiReader(),
    KimiK3Reader(),
    HarmonyReader(),
    FunctionaryReader(),
    PlamoReader(),
    PythonicTagReader(),
)


class AutoReader(PromptDialect):
    """Reads a reply written in any of ``readers``' formats, and replies made only of
    calls (bare or fenced JSON, pythonic lists); ``<think>`` is reasoning.

    It renders nothing: it is the reading half of a dialect, for replies whose format is
    not known in advance (a native endpoint whose server has no tool parser). With
    ``whole_reply=False`` replies made only of bare calls are answers.
    """

    name: ClassVar[str] = "auto"

    def __init__(self, readers: Sequence[Reader] = READERS, *, whole_reply: bool = True) -> None:
        self.readers = tuple(readers)
        self.whole_reply = whole_reply
        self._owner: dict[str, Reader] = {}
        blocks: list[Block] = [THINK]
        for reader in self.readers:
            for block in reader.blocks:
                if block.open not in self._owner and block.open != THINK.open:
                    self._owner[block.open] = reader
                    blocks.append(block)
        self.blocks = tuple(blocks)
        opens = {b.open for b in blocks}
        drops = dict.fromkeys(d for r in self.readers for d in r.drop_tokens if d not in opens)
        self.drop_tokens = (*drops, THINK.close[0])

    def render(self, messages: Sequence[BaseMessage], tools: Any) -> list[BaseMessage]:
        raise NotImplementedError("AutoReader reads replies; it renders no prompt")

    def write_assistant(self, message: AIMessage) -> str:
        raise NotImplementedError("AutoReader reads replies; it writes none")

    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        raise NotImplementedError("AutoReader reads each block with its own reader")

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        reader = self._owner[block.open]
        events = list(reader.read_block(block, text, closed=closed))
        repaired = json_call_repaired(reader, block, text, events, closed=closed)
        return events if repaired is None else repaired

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        return self._owner[block.open].block_may_close(block, text, marker)

    def reader_of(self, marker: str) -> Reader | None:
        return self._owner.get(marker)

    def stream_parser(self) -> StreamParser:
        return _AutoStreamParser(self, whole_reply=self.whole_reply)


class _AutoStreamParser(StreamParser):
    """The markup scanner, plus replies made only of calls.

    Answer text that starts like such a reply (``{``, ``[``, a code fence) is held back
    until the reply ends, then given out as calls or as the text it was.
    """

    def __init__(self, reader: AutoReader, *, whole_reply: bool = True) -> None:
        self._scan = MarkupStreamParser(reader)
        self._held: list[str] | None = None
        # without ``whole_reply`` (a known format's reader) no answer text is held
        self._passing = not whole_reply
        self._whole: list[ParseEvent] = []
        # the reply's first line, until it is known whether it names a Functionary
        # recipient whose ">>>" was the prompt's last token
        self._head: str | None = "" if reader.reader_of(MARKER) is not None else None

    def feed(self, chunk: str) -> list[ParseEvent]:
        if self._head is not None:
            chunk = self._opening(chunk, final=False)
        events = self._scan.feed(chunk)
        return events if self._passing else self._filter(events)

    def close(self) -> list[ParseEvent]:
        events = self._filter(self._scan.feed(self._opening("", final=True)))
        events += self._filter(self._scan.close())
        if self._held is not None:
            text = "".join(self._held)
            calls_by_markup = any(
                isinstance(e, CallEvent | InvalidCallEvent) for e in self._events_seen
            )
            whole = None if calls_by_markup else read_whole_reply(text)
            if whole is None:
                events.append(ContentDelta(text))
            else:
                self._whole = whole
                events += whole
        return events

    def _opening(self, chunk: str, *, final: bool) -> str:
        """``chunk`` as the scanner should see it: the head of the reply is held until
        it is known whether it starts with a bare recipient, which gets its ``>>>``."""
        if self._head is None:
            return chunk
        head = self._head + chunk
        bare = bare_recipient(head, final=final)
        if bare is None:
            self._head = head
            return ""
        self._head = None
        return MARKER + head.lstrip() if bare else head

    def message(self) -> AIMessage:
        message = self._scan.message()
        if not self._whole:
            return message
        return AIMessage(
            content="",
            tool_calls=[
                *message.tool_calls,
                *(e.call for e in self._whole if isinstance(e, CallEvent)),
            ],
            invalid_tool_calls=[
                *message.invalid_tool_calls,
                *(e.call for e in self._whole if isinstance(e, InvalidCallEvent)),
            ],
            additional_kwargs=message.additional_kwargs,
        )

    @property
    def _events_seen(self) -> list[ParseEvent]:
        message = self._scan.message()
        return [CallEvent(c) for c in message.tool_calls] + [
            InvalidCallEvent(c) for c in message.invalid_tool_calls
        ]

    def _filter(self, events: list[ParseEvent]) -> list[ParseEvent]:
        if self._passing:
            return events
        out: list[ParseEvent] = []
        for ev in events:
            if not isinstance(ev, ContentDelta) or self._passing:
                out.append(ev)
            elif self._held is not None:
                self._held.append(ev.text)
            elif may_be_calls_only(ev.text.lstrip()):
                self._held = [ev.text]
            else:
                self._passing = True
                out.append(ev)
        return out


AUTO = AutoReader()


class _ReasoningMarkup(Reader):
    """The reasoning blocks and channel tokens of every format, without its call blocks."""

    name: ClassVar[str] = "reasoning"

    def __init__(self, readers: Sequence[Reader]) -> None:
        with_reasoning = [r for r in readers if any(b.kind == "reasoning" for b in r.blocks)]
        self.blocks = tuple(  # type: ignore[misc]
            b for r in with_reasoning for b in r.blocks if b.kind == "reasoning"
        )
        # and the reasoning closers a reader drops (Gemma's ``<channel|>`` after a thought)
        closers = (
            c
            for r in with_reasoning
            for b in r.blocks
            if b.kind == "reasoning"
            for c in b.close
            if c in r.drop_tokens
        )
        self.drop_tokens = tuple(  # type: ignore[misc]
            dict.fromkeys([*(d for r in readers for d in r.channel_tokens), *closers])
        )


#: Reads what needs no call marker: reasoning and channel markup, and replies made only
#: of calls; for replies whose call markup (if any) is only quoted.
NO_CALL_MARKUP = AutoReader(readers=(_ReasoningMarkup(READERS),))


#: Every marker and token of the formats :data:`AUTO` reads, and ChatML's turn markers:
#: what the dialects break in text the model did not write (``neutralise``), so that a
#: model echoing a tool result forges no call.
KNOWN_MARKUP: tuple[str, ...] = tuple(
    dict.fromkeys(
        [*CHATML, *AUTO.drop_tokens, *(m for b in AUTO.blocks for m in (b.open, *b.close))]
    )
)


#: The call formats a reply can be read in, by the names ``normalize`` records in
#: ``response_metadata["fncall_markup_format"]``: the prompt dialects' (``"hermes"`` —
#: ``<tool_call>`` with JSON, Qwen3-Coder XML or GLM pairs inside —, ``"qwen"``,
#: ``"react"``), each reader's above, and ``"json"`` / ``"pythonic"`` for calls written
#: with no markup (Llama 3.x JSON, Llama 3.2/4 pythonic lists).
CALL_FORMATS: frozenset[str] = frozenset(
    {
        "hermes",
        "qwen",
        "react",
        "json",
        "pythonic",
        *(r.name for r in READERS if any(b.kind == "call" for b in r.blocks)),
    }
)


class KnownFormat(AutoReader):
    """The reader of one known call format: its markers only, read anywhere in a reply
    (the auto reader over that format's readers alone, bare calls being answers).

    Build it with :func:`get_reader`. An inference server told the model's format reads
    it the same way: no call of another format, and nothing guessed about a call of its
    own being only shown.
    """

    name: ClassVar[str] = "known"  # the instance's format is :attr:`call_format`

    def __init__(self, call_format: str, readers: Sequence[Reader]) -> None:
        super().__init__(readers, whole_reply=False)
        self.call_format = call_format

    def __repr__(self) -> str:
        return f"KnownFormat({self.call_format!r})"


#: the readers a format name gathers besides its own: its reasoning companions, and the
#: wrappers its engine's reader also takes (a declared format reads no less than auto on
#: a reply in that format). ``hermes``: llama.cpp's Qwen3-Coder reader (Qwen3-Coder,
#: Qwen3.5+, Nemotron 3 Nano, Step-3.5) reads a bare ``<function=…>`` without its
#: ``<tool_call>``; ``granite``: vLLM's granite reader takes ``<tool_call>`` for
#: ``<|tool_call|>`` (``json``'s xLAM wrappers: :mod:`.bare`)
_COMPANIONS: dict[str, tuple[type[Reader], ...]] = {
    "gemma4": (GemmaThoughtReader,),
    "hermes": (FunctionTagReader,),
    "granite": (ToolCallTagReader,),
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
        return BareCalls(name)
    readers = [r for r in READERS if r.name == name]
    return KnownFormat(name, [*readers, *(c() for c in _COMPANIONS.get(name, ()))])
