"""Reading a reply as it streams: chunks in, canonical chunks out, their sum the read reply.

A model call's reply is read once. Streamed, it is read here chunk by chunk: a prompt
dialect's text goes through its stream parser (answer text shown as it comes, each call
sent as one ``tool_call_chunk`` once complete); a native reply's text is shown until call
markup starts, and at its end the whole reply is read once by the call's own reading
(:meth:`ReadingPlan.read`, i.e. ``normalize``) and only what that adds is sent. Chunks
cannot take back text already shown nor carry an unreadable call's error: what they
could not say rides under :data:`READ_REPLY_KEY`, and :func:`restore_read_reply` puts it
back on the summed reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Protocol

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message
from langchain_core.messages.tool import (
    InvalidToolCall,
    ToolCall,
    invalid_tool_call,
    tool_call,
    tool_call_chunk,
)
from langchain_core.utils.json import parse_partial_json

from .arg_types import tool_schemas, typed_call
from .base import Dialect, split_content, text_of
from .calls import (
    MARKUP_FORMAT_KEY,
    CallEvent,
    CallIds,
    ContentDelta,
    InvalidCallEvent,
    ParseEvent,
    ReasoningDelta,
    StreamParser,
    call_key,
    field_call,
    field_unreadable,
    unmatched,
)
from .own_calls import Echoes, markup_starts, quotes_its_calls, quoting_answer
from .readers import get_reader
from .scanner import explains_its_calls

__all__ = ["StreamReading", "fitted_call", "read_reply", "restore_read_reply"]


class ReadingPlan(Protocol):
    """What a model call knows that reading its reply needs (``ModelCall`` is one)."""

    dialect: Dialect
    tools: list[Any] | None
    taken: set[str]
    one_call: bool
    json_answer: bool
    call_format: str | None
    echoes: Echoes | None
    schemas: dict[str, Any] | None  # the tools' parameter schemas, made when first needed

    @property
    def reader(self) -> Dialect: ...

    def read(self, reply: BaseMessage) -> AIMessage: ...

    def fit(self, call: ToolCall, texts: Mapping[str, str] | None = None) -> ToolCall: ...

    def not_run(self, call: ToolCall) -> InvalidToolCall: ...

    def repaired_answer(self, text: str) -> str | None:
        """An answer asked for as JSON, repaired as the call's reading repairs it."""
        ...


def fitted_call(plan: ReadingPlan, call: ToolCall, texts: Mapping[str, str] | None) -> ToolCall:
    """One call read from a reply (``texts``: its arguments written as text), typed by
    the plan's tool schemas and fitted to its tools by the reader's loose forms (ReAct's
    bare ``action_input``): the one rule every reading of a call applies."""
    if texts:
        if plan.schemas is None:
            plan.schemas = tool_schemas(plan.tools)
        call = typed_call(call, texts, plan.schemas)
    reader = plan.reader
    if not reader.fits_loose_calls:
        return call
    fitted = reader.fit_to_tools(AIMessage(content="", tool_calls=[call]), plan.tools)
    return fitted.tool_calls[0] if fitted.tool_calls else call


@lru_cache(maxsize=1)
def _hold() -> tuple[str, ...]:
    """Markup a native reply's stream stops showing at: every format's markers and tokens
    (built with the first native reply, when every format's readers load)."""
    return tuple(sorted(markup_starts(), key=len, reverse=True))


@lru_cache(maxsize=1)
def _whole_reply() -> tuple[dict[str, tuple[str, ...]], tuple[str, ...], Any]:
    """The starts of calls written without markup, by format; what opens a reply that may
    be only calls; and the test that a reply's head may be one (on first use)."""
    from .readers.bare import BARE_STARTS
    from .readers.whole_reply import OPENERS, may_be_calls_only

    return BARE_STARTS, OPENERS, may_be_calls_only


@lru_cache(maxsize=64)
def _hold_table(markers: tuple[str, ...]) -> tuple[re.Pattern[str], int, frozenset[str]]:
    """The pattern, the longest length less one, and the prefixes of ``markers``."""
    return (
        re.compile("|".join(map(re.escape, markers))),
        max(map(len, markers)) - 1,
        frozenset(m[:j] for m in markers for j in range(1, len(m))),
    )


def _hold_markers(call_format: str | None) -> tuple[str, ...]:
    """What a native reply's stream stops showing at: a known format's own markup, or
    every format's."""
    if call_format is None:
        return _hold()
    bare = _whole_reply()[0]
    if call_format in bare:  # calls with no markup: held from where one may start
        return bare[call_format]
    reader = get_reader(call_format)
    blocks = getattr(reader, "blocks", ())
    own = {*(b.open for b in blocks), *getattr(reader, "drop_tokens", ())}
    return tuple(sorted(own or _hold(), key=len, reverse=True))


#: ``additional_kwargs`` key of a streamed reply: what its chunks could not say about the
#: read reply. Its unreadable calls' raw text and error by call id (a call chunk has room
#: for neither), and its answer when text shown as it came turned out to be reasoning (an
#: unopened ``</think>``, the prompt having opened it). ``DialectChatModel.invoke``
#: puts them back; :func:`restore_read_reply` does for chunks added up by hand.
READ_REPLY_KEY = "fncall_read_reply"


def read_reply(chunks: list[AIMessageChunk]) -> AIMessage:
    """The read reply the chunks of a :class:`StreamReading` add up to (what they could
    not carry put back)."""
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    read = restore_read_reply(message_chunk_to_message(total))
    assert isinstance(read, AIMessage)
    return read


def restore_read_reply(message: BaseMessage) -> BaseMessage:
    """``message`` as it was read, when it was added up from streamed chunks.

    Chunks cannot take back text already shown, nor carry an unreadable call's error;
    a streamed reply holds both under :data:`READ_REPLY_KEY`. Use it on a reply added up
    from ``DialectChatModel.stream`` chunks (``invoke`` and ``ainvoke`` do).

    Example:
        .. code-block:: python

            from functools import reduce

            reply = restore_read_reply(reduce(lambda a, b: a + b, model.stream("hi")))
    """
    kept = message.additional_kwargs.get(READ_REPLY_KEY)
    if not isinstance(message, AIMessage) or not isinstance(kept, dict):
        return message
    content, kwargs, invalid = _put_back(
        kept, message.content, message.additional_kwargs, message.invalid_tool_calls
    )
    update = {"content": content, "additional_kwargs": kwargs, "invalid_tool_calls": invalid}
    return message.model_copy(update=update)


def _put_back(
    kept: dict[str, Any],
    content: Any,
    additional_kwargs: dict[str, Any],
    invalid: list[InvalidToolCall],
) -> tuple[Any, dict[str, Any], list[InvalidToolCall]]:
    """What the chunks of a read reply could not carry (``kept``, held under
    :data:`READ_REPLY_KEY`) put back: the answer, and each unreadable call's raw
    arguments and error (by call id)."""
    unreadable = kept.get("invalid_tool_calls") or {}
    invalid = [
        {**c, **unreadable[c.get("id") or ""]} if (c.get("id") or "") in unreadable else c
        for c in invalid
    ]
    kwargs = {k: v for k, v in additional_kwargs.items() if k != READ_REPLY_KEY}
    return kept.get("content", content), kwargs, invalid


def _args_text(raw: Any) -> str:
    """The arguments of an unreadable call as chunk text that stays unreadable when merged.

    Chunks are re-parsed with ``parse_partial_json`` when added up, and empty arguments
    are read as ``{}``; text that parses to an object, or none at all, would turn the
    invalid call into a runnable one, so it is quoted.
    """
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        readable = not text or isinstance(parse_partial_json(text), dict)
    except Exception:
        readable = False
    return json.dumps(text, ensure_ascii=False) if readable else text


class StreamReading:
    """Turns the inner model's chunks into canonical chunks whose sum is the read reply.

    Prompt dialects: the text goes through the dialect's stream parser; each finished
    call becomes one ``tool_call_chunk`` (``args`` as a JSON string, its own ``index``),
    sent when the reply ends, unless the reply turns out to quote the syntax (prose after
    it, :func:`quotes_its_calls`). Calls the model streamed natively are added at the
    end, less those the text held.
    Native: text is shown until markup starts (:class:`HeldMarkup`); at the end the whole
    reply is read once (:meth:`ReadingPlan.read`) and what that reading adds is sent: the rest of
    the answer, reasoning from the text, and every call (the provider's, checked like
    calls read from text, and those from markup). Call ids follow the call's one rule (:class:`CallIds`) as they pass.
    """

    def __init__(self, call: ReadingPlan) -> None:
        self.call = call
        self.ids = CallIds(call.taken)
        native = call.dialect.native
        self.parser: StreamParser | None = None if native else call.reader.stream_parser()
        self.display = HeldMarkup(_hold_markers(call.call_format)) if native else None
        self.index = 0
        self.calls: list[ToolCall] = []  # prompt dialects: the calls read so far
        # prompt dialects: the calls' chunks, sent at the end unless the reply only
        # quotes the syntax (which prose after the calls may tell)
        self.held: dict[str, Any] = {"tool_call_chunks": [], "additional_kwargs": {}}
        self.raw: list[str] = []  # prompt dialects: the reply's text as it came
        self.events: list[ParseEvent] = []  # prompt dialects: what the parser gave
        self.shown: list[str] = []  # prompt dialects: the answer text sent so far
        self.unreadable = False  # prompt dialects: a call that could not be read was sent
        self.reasoning: list[str] = []  # all reasoning sent so far
        self.inner: AIMessageChunk | None = None  # the model's own stream, ids as sent
        self.chunk_ids: dict[tuple[Any, str], str] = {}
        self.provider_reasoning = False
        self.markup_reasoning = False

    def feed(self, piece: BaseMessage) -> AIMessageChunk | None:
        """Read one chunk of the provider's; the canonical chunk it gives (``None``: it
        carries nothing yet, text held back by the parser)."""
        out = _empty()
        self._feed(out, piece)
        return _chunk(out, piece)

    def close(self) -> AIMessageChunk:
        """End the reading; the last canonical chunk (the calls, held to the end)."""
        out, meta = _empty(), {}
        self._close(out, meta)
        return AIMessageChunk(**out, response_metadata=meta, chunk_position="last")

    def whole(self, reply: BaseMessage) -> AIMessage:
        """A prompt dialect's whole reply read at once: what :meth:`feed` and
        :meth:`close` send for it, as the one message their chunks add up to (the same
        text, reasoning and calls, in the same order, with what chunks cannot carry put
        back), built once. (A native reply is read by its call's own reading.)"""
        assert self.parser is not None, "a native reply is read by ReadingPlan.read"
        out: dict[str, Any] = _empty()
        self._feed(out, _one_chunk(reply))
        # the provider's unreadable calls, which a chunk cannot carry
        self._close(out, {}, getattr(reply, "invalid_tool_calls", None) or [])
        kept = out["additional_kwargs"].get(READ_REPLY_KEY) or {}
        unreadable = kept.get("invalid_tool_calls") or {}
        calls: list[ToolCall] = []
        bad: list[InvalidToolCall] = []
        for c in out["tool_call_chunks"]:
            if (c.get("id") or "") in unreadable:  # written by _invalid, known by its id
                bad.append(
                    invalid_tool_call(name=c.get("name"), args=c.get("args"), id=c.get("id"))
                )
            else:  # written by _call: its arguments are JSON
                calls.append(tool_call(name=c["name"], args=json.loads(c["args"]), id=c["id"]))
        content, kwargs, bad = _put_back(kept, out["content"], out["additional_kwargs"], bad)
        others = split_content(reply.content)[2]
        if others:  # images and the like: kept after the answer's text (no chunk says them)
            content = [*([{"type": "text", "text": content}] if content else []), *others]
        return AIMessage(
            content=content,
            additional_kwargs=kwargs,
            response_metadata=dict(reply.response_metadata),
            usage_metadata=getattr(reply, "usage_metadata", None),
            id=reply.id,
            name=reply.name,
            tool_calls=calls,
            invalid_tool_calls=bad,
        )

    def _feed(self, out: dict[str, Any], piece: BaseMessage) -> None:
        call_chunks = [self._identified(c) for c in getattr(piece, "tool_call_chunks", None) or []]
        if isinstance(piece, AIMessageChunk):
            if call_chunks:
                piece = AIMessageChunk(
                    content=piece.content,
                    additional_kwargs=piece.additional_kwargs,
                    response_metadata=piece.response_metadata,
                    tool_call_chunks=call_chunks,
                    id=piece.id,
                )
            self.inner = piece if self.inner is None else self.inner + piece
        text, blocks, _, _ = split_content(piece.content)
        # the provider's reasoning: its field, then (a prompt dialect's reply) its reasoning
        # blocks, joined as normalize joins them; a native reply's are its reading's
        given = piece.additional_kwargs.get("reasoning_content")
        blocks = blocks if self.parser is not None else []
        parts = [p for p in (given if isinstance(given, str) else None, *blocks) if p]
        if parts:
            self._reason(out, "\n".join(parts), provider=True)
        if self.parser is None:
            # The provider's call chunks wait for the end: a call's arguments can be
            # checked only once complete, and a chunk once sent cannot be taken back.
            out["content"] = self.display.feed(text) if self.display is not None else text
        elif text:
            self.raw.append(text)
            self._events(out, self.parser.feed(text))

    def _close(
        self, out: dict[str, Any], meta: dict[str, Any], unreadable: Sequence[InvalidToolCall] = ()
    ) -> None:
        """The reply's end read into ``out``; ``unreadable``: the provider's unreadable calls
        of a whole reply (a stream's come in its chunks)."""
        if self.parser is not None:
            self._events(out, self.parser.close())
            raw = "".join(self.raw)
            held = self.held["tool_call_chunks"]
            if held and (
                explains_its_calls(self.events)
                or (self.call.call_format is None and quotes_its_calls(self.call.dialect, raw))
            ):
                # as normalize reads it: no calls, the syntax kept in the answer
                out["additional_kwargs"][READ_REPLY_KEY] = {"content": quoting_answer(raw)}
                self.calls, self.unreadable = [], False
            else:
                field = list(self.inner.tool_calls) if self.inner is not None else []
                out["tool_call_chunks"] += self._field_ids(held, field)
                out["additional_kwargs"].update(self.held["additional_kwargs"])
            field = list(self.inner.tool_calls) if self.inner is not None else []
            for c in unmatched(field, self.calls):  # the provider's own, checked as normalize does
                checked = field_call(c, _ids_for(c, self.ids))
                if checked.get("type") == "tool_call":
                    self._call(out, checked)  # type: ignore[arg-type]
                else:
                    self._invalid(out, checked)
            streamed = list(self.inner.invalid_tool_calls) if self.inner is not None else []
            for bad in streamed:  # kept unreadable, with why (their ids made unique as they came)
                self._invalid(out, field_unreadable(bad, _ids_for(bad, self.ids)))
            for bad in unreadable:
                self._invalid(out, field_unreadable(bad, self.ids))
            if not self.calls and not self.unreadable:
                self._fitted_late(out)
            if self.call.json_answer and not self.calls:
                fixed = self.call.repaired_answer("".join(self.shown))
                if fixed is not None and fixed != "".join(self.shown):
                    kept = out["additional_kwargs"].setdefault(READ_REPLY_KEY, {})
                    kept["content"] = fixed
        elif self.inner is not None:
            self._read_native(out, meta)

    # -- helpers

    def _identified(self, chunk: Any) -> dict[str, Any]:
        """A provider's call chunk with its id made unique (one id per call, kept)."""
        chunk = dict(chunk)
        if chunk.get("id"):
            key = (chunk.get("index"), chunk["id"])
            if key not in self.chunk_ids:
                self.chunk_ids[key] = self.ids.assign(chunk["id"])
            chunk["id"] = self.chunk_ids[key]
        return chunk

    def _read_native(self, out: dict[str, Any], meta: dict[str, Any]) -> None:
        """The one reading of a native reply: send what it adds to what was streamed."""
        inner = self.inner
        assert inner is not None
        read = self.call.read(inner)
        if self.display is not None:
            rest = self.display.rest(text_of(read.content))
            if rest is None:  # what was shown turned out to be reasoning
                out["additional_kwargs"][READ_REPLY_KEY] = {"content": read.content}
            else:
                out["content"] = rest
        streamed = str(inner.additional_kwargs.get("reasoning_content") or "")
        reasoning = str(read.additional_kwargs.get("reasoning_content") or "")
        if reasoning.startswith(streamed) and len(reasoning) > len(streamed):
            out["additional_kwargs"]["reasoning_content"] = reasoning[len(streamed) :]
        for c in read.tool_calls:
            self._call(out, c)
        for bad in read.invalid_tool_calls:
            self._invalid(out, bad)
        if MARKUP_FORMAT_KEY in read.response_metadata:
            meta[MARKUP_FORMAT_KEY] = read.response_metadata[MARKUP_FORMAT_KEY]

    def _field_ids(self, held: list[Any], field: list[ToolCall]) -> list[Any]:
        """``held`` call chunks, each call the provider also sent in its field under the
        field's id (one call read from two places is one call, known by the provider's
        id, as ``normalize`` reads it)."""
        if not field:
            return held
        ids: dict[tuple[str, str], list[str]] = {}
        for c in field:
            if c.get("id"):
                ids.setdefault(call_key(c["name"], c["args"]), []).append(c["id"])
        by_id = {c["id"]: c for c in self.calls}
        out = []
        for chunk in held:
            call = by_id.get(chunk.get("id"))
            same = ids.get(call_key(call["name"], call["args"])) if call else None
            if same:  # the field's ids were made unique as its chunks came
                new = same.pop(0)
                call["id"] = new
                chunk = {**chunk, "id": new}
            out.append(chunk)
        return out

    def _fitted_late(self, out: dict[str, Any]) -> None:
        """Calls the dialect finds in a whole reply that held none of its own form
        (ReAct's fenced action blob in prose), as :meth:`ReadingPlan.read` finds them."""
        if not self.call.reader.fits_loose_calls:
            return
        reasoning = {"reasoning_content": "".join(self.reasoning)}
        whole = AIMessage(content="".join(self.shown), additional_kwargs=reasoning)
        fitted = self.call.reader.fit_to_tools(whole, self.call.tools)
        found = [{**c, "id": self.ids.assign(c.get("id"))} for c in fitted.tool_calls]
        found, echoed = self.call.echoes.split(found) if self.call.echoes else (found, [])
        for bad in echoed:  # as a call of the dialect's own form is refused
            self._invalid(out, bad)
        for c in found:
            self._call(out, c)
        if fitted.content != whole.content:
            # the action shown as text is the call (or the answer it gives): the answer is
            # what stands before it
            kept = out["additional_kwargs"].setdefault(READ_REPLY_KEY, {})
            kept["content"] = fitted.content

    def _reason(self, out: dict[str, Any], text: str, *, provider: bool) -> None:
        # The same separator ``normalize`` puts between provider and <think> reasoning.
        if not provider and self.provider_reasoning and not self.markup_reasoning:
            text = "\n" + text
        if provider:
            self.provider_reasoning = True
        else:
            self.markup_reasoning = True
        self.reasoning.append(text)
        kw = out["additional_kwargs"]
        kw["reasoning_content"] = kw.get("reasoning_content", "") + text

    def _events(self, out: dict[str, Any], events: list[ParseEvent]) -> None:
        self.events += events
        for ev in events:
            if isinstance(ev, ContentDelta):
                out["content"] += ev.text
                self.shown.append(ev.text)
            elif isinstance(ev, ReasoningDelta):
                self._reason(out, ev.text, provider=False)
            elif isinstance(ev, CallEvent):
                call = self.call.fit(
                    {**ev.call, "id": self.ids.assign(ev.call.get("id"))}, ev.texts
                )
                echo = self.call.echoes.echo(call) if self.call.echoes else None
                if echo is not None:  # as ``normalize`` refuses it
                    self.unreadable = True
                    self._invalid(self.held, echo)
                    continue
                if self.call.one_call and self.calls:
                    self._invalid(self.held, self.call.not_run(call))
                    continue
                self.calls.append(call)
                self._call(self.held, call)
            elif isinstance(ev, InvalidCallEvent):
                bad = ev.call
                self.unreadable = True
                self._invalid(self.held, {**bad, "id": self.ids.assign(bad.get("id"))})

    def _call(self, out: dict[str, Any], call: ToolCall) -> None:
        out["tool_call_chunks"].append(
            tool_call_chunk(
                name=call["name"],
                args=json.dumps(call["args"], ensure_ascii=False),
                id=call["id"],
                index=self._next(),
            )
        )

    def _invalid(self, out: dict[str, Any], bad: Any) -> None:
        out["tool_call_chunks"].append(
            tool_call_chunk(
                name=bad.get("name"),
                args=_args_text(bad.get("args")),
                id=bad.get("id"),
                index=self._next(),
            )
        )
        # A call chunk has no room for the error, and its args had to be quoted.
        kept = out["additional_kwargs"].setdefault(READ_REPLY_KEY, {})
        unreadable = kept.setdefault("invalid_tool_calls", {})
        unreadable[bad.get("id") or ""] = {"args": bad.get("args"), "error": bad.get("error")}

    def _next(self) -> int:
        self.index += 1
        return self.index - 1


class HeldMarkup:
    """What a native reply shows while it streams: its text, until markup starts.

    A server without a tool parser streams a model's call markup (or ``<think>``) as
    text. Answer text is shown as it comes; from the first marker on (or from the start,
    for a reply that may be only calls), the text is held, and when the reply ends it
    is read, and only what the reading leaves as answer is shown.
    """

    def __init__(self, markers: tuple[str, ...] = ()) -> None:
        self.markers, self.longest, self.prefixes = _hold_table(markers or _hold())
        _, self._openers, self._may_be_calls_only = _whole_reply()
        self.shown: list[str] = []
        self.pending = ""
        self.held = False
        self.started = False

    def feed(self, text: str) -> str:
        if self.held:
            return ""
        buf = self.pending + text
        if not self.started:
            head = buf.lstrip()
            if not head or self._may_be_calls_only(head[: len(self._openers[-1])]):
                if head.startswith(self._openers):
                    self.held = True  # a reply that may be only calls: decided at the end
                self.pending = "" if self.held else buf
                return ""
            self.started = True
            buf = head  # the read answer is trimmed: its leading white space is not shown
        hit = self.markers.search(buf)
        if hit is not None:
            self.held = True
            return self._show(buf[: hit.start()].rstrip())  # the read answer is trimmed
        keep = next(
            (j for j in range(min(self.longest, len(buf)), 0, -1) if buf[-j:] in self.prefixes), 0
        )
        # white space is shown once text follows it: before markup, the answer ends there
        ready = buf[: len(buf) - keep]
        body = ready.rstrip()
        self.pending = buf[len(body) :]
        return self._show(body)

    def _show(self, text: str) -> str:
        self.shown.append(text)
        return text

    def rest(self, content: str) -> str | None:
        """The end of the reply: what of its read ``content`` is still to show, or
        ``None`` when what was shown is not how the content begins."""
        shown = "".join(self.shown)
        if content.startswith(shown):
            return content[len(shown) :]
        core = shown.strip()  # the read content is trimmed; what was shown may not be
        if not content.startswith(core):
            return None
        rest, tail = content[len(core) :], shown[len(shown.rstrip()) :]
        return rest[len(tail) :] if rest.startswith(tail) else rest


def _one_chunk(reply: BaseMessage) -> BaseMessage:
    """A whole reply as the one chunk of a stream: its readable calls as call chunks (its
    unreadable ones are taken as they are: a chunk's arguments are read again when chunks
    add up, and truncated JSON would be completed). A reply with none is read as it is."""
    if not isinstance(reply, AIMessage) or isinstance(reply, AIMessageChunk):
        return reply
    if not reply.tool_calls:
        return reply
    calls = [
        tool_call_chunk(
            name=c["name"], args=json.dumps(c["args"], ensure_ascii=False), id=c["id"], index=i
        )
        for i, c in enumerate(reply.tool_calls)
    ]
    return AIMessageChunk(
        content=reply.content,
        additional_kwargs=reply.additional_kwargs,
        response_metadata=reply.response_metadata,
        usage_metadata=reply.usage_metadata,
        tool_call_chunks=calls,
        id=reply.id,
    )


def _ids_for(call: Any, ids: CallIds) -> CallIds:
    """The id rule for a provider's call that came in the stream's chunks: its id was made
    unique as its chunks came (:meth:`StreamReading._identified`), so it is kept; one
    that came with none gets one by ``ids``."""
    return CallIds() if call.get("id") else ids


def _empty() -> dict[str, Any]:
    """What a chunk says, before anything is read into it."""
    return {"content": "", "additional_kwargs": {}, "tool_call_chunks": []}


def _chunk(out: dict[str, Any], piece: BaseMessage) -> AIMessageChunk | None:
    """An output chunk, or ``None`` when it carries nothing (text held back by the parser)."""
    meta = dict(piece.response_metadata)
    usage = getattr(piece, "usage_metadata", None)
    if not (out["content"] or out["additional_kwargs"] or out["tool_call_chunks"] or meta or usage):
        return None
    return AIMessageChunk(**out, response_metadata=meta, usage_metadata=usage)
