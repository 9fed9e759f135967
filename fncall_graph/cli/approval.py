"""Approvals at the terminal: a person decides on each gated tool call."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from fncall_graph.guarantees import bind_decisions

from .resources import CLIError
from .terminal import UI, shown

__all__ = []


class TerminalReview:
    """Answers a graph's approval interrupts by asking at the terminal.

    The request has the shape of LangChain's ``HumanInTheLoopMiddleware``
    (``action_requests`` and ``review_configs``); each gated call is shown with its
    arguments and answered ``y`` (run it), ``e`` (edit its arguments) or ``n`` (reject,
    with a reason the model reads).

    Args:
        ui: where to ask.
        thread_id: the thread, named when input ends before an answer (to resume later).
        unattended: no person answers (``demo`` with input not from a terminal): each
            gated call is rejected, the model is told why, and the transcript says what
            would have run.
    """

    #: What the model reads for a call rejected with no person there to decide.
    UNATTENDED = (
        "Not run: this tool needs a person's approval and no one is at the terminal. "
        "Answer with what you know, and say what you would have done."
    )

    def __init__(self, ui: UI, thread_id: str, *, unattended: bool = False) -> None:
        self.ui = ui
        self.thread_id = thread_id
        self.unattended = unattended
        self.rejected: set[str] = set()

    def decide(self, interrupts: Sequence[Any]) -> Any:
        """The resume value for ``interrupts``, asked at the terminal; the ids of the calls
        rejected are in :attr:`rejected` afterwards."""
        self.rejected = set()
        answers = {i.id: self._review(i.value) for i in interrupts}
        if len(interrupts) == 1:
            return next(iter(answers.values()))
        return answers

    def _review(self, request: Any) -> dict[str, Any]:
        if isinstance(request, Mapping) and isinstance(request.get("mcp_elicitation"), Mapping):
            return self._answer(request["mcp_elicitation"])
        if not isinstance(request, Mapping) or "action_requests" not in request:
            raise CLIError(
                f"the graph paused with a question this command cannot answer: {request!r}"
            )
        actions = list(request["action_requests"])
        configs = list(request.get("review_configs") or [])
        decisions = []
        for i, action in enumerate(actions):
            allowed = ["approve", "edit", "reject"]
            if i < len(configs):
                allowed = list(configs[i].get("allowed_decisions") or allowed)
            decision = self._decision(action, allowed)
            if decision["type"] == "reject" and action.get("tool_call_id"):
                self.rejected.add(action["tool_call_id"])
            decisions.append(decision)
        # bound to the review shown: a stale or repeated answer is refused, not applied
        return bind_decisions(request, decisions)

    def _decision(self, action: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
        keys = {"y": "approve", "e": "edit", "n": "reject"}
        offered = "/".join(k for k, v in keys.items() if v in allowed)
        name, args = action["name"], action.get("args") or {}
        # what will run, as it is: a name's or an argument's controls written out, so
        # neither can rewrite the question
        call = f"{shown(name)} {shown(json.dumps(args, ensure_ascii=False))}"
        if self.unattended and "reject" in allowed:
            self.ui.heading(
                f"(needs approval, no one at the terminal: would have run {call}; rejected)"
            )
            return {"type": "reject", "message": self.UNATTENDED}
        question = f"run {call}? [{offered}] "
        meanings = {"y": "run it", "e": "edit its arguments", "n": "do not run it"}
        said = ", ".join(f"{k} ({meanings[k]})" for k in offered.split("/"))
        try:
            while True:
                typed = self.ui.ask(question).strip()
                # y, yes, e, edit, n, no: the first letter of a word
                kind = keys.get(typed[:1].lower()) if typed.isalpha() else None
                if kind is None or kind not in allowed:
                    # said, not asked again in silence: arguments typed here are not taken
                    hint = "; type e first, then the arguments" if typed.startswith("{") else ""
                    self.ui.note(f"answer {said}{hint if 'e' in offered else ''}")
                    continue
                if kind == "approve":
                    return {"type": "approve"}
                if kind == "reject":
                    reason = self.ui.ask("reason (sent to the model): ").strip()
                    return {"type": "reject", "message": reason or None}
                return {
                    "type": "edit",
                    "edited_action": {"name": name, "args": self._edited_args(args)},
                }
        except EOFError as exc:
            raise CLIError(
                f"{shown(name)} needs approval and input has ended; the thread is saved: "
                f"answer later with --resume {self.thread_id}"
            ) from exc

    def _answer(self, question: Mapping[str, Any]) -> dict[str, Any]:
        """An MCP server's question during a call: the person fills in its fields (a
        field's default, shown in brackets, is taken when the line is left empty), or
        for a URL question opens the page."""
        schema = question.get("requested_schema") or {}
        fields = schema.get("properties") or {}
        defaults = dict(question.get("defaults") or {})
        required = schema.get("required") or []
        tool = shown(str(question.get("tool")))
        self.ui.note(f"{tool} asks: {question.get('message')}")
        try:
            if question.get("mode") == "url":
                self.ui.note(f"  open {shown(str(question.get('url')))}")
                done = self.ui.ask("done there? [y/n] ").strip().lower()[:1] == "y"
                return {"action": "accept"} if done else {"action": "decline"}
            if self.ui.ask("answer? [y/n] ").strip().lower()[:1] != "y":
                return {"action": "decline"}
            content: dict[str, Any] = {}
            for name, spec in fields.items():
                kind = spec.get("type", "string")
                choices = list(spec.get("enum") or [])
                said = "/".join(map(str, choices)) if choices else str(kind)
                if name in defaults:
                    said += f", default {json.dumps(defaults[name], ensure_ascii=False)}"
                said = shown(said)  # the server's words, in the one line of the question
                title = shown(str(spec.get("title") or name))
                while True:
                    text = self.ui.ask(f"  {title} ({said}): ").strip()
                    if not text and name in defaults:
                        content[name] = defaults[name]
                        break
                    if not text and name not in required:
                        break
                    value = _field_value(text, kind)
                    if value is not None and (not choices or value in choices):
                        content[name] = value
                        break
                    self.ui.note(f"not {'one of ' + said if choices else 'a ' + kind}; try again")
            return {"action": "accept", "content": content}
        except EOFError as exc:
            raise CLIError(
                f"{tool} asks a question and input has ended; the thread is "
                f"saved: answer later with --resume {self.thread_id}"
            ) from exc

    def _edited_args(self, current: Any) -> dict[str, Any]:
        """New arguments typed as a JSON object, asked until they are one; the current
        ones are shown to start from."""
        self.ui.note(f"current arguments: {shown(json.dumps(current, ensure_ascii=False))}")
        while True:
            text = self.ui.ask("new arguments as a JSON object (empty: keep them): ").strip()
            if not text:
                return dict(current)
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                self.ui.note(f"not JSON ({exc}); try again")
                continue
            if isinstance(value, dict):
                return value
            self.ui.note("the arguments must be a JSON object; try again")


def _field_value(text: str, kind: str) -> Any:
    """A form field typed at the terminal, as its JSON type; ``None`` if it is not one."""
    if kind == "boolean":
        return {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}.get(
            text.lower()
        )
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            return None
    return text
