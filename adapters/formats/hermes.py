"""The Hermes (Nous) dialect: tools in the system prompt, calls as ``<tool_call>`` JSON.

This is the format Qwen2.5, Qwen3, Hermes models and Qwen-Agent's default prompt use.
The model input reproduces Qwen-Agent's ``NousFnCallPrompt`` byte for byte:

* the tool list goes under ``# Tools`` at the end of the first system message (after a
  blank line), or in a system message of its own when there is none; one
  ``{"type": "function", "function": {...}}`` JSON per line inside ``<tools></tools>``;
* each earlier call is written back as ``<tool_call>\\n{"name": ..., "arguments": ...}\\n
  </tool_call>`` after the turn's text, several calls joined by ``"\\n"``;
* tool results go back as a **user** message, each wrapped in ``<tool_response>\\n...\\n
  </tool_response>``; consecutive results share one user message, in call order.

With no tools, calls and results already in the history are written as plain user text
(Qwen-Agent's wording, in English or Chinese by ``lang``), so the model still sees them.

Replies are read with the shared markup scanner: ``<think>`` is reasoning (calls inside
it are not run), each ``<tool_call>`` block holds one or more JSON objects, and text
before and after the calls is the answer. Hermes needs no stop sequences.

Example:
    >>> from fncall_graph.adapters import get_dialect
    >>> hermes = get_dialect("hermes")
    >>> reply = hermes.parse('<tool_call>\\n{"name": "sqlite-list_tables", "arguments": {}}\\n</tool_call>')
    >>> reply.tool_calls[0]["name"], reply.tool_calls[0]["args"]
    ('sqlite-list_tables', {})
    >>> hermes.write_assistant(reply)
    '<tool_call>\\n{"name": "sqlite-list_tables", "arguments": {}}\\n</tool_call>'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)

from .base import (
    PromptDialect,
    ToolLike,
    dumps,
    group_tool_results,
    reasoning_of,
    text_of,
    to_tool_specs,
)
from .calls import ParseEvent
from .markup import THINK, TOOL_CALL, Block
from .normalize import normalize
from .readers import KNOWN_MARKUP
from .readers.tool_call_tag import read_tool_call, tool_call_may_close

__all__ = []

_OPEN, _CLOSE = TOOL_CALL.open, TOOL_CALL.close[0]
#: Hermes' result tag: each tool result goes back to the model inside it.
TOOL_RESPONSE = ("<tool_response>", "</tool_response>")

#: The ``# Tools`` system text; ``{tool_descs}`` is one tool JSON per line. (Qwen-Agent's
#: text, its ``<tool_call>`` tags written from the one definition of the tag.)
TOOLS_PROMPT = f"""# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{{tool_descs}}
</tools>

For each function call, return a json object with function name and arguments within {_OPEN}{_CLOSE} XML tags:
{_OPEN}
{{{{"name": <function-name>, "arguments": <args-json-object>}}}}
{_CLOSE}"""


@dataclass(frozen=True)
class HistoryWording:
    """How calls and results are told as user text when no tools are offered."""

    call: str
    result: str
    no_result: str = "No result."


#: Qwen-Agent's wording per language; the tools prompt itself has one (English) text.
HISTORY_WORDING: dict[str, HistoryWording] = {
    "en": HistoryWording(
        call='\n\nThe tool "{name}" was called with these arguments: \n{args}',
        result="\n\nThe tool has returned the following result: \n{result}",
    ),
    "zh": HistoryWording(
        call='\n\n工具"{name}"被调用时使用了以下参数：\n{args}',
        result="\n\n该工具返回了以下结果：\n{result}",
    ),
}


class HermesDialect(PromptDialect):
    """Hermes / Nous tool calling in prompt text (registry names ``"hermes"``, ``"nous"``).

    Args:
        lang: ``"en"`` or ``"zh"``; only the wording of calls and results in a history
            rendered without tools depends on it (the tools prompt is the same).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> tool = {"name": "add", "description": "Add", "inputSchema": {"type": "object"}}
        >>> [m.type for m in HermesDialect().render([HumanMessage("1+1?")], [tool])]
        ['system', 'human']
    """

    name: ClassVar[str] = "hermes"
    stop: tuple[str, ...] = ()  # Qwen-Agent sends none for this prompt
    blocks: tuple[Block, ...] = (THINK, TOOL_CALL)
    # closing tags with no opening one are markup, never answer text
    drop_tokens: tuple[str, ...] = (*TOOL_CALL.close, *THINK.close)
    control_markers: tuple[str, ...] = (
        _OPEN,
        _CLOSE,
        *TOOL_RESPONSE,
        THINK.open,
        *THINK.close,
        *KNOWN_MARKUP,  # ChatML's and every other format's
    )

    def __init__(self, *, lang: Literal["en", "zh"] = "en") -> None:
        if lang not in HISTORY_WORDING:
            raise ValueError(f"lang must be one of {sorted(HISTORY_WORDING)}, got {lang!r}")
        self.lang = lang

    def __repr__(self) -> str:
        return f"HermesDialect(lang={self.lang!r})"

    def grammar(
        self,
        tools: Sequence[ToolLike] | None,
        *,
        require_call: bool = False,
        one_call: bool = False,
        answer_json: Mapping[str, Any] | None = None,
    ) -> str | None:
        """GBNF for a plain answer, or ``<tool_call>`` blocks naming one of ``tools``.

        Each call's arguments follow that tool's schema; several calls may follow one
        another, one per line (one at most with ``one_call``). ``require_call`` leaves out
        the plain answer. ``None`` without tools.
        """
        if not tools:
            return None
        from .grammar import call_grammar

        return call_grammar(
            tools,
            before=f"{_OPEN}\n",
            after=f"\n{_CLOSE}",
            max_calls=1 if one_call else None,
            allow_text=not require_call,
            answer_json=answer_json,
        )

    # ----------------------------------------------------------------- render

    def render(
        self, messages: Sequence[BaseMessage], tools: Sequence[ToolLike] | None
    ) -> list[BaseMessage]:
        """The exact model input for the canonical ``messages`` and ``tools``.

        Returns system, human and AI messages with string content; an AI turn's
        reasoning stays in ``additional_kwargs["reasoning_content"]``, never in content.
        """
        specs = to_tool_specs(tools)
        if not specs:
            return self._render_without_tools(messages)
        out: list[BaseMessage] = []
        for item in group_tool_results(messages):
            if isinstance(item, list):
                for result in item:
                    text = self.neutralise(text_of(result.content))
                    block = f"{TOOL_RESPONSE[0]}\n{text}\n{TOOL_RESPONSE[1]}"
                    if out and isinstance(out[-1], HumanMessage):
                        out[-1] = _with_text(out[-1], "\n" + block)
                    else:
                        out.append(HumanMessage(block))
            elif isinstance(item, AIMessage):
                text = self.write_assistant(item)
                if out and isinstance(out[-1], AIMessage):
                    # back-to-back AI turns are one assistant message to the model
                    joined = _joined(text_of(out[-1].content), text)
                    out[-1] = out[-1].model_copy(update={"content": joined})
                else:
                    out.append(_assistant(text, reasoning_of(item)))
            else:
                out.append(_plain(item, self.neutralise if item.type == "human" else None))

        tool_descs = "\n".join(spec.openai_json for spec in specs)
        system = TOOLS_PROMPT.format(tool_descs=tool_descs)
        if out and isinstance(out[0], SystemMessage):
            out[0] = _with_text(out[0], "\n\n" + system)
        else:
            out.insert(0, SystemMessage(system))
        return out

    def _render_without_tools(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        # Qwen-Agent's _remove_fncall_messages: calls and results become user text so
        # the model neither loses them nor is invited to call anything.
        wording = HISTORY_WORDING[self.lang]
        out: list[BaseMessage] = []

        def tell(text: str) -> None:
            if out and isinstance(out[-1], HumanMessage):
                out[-1] = _with_text(out[-1], text)
            else:
                out.append(HumanMessage(text))

        for item in group_tool_results(messages):
            if isinstance(item, list):
                for result in item:
                    body = text_of(result.content) or wording.no_result
                    tell(wording.result.format(result=body))
                continue
            if isinstance(item, AIMessage):
                text = text_of(item.content)
                if text or reasoning_of(item) or not item.tool_calls:
                    out.append(_assistant(text, reasoning_of(item)))
                for call in item.tool_calls:
                    tell(wording.call.format(name=call["name"], args=dumps(call["args"])))
                continue
            if isinstance(item, HumanMessage) and out and isinstance(out[-1], HumanMessage):
                out.append(AIMessage("..."))  # keeps the model on the latest user turn
            out.append(_plain(item))
        return out

    # ----------------------------------------------------------------- write

    def write_assistant(self, message: AIMessage) -> str:
        """The turn's text, then one ``<tool_call>`` block per call, joined by newlines.

        Calls that could not be read are written back as the model wrote them, so it
        sees its own mistake next to the error it caused.
        """
        blocks = [
            f"{_OPEN}\n{_call_json(c['name'], c['args'])}\n{_CLOSE}" for c in message.tool_calls
        ]
        blocks += [
            f"{_OPEN}\n{(c.get('args') or '').strip()}\n{_CLOSE}"
            for c in message.invalid_tool_calls
        ]
        return _joined(text_of(message.content), "\n".join(blocks))

    # ----------------------------------------------------------------- read

    def parse(self, text: str) -> AIMessage:
        """A whole reply as the graph and ``with_dialect`` read it (:func:`~.normalize.normalize`
        with this dialect: the one reading, whole or streamed); never raises."""
        return normalize(AIMessage(content=text), self)

    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read one ``<tool_call>`` block: JSON call objects (``arguments`` or
        ``parameters``, one or several, or a list), or the XML bodies other model families
        put in the same tag; see :mod:`~fncall_graph.adapters.formats.readers.tool_call_tag`.
        Prose after the JSON is answer text; a call cut short by the end of the reply is
        reported as invalid, never completed."""
        return read_tool_call(text, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        """A ``</tool_call>`` inside a JSON string argument does not end the call."""
        return block.kind != "call" or tool_call_may_close(text)


# --------------------------------------------------------------------------- helpers


def _call_json(name: str, args: Any) -> str:
    """The call object as JSON text that cannot end its block early.

    ``</tool_call>`` inside a string is spelled ``<\\/tool_call>``, which JSON reads
    back as the same string; nothing else differs from Qwen-Agent's ``json.dumps``.
    """
    return dumps({"name": name, "arguments": args}).replace(_CLOSE, "<\\/" + _CLOSE[2:])


def _joined(head: str, tail: str) -> str:
    """Two pieces of one turn, a newline between them unless ``head`` ends with one."""
    if not head or not tail:
        return head + tail
    return head + tail if head.endswith("\n") else f"{head}\n{tail}"


def _assistant(text: str, reasoning: str) -> AIMessage:
    kwargs = {"reasoning_content": reasoning} if reasoning else {}
    return AIMessage(content=text, additional_kwargs=kwargs)


def _plain(message: BaseMessage, clean: Callable[[str], str] | None = None) -> BaseMessage:
    """System and user turns as plain text (``clean`` applied); content with images etc. is
    kept as it is."""
    content = message.content
    if isinstance(content, list) and any(
        not (isinstance(b, str) or (isinstance(b, dict) and b.get("type", "text") == "text"))
        for b in content
    ):
        return message.model_copy()
    if isinstance(message, SystemMessage):
        return SystemMessage(text_of(content))
    if isinstance(message, HumanMessage):
        return HumanMessage(clean(text_of(content)) if clean else text_of(content))
    return message.model_copy(update={"content": text_of(content)})


def _with_text(message: BaseMessage, text: str) -> BaseMessage:
    """``message`` with ``text`` appended to its content."""
    content = message.content
    if isinstance(content, list):
        new: str | list[Any] = [*content, {"type": "text", "text": text}]
    else:
        new = content + text
    return message.model_copy(update={"content": new})
