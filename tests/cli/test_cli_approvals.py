"""Approvals in the ``fncall-graph`` command, followed at a terminal (pexpect) as a user
meets them: with no flag, a tool not annotated read-only by a server the config trusts
(``"trust": "annotations"``) asks first in ``chat`` (as in ``demo`` and the Studio
graphs); ``--approve`` still chooses. The MCP server is the real ``mcp-server-sqlite``
(it annotates none of its tools) or the example weather server (its tool is annotated
read-only); the model is a replay."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import patience
import pexpect
import pytest

from fncall_graph.examples.database_assistant import make_database, sqlite_config

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")
WRITE = "INSERT INTO log (action) VALUES ('checked')"


def _call(name: str, args: dict) -> str:
    payload = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{payload}\n</tool_call>"


def _replay(tmp_path: Path, *outputs: str) -> str:
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"dialect": "hermes", "outputs": list(outputs)}), "utf-8")
    return f"replay:{path}"


def _chat(tmp_path: Path, model: str, config: dict, *extra: str) -> pexpect.spawn:
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps(config), "utf-8")
    args = ["chat", "--model", model, "--mcp", str(mcp), "--db", str(tmp_path / "t.sqlite")]
    return patience.Spawn(CLI, [*args, *extra], encoding="utf-8", timeout=120)


def _sqlite(tmp_path: Path) -> dict:
    return sqlite_config(make_database(tmp_path / "test.db"))


def _leave(child: pexpect.spawn) -> None:
    child.expect_exact("you> ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def _log_rows(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "test.db") as db:
        return db.execute("SELECT COUNT(*) FROM log").fetchone()[0]


def test_chat_asks_before_a_write_with_no_flag(tmp_path: Path) -> None:
    model = _replay(tmp_path, _call("sqlite-write_query", {"query": WRITE}), "logged")
    child = _chat(tmp_path, model, _sqlite(tmp_path))
    # said at the start: which tools ask, why, and how to choose otherwise
    child.expect_exact("asks before: sqlite-read_query, sqlite-write_query")
    child.expect_exact("--approve none asks before nothing")
    child.expect_exact("you> ")
    child.sendline("log that you checked")
    child.expect_exact(f'run sqlite-write_query {{"query": "{WRITE}"}}? [y/e/n]')
    assert _log_rows(tmp_path) == 1  # nothing written before the answer
    child.sendline("n")
    child.expect_exact("reason (sent to the model): ")
    child.sendline("not today")
    child.expect_exact("✗")  # the call's line, marked rejected
    _leave(child)
    assert _log_rows(tmp_path) == 1


def test_chat_asks_only_where_approve_or_annotations_say(tmp_path: Path) -> None:
    model = _replay(tmp_path, _call("sqlite-write_query", {"query": WRITE}), "logged")
    child = _chat(tmp_path, model, _sqlite(tmp_path), "--approve", "none")
    child.expect_exact("you> ")
    child.sendline("log that you checked")
    assert child.expect_exact(["[y/e/n]", "logged"]) == 1  # no question first
    _leave(child)
    assert _log_rows(tmp_path) == 2  # ran without a question

    with pytest.raises(pexpect.EOF):
        bad = _chat(tmp_path, model, _sqlite(tmp_path), "--approve", "none", "--approve", "x")
        bad.expect_exact("--approve none cannot be given with tool names")
        bad.expect_exact("you> ")

    # a tool its trusted server annotates read-only runs without a question, flag or not
    weather = {"command": sys.executable, "args": ["-m", "fncall_graph.examples.weather_server"]}
    (tmp_path / "w").mkdir()
    model = _replay(tmp_path / "w", _call("weather-get_weather", {"city": "北京"}), "晴天")
    trusted = {**weather, "trust": "annotations"}
    child = _chat(tmp_path / "w", model, {"mcpServers": {"weather": trusted}})
    child.expect_exact("you> ")
    asked = child.before
    child.sendline("北京天气")
    assert child.expect_exact(["[y/e/n]", "晴天"]) == 1
    _leave(child)
    assert "asks before" not in asked

    # the same server untrusted: its word that the tool only reads is not believed
    (tmp_path / "u").mkdir()
    model = _replay(tmp_path / "u", _call("weather-get_weather", {"city": "北京"}), "晴天")
    child = _chat(tmp_path / "u", model, {"mcpServers": {"weather": weather}})
    child.expect_exact("asks before: weather-get_weather")
    child.expect_exact("you> ")
    child.sendline("北京天气")
    child.expect_exact('run weather-get_weather {"city": "北京"}? [y/e/n]')
    child.sendline("y")
    child.expect_exact("晴天")
    _leave(child)


def test_the_edit_flow_shows_the_arguments_and_asks_until_they_are_json(tmp_path: Path) -> None:
    model = _replay(tmp_path, _call("sqlite-write_query", {"query": WRITE}), "logged")
    child = _chat(tmp_path, model, _sqlite(tmp_path), "--approve", "sqlite-write_query")
    child.expect_exact("you> ")
    child.sendline("log that you checked")
    child.expect_exact("[y/e/n] ")
    # arguments typed at the question are not taken in silence: it says what to answer
    child.sendline('{"query": "DELETE FROM log"}')
    child.expect_exact("answer y (run it), e (edit its arguments), n (do not run it)")
    child.expect_exact("type e first, then the arguments")
    child.expect_exact("[y/e/n] ")
    child.sendline("e")
    # the arguments to start from
    child.expect_exact(f'current arguments: {{"query": "{WRITE}"}}')
    child.expect_exact("new arguments as a JSON object (empty: keep them): ")
    child.sendline('{"query": "INSERT INTO log (action) VALUES (\'edited\')"')  # no closing }
    child.expect_exact("not JSON")
    # asked for the JSON again, not sent back to [y/e/n]
    assert child.expect_exact(["[y/e/n]", "new arguments as a JSON object"]) == 1
    child.sendline('{"query": "INSERT INTO log (action) VALUES (\'edited\')"}')
    child.expect_exact("logged")
    _leave(child)
    with sqlite3.connect(tmp_path / "test.db") as db:
        rows = db.execute("SELECT action FROM log ORDER BY id").fetchall()
    assert rows == [("创建数据库",), ("edited",)]
