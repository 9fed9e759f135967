"""Qwen's ✿FUNCTION✿ dialect: the tool prompt Qwen models were trained on, and its parser.

The model sees its tools in the system prompt, under ``# 工具`` (``# Tools`` in English),
one ``### name`` block per tool, followed by the command format::

    ✿FUNCTION✿: get_weather
    ✿ARGS✿: {"city": "上海"}
    ✿RESULT✿: 多云，温度 25°C
    ✿RETURN✿: 上海今天多云，25°C。

The texts are those of Qwen-Agent's ``qwen_fncall_prompt.py``, byte for byte, full-width
``：`` and ``，`` included. Earlier calls and their results are folded into the assistant
turn as text, exactly as Qwen-Agent does; the model stops at ``✿RESULT✿`` (a call is
complete) or ``✿RETURN✿``. The format's markers, and the reading of a ``✿FUNCTION✿``
block, are :mod:`~fncall_graph.adapters.formats.readers.qwen`'s.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> d = QwenDialect(lang="zh", parallel=False)
    >>> tool = {"name": "get_weather", "description": "获取指定城市的天气信息",
    ...         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    >>> system, user = d.render([HumanMessage("上海天气如何")], [tool])
    >>> system.content.splitlines()[0]
    '# 工具'
    >>> msg = d.parse('✿FUNCTION✿: get_weather\\n✿ARGS✿: {"city": "上海"}')
    >>> msg.tool_calls[0]["name"], msg.tool_calls[0]["args"]
    ('get_weather', {'city': '上海'})
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from .base import (
    PromptDialect,
    ToolLike,
    ToolSpec,
    dumps,
    group_tool_results,
    text_of,
    to_tool_specs,
)
from .calls import ParseEvent, StreamParser
from .markup import THINK, Block
from .normalize import normalize
from .readers import KNOWN_MARKUP
from .readers.qwen import COLONS, FN_ARGS, FN_EXIT, FN_NAME, FN_RESULT, QWEN_MARKERS, read_calls
from .scanner import MarkupStreamParser

__all__ = []


Lang = Literal["en", "zh"]

# --------------------------------------------------------------------------- prompt texts


@dataclass(frozen=True)
class QwenPhrases:
    """The words of the ✿ prompt in one language; everything else is shared layout.

    ``{i}`` stands for a tool's number in the parallel template, ``{tool_names}`` for the
    comma-joined tool names.
    """

    tools_title: str
    tools_intro: str
    tool_line: str
    args_format: str
    single_intro: str
    single_name: str
    single_input: str
    single_result: str
    parallel_intro: str
    nth_name: str
    one_of: str
    nth_input: str
    nth_result: str
    reply: str


PHRASES: dict[str, QwenPhrases] = {
    "zh": QwenPhrases(
        tools_title="# 工具",
        tools_intro="## 你拥有如下工具：",
        tool_line="{name}: {description} 输入参数：{parameters} {args_format}",
        args_format="此工具的输入应为JSON对象。",
        single_intro="## 你可以在回复中插入零次、一次或多次以下命令以调用工具：",
        single_name="工具名称，必须是[{tool_names}]之一。",
        single_input="工具输入",
        single_result="工具结果",
        parallel_intro="## 你可以在回复中插入以下命令以并行调用N个工具：",
        nth_name="工具{i}的名称",
        one_of="，必须是[{tool_names}]之一",
        nth_input="工具{i}的输入",
        nth_result="工具{i}的结果",
        reply="根据工具结果进行回复，需将图片用![](url)渲染出来",
    ),
    "en": QwenPhrases(
        tools_title="# Tools",
        tools_intro="## You have access to the following tools:",
        tool_line="{name}: {description} Parameters: {parameters} {args_format}",
        args_format="Format the arguments as a JSON object.",
        single_intro=(
            "## When you need to call a tool, please insert the following command in your "
            "reply, which can be called zero or multiple times according to your needs:"
        ),
        single_name="The tool to use, should be one of [{tool_names}]",
        single_input="The input of the tool",
        single_result="Tool results",
        parallel_intro=(
            "## Insert the following command in your reply when you need to call N tools "
            "in parallel:"
        ),
        nth_name="The name of tool {i}",
        one_of=", should be one of [{tool_names}]",
        nth_input="The input of tool {i}",
        nth_result="The result of tool {i}",
        reply="Reply based on tool results. Images need to be rendered as ![](url)",
    ),
}

# Which numbered lines the parallel template shows: 1, 2, an ellipsis, N.
_PARALLEL_ROWS: tuple[str, ...] = ("1", "2", "...", "N")


def _command_lines(p: QwenPhrases, parallel: bool) -> list[str]:
    """The command-format section of the prompt, still holding ``{tool_names}``."""
    if not parallel:
        return [
            p.single_intro,
            "",
            f"{FN_NAME}: {p.single_name}",
            f"{FN_ARGS}: {p.single_input}",
            f"{FN_RESULT}: {p.single_result}",
            f"{FN_EXIT}: {p.reply}",
        ]
    calls: list[str] = []
    results: list[str] = []
    for i in _PARALLEL_ROWS:
        if i == "...":
            calls.append("...")
            results.append("...")
            continue
        name = p.nth_name.format(i=i) + (p.one_of if i == "1" else "")
        calls += [f"{FN_NAME}: {name}", f"{FN_ARGS}: {p.nth_input.format(i=i)}"]
        results.append(f"{FN_RESULT}: {p.nth_result.format(i=i)}")
    return [p.parallel_intro, "", *calls, *results, f"{FN_EXIT}: {p.reply}"]


def describe_tool(spec: ToolSpec, lang: Lang) -> str:
    """One tool's ``### name`` block, as Qwen-Agent's ``get_function_description`` writes it."""
    p = PHRASES[lang]
    line = p.tool_line.format(
        name=spec.name,
        description=spec.description,
        parameters=dumps(spec.parameters),
        args_format=p.args_format,
    )
    return f"### {spec.name}\n\n{line}".rstrip()


def tool_system_prompt(tools: Sequence[ToolLike], *, lang: Lang, parallel: bool) -> str:
    """The tool section of the system prompt for ``tools``."""
    specs = to_tool_specs(tools)
    p = PHRASES[lang]
    descs = "\n\n".join(describe_tool(s, lang) for s in specs)
    names = ",".join(s.name for s in specs)
    commands = "\n".join(_command_lines(p, parallel)).replace("{tool_names}", names)
    return f"{p.tools_title}\n\n{p.tools_intro}\n\n{descs}\n\n{commands}"


_CHINESE = re.compile(r"[\u4e00-\u9fff]")


# --------------------------------------------------------------------------- dialect


class QwenDialect(PromptDialect):
    """Qwen-Agent's ✿FUNCTION✿ / ✿ARGS✿ / ✿RESULT✿ / ✿RETURN✿ prompt dialect.

    Args:
        lang: ``"zh"`` or ``"en"`` prompt text; ``"auto"`` picks ``"zh"`` when a system
            or user message holds Chinese characters, as Qwen-Agent does.
        parallel: offer N calls per turn (Qwen-Agent's ``parallel_function_calls``) or, with
            ``False``, ask for one call at a time. Only the prompt changes: a reply with
            several calls still gives all of them (Qwen-Agent keeps the first), so that
            ``parse(write_assistant(m))`` always gives back the calls of ``m``.
        fold_continuation: when the history ends inside an assistant turn (tool results
            waiting for a reply), Qwen-Agent asks the model to continue that turn by
            appending its text to the last user message after a blank line. ``False``
            leaves it as a final ``AIMessage`` for servers that continue (prefill) the
            last assistant message.

    Reading replies:
        * text before the first call and after ``✿RETURN✿:`` is content; ``<think>`` is
          reasoning;
        * each ``✿FUNCTION✿: name`` is a call, ended by the next ``✿FUNCTION✿``,
          ``✿RESULT✿`` or ``✿RETURN✿`` or the end of the reply; several ``✿ARGS✿``
          under one name are several calls of that tool. Markers inside the arguments'
          JSON strings are argument text;
        * a missing ``✿ARGS✿`` line means no arguments (``{}``) when nothing else follows
          the name, otherwise the call is invalid; text after the arguments' JSON is the
          model running on past its call and is dropped;
        * a ``✿RESULT✿`` the model wrote itself is invented: it and everything after it
          are dropped, which is what the ``✿RESULT✿`` stop sequence would have done;
        * a reply that starts with ``:`` continues a prompt that ended in ``✿RETURN✿``;
          the colon is dropped.

    Example:
        >>> d = QwenDialect(lang="en")
        >>> m = d.parse('Let me check.\\n✿FUNCTION✿: get_weather\\n✿ARGS✿: {"city": "Paris"}')
        >>> m.content, [c["name"] for c in m.tool_calls]
        ('Let me check.', ['get_weather'])
    """

    name = "qwen"
    stop: tuple[str, ...] = (FN_RESULT, FN_EXIT)
    # its own, ChatML's and every other format's (<think> among them)
    control_markers: tuple[str, ...] = (*QWEN_MARKERS, *KNOWN_MARKUP)
    blocks: tuple[Block, ...] = (
        THINK,
        # A call ends at a marker that starts a line: JSON strings cannot hold a raw
        # newline, so markers inside argument strings do not end it early.
        Block(FN_NAME, tuple("\n" + m for m in (FN_NAME, FN_RESULT, FN_EXIT)), "call", False),
        Block(FN_RESULT, (), "drop"),
    )
    # The marker and its colon go; the text after it stays. A stray ✿ARGS✿ outside a
    # call has no tool name to belong to, and a stray </think> closes nothing: only the
    # markers are removed.
    drop_tokens: tuple[str, ...] = (
        *(m + c for m in (FN_EXIT, FN_ARGS) for c in ("", *COLONS)),
        *THINK.close,
    )

    def __init__(
        self,
        lang: Literal["en", "zh", "auto"] = "auto",
        parallel: bool = True,
        *,
        fold_continuation: bool = True,
    ) -> None:
        if lang not in ("en", "zh", "auto"):
            raise ValueError(f"lang must be 'en', 'zh' or 'auto', not {lang!r}")
        self.lang = lang
        self.parallel = bool(parallel)
        self.fold_continuation = fold_continuation

    def __repr__(self) -> str:
        return f"QwenDialect(lang={self.lang!r}, parallel={self.parallel})"

    def grammar(
        self,
        tools: Sequence[ToolLike] | None,
        *,
        require_call: bool = False,
        one_call: bool = False,
        answer_json: Mapping[str, Any] | None = None,
    ) -> str | None:
        """GBNF for a plain answer, or ``✿FUNCTION✿``/``✿ARGS✿`` calls naming one of ``tools``.

        Each call's arguments follow that tool's schema; ``parallel=False`` admits one
        call per reply, as does ``one_call``. ``require_call`` leaves out the plain answer.
        ``None`` without tools.
        """
        if not tools:
            return None
        from .grammar import qwen_call_grammar

        return qwen_call_grammar(
            tools,
            max_calls=None if self.parallel and not one_call else 1,
            allow_text=not require_call,
            answer_json=answer_json,
        )

    # -- rendering

    def language(self, messages: Sequence[BaseMessage]) -> Lang:
        """The prompt language for ``messages`` (resolves ``lang="auto"``)."""
        if self.lang != "auto":
            return self.lang
        for m in messages:
            if isinstance(m, SystemMessage | HumanMessage) and _CHINESE.search(text_of(m.content)):
                return "zh"
        return "en"

    def write_assistant(self, message: AIMessage) -> str:
        """The text of one assistant turn: its content, then each call on two lines.

        Invalid calls are written back as the model wrote them, so it can see what
        the error results that follow refer to.

        Example:
            >>> from langchain_core.messages import AIMessage
            >>> QwenDialect().write_assistant(AIMessage("", tool_calls=[
            ...     {"name": "get_weather", "args": {"city": "上海"}, "id": "1"}]))
            '✿FUNCTION✿: get_weather\\n✿ARGS✿: {"city": "上海"}'
        """
        parts = [text_of(message.content)] if text_of(message.content) else []
        parts += [
            f"{FN_NAME}: {c['name']}\n{FN_ARGS}: {dumps(c['args'])}" for c in message.tool_calls
        ]
        parts += [
            f"{FN_NAME}: {c.get('name') or ''}\n{FN_ARGS}: {c.get('args') or ''}"
            for c in message.invalid_tool_calls
        ]
        return "\n".join(parts)

    def render(
        self, messages: Sequence[BaseMessage], tools: Sequence[ToolLike] | None
    ) -> list[BaseMessage]:
        """The model input: Qwen-Agent's ``preprocess_fncall_messages`` for this history.

        Calls, results and the reply after them share one assistant turn
        (``…✿RESULT✿: r\\n✿RETURN✿: reply``). Without tools no tool section is added.
        """
        turns: list[list[Any]] = []  # [role, text]; role is "system", "user" or "ai"
        for item in group_tool_results(messages):
            if isinstance(item, list):
                self._write_results(turns, item)
            elif isinstance(item, AIMessage):
                self._write_ai(turns, item)
            elif isinstance(item, SystemMessage):
                turns.append(["system", text_of(item.content)])
            else:
                turns.append(["user", self.neutralise(text_of(item.content))])

        if tools:
            lang = self.language(messages)
            prompt = tool_system_prompt(tools, lang=lang, parallel=self.parallel)
            if turns and turns[0][0] == "system":
                turns[0][1] += "\n\n" + prompt
            else:
                turns.insert(0, ["system", prompt])

        if turns and turns[-1][0] == "ai":
            # ": " may merge with the next word into one token; the model writes it.
            if turns[-1][1].endswith(f"{FN_EXIT}: "):
                turns[-1][1] = turns[-1][1][:-2]
            if self.fold_continuation:
                self._fold_last(turns)

        kinds = {"system": SystemMessage, "user": HumanMessage, "ai": AIMessage}
        return [kinds[role](content=text) for role, text in turns]

    def _write_ai(self, turns: list[list[Any]], message: AIMessage) -> None:
        text = self.write_assistant(message)
        if turns and turns[-1][0] == "ai":
            # Continuing an assistant turn: content follows "✿RETURN✿: " directly, a
            # call starts on a new line.
            turns[-1][1] += text if text_of(message.content) or not text else "\n" + text
        else:
            turns.append(["ai", text])

    def _write_results(self, turns: list[list[Any]], results: list[ToolMessage]) -> None:
        if not turns or turns[-1][0] != "ai":
            turns.append(["ai", ""])  # results without their call: keep them readable
        exit_ = f"\n{FN_EXIT}: "
        for result in results:
            text = turns[-1][1]
            if text.endswith(exit_):  # parallel results share one ✿RETURN✿
                text = text[: -len(exit_)]
            result_text = self.neutralise(text_of(result.content))
            turns[-1][1] = f"{text}\n{FN_RESULT}: {result_text}{exit_}"

    @staticmethod
    def _fold_last(turns: list[list[Any]]) -> None:
        # Chat APIs cannot continue an assistant message, so Qwen-Agent
        # (simulate_response_completion_with_chat) moves it into the user turn.
        bot = turns.pop()[1]
        if turns and turns[-1][0] == "user":
            turns[-1][1] += "\n\n" + bot
        else:
            turns.append(["user", bot])

    # -- parsing

    def parse(self, text: str) -> AIMessage:
        """A whole reply as the graph and ``with_dialect`` read it (:func:`~.normalize.normalize`
        with this dialect: the one reading, whole or streamed); never raises."""
        return normalize(AIMessage(content=text), self)

    def read_call(self, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        """Read ``: name\\n✿ARGS✿: {json}`` (``:`` or ``：``, any spacing)."""
        return read_calls(text, closed=closed)

    def stream_parser(self) -> StreamParser:
        return _QwenStreamParser(self)


class _QwenStreamParser(StreamParser):
    """The shared scanner, minus the ``:`` a reply continuing ``✿RETURN✿`` starts with."""

    def __init__(self, dialect: QwenDialect) -> None:
        self._inner = MarkupStreamParser(dialect)
        self._lead: str | None = ""  # leading text until its first character is known

    def feed(self, chunk: str) -> list[ParseEvent]:
        if self._lead is not None:
            self._lead += chunk
            head = self._lead.lstrip()
            if not head:
                return []
            self._lead, chunk = None, head[1:] if head[0] in COLONS else head
        return self._inner.feed(chunk)

    def close(self) -> list[ParseEvent]:
        self._lead = None
        return self._inner.close()

    def message(self) -> AIMessage:
        return self._inner.message()
