"""An MCP server's tool annotations are its word, not a fact: they count only for a server
the user trusts (``"trust": "annotations"`` in its ``mcpServers`` entry, or
``MCPToolkit(..., trust=...)``). A real stdio server (tests/servers/lying_server.py)
annotates a tool that writes read-only and idempotent, and dies inside the call after its
write: untrusted, the call asks first under ``interrupt_on="annotations"`` and is not sent
again (one write, "outcome unknown"); trusted, it runs unasked and is retried, as the
server asked for; the user's own word (``idempotent_tools``, a tool's ``metadata``) counts
whatever the server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from test_mcp import SERVER_PYTHON

from fncall_graph import bind_decisions, create_fncall_graph
from fncall_graph.adapters.mcp import MCPConfigError, MCPToolkit, parse_mcp_config
from fncall_graph.adapters.tool_effects import is_idempotent, is_read_only
from fncall_graph.nodes.tools import writes_by_annotation
from fncall_graph.testing import ReplayChatModel

LYING_SERVER = Path(__file__).parents[1] / "servers" / "lying_server.py"
CRASH_CHILD = Path(__file__).parents[1] / "trust_crash_child.py"
SAVE = "lie-save"
LINE = "pay 5"


def lying_entry(effects: Path, **settings: Any) -> dict[str, Any]:
    return {"command": SERVER_PYTHON, "args": [str(LYING_SERVER), str(effects)], **settings}


def lying_config(effects: Path, **settings: Any) -> dict[str, Any]:
    return {"mcpServers": {"lie": lying_entry(effects, **settings)}}


def effects_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# how the user said what to believe of the server's `save`
TRUST = {
    "untrusted": lambda e: MCPToolkit.from_config(lying_config(e)),
    "trusted in its mcpServers entry": lambda e: MCPToolkit.from_config(
        lying_config(e, trust="annotations")
    ),
    # the adapters' connection dicts have no place for it: the toolkit's argument
    "trusted by MCPToolkit(trust=...)": lambda e: MCPToolkit(
        parse_mcp_config(
            {"lie": {"transport": "stdio", **lying_entry(e)}},
        ),
        trust={"lie": "annotations"},
    ),
    "untrusted, named in idempotent_tools": lambda e: MCPToolkit.from_config(
        lying_config(e), idempotent_tools=[SAVE]
    ),
}

# (asks first under interrupt_on="annotations", sent again after the server died in it)
EXPECTED = {
    "untrusted": (True, False),
    "trusted in its mcpServers entry": (False, True),
    "trusted by MCPToolkit(trust=...)": (False, True),
    "untrusted, named in idempotent_tools": (True, True),
}


async def _turn(toolkit: MCPToolkit, effects: Path) -> tuple[list[str], ToolMessage]:
    """One turn whose model calls ``save`` once, with the server set to die inside the
    call; a question, if any, approved. The calls asked about, and the call's answer."""
    model = ReplayChatModel(
        [{"content": "", "tool_calls": [{"name": SAVE, "args": {"line": LINE}, "id": "c1"}]}, "ok"]
    )
    graph = create_fncall_graph(
        model,
        toolkit.tools,
        dialect="native",
        checkpointer=InMemorySaver(),
        interrupt_on="annotations",
    )
    cfg = {"configurable": {"thread_id": "t"}}
    Path(f"{effects}.die").touch()
    out = await graph.ainvoke({"messages": [("user", "save it")]}, cfg)
    asked: list[str] = []
    if out.get("__interrupt__"):
        [review] = out["__interrupt__"]
        asked = [r["name"] for r in review.value["action_requests"]]
        assert effects_of(effects) == []  # nothing written before the answer
        answer = bind_decisions(review.value, [{"type": "approve"}])
        out = await graph.ainvoke(Command(resume=answer), cfg)
    [said] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    return asked, said


@pytest.mark.parametrize("trust", sorted(TRUST))
async def test_a_lying_annotation_widens_nothing_unless_the_server_is_trusted(
    tmp_path: Path, trust: str
) -> None:
    effects = tmp_path / "effects.txt"
    asks, retried = EXPECTED[trust]
    async with TRUST[trust](effects) as toolkit:
        asked, said = await _turn(toolkit, effects)
    assert asked == ([SAVE] if asks else [])
    if retried:  # the restarted server ran it again: what the server (or user) allowed
        assert effects_of(effects) == [LINE, LINE]
        assert (said.status, said.content) == ("success", f"saved {LINE}")
    else:  # one write, and the model is told it may have happened
        assert effects_of(effects) == [LINE]
        assert said.status == "error"
        assert said.content.startswith("Outcome unknown: MCP server 'lie' stopped answering")


@pytest.mark.parametrize("trust", sorted(TRUST))
async def test_every_place_reads_the_same_trusted_facts(tmp_path: Path, trust: str) -> None:
    """The approvals (``writes_by_annotation``), the toolkit's retry and the claims (both
    ``is_idempotent``) read one rule; the server's words stay on the tool, marked."""
    asks, retried = EXPECTED[trust]
    async with TRUST[trust](tmp_path / "effects.txt") as toolkit:
        save, peek = toolkit.get_tool(SAVE), toolkit.get_tool("lie-peek")
        names = toolkit.idempotent_tools
        assert (is_read_only(save), is_idempotent(save, names)) == (not asks, retried)
        assert sorted(writes_by_annotation(toolkit.tools)) == (["lie-peek", SAVE] if asks else [])
        meta = save.metadata or {}
        assert meta["mcp_annotations"] == {
            "readOnlyHint": True,
            "idempotentHint": True,
            "destructiveHint": False,
            "openWorldHint": False,
        }
        assert meta["mcp_trust"] == (None if asks else "annotations")
        assert "readOnlyHint" not in meta  # the tool's own metadata: the user's word only
        assert (peek.metadata or {})["mcp_annotations"] == {"readOnlyHint": True}


async def test_the_users_own_mark_on_an_untrusted_servers_tool_counts(tmp_path: Path) -> None:
    """Metadata the user's code sets is the user's word (``mark_read_only`` in the
    database example does this for mcp-server-sqlite's reads)."""
    effects = tmp_path / "effects.txt"
    async with MCPToolkit.from_config(lying_config(effects)) as toolkit:
        save = toolkit.get_tool(SAVE)
        save.metadata = {**(save.metadata or {}), "readOnlyHint": True}
        asked, said = await _turn(toolkit, effects)
    assert asked == []
    assert effects_of(effects) == [LINE, LINE]
    assert said.content == f"saved {LINE}"


async def test_the_user_can_narrow_a_trusted_servers_word(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    async with MCPToolkit.from_config(lying_config(effects, trust="annotations")) as toolkit:
        save = toolkit.get_tool(SAVE)
        save.metadata = {**(save.metadata or {}), "readOnlyHint": False, "idempotentHint": False}
        assert not is_read_only(save) and not is_idempotent(save)
        asked, said = await _turn(toolkit, effects)
    assert asked == [SAVE]
    assert effects_of(effects) == [LINE]
    assert said.content.startswith("Outcome unknown: ")


def _child(mode: str, tmp_path: Path, trust: str) -> subprocess.CompletedProcess[str]:
    files = [tmp_path / name for name in ("effects.txt", "checkpoints.sqlite", "result.json")]
    return subprocess.run(
        [
            sys.executable,
            str(CRASH_CHILD),
            mode,
            str(files[0]),
            str(files[1]),
            trust,
            str(files[2]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("trust", ["untrusted", "trusted"])
def test_a_call_whose_process_died_inside_it_runs_again_only_on_a_trusted_word(
    tmp_path: Path, trust: str
) -> None:
    """The claims' rule: the server kills the graph's process inside the call, after its
    write; a fresh process resumes the thread and runs the call again only if the tool
    may run twice, which an untrusted server's ``idempotentHint`` does not make it."""
    run = _child("run", tmp_path, trust)
    assert run.returncode == -signal.SIGKILL, run.stderr[-3000:]
    assert effects_of(tmp_path / "effects.txt") == [LINE]
    resumed = _child("resume", tmp_path, trust)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    [said] = json.loads((tmp_path / "result.json").read_text("utf-8"))
    if trust == "trusted":  # run again, as the server it trusts allowed
        assert effects_of(tmp_path / "effects.txt") == [LINE, LINE]
        assert said == {"status": "success", "content": f"saved {LINE}"}
    else:
        assert effects_of(tmp_path / "effects.txt") == [LINE]
        assert said["status"] == "error"
        assert said["content"].startswith("Outcome unknown: ")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("all", 'must be "annotations"'),
        (True, 'must be "annotations"'),
        (["annotations"], 'must be "annotations"'),
        ("Annotations", 'must be "annotations"'),
    ],
)
def test_a_bad_trust_setting_is_refused_naming_its_place(
    tmp_path: Path, value: Any, problem: str
) -> None:
    with pytest.raises(MCPConfigError, match=r"mcpServers\.lie\.trust: ") as caught:
        MCPToolkit.from_config(lying_config(tmp_path / "e.txt", trust=value))
    assert problem in str(caught.value)


def test_the_toolkits_trust_argument_is_checked() -> None:
    conns = parse_mcp_config({"mcpServers": {"lie": {"command": "x", "args": []}}})
    with pytest.raises(MCPConfigError, match=r"trust\.other: names no configured server"):
        MCPToolkit(conns, trust={"other": "annotations"})
    with pytest.raises(MCPConfigError, match=r'trust\.lie: must be "annotations"'):
        MCPToolkit(conns, trust={"lie": "everything"})  # type: ignore[dict-item]


def test_a_connection_dict_with_trust_says_where_trust_goes(tmp_path: Path) -> None:
    conns = {"lie": {"transport": "stdio", "trust": "annotations", **lying_entry(tmp_path)}}
    with pytest.raises(MCPConfigError, match=r"lie\.trust: .*MCPToolkit\(\.\.\., trust="):
        parse_mcp_config(conns)
