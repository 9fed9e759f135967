"""The auto reader (any format's markup, one scan) and the reader of one known format.

Imported when a reader is first asked for (:func:`.get_reader`, :data:`.AUTO`), with the
format readers it needs: the package itself loads none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from langchain_core.messages import AIMessage, BaseMessage

from ..base import PromptDialect
from ..calls import CallEvent, ContentDelta, InvalidCallEvent, ParseEvent, StreamParser
from ..markup import THINK, Block
from ..scanner import MarkupStreamParser
from .base import Reader
from .functionary import MARKER, bare_recipient
from .repairs import json_call_repaired
from .whole_reply import may_be_calls_only, read_whole_reply

# imported outside this room from the package (``readers.AutoReader``), never from here
__all__ = []


class AutoReader(PromptDialect):
    """Reads a reply written in any of ``readers``' formats, and replies made only of
    calls (bare or fenced JSON, pythonic lists); ``<think>`` is reasoning.

    It renders nothing: it is the reading half of a dialect, for replies whose format is
    not known in advance (a native endpoint whose server has no tool parser). With
    ``whole_reply=False`` replies made only of bare calls are answers.
    """

    name: ClassVar[str] = "auto"

    def __init__(
        self, readers: Sequence[Reader] | None = None, *, whole_reply: bool = True
    ) -> None:
        if readers is None:  # every format's
            from . import all_readers

            readers = all_readers()
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
