"""What an MCP server names or says reaches the terminal escaped: a tool name, its
arguments and its result with an ESC sequence, a carriage return, a bidi override or a C1
control are shown with those characters written out (``\\x1b``, ``\\r``, ``\\u202e``), so
the approval question shows what will run; rich's markup in a name is shown as text; a
name that breaks MCP's naming rule is warned about in one line, and still works.

The server is a plain JSON-RPC one over stdio (``tests/servers/hostile_names_server.py``),
the model a replay, the command the installed ``fncall-graph`` (at a terminal through
pexpect, and with its input from a pipe)."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from fncall_graph.adapters.mcp import MCPToolkit

CLI = str(Path(sys.executable).parent / "fncall-graph")
SERVER = str(Path(__file__).parents[1] / "servers" / "hostile_names_server.py")

# a write whose name, shown raw, rewrites the question into a read's: the line is erased
# (ESC [2K), the cursor sent back (CR), and what follows is all the person sees
HIDDEN_WRITE = "drop_all\x1b[2K\rread_query"
BIDI = "note\u202etxt.exe\u2066x\u2069"  # a right-to-left override, an isolate
C1 = "run\x9b2J\x85now"  # CSI and NEL as single C1 characters
MARKUP = "[bold red]shout[/]"
NAMES = [HIDDEN_WRITE, BIDI, C1, MARKUP]
# each as the terminal shows it
ESCAPED = {
    HIDDEN_WRITE: "drop_all\\x1b[2K\\rread_query",
    BIDI: "note\\u202etxt.exe\\u2066x\\u2069",
    C1: "run\\x9b2J\\x85now",
    MARKUP: MARKUP,
}
# what the terminal obeys, anywhere in the output, when shown raw (at a terminal rich
# writes its own colours: ESC itself is looked for off a terminal)
RAW = ("\x1b[2K\rread_query", "\u202e", "\u2066", "\x9b", "\x85", "\x1b[8m")


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": [SERVER, json.dumps(NAMES)]}
    path.write_text(json.dumps({"mcpServers": {"db": server}}), "utf-8")
    return path


def _replay(tmp_path: Path, name: str) -> str:
    call = json.dumps({"name": f"db-{name}", "arguments": {"query": "x\x1b[8m\u202e"}})
    path = tmp_path / "replay.json"
    outputs = [f"<tool_call>\n{call}\n</tool_call>", "finished"]
    path.write_text(json.dumps({"dialect": "hermes", "outputs": outputs}), "utf-8")
    return f"replay:{path}"


def _args(tmp_path: Path, name: str) -> list[str]:
    return [
        "chat",
        "--model",
        _replay(tmp_path, name),
        "--mcp",
        str(_config(tmp_path)),
        "--db",
        str(tmp_path / "t.sqlite"),
    ]


@pytest.mark.slow
def test_the_approval_question_shows_a_hidden_write_escaped_at_a_terminal(
    tmp_path: Path,
) -> None:
    child = pexpect.spawn(CLI, _args(tmp_path, HIDDEN_WRITE), encoding="utf-8", timeout=120)
    child.setwinsize(40, 300)
    child.expect_exact("you> ")
    child.sendline("clean up")
    # the whole name, its controls written out, then the arguments, escaped too
    child.expect_exact(
        'run db-drop_all\\x1b[2K\\rread_query {"query": "x\\u001b[8m\\u202e"}? [y/e/n] '
    )
    seen = child.before + child.after
    child.sendline("n")
    child.expect_exact("reason (sent to the model): ")
    child.sendline("no")
    child.expect_exact("you> ")
    seen += child.before
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    seen += child.before
    for raw in RAW:
        assert raw not in seen, f"{raw!r} reached the terminal raw"
    assert "drop_all\\x1b[2K\\rread_query" in seen  # the tool line shows it escaped too


@pytest.mark.slow
@pytest.mark.parametrize("name", [HIDDEN_WRITE, BIDI, C1, MARKUP])
def test_every_line_off_a_terminal_holds_no_control_character(tmp_path: Path, name: str) -> None:
    done = subprocess.run(
        [CLI, *_args(tmp_path, name)],
        input="go\ny\n/exit\n",  # run: its result is shown too
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    question = f"run db-{ESCAPED[name]} " + '{"query": "x\\u001b[8m\\u202e"}? [y/e/n]'
    assert question in done.stdout
    assert f"db-{ESCAPED[name]}" in done.stderr  # the tool list at the start
    # and a warning, a line each, that the names break MCP's naming rule (all four do)
    warned = [line for line in done.stderr.splitlines() if "naming rule" in line]
    assert len(warned) == len(NAMES)
    assert all(w.startswith("fncall-graph: warning: MCP server 'db': tool name") for w in warned)
    for text in (done.stdout, done.stderr):
        controls = re.findall(
            r"[^\S \n]|[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]",
            text.replace("\n", ""),
        )
        assert not controls, f"raw control characters in the output: {controls}"
    # the result's first line (a CR ends a line), its ESC written out
    assert "error 0." in done.stdout and ": Error: denied\\x1b[31m red\n" in done.stdout
    if name == MARKUP:  # shown as written, not as rich's markup
        assert "db-[bold red]shout[/]" in done.stdout


def test_shown_writes_out_what_a_terminal_would_obey() -> None:
    from fncall_graph.cli.terminal import shown

    assert shown("a\x1bb\rc\nd\te") == "a\\x1bb\\rc\\nd\\te"
    assert shown("x\u202ey\u2066z\u2069\u200e\u061c") == "x\\u202ey\\u2066z\\u2069\\u200e\\u061c"
    assert shown("\x9b\x85\x7f\x00") == "\\x9b\\x85\\x7f\\x00"
    assert shown("\u2028\u2029\ufeff\u00ad\ud800") == "\\u2028\\u2029\\ufeff\\xad\\ud800"
    # names and arguments in one line; text keeps its lines, tabs, spaces and emoji joins
    assert shown("a\nb\tc\u3000d", lines=True) == "a\nb\tc\u3000d"
    assert shown("\u3000") == "\\u3000"
    assert shown("👩\u200d💻", lines=True) == "👩\u200d💻"
    assert shown("r\x1b[2Kx\r", lines=True) == "r\\x1b[2Kx\\r"
    # what is printable stays as it is: other scripts, brackets (rich's markup is not its job)
    assert shown("北京 [bold]é") == "北京 [bold]é"


def _toolkit_names(names: list[str]) -> dict:
    server = {"command": sys.executable, "args": [SERVER, json.dumps(names)]}
    return {"mcpServers": {"odd": server}}


CYRILLIC = "re\u0430d_query"  # а is Cyrillic: looks like read_query
LONG = "t" * 10_000


def test_names_that_break_the_mcp_naming_rule_are_warned_about_and_still_work(
    caplog: pytest.LogCaptureFixture,
) -> None:
    names = ["read_query", "admin.tools.list", "DATA-v2_x", CYRILLIC, LONG, HIDDEN_WRITE, ""]
    caplog.set_level(logging.WARNING, logger="fncall_graph.adapters.mcp")
    with MCPToolkit.from_config(_toolkit_names(names)) as toolkit:
        listed = [t.metadata["mcp_tool"] for t in toolkit.tools]
        assert (
            toolkit.get_tool(f"odd-{CYRILLIC}").invoke({"query": "q"}).startswith("Error: denied")
        )
    assert listed == names  # none refused
    warned = [r.getMessage() for r in caplog.records if "naming rule" in r.getMessage()]
    assert len(warned) == 4, warned  # the Cyrillic, the long, the hidden write, the empty
    for line in warned:
        assert "\n" not in line and "\r" not in line and "\x1b" not in line
        assert "'odd'" in line  # the server
        assert len(line) < 400
    by_name = dict(zip([CYRILLIC, LONG, HIDDEN_WRITE, ""], warned, strict=True))
    assert "'re\\u0430d_query'" in by_name[CYRILLIC]  # what looks like a read, written out
    assert "characters other than" in by_name[CYRILLIC]
    assert "10000 characters" in by_name[LONG]
    assert "drop_all\\x1b[2K\\rread_query" in by_name[HIDDEN_WRITE]
    assert "empty" in by_name[""]
