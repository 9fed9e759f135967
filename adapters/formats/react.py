"""The ReAct dialect: LangChain's JSON-blob ReAct prompt, for models without function calling.

The model input reproduces, byte for byte, the ReAct prompt published for deepseek-v3
(LangChain's chat ReAct agent prompt with the tools listed as JSON):

* one system message: the instructions, with one tool JSON per line
  (``{"name", "description", "parameters"}``) and the tool names;
* one user message: ``Question: <question>\\n\\n`` followed by the scratchpad, every earlier
  step of this turn as the model wrote it, each followed by ``Observation: <result>\\n``.

The model answers ``Thought: ...`` then ``Action:`` with a fenced JSON blob
``{"action": NAME, "action_input": ARGS}``, or ``Final Answer: ...``. The stop sequence
``Observation:`` keeps it from inventing tool results.

Reading a reply:

* ``Thought:`` text and ``<think>`` blocks are reasoning;
* each ``Action:`` block is one or more calls (several ``Action:`` blocks, or a list of
  blobs, are all run); the blob may be in a code fence (with or without a ``json`` tag)
  or bare, and broken JSON is repaired; prose around the blob is answer text; the
  classic ``Action: NAME`` / ``Action Input: ARGS`` form is read too;
* ``{"action": "Final Answer", "action_input": ...}`` (LangChain's structured-chat
  convention) and the ``Final Answer:`` marker give the answer, with no call;
* ``Observation:`` ends the reply: whatever follows was invented before any tool ran, so
  it is dropped, exactly as the stop sequence would have cut it;
* a reply with none of the markers is the answer as it stands.

``action_input`` given as an object or as a JSON object string becomes the arguments.
Anything else (a bare string, a number, a list) becomes ``{"input": value}``: the parser
does not see the tool list, LangChain's single-input tools accept any one-key object, and
a structured tool answers with an error naming its parameters, which the model reads in
the next ``Observation:`` and corrects.

Conversations: only the current turn (from the last user message) is a scratchpad. Each
earlier turn is written as the exchange it was: a user message holding its question and
its scratchpad, then an assistant message with its final reply (``Thought: ...`` and
``Final Answer: ...``). So a follow-up question still sees the tool results it may refer
to, and the model sees its own format worked through.

Example:
    >>> from fncall_graph.adapters import get_dialect
    >>> react = get_dialect("react")
    >>> reply = react.parse('Thought: 先查北京。\\nAction:\\n```\\n{"action": "get_weather", '
    ...                     '"action_input": {"location": "北京"}}\\n```')
    >>> reply.tool_calls[0]["name"], reply.tool_calls[0]["args"]
    ('get_weather', {'location': '北京'})
    >>> reply.additional_kwargs["reasoning_content"]
    '先查北京。'
    >>> react.parse("Thought: 好了。\\nFinal Answer: 晴。").content
    '晴。'
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call

from .base import (
    ZERO_WIDTH_SPACE,
    PromptDialect,
    ToolLike,
    ToolSpec,
    dumps,
    group_tool_results,
    reasoning_of,
    text_of,
    to_tool_specs,
)
from .calls import (
    TOO_DEEP,
    CallEvent,
    ContentDelta,
    ParseEvent,
    brackets_closed,
    call_from_object,
    coerce_args,
    find_unquoted,
    invalid,
    loads_lenient,
    nests_too_deep,
    new_call_id,
)
from .markup import THINK, Block
from .normalize import normalize
from .readers import KNOWN_MARKUP
from .scanner import shown_as_example

__all__ = []

# ReAct's markers, each written once; its blocks and tables are made of them
STOP = "Observation:"
FINAL_ANSWER = "Final Answer:"
QUESTION, ACTION_INPUT = "Question:", "Action Input:"
_THOUGHT, _ACTION = "Thought:", "Action:"

THOUGHT = Block(
    _THOUGHT,
    (_ACTION, FINAL_ANSWER, STOP, _THOUGHT, THINK.open),
    "reasoning",
    consume_close=False,
)
ACTION = Block(
    _ACTION,
    (_THOUGHT, STOP, FINAL_ANSWER, _ACTION, THINK.open),
    "call",
    consume_close=False,
)
# No close marker: everything after an invented observation is dropped (see module doc).
OBSERVATION = Block(STOP, (), "drop")

#: The ReAct system prompt. ``{tool_strings}`` is one tool JSON per line and
#: ``{tool_names}`` the names joined by ", ". The doubled braces are part of the published
#: prompt: it copies LangChain's ``{{{{`` but formats it once, so the model sees ``{{``.
SYSTEM_PROMPT = """
Answer the following questions as best you can. You have access to the following tools:
{tool_strings}


The way you use the tools is by specifying a json blob.
Specifically, this json should have a `action` key (with the name of the tool to use) and a `action_input` key (with the input to the tool going here).

The only values that should be in the "action" field are: {tool_names}

The $JSON_BLOB should only contain a SINGLE action, do NOT return a list of multiple actions. Here is an example of a valid $JSON_BLOB:

```
{{
"action": $TOOL_NAME,
"action_input": $INPUT
}}
```

ALWAYS use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action:
```
$JSON_BLOB
```
Observation: the result of the action
... (this Thought/Action/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question


Begin! Reminder to always use the exact characters `Final Answer` when responding."""
SYSTEM_PROMPT += " \n"  # the published prompt ends so; kept out of the literal to stay visible

#: The argument name a non-object ``action_input`` is given (see module doc).
BARE_INPUT_KEY = "input"

# Markers a JSON string may contain but the blob must not show: JSON spells them with
# a \\u escape, which reads back as the same string.
_FENCE = "```"
_JSON_ESCAPES = (
    (_FENCE, "\\u0060" * len(_FENCE)),
    *(
        (m, f"\\u{ord(m[0]):04x}{m[1:]}")
        for m in (_ACTION, STOP, _THOUGHT, FINAL_ANSWER, THINK.open, *THINK.close)
    ),
)

_FENCE_TAG = re.compile(r"[A-Za-z0-9_+-]*[ \t]*\n?")
_CLASSIC = re.compile(
    r"\s*([^\n{\[`]+?)\s*\n\s*" + re.escape(ACTION_INPUT) + r"\s*(.*)\Z", re.DOTALL
)
_DECODER = json.JSONDecoder()


class ReActDialect(PromptDialect):
    """LangChain's JSON-blob ReAct in prompt text (registry name ``"react"``).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> tool = {"name": "get_weather", "description": "Get weather",
        ...         "inputSchema": {"type": "object", "properties": {"location": {"type": "string"}}}}
        >>> system, user = ReActDialect().render([HumanMessage("北京天气怎么样")], [tool])
        >>> user.content
        'Question: 北京天气怎么样\\n\\n'
        >>> ReActDialect().stop
        ('Observation:',)
    """

    name: ClassVar[str] = "react"
    stop: tuple[str, ...] = (STOP,)
    blocks: tuple[Block, ...] = (THINK, THOUGHT, ACTION, OBSERVATION)
    # "Final Answer:" only introduces the answer; a stray "</think>" is markup
    drop_tokens: tuple[str, ...] = (FINAL_ANSWER, *THINK.close)
    control_markers: tuple[str, ...] = (
        QUESTION,
        _THOUGHT,
        _ACTION,
        ACTION_INPUT,
        STOP,
        FINAL_ANSWER,
        *KNOWN_MARKUP,  # ChatML's and every other format's (<think> among them)
    )

    def grammar(
        self,
        tools: Sequence[ToolLike] | None,
        *,
        require_call: bool = False,
        one_call: bool = False,  # one Action per reply already
        answer_json: Mapping[str, Any] | None = None,
    ) -> str | None:
        """GBNF for a ``Thought:`` line and one ``Action:`` blob, or a ``Final Answer:``.

        The blob names one of ``tools`` and its ``action_input`` follows that tool's
        schema; a thought may precede the final answer. ``require_call`` leaves out the
        final answer. ``None`` without tools.
        """
        if not tools:
            return None
        from .grammar import call_grammar

        return call_grammar(
            tools,
            before=f"{_ACTION}\n{_FENCE}\n",
            after="\n```",
            name_key="action",
            args_key="action_input",
            preamble=_THOUGHT,
            answer=FINAL_ANSWER,
            allow_text=not require_call,
            answer_json=answer_json,
        )

    # ----------------------------------------------------------------- render

    def system_prompt(self, tools: Sequence[ToolLike] | None) -> str:
        """The ReAct system prompt listing ``tools``."""
        specs = to_tool_specs(tools)
        tool_strings = "\n".join(_tool_json(s) for s in specs)
        tool_names = ", ".join(s.name for s in specs)
        # replace(), not format(): the template's literal braces are part of the text
        return SYSTEM_PROMPT.replace("{tool_strings}", tool_strings).replace(
            "{tool_names}", tool_names
        )

    def render(
        self, messages: Sequence[BaseMessage], tools: Sequence[ToolLike] | None
    ) -> list[BaseMessage]:
        """The exact model input: the system prompt, then one user message per turn.

        System messages in ``messages`` go first in the system prompt. Each turn is a
        user message (``Question:`` and its scratchpad), followed, for a finished turn,
        by an assistant message with the final reply. With no tools the same layout is
        used with an empty tool list, so calls already in the history still read the
        same. Content other than text (images) is not part of a ReAct prompt and is left
        out.
        """
        head = [text_of(m.content) for m in messages if isinstance(m, SystemMessage)]
        system = "\n".join([*head, self.system_prompt(tools)])
        out: list[BaseMessage] = [SystemMessage(system)]
        for turn in _turns(messages):
            scratchpad, final = self._scratchpad(turn.steps)
            question = self.neutralise("\n".join(turn.question))
            out.append(HumanMessage(f"{QUESTION} {question}\n\n{scratchpad}"))
            if final is not None:
                out.append(AIMessage(final))
        return out

    def _scratchpad(self, steps: Sequence[BaseMessage]) -> tuple[str, str | None]:
        """A turn's steps as scratchpad text, and its final reply if it has one."""
        items = group_tool_results(steps)
        parts: list[str] = []
        final: str | None = None
        for i, item in enumerate(items):
            if isinstance(item, list):  # results whose call is not in this turn
                parts += [f"{STOP} {self.neutralise(text_of(r.content))}\n" for r in item]
            elif isinstance(item, AIMessage):
                text = self.write_assistant(item)
                has_calls = bool(item.tool_calls or item.invalid_tool_calls)
                if not has_calls and i == len(items) - 1:
                    final = text
                    continue
                nxt = items[i + 1] if i + 1 < len(items) else None
                results = nxt if isinstance(nxt, list) and has_calls else []
                if results:
                    items[i + 1] = []  # written here, next to the calls they answer
                elif not text:
                    continue
                observed = (f"\n{STOP} {self.neutralise(text_of(r.content))}" for r in results)
                parts.append(text + "".join(observed))
                parts.append("\n")
        return "".join(parts), final

    # ----------------------------------------------------------------- write

    def write_assistant(self, message: AIMessage) -> str:
        """One assistant turn as deepseek-v3 writes it under this prompt.

        A turn with calls is ``Thought: ...`` (its reasoning and any text) and one
        ``Action:`` block per call; a final answer is ``Thought: ...`` (its reasoning,
        if any) and ``Final Answer: ...``. Calls that could not be read are written back
        as the model wrote them, so it sees its own mistake next to the error it caused.
        """
        reasoning = reasoning_of(message).strip()
        content = text_of(message.content).strip()
        parts: list[str] = []
        if message.tool_calls or message.invalid_tool_calls:
            thought = "\n\n".join(t for t in (reasoning, content) if t)
            if thought:
                parts.append(f"{_THOUGHT} {thought}")
            parts += [_write_action(c["name"], c["args"]) for c in message.tool_calls]
            for bad in message.invalid_tool_calls:
                raw = str(bad.get("args") or "").strip()
                blob = raw if raw.startswith(_FENCE) else f"{_FENCE}\n{raw}\n{_FENCE}"
                parts.append(f"{_ACTION}\n{blob}")
            return "\n\n".join(parts)
        if reasoning:
            parts.append(f"{_THOUGHT} {reasoning}")
        if content or reasoning:
            parts.append(f"{FINAL_ANSWER} {content}")
        return "\n\n".join(parts)

    # ----------------------------------------------------------------- read

    def parse(self, text: str) -> AIMessage:
        """A whole reply as the graph and ``with_dialect`` read it (:func:`~.normalize.normalize`
        with this dialect: the one reading, whole or streamed); never raises."""
        return normalize(AIMessage(content=text), self)

    def fit_to_tools(self, message: AIMessage, tools: Sequence[ToolLike] | None) -> AIMessage:
        return single_input(fenced_action(message), tools)

    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read one ``Action:`` block: a JSON blob (or several), fenced or not.

        Prose before or after the blob is answer text. If the reply ended before the
        blob's JSON was complete (a reply cut by a token limit), the call is reported as
        invalid instead of being completed: half-written arguments are never run.
        """
        body = _without_stop_leftover(text).strip()
        classic = _CLASSIC.match(body)
        if classic:
            name, args_text = classic.group(1).strip(), _unfence(classic.group(2))[0].strip()
            if (  # cut short (a stop word in a string, a token limit): never completed
                not closed
                and args_text.startswith(("{", "[", '"'))
                and not brackets_closed(args_text)
            ):
                yield invalid(
                    body, f"the reply ended inside the Action Input of {name!r}; not run", name=name
                )
                return
            args: Any = args_text
            if args_text.startswith(("{", "[", '"')):
                with contextlib.suppress(ValueError):  # else kept as the bare string it is
                    args = loads_lenient(args_text)
            yield from _from_blob({"action": name, "action_input": args}, body)
            return

        rest, found = body, False
        while rest:
            piece = _next_blob(rest)
            if piece is None or (found and piece.before.strip()):
                break  # what is left is prose, not another blob
            found = True
            if piece.before.strip():
                yield ContentDelta(_prose(piece.before))
            rest = piece.after
            if not piece.complete and not closed:
                yield invalid(
                    piece.blob,
                    "the reply ended inside the Action's JSON blob; the call was not run",
                )
                continue
            try:
                value = loads_lenient(piece.blob)
            except ValueError as exc:
                yield invalid(piece.blob, f"Action: could not read the JSON blob: {exc}")
                continue
            yield from _from_blob(value, piece.blob)
        if not found:
            yield invalid(
                body,
                'Action: expected a JSON blob {"action": <tool name>, "action_input": <arguments>}',
            )
        elif rest.strip():
            yield ContentDelta(_prose(rest))


# --------------------------------------------------------------------------- render helpers


@dataclass
class _Turn:
    question: list[str] = field(default_factory=list)
    steps: list[BaseMessage] = field(default_factory=list)


def _turns(messages: Sequence[BaseMessage]) -> list[_Turn]:
    """The conversation cut into turns, each opened by the user's message(s)."""
    turns: list[_Turn] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, AIMessage | ToolMessage):
            if not turns:
                turns.append(_Turn())
            turns[-1].steps.append(m)
        elif turns and not turns[-1].steps:
            turns[-1].question.append(text_of(m.content))
        else:
            turns.append(_Turn([text_of(m.content)]))
    return turns


def _tool_json(spec: ToolSpec) -> str:
    # json.dumps(tool["function"]) as published, but non-ASCII kept readable for the model
    return dumps(spec.as_openai()["function"])


def _write_action(name: str, args: Any) -> str:
    blob = json.dumps({"action": name, "action_input": args}, ensure_ascii=False, indent=2)
    for marker, escaped in _JSON_ESCAPES:
        blob = blob.replace(marker, escaped)
    return f"{_ACTION}\n{_FENCE}\n{blob}\n{_FENCE}"


# --------------------------------------------------------------------------- read helpers


@dataclass
class _Blob:
    before: str
    blob: str
    after: str
    complete: bool


def _next_blob(text: str) -> _Blob | None:
    """The first JSON blob in ``text``, fenced or bare, with the text around it."""
    fence = text.find(_FENCE)
    brace = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if fence >= 0 and (brace < 0 or fence < brace):
        inner, after, fenced_closed = _unfence(text[fence:])
        if not inner.strip():
            return None
        return _Blob(text[:fence], inner, after, fenced_closed or brackets_closed(inner))
    if brace < 0:
        return None
    try:
        if nests_too_deep(text):  # left to loads_lenient, which refuses it
            raise ValueError(TOO_DEEP)
        _, end = _DECODER.raw_decode(text, brace)
    except ValueError:
        # broken JSON: the blob runs to its last closing bracket, prose may follow
        end = max(text.rfind("}"), text.rfind("]")) + 1
        if end <= brace:
            end = len(text)
    blob = text[brace:end]
    return _Blob(text[:brace], blob, text[end:], brackets_closed(blob))


def _unfence(text: str) -> tuple[str, str, bool]:
    """``(inside, after, closed)`` for text that may open with a code fence."""
    stripped = text.lstrip()
    if not stripped.startswith(_FENCE):
        return text, "", True
    body = stripped[len(_FENCE) :]
    tag = _FENCE_TAG.match(body)  # a language tag such as "json", then the line break
    if tag:
        body = body[tag.end() :]
    end = find_unquoted(body, _FENCE)  # not a fence inside an argument's string
    if end < 0:
        return body, "", False
    return body[:end], body[end + len(_FENCE) :], True


def _from_blob(value: Any, raw: str) -> Iterator[ParseEvent]:
    """Events for a decoded blob: a call, the final answer, or a list of them."""
    items = value if isinstance(value, list) else [value]
    if not items:
        yield invalid(raw, "Action: the JSON blob is an empty list")
    for item in items:
        if isinstance(item, dict) and "action" not in item and "name" in item:
            yield call_from_object(item, raw=raw)  # {"name", "arguments"} from a tool-call model
            continue
        if not isinstance(item, dict):
            yield invalid(
                raw, f'Action: expected a JSON object with "action", got {type(item).__name__}'
            )
            continue
        name = item.get("action")
        if not isinstance(name, str) or not name.strip():
            yield invalid(raw, 'Action: the JSON blob has no "action" (the tool name)')
            continue
        name = name.strip()
        answer = item.get("action_input")
        if name.lower() == "final answer":
            text = answer if isinstance(answer, str) else dumps(answer)
            if text.strip():
                yield ContentDelta(text)
            continue
        try:
            args = _arguments(answer)
        except ValueError as exc:
            yield invalid(raw, f"Action: bad action_input for {name!r}: {exc}", name=name)
            continue
        yield CallEvent(tool_call(name=name, args=args, id=new_call_id()))


_FENCED_BLOB = re.compile(r"```[A-Za-z]*[ \t]*\n(.*?)\n?```", re.DOTALL)
# MRKL's numbered steps (``Action 1: NAME`` / ``Action 1 Input: ARGS``), LangChain's
# ReAct parser's spelling of the classic form, at the end of the reply
_NUMBERED = re.compile(
    r"(?:\A|\n)[ \t]*Action[ \t]*\d+[ \t]*:[ \t]*([^\n`{\[]+?)[ \t]*\n"
    r"[ \t]*Action[ \t]*\d*[ \t]*Input[ \t]*\d*[ \t]*:[ \t]*(.*)\Z",
    re.DOTALL,
)


def fenced_action(message: AIMessage) -> AIMessage:
    """A reply with no ``Action:`` block whose action stands in another shape LangChain's
    ReAct and JSON-agent parsers read: that action is its call (or its answer).

    The shapes: a fenced action blob (``{"action": ..., "action_input": ...}``, with or
    without a ``json`` tag) on lines of its own at the end of the reply, after its answer
    text or, with no answer text, after its thought; a reply that is only such a blob,
    unfenced; MRKL's numbered ``Action 1: NAME`` / ``Action 1 Input: ARGS`` at the end.
    A blob whose action is ``"Final Answer"`` gives the answer, with no call. A blob in
    the middle of the reply or of its reasoning, inline, or shown as an example is
    quoted; a fence of other JSON stays what it was.
    """
    if message.tool_calls or message.invalid_tool_calls:
        return message
    answer = text_of(message.content)
    if ACTION.open in answer.replace(ZERO_WIDTH_SPACE, ""):
        # the format's own markup left as text (or as the prompt showed it, broken): quoted
        return message
    where = answer if answer.strip() else reasoning_of(message)
    found = _closing_blob(where) or _only_blob(where)
    events: list[ParseEvent] = []
    if found is not None:
        at, blob = found
        try:
            value = loads_lenient(blob)
        except ValueError:
            return message
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(i, dict) and "action" in i for i in items):
            return message
        events = list(_from_blob(value, blob))
    elif (numbered := _numbered(where)) is not None:
        at, name, args = numbered
        events = list(_from_blob({"action": name, "action_input": args}, where[at:]))
    calls = [e.call for e in events if isinstance(e, CallEvent)]
    final = "".join(e.text for e in events if isinstance(e, ContentDelta))
    if not calls and not final:
        return message
    content = where[:at].strip() if where is answer else answer
    if final:  # the answer the blob gives, after any text before it
        content = f"{content}\n\n{final}" if content else final
    return message.model_copy(update={"tool_calls": calls, "content": content})


def _closing_blob(text: str) -> tuple[int, str] | None:
    """Where the fenced blob that ends ``text`` on lines of its own starts, and its JSON
    text, unless an example cue ("for example", "e.g.") introduces it."""
    fence = next(reversed(list(_FENCED_BLOB.finditer(text))), None)
    if fence is None or text[fence.end() :].strip():
        return None
    before = text[: fence.start()].rstrip(" \t")
    if before and not before.endswith("\n"):
        return None  # inline, after words on the same line
    return None if shown_as_example(before) else (fence.start(), fence.group(1))


def _only_blob(text: str) -> tuple[int, str] | None:
    """``text`` when it is nothing but one JSON value (an unfenced blob, as LangChain's
    JSON-agent parser reads a reply)."""
    body = text.strip()
    if not body.startswith(("{", "[")):
        return None
    try:
        json.loads(body)
    except ValueError:
        return None
    return text.find(body[0]), body


def _numbered(text: str) -> tuple[int, str, Any] | None:
    """MRKL's numbered classic form ending ``text``: where it starts, the tool's name and
    its input (JSON where it is JSON, else the text, quotes around it dropped)."""
    found = _NUMBERED.search(text)
    if found is None or shown_as_example(text[: found.start()]):
        return None
    raw = found.group(2).strip()
    args: Any = raw.strip('"')
    if raw.startswith(("{", "[")) and brackets_closed(raw):
        with contextlib.suppress(ValueError):
            args = loads_lenient(raw)
    return found.start(), found.group(1).strip(), args


def single_input(message: AIMessage, tools: Sequence[ToolLike] | None) -> AIMessage:
    """``message`` with a bare ``action_input`` string given to the tool's one parameter.

    A ReAct model often writes ``"action_input": "Paris"`` for a tool that takes one
    argument; it is read as ``{"input": "Paris"}``. Where the tool has exactly one
    required parameter (and none called ``input``), the string becomes that parameter,
    as LangChain's single-input tools do.
    """
    if not tools or not any(set(c["args"]) == {BARE_INPUT_KEY} for c in message.tool_calls):
        return message
    params = {}
    for spec in to_tool_specs(tools):
        schema = spec.parameters or {}
        required = schema.get("required") or []
        if len(required) == 1 and BARE_INPUT_KEY not in (schema.get("properties") or {}):
            params[spec.name] = required[0]
    calls = [
        {**c, "args": {params[c["name"]]: c["args"][BARE_INPUT_KEY]}}
        if set(c["args"]) == {BARE_INPUT_KEY} and c["name"] in params
        else c
        for c in message.tool_calls
    ]
    return message.model_copy(update={"tool_calls": calls})


def _arguments(value: Any) -> dict[str, Any]:
    """``action_input`` as arguments: an object as it is, anything else under ``"input"``.

    Raises:
        ValueError: for a JSON object string cut short (never completed and run).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip().startswith("{"):
        if not brackets_closed(value):
            raise ValueError("the JSON object string is incomplete")
        try:
            return coerce_args(value)
        except ValueError:
            pass  # "{" opening prose: a bare string after all
    return {BARE_INPUT_KEY: value}


def _without_stop_leftover(text: str) -> str:
    """``text`` without a trailing piece of ``Observation:``.

    Some providers cut the stop sequence short and leave e.g. ``"\\nObservation"`` at the
    end of the reply (deepseek-v3 served by DashScope does).
    """
    stripped = text.rstrip()
    for k in range(len(STOP) - 1, 0, -1):
        if stripped.endswith(STOP[:k]):
            head = stripped[:-k]
            if not head or head[-1].isspace():
                return head
    return text


def _prose(text: str) -> str:
    return text.replace(THINK.close[0], "")
