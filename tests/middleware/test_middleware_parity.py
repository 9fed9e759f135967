"""The same short programs, from LangChain's documentation of agent middleware, run on
``langchain.agents.create_agent`` and on ``create_fncall_graph`` with the same replayed
model: the histories they leave (each message's content, tool calls, a tool result's
content and status) and the ``structured_response`` are compared, and so is what the
model was asked (how many calls, with which tools). Where the two differ by the
product's design, the test says so and asserts the difference (docs/create-agent.md's
table lists them)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ModelRequest,
    ModelResponse,
    ModelRetryMiddleware,
    SummarizationMiddleware,
    ToolCallLimitMiddleware,
    after_model,
    before_model,
    dynamic_prompt,
    wrap_model_call,
    wrap_tool_call,
)
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel, PrivateAttr

from fncall_graph import create_fncall_graph
from fncall_graph.replay import ReplayChatModel


def calls(*pairs: tuple[str, dict[str, Any]], prefix: str = "c") -> dict[str, Any]:
    """A native reply calling each ``(name, args)``, ids ``c0``, ``c1``, ..."""
    return {
        "content": "",
        "tool_calls": [
            {"name": n, "args": a, "id": f"{prefix}{i}"} for i, (n, a) in enumerate(pairs)
        ],
    }


def mail_tools(ran: list[str]) -> list[BaseTool]:
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        ran.append(f"send_email:{to}")
        return f"sent to {to}"

    @tool
    def read_inbox(folder: str) -> str:
        """Read a folder of the inbox."""
        ran.append(f"read_inbox:{folder}")
        return f"3 mails in {folder}"

    return [send_email, read_inbox]


TWO = calls(("send_email", {"to": "alice", "body": "hi"}), ("read_inbox", {"folder": "in"}))


def shape(messages: Sequence[BaseMessage]) -> list[tuple[Any, ...]]:
    """What a history says, without ids: each message's kind, text and calls."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        if isinstance(m, AIMessage):
            tc = [(c["name"], c["args"], c["id"]) for c in m.tool_calls]
            out.append(("ai", m.text, tc))
        elif isinstance(m, ToolMessage):
            out.append(("tool", m.tool_call_id, m.text, m.status))
        else:
            out.append((m.type, m.text))
    return out


class Run:
    """One program run on one factory: what it left, what the model was asked."""

    def __init__(self, factory: str, outputs: list[Any], **options: Any) -> None:
        self.aio = options.pop("aio", False)  # ainvoke instead of invoke
        self.ran: list[str] = []
        self.model = options.pop("model", None) or ReplayChatModel(outputs)
        tools = options.pop("tools", None) or mail_tools(self.ran)
        saver = InMemorySaver()
        if factory == "create_agent":
            self.graph = create_agent(self.model, tools, checkpointer=saver, **options)
        else:
            self.graph = create_fncall_graph(
                self.model,
                tools,
                dialect=options.pop("dialect", "native"),
                checkpointer=saver,
                **options,
            )
        self.config: dict[str, Any] = {"configurable": {"thread_id": "t"}}
        self.out: dict[str, Any] = {}

    def send(self, value: Any) -> dict[str, Any]:
        payload = value if isinstance(value, Command) else {"messages": [("user", value)]}
        if self.aio:
            self.out = asyncio.run(self.graph.ainvoke(payload, self.config))
        else:
            self.out = self.graph.invoke(payload, self.config)
        return self.out

    @property
    def history(self) -> list[tuple[Any, ...]]:
        return shape(self.graph.get_state(self.config).values["messages"])

    @property
    def structured(self) -> Any:
        return self.graph.get_state(self.config).values.get("structured_response")

    @property
    def bound(self) -> list[list[str]]:
        """The tool names each model call was bound with."""
        return [[t["function"]["name"] for t in c.get("tools") or []] for c in self.model.calls]


FACTORIES = ("create_agent", "create_fncall_graph")


def both(program: Callable[[str], Run]) -> tuple[Run, Run]:
    agent, graph = (program(f) for f in FACTORIES)
    return agent, graph


def assert_same(agent: Run, graph: Run) -> None:
    assert graph.history == agent.history
    assert sorted(graph.ran) == sorted(agent.ran)  # calls of one reply run at once
    assert len(graph.model.inputs) == len(agent.model.inputs)
    assert graph.structured == agent.structured


# --------------------------------------------------------------------- human in the loop


@pytest.mark.parametrize(
    "decision",
    [
        {"type": "approve"},
        {"type": "reject", "message": "not today"},
        {"type": "reject"},
        {
            "type": "edit",
            "edited_action": {"name": "send_email", "args": {"to": "bob", "body": "hi"}},
        },
    ],
    ids=["approve", "reject-with-reason", "reject", "edit"],
)
@pytest.mark.parametrize("aio", [False, True], ids=["invoke", "ainvoke"])
def test_human_in_the_loop_decides_one_of_two_calls_and_the_other_runs(decision, aio):
    def program(factory: str) -> Run:
        hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
        run = Run(factory, [TWO, "done"], middleware=[hitl], aio=aio)
        [pending] = run.send("mail alice, read my inbox")["__interrupt__"]
        assert [a["name"] for a in pending.value["action_requests"]] == ["send_email"]
        run.send(Command(resume={"decisions": [decision]}))
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert "read_inbox:in" in graph.ran  # the ungated call of the same reply ran
    assert graph.history[-1] == ("ai", "done", [])  # and the model was called again


# --------------------------------------------------------------------- tool call limits


@pytest.mark.parametrize("exit_behavior", ["continue", "end"])
def test_tool_call_limit_per_run(exit_behavior):
    three = calls(("read_inbox", {"folder": "a"}), ("read_inbox", {"folder": "b"}))
    more = calls(("read_inbox", {"folder": "c"}), prefix="d")

    def program(factory: str) -> Run:
        limit = ToolCallLimitMiddleware(
            tool_name="read_inbox", run_limit=1, exit_behavior=exit_behavior
        )
        run = Run(factory, [three, more, "done"], middleware=[limit])
        run.send("read a and b")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    # "end": every call of the reply is answered "not run", and the run ends
    assert graph.ran == (["read_inbox:a"] if exit_behavior == "continue" else [])


def test_tool_call_limit_per_thread_across_turns():
    def program(factory: str) -> Run:
        limit = ToolCallLimitMiddleware(thread_limit=2, exit_behavior="continue")
        outputs = [
            calls(("read_inbox", {"folder": "a"}), prefix="a"),
            "one",
            calls(("read_inbox", {"folder": "b"}), ("read_inbox", {"folder": "c"}), prefix="b"),
            "two",
        ]
        run = Run(factory, outputs, middleware=[limit])
        run.send("read a")
        run.send("read b and c")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.ran == ["read_inbox:a", "read_inbox:b"]


def test_tool_call_limit_that_raises():
    from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError

    for factory in FACTORIES:
        limit = ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")
        run = Run(factory, [TWO, "done"], middleware=[limit])
        with pytest.raises(ToolCallLimitExceededError):
            run.send("go")
        assert run.ran == []


# --------------------------------------------------------------------- model calls


class FlakyReplay(ReplayChatModel):
    """Raises on its first ``failures`` calls, then replays."""

    failures: int = 1
    _failed: list[int] = PrivateAttr(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if len(self._failed) < self.failures:
            self._failed.append(1)
            raise ConnectionError("the provider is busy")
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_model_retry_middleware_calls_the_model_again():
    def program(factory: str) -> Run:
        retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
        model = FlakyReplay([calls(("read_inbox", {"folder": "in"})), "done"])
        run = Run(factory, [], model=model, middleware=[retry])
        run.send("read")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.ran == ["read_inbox:in"]


def test_summarization_middleware_replaces_old_messages():
    def program(factory: str) -> Run:
        summarizer = ReplayChatModel(["They talked about mail."])
        summary = SummarizationMiddleware(
            model=summarizer, trigger=("messages", 4), keep=("messages", 2)
        )
        outputs = ["first", "second", "third"]
        run = Run(factory, outputs, middleware=[summary])
        for q in ("one", "two", "three"):
            run.send(q)
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert "They talked about mail." in str(graph.model.inputs[-1])


def test_dynamic_prompt_sets_the_system_message():
    @dynamic_prompt
    def polite(request: ModelRequest) -> str:
        return f"Answer politely; {len(request.messages)} messages so far."

    def program(factory: str) -> Run:
        run = Run(factory, [calls(("read_inbox", {"folder": "in"})), "done"], middleware=[polite])
        run.send("read")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    systems = [[m.text for m in i if m.type == "system"] for i in graph.model.inputs]
    assert systems == [[m.text for m in i if m.type == "system"] for i in agent.model.inputs]
    assert systems[-1] == ["Answer politely; 3 messages so far."]


def test_decorated_hooks_run_where_create_agent_runs_them():
    def program(factory: str) -> Run:
        seen: list[str] = []

        @before_model
        def count(state: Any, runtime: Any) -> None:
            seen.append(f"before:{len(state['messages'])}")

        @after_model
        def stamp(state: Any, runtime: Any) -> dict[str, Any] | None:
            last = state["messages"][-1]
            seen.append(f"after:{len(last.tool_calls)}")
            return None

        @wrap_model_call
        def tagged(request: ModelRequest, handler: Any) -> ModelResponse:
            response = handler(request)
            seen.append("wrapped")
            return response

        @wrap_tool_call
        def shout(request: Any, handler: Any) -> Any:
            result = handler(request)
            return ToolMessage(
                content=str(result.content).upper(),
                tool_call_id=result.tool_call_id,
                name=result.name,
            )

        run = Run(
            factory,
            [calls(("read_inbox", {"folder": "in"})), "done"],
            middleware=[count, stamp, tagged, shout],
        )
        run.send("read")
        run.seen = seen  # type: ignore[attr-defined]
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.seen == agent.seen  # type: ignore[attr-defined]
    assert ("tool", "c0", "3 MAILS IN IN", "success") in graph.history


def test_an_after_model_hook_that_answers_every_call_sends_the_model_again():
    class AnswerAll(AgentMiddleware):
        def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            last = state["messages"][-1]
            if not last.tool_calls:
                return None
            return {
                "messages": [
                    ToolMessage("answered by a hook", tool_call_id=c["id"], name=c["name"])
                    for c in last.tool_calls
                ]
            }

    def program(factory: str) -> Run:
        run = Run(factory, [TWO, "done"], middleware=[AnswerAll()])
        run.send("go")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.ran == [] and graph.history[-1] == ("ai", "done", [])


# --------------------------------------------------------------------- structured output


class Contact(BaseModel):
    name: str
    email: str


CONTACT = {"name": "Alice", "email": "alice@example.com"}


@pytest.mark.parametrize("aio", [False, True], ids=["invoke", "ainvoke"])
def test_tool_strategy_binds_the_schema_tool_and_its_call_ends_the_run(aio):
    def program(factory: str) -> Run:
        outputs = [
            calls(("read_inbox", {"folder": "in"})),
            calls(("Contact", CONTACT), prefix="s"),
        ]
        run = Run(factory, outputs, response_format=ToolStrategy(Contact), aio=aio)
        run.send("who wrote to me?")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.structured == Contact(**CONTACT)
    assert graph.bound == agent.bound == [["send_email", "read_inbox", "Contact"]] * 2
    assert [c.get("tool_choice") for c in graph.model.calls] == ["any", "any"]


def test_tool_strategy_beside_a_tool_call_ends_the_run_once_the_tool_ran():
    def program(factory: str) -> Run:
        both_calls = calls(("read_inbox", {"folder": "in"}), ("Contact", CONTACT))
        run = Run(factory, [both_calls], response_format=ToolStrategy(Contact))
        run.send("read, then who?")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.ran == ["read_inbox:in"] and graph.structured == Contact(**CONTACT)
    assert len(graph.model.inputs) == 1


def test_tool_strategy_with_human_in_the_loop():
    def program(factory: str) -> Run:
        hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
        outputs = [TWO, calls(("Contact", CONTACT), prefix="s")]
        run = Run(factory, outputs, middleware=[hitl], response_format=ToolStrategy(Contact))
        run.send("mail alice, read my inbox, then who?")
        run.send(Command(resume={"decisions": [{"type": "reject"}]}))
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.structured == Contact(**CONTACT) and graph.ran == ["read_inbox:in"]


def test_tool_strategy_asks_again_when_the_call_does_not_fit():
    def program(factory: str) -> Run:
        outputs = [
            calls(("Contact", {"name": "Alice"}), prefix="s"),
            calls(("Contact", CONTACT), prefix="t"),
        ]
        run = Run(factory, outputs, response_format=ToolStrategy(Contact))
        run.send("who?")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.history[2][0] == "tool" and "Please fix your mistakes" in graph.history[2][2]


def test_tool_strategy_in_a_prompt_dialect_lists_the_schema_tool():
    call = json.dumps({"name": "Contact", "arguments": CONTACT})
    model = ReplayChatModel([f"<tool_call>\n{call}\n</tool_call>"])
    graph = create_fncall_graph(
        model, mail_tools([]), dialect="hermes", response_format=ToolStrategy(Contact)
    )
    out = graph.invoke({"messages": [("user", "who?")]})
    assert out["structured_response"] == Contact(**CONTACT)
    assert len(model.inputs) == 1
    assert '"name": "Contact"' in str(model.inputs[0][0].content)  # listed in the prompt
    assert out["messages"][-1].content == f"Returning structured response: {Contact(**CONTACT)}"


class OwnStructuredOutput(ReplayChatModel):
    """A replayed provider that has structured output of its own (takes
    ``response_format``)."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        raise NotImplementedError  # its presence is what counts


def test_provider_strategy_sends_response_format_to_the_provider():
    def program(factory: str) -> Run:
        outputs = [calls(("read_inbox", {"folder": "in"})), json.dumps(CONTACT)]
        run = Run(
            factory,
            [],
            model=OwnStructuredOutput(outputs),
            response_format=ProviderStrategy(Contact),
        )
        run.send("who wrote?")
        return run

    agent, graph = both(program)
    assert_same(agent, graph)
    assert graph.structured == Contact(**CONTACT)
    sent = [c.get("response_format") for c in graph.model.calls]
    assert sent == [c.get("response_format") for c in agent.model.calls]
    assert sent[0]["json_schema"]["name"] == "Contact"


def test_provider_strategy_in_a_prompt_dialect_asks_for_the_json():
    model = ReplayChatModel([json.dumps(CONTACT)])
    graph = create_fncall_graph(
        model, mail_tools([]), dialect="hermes", response_format=ProviderStrategy(Contact)
    )
    out = graph.invoke({"messages": [("user", "who?")]})
    assert out["structured_response"] == Contact(**CONTACT)
    assert len(model.inputs) == 1
    assert '"email"' in str(model.inputs[0][0].content)  # the schema, asked in the prompt


def test_provider_strategy_with_a_grammar_server_holds_the_answer_to_the_schema():
    """A server that takes GBNF grammars (llama.cpp's): the dialect's grammar of the
    call carries the answer's JSON schema."""
    model = ReplayChatModel([json.dumps(CONTACT)], model="llama.cpp")
    graph = create_fncall_graph(
        model,
        mail_tools([]),
        dialect="hermes",
        constrained=True,
        response_format=ProviderStrategy(Contact),
    )
    out = graph.invoke({"messages": [("user", "who?")]})
    assert out["structured_response"] == Contact(**CONTACT)
    grammar = model.calls[0]["extra_body"]["grammar"]
    assert "email" in grammar and "tool_call" in grammar


# --------------------------------------------------------------------- by design


def test_a_bare_schema_is_asked_for_after_the_answer_by_any_model():
    """``response_format=Schema`` (no strategy): create_agent picks ToolStrategy for a
    model without provider structured output, and the model must call the schema tool;
    the graph lets the model answer, then asks once more for that answer as JSON of the
    schema (through the dialect, held by a grammar where the server takes one), so a
    model that cannot call tools gives one too."""
    agent = Run("create_agent", [calls(("Contact", CONTACT), prefix="s")], response_format=Contact)
    agent.send("who?")
    graph = Run(
        "create_fncall_graph", ["It is Alice.", json.dumps(CONTACT)], response_format=Contact
    )
    graph.send("who?")
    assert agent.structured == graph.structured == Contact(**CONTACT)
    assert agent.bound == [["send_email", "read_inbox", "Contact"]]
    assert graph.history[-1] == ("ai", "It is Alice.", [])  # the answer stays the model's
    assert len(graph.model.inputs) == 2


def test_provider_strategy_for_a_model_without_structured_output_of_its_own():
    """create_agent sends ``response_format`` to any model; the graph sends it to a model
    that has structured output of its own (``with_structured_output``), and asks any
    other for the JSON in the prompt, where it cannot be refused as an unknown field."""
    outputs = [json.dumps(CONTACT)]
    agent = Run("create_agent", outputs, response_format=ProviderStrategy(Contact))
    graph = Run("create_fncall_graph", outputs, response_format=ProviderStrategy(Contact))
    for run in (agent, graph):
        run.send("who?")
    assert agent.structured == graph.structured == Contact(**CONTACT)
    assert agent.model.calls[0]["response_format"]["json_schema"]["name"] == "Contact"
    assert "response_format" not in graph.model.calls[0]
    assert '"email"' in str(graph.model.inputs[0][0].content)


@pytest.mark.parametrize(
    "decision",
    [
        {"type": "approve"},
        {"type": "respond", "message": "sent by hand"},
        {"type": "reject", "message": "not today"},
        {
            "type": "edit",
            "edited_action": {"name": "send_email", "args": {"to": "bob", "body": "hi"}},
        },
    ],
    ids=["approve", "respond", "reject", "edit"],
)
def test_the_graphs_own_interrupt_on_beside_human_in_the_loop_middleware(decision):
    """``create_fncall_graph(interrupt_on=...)`` answers as LangChain's middleware does,
    but for two things the graph guarantees: an edited call is written into the model's
    message (the history shows the call that ran, nothing is prefixed to its result),
    and a rejection's reason reaches the model as the reviewer wrote it."""

    # ``True`` allows respond in LangChain's, not in the graph's: all four, named
    gate = {"send_email": {"allowed_decisions": ["approve", "edit", "reject", "respond"]}}

    def program(factory: str) -> Run:
        if factory == "create_agent":
            options: dict[str, Any] = {"middleware": [HumanInTheLoopMiddleware(interrupt_on=gate)]}
        else:
            options = {"interrupt_on": gate}
        run = Run(factory, [TWO, "done"], **options)
        run.send("mail alice, read my inbox")
        run.send(Command(resume={"decisions": [decision]}))
        return run

    agent, graph = both(program)
    assert sorted(graph.ran) == sorted(agent.ran)
    if decision["type"] in ("approve", "respond"):
        assert graph.history == agent.history
        return
    by_id = {h[1]: h for h in graph.history if h[0] == "tool"}
    if decision["type"] == "reject":
        assert by_id["c0"][2:] == ("not today", "error")
        assert "User rejected the tool call for `send_email` with reason: not today" in str(
            agent.history
        )
    else:
        assert graph.history[1][2][0] == ("send_email", {"to": "bob", "body": "hi"}, "c0")
        assert agent.history[1][2][0] == ("send_email", {"to": "alice", "body": "hi"}, "c0")
        assert by_id["c0"][2] == "sent to bob"
