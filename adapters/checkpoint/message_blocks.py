"""A thread's message list as blocks of stored messages: what a saver that stores each
message once (:mod:`.history`) does to a checkpoint before saving it and after reading it.

Each message is one row (its serialized bytes, deflated when that is shorter) keyed by a
digest of those bytes; the list is cut into power-of-two blocks, each block a row naming
its two halves, and the checkpoint holds the digests of the list's largest blocks.
:class:`MessageHistory` also remembers, per thread, the list it last saved or read, so a
step serializes only what changed.
"""

from __future__ import annotations

import hashlib
import operator
import threading
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from fncall_graph._compat import DeltaSnapshot

__all__ = []

MESSAGES_TABLE = "fncall_messages"

_REF = "__fncall_messages__"  # the key of the value that stands for a list in a checkpoint
_DELTA = "delta"  # in that value: it stood for a delta channel's full copy of the list
_PAIR = "fncall-pair"  # the type of a node row: the digests of its two halves
_THREADS_KEPT = 32  # threads whose messages a saver remembers (least recently used go)
_PACKED = "z1:"  # the type of a message row stored compressed: this prefix, then its own


def _msgpack_str(text: str) -> bytes:
    data = text.encode()
    return (bytes([0xA0 | len(data)]) if len(data) < 32 else bytes([0xD9, len(data)])) + data


# What every serialized LangChain message repeats (its class, its fields' names), as
# msgpack writes them: a short message compresses to a third of its bytes against it,
# where compressed alone it barely shrinks. Rows written with it are read with it: this
# list never changes (another list would be another prefix than ``z1:``).
_ZDICT = b"".join(
    _msgpack_str(word)
    for word in (
        "langchain_core.messages.human", "HumanMessage", "langchain_core.messages.ai",
        "AIMessage", "langchain_core.messages.tool", "ToolMessage",
        "langchain_core.messages.system", "SystemMessage", "content", "additional_kwargs",
        "response_metadata", "type", "human", "ai", "tool", "name", "id", "example",
        "tool_calls", "invalid_tool_calls", "usage_metadata", "tool_call_id", "artifact",
        "status", "success", "tool_call", "args", "model_validate_json", "lc_run--",
        "input_tokens", "output_tokens", "total_tokens", "finish_reason", "model_name",
        "stop",
    )
)  # fmt: skip


def _pack(type_: str, data: bytes) -> tuple[str, bytes]:
    """A message's row: its serialized bytes deflated (against :data:`_ZDICT`) when
    that is shorter (an encrypting serializer's bytes are not)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=_ZDICT)
    packed = packer.compress(data) + packer.flush()
    if len(packed) + len(_PACKED) < len(data):
        return _PACKED + type_, packed
    return type_, data


def _unpack(row: tuple[str, bytes]) -> tuple[str, bytes]:
    type_, data = row
    if not type_.startswith(_PACKED):
        return type_, data  # stored as the serializer wrote it (rows of earlier versions)
    unpacker = zlib.decompressobj(-15, zdict=_ZDICT)
    return type_[len(_PACKED) :], unpacker.decompress(data) + unpacker.flush()


Row = tuple[bytes, str, bytes]  # digest, type, value


class StoredMessageMissing(LookupError):
    """A checkpoint names a stored message (or node) that its table does not hold: the
    rows were deleted without the checkpoint, or the database was copied in part."""


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


@dataclass
class _Lineage:
    """What one thread's (and namespace's) last saved or read list was: its message
    objects, their digests, and the digest of each whole block ``(start, level)``
    (``2**level`` messages from ``start``) inside it."""

    items: list[BaseMessage] = field(default_factory=list)
    shapes: list[dict[str, Any]] = field(default_factory=list)
    leaves: list[bytes] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)  # what the checkpoint holds
    blocks: dict[tuple[int, int], bytes] = field(default_factory=dict)


@dataclass
class Encoded:
    """One list as :meth:`MessageHistory.encode` made it: the rows to store first, and
    what to remember once they are stored."""

    lineage_key: tuple[str, str]
    lineage: _Lineage
    rows: list[Row]
    added: dict[tuple[int, int], bytes]


class MessageHistory:
    """Message lists as blocks of stored messages: what a saver of
    :func:`stores_messages_once` does to checkpoints before saving and after reading.

    Args:
        serde: the saver's serializer (each message is stored as it serializes it).
    """

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde
        self._lock = threading.Lock()
        self._lineages: OrderedDict[tuple[str, str], _Lineage] = OrderedDict()
        self._rows: OrderedDict[str, dict[bytes, tuple[str, bytes]]] = OrderedDict()

    # -- saving

    def encode(
        self, config: RunnableConfig, checkpoint: Checkpoint
    ) -> tuple[Checkpoint, list[Encoded]]:
        """``checkpoint`` with each list of messages replaced by its blocks' digests, and
        the rows to store first (call :meth:`saved` once they are)."""
        values = checkpoint.get("channel_values") or {}
        lists = {k: m for k, v in values.items() if (m := _messages_of(v)) is not None}
        if not lists:
            return checkpoint, []
        conf = config.get("configurable") or {}
        thread, ns = str(conf.get("thread_id")), str(conf.get("checkpoint_ns", ""))
        fresh = not conf.get("checkpoint_id")  # a thread's first checkpoint
        encoded, new_values = [], dict(values)
        for channel, messages in lists.items():
            ref, enc = self._encode((thread, f"{ns}\0{channel}"), messages, fresh)
            if isinstance(values[channel], DeltaSnapshot):
                ref[_DELTA] = True
            new_values[channel] = ref
            encoded.append(enc)
        return {**checkpoint, "channel_values": new_values}, encoded

    def _encode(
        self, key: tuple[str, str], messages: list[BaseMessage], fresh: bool
    ) -> tuple[dict[str, Any], Encoded]:
        with self._lock:
            old = None if fresh else self._lineages.get(key)
        old = old or _Lineage()
        # the messages saved before, as the same objects with the same fields, need not
        # be serialized again (LangChain's approval middleware assigns an AI message's
        # tool_calls in place and writes the same object back)
        shapes = [_shape(m) for m in messages]
        same = list(
            map(
                operator.and_,
                map(operator.is_, old.items, messages),
                map(operator.eq, old.shapes, shapes),
            )
        )
        prefix = same.index(False) if False in same else len(same)
        leaves = old.leaves[:prefix]
        rows: list[Row] = []
        for message in messages[prefix:]:
            type_, data = self.serde.dumps_typed(message)
            digest = _digest(type_.encode(), data)  # of the bytes, however they are stored
            leaves.append(digest)
            rows.append((digest, *_pack(type_, data)))
        if prefix == len(old.items):  # messages were only added: every block holds
            blocks = old.blocks
        else:
            blocks = {
                (start, level): h
                for (start, level), h in old.blocks.items()
                if start + (1 << level) <= prefix
            }
        added: dict[tuple[int, int], bytes] = {}  # remembered once their rows are stored

        def block(start: int, level: int) -> bytes:
            if level == 0:
                return leaves[start]
            h = blocks.get((start, level)) or added.get((start, level))
            if h is None:
                half = 1 << (level - 1)
                left, right = block(start, level - 1), block(start + half, level - 1)
                h = added[(start, level)] = _digest(_PAIR.encode(), left, right)
                rows.append((h, _PAIR, left + right))
            return h

        heads, start, n = [], 0, len(messages)
        for level in reversed(range(n.bit_length())):
            if n >> level & 1:
                heads.append(block(start, level))
                start += 1 << level
        lineage = _Lineage(list(messages), shapes, leaves, heads=heads, blocks=blocks)
        return {_REF: heads, "n": n}, Encoded(key, lineage, rows, added)

    def saved(self, thread_id: str, encoded: Sequence[Encoded]) -> None:
        """The rows of ``encoded`` are stored: remember them, and the lists they made."""
        with self._lock:
            rows = self._rows.get(thread_id)
            for enc in encoded:
                enc.lineage.blocks.update(enc.added)
                self._remember(enc.lineage_key, enc.lineage)
                if rows is not None:
                    rows.update((d, (t, v)) for d, t, v in enc.rows)

    def _remember(self, key: tuple[str, str], lineage: _Lineage) -> None:
        self._lineages[key] = lineage
        self._lineages.move_to_end(key)
        while len(self._lineages) > _THREADS_KEPT:
            self._lineages.popitem(last=False)

    # -- reading

    def refs(self, checkpoint: Checkpoint) -> bool:
        """Whether ``checkpoint`` names stored messages."""
        return any(_is_ref(v) for v in (checkpoint.get("channel_values") or {}).values())

    def known(self, thread_id: str) -> bool:
        """Whether this process holds ``thread_id``'s rows (or has nothing to look up)."""
        with self._lock:
            return thread_id in self._rows

    def loaded(self, thread_id: str, rows: Sequence[Row]) -> None:
        """All of ``thread_id``'s rows, as read from the table."""
        with self._lock:
            known = self._rows.setdefault(thread_id, {})
            known.update((bytes(d), (t, bytes(v))) for d, t, v in rows)
            self._rows.move_to_end(thread_id)
            while len(self._rows) > _THREADS_KEPT:
                self._rows.popitem(last=False)

    def decode(self, tup: CheckpointTuple, *, head: bool = False) -> CheckpointTuple:
        """``tup`` with its stored lists read back; with ``head`` (the checkpoint a run
        goes on from), the lists are remembered for the next save."""
        values = tup.checkpoint.get("channel_values") or {}
        refs = {k: v for k, v in values.items() if _is_ref(v)}
        if not refs:
            return tup
        conf = tup.config["configurable"]
        thread, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        with self._lock:
            rows = self._rows.get(thread, {})
        new_values = dict(values)
        for channel, ref in refs.items():
            key = (thread, f"{ns}\0{channel}")
            if head and (same := self._unchanged(key, ref)) is not None:
                new_values[channel] = _as_stored(ref, same)
                continue
            lineage = _Lineage()
            new_values[channel] = _as_stored(ref, self._decode(thread, conf, ref, rows, lineage))
            if head:
                with self._lock:
                    self._remember(key, lineage)
        return tup._replace(checkpoint={**tup.checkpoint, "channel_values": new_values})

    def _unchanged(self, key: tuple[str, str], ref: dict[str, Any]) -> list[BaseMessage] | None:
        """The messages this process last saved or read as ``ref``, if none of them has a
        field assigned since: the run goes on with them, as LangGraph goes on from one
        step to the next with the same objects, without deserializing the thread."""
        with self._lock:
            known = self._lineages.get(key)
        if known is None or len(known.items) != int(ref["n"]):
            return None
        if known.heads != [bytes(d) for d in ref[_REF]]:
            return None
        if known.shapes != [_shape(m) for m in known.items]:
            return None  # changed in place (by whoever was handed them): read them again
        return list(known.items)

    def _decode(
        self,
        thread: str,
        conf: dict[str, Any],
        ref: dict[str, Any],
        rows: dict[bytes, tuple[str, bytes]],
        lineage: _Lineage,
    ) -> list[BaseMessage]:
        def row(digest: bytes) -> tuple[str, bytes]:
            found = rows.get(digest)
            if found is None:
                raise StoredMessageMissing(
                    f"thread {thread!r}, checkpoint {conf.get('checkpoint_id')}: stored "
                    f"message {digest.hex()} is missing from table {MESSAGES_TABLE}"
                )
            return found

        def expand(digest: bytes, start: int, level: int) -> None:
            if level == 0:
                lineage.leaves.append(digest)
                message = self.serde.loads_typed(_unpack(row(digest)))
                lineage.items.append(message)
                lineage.shapes.append(_shape(message))
                return
            lineage.blocks[(start, level)] = digest
            type_, value = row(digest)
            if type_ != _PAIR or len(value) != 32:
                raise StoredMessageMissing(
                    f"thread {thread!r}: row {digest.hex()} of {MESSAGES_TABLE} is not a "
                    f"block of {1 << level} messages"
                )
            half = 1 << (level - 1)
            expand(value[:16], start, level - 1)
            expand(value[16:], start + half, level - 1)

        n, start = int(ref["n"]), 0
        levels = [level for level in reversed(range(n.bit_length())) if n >> level & 1]
        for digest, level in zip(ref[_REF], levels, strict=True):
            expand(bytes(digest), start, level)
            start += 1 << level
        lineage.heads = [bytes(d) for d in ref[_REF]]
        return list(lineage.items)

    def forget(self, thread_id: str) -> None:
        """The thread was deleted: drop what this process remembers of it."""
        with self._lock:
            self._rows.pop(thread_id, None)
            for key in [k for k in self._lineages if k[0] == thread_id]:
                del self._lineages[key]


def _shape(message: BaseMessage) -> dict[str, Any]:
    """A message's field values (held, so compared by identity first, then by value)."""
    fields = message.__dict__.copy()
    if extra := getattr(message, "__pydantic_extra__", None):
        fields["\0extra"] = extra.copy()
    return fields


def _messages_of(value: Any) -> list[BaseMessage] | None:
    """The messages a channel value holds: a list of them, or a delta channel's full copy
    of one (LangGraph's ``DeltaChannel``, the graph's ``messages``, saves one now and
    then); ``None`` for any other value."""
    if isinstance(value, DeltaSnapshot):
        value = value.value
    if isinstance(value, list) and value and all(isinstance(m, BaseMessage) for m in value):
        return value
    return None


def _as_stored(ref: dict[str, Any], messages: list[BaseMessage]) -> Any:
    """The value ``ref`` was made of: the list, or the delta channel's copy of it."""
    return DeltaSnapshot(messages) if ref.get(_DELTA) else messages


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and _REF in value
