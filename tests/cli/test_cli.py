"""The ``fncall-graph`` command, run as a real process from the installed console script.

The MCP server is the real ``mcp-server-sqlite`` on seed 000's database; the model is a
replay of recorded outputs, so every run is exact and needs no network. The seed
session itself is the golden test: ``demo`` must show the model, call for call, the
pre-processed inputs the seed's article prints, and record its raw outputs verbatim.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import patience
import pexpect
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_from_dict
from ports import free_port

from fncall_graph.examples.database_assistant import (
    QUESTIONS,
    SYSTEM_PROMPT,
    WRITE_TOOLS,
    make_database,
    sqlite_config,
)

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")
REPO = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((REPO / "tests" / "fixtures" / "seed000_hermes.json").read_text("utf-8"))
CALLS: list[dict[str, Any]] = FIXTURE["calls"]
REPLAY = REPO / "fncall_graph" / "data" / "database-assistant_qwen-max_hermes.json"
# Model calls of the demo → the fixture's printed calls (the describe round is not printed).
PRINTED = [0, 1, 2, 3, None, None, 4, 5, 6]
TIMEOUT = 120


def cli(
    *args: str, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess:
    kwargs.setdefault("timeout", TIMEOUT)
    return patience.run(
        [CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, **kwargs
    )


@pytest.fixture
def mcp_json(tmp_path: Path) -> Path:
    """seed 000's MCP config over a fresh copy of its database."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(sqlite_config(make_database(tmp_path / "test.db"))), "utf-8")
    return path


def replay_file(tmp_path: Path, name: str, outputs: list[str]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"dialect": "hermes", "outputs": outputs}, ensure_ascii=False))
    return path


def on_the_recording(tmp_path: Path, mcp_json: Path) -> list[str]:
    """Options for the seed's recording, MCP server and a checkpoint file in ``tmp_path``."""
    return [
        "--model",
        "replay:database-assistant",
        "--mcp",
        str(mcp_json),
        "--db",
        str(tmp_path / "threads.sqlite"),
    ]


def run_first_question(
    tmp_path: Path, mcp_json: Path, *options: str
) -> subprocess.CompletedProcess:
    """``run`` asks the seed's first question on the recording, with the seed's prompt."""
    return cli(
        "run",
        *options,
        *on_the_recording(tmp_path, mcp_json),
        "--system",
        SYSTEM_PROMPT,
        QUESTIONS[0],
    )


def interrupted_thread(tmp_path: Path, mcp_json: Path, thread: str) -> tuple[Path, list[str]]:
    """A thread left waiting for approval of ``sqlite-list_tables`` by a ``run`` that
    could not ask (no terminal); returns the recording that finishes it and the options
    that open it again."""
    call = replay_file(
        tmp_path,
        "call.json",
        ['<tool_call>\n{"name": "sqlite-list_tables", "arguments": {}}\n</tool_call>'],
    )
    answer = replay_file(tmp_path, "answer.json", ["三张表"])
    db = str(tmp_path / "threads.sqlite")
    common = ["--mcp", str(mcp_json), "--db", db, "--approve", "sqlite-list_tables"]
    first = cli(
        "run",
        "--model",
        f"replay:{call}",
        *common,
        "--thread",
        thread,
        QUESTIONS[0],
        stdin=subprocess.DEVNULL,
    )
    assert first.returncode == 1
    assert f"--resume {thread}" in first.stderr
    assert "Traceback" not in first.stderr
    return answer, common


def exit_cleanly(child: pexpect.spawn) -> None:
    """Leave the interactive CLI with /exit; it must end with status 0."""
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_demo_reproduces_the_seed_session(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    done = cli("demo", "--model", f"replay:{REPLAY}", "--trace-file", str(trace))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in trace.read_text("utf-8").splitlines()]
    assert [r["round"] for r in records] == [1, 1, 2, 2, 3, 3, 4, 4, 4]
    assert [r["question"] for r in records[::2][:3]] == list(QUESTIONS[:3])
    for record, printed in zip(records, PRINTED, strict=True):
        assert set(record) >= {
            "raw_input",
            "processed_input",
            "raw_output",
            "processed_output",
            "round",
            "question",
            "index",
        }
        if printed is None:
            continue
        seed = CALLS[printed]
        expected = [{"role": m["role"], "content": m["content"]} for m in seed["model_input"]]
        assert record["processed_input"] == expected, f"model call {record['index']}"
        assert record["raw_output"] == seed["raw_output"], f"model call {record['index']}"
        # the post-processed output holds the calls the seed's post-processing found
        calls = record["processed_output"].get("tool_calls") or []
        seen = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
        wanted = [
            (m["function_call"]["name"], json.loads(m["function_call"]["arguments"]))
            for m in seed["post_output"]
            if m.get("function_call")
        ]
        assert seen == wanted
        # the raw input is the canonical history: the question of the round comes last
        assert record["raw_input"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert records[6]["raw_input"][-1] == {"role": "user", "content": QUESTIONS[3]}

    # the transcript went to a pipe: plain text, no colour or cursor codes
    assert "\x1b" not in done.stdout
    assert "[tool] sqlite-list_tables {} done" in done.stdout
    assert done.stdout.count("[tool] sqlite-read_query") == 8  # 3 + 1 calls, started and done
    assert "韩梅梅的年龄是 6 岁" in done.stdout
    # a recording is labelled as one, not as a live model
    assert f"RECORDED replies (replay:{REPLAY}), not a live model" in done.stdout
    assert "live:" not in done.stdout


def test_demo_plays_the_recording_then_the_live_model(tmp_path: Path) -> None:
    """``make demo``'s command: correct answers first (recorded, and said to be), then the
    bundled model live, then how to use one's own model. What the small model writes is
    not asserted: only that its part runs through and ends."""
    done = cli("demo", env={"FNCALL_MODEL": ""}, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    recorded, live, hint = (
        out.index("RECORDED replies of Qwen-Max"),
        out.index("LIVE: the bundled SmolLM2-135M"),
        out.index("fncall-graph demo --model ollama:qwen3"),
    )
    assert recorded < live < hint
    part1 = out[recorded:live]
    assert "dialect hermes" in part1
    assert "三张表" in part1 and "韩梅梅的年龄是 6 岁" in part1
    assert "log rows now: 2" in part1  # the recorded session's one write, done for real
    assert (
        "log rows now: 2 (1 at the start) · rows per table: students 2, sqlite_sequence 1, log 2"
    ) in part1.splitlines()
    part2 = out[live:hint]
    assert "dialect hermes" in part2  # the bundled model's own dialect
    assert "first call of each question constrained to tool calls" in part2
    assert (
        "writes ask first (sqlite-write_query, sqlite-create_table, sqlite-append_insight)" in part2
    )
    assert part2.count("Q") >= 4
    # no one at the terminal: the toy model's writes were rejected, so its database is
    # as the example made it, and the last line of its part says so
    assert (
        "log rows now: 1 (1 at the start) · rows per table: students 2, sqlite_sequence 1, log 1"
    ) in part2.splitlines()
    for line in part2.splitlines():
        if line.startswith("[tool] sqlite-") and line.split()[1].split("-", 1)[1] in WRITE_TOOLS:
            assert " done " not in line, line  # a write never ran ungated
    # every line true: no HTML-escaped markup, no server log glued onto a tool line
    for escaped in ("&lt;", "&gt;", "&amp;", "&#34;", "&quot;"):
        assert escaped not in out
    assert "Database error executing" not in out
    assert "mcp-servers.log" in done.stderr
    # a turn stopped by max_iterations says so once, as its answer, not again as a note
    assert "(I stopped after" not in done.stderr


def write_then_answers(tmp_path: Path) -> Path:
    """A recording (not of the example's questions) whose first reply creates a table."""
    create = (
        '<tool_call>\n{"name": "sqlite-create_table", "arguments": '
        '{"query": "CREATE TABLE notes (text TEXT)"}}\n</tool_call>'
    )
    return replay_file(tmp_path, "writes.json", [create, "不能建表", "二", "三", "四"])


def test_demo_rejects_a_write_when_no_one_can_approve_it(tmp_path: Path) -> None:
    done = cli(
        "demo", "--model", f"replay:{write_then_answers(tmp_path)}", stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "writes ask first (sqlite-write_query, sqlite-create_table" in out
    assert (
        "(needs approval, no one at the terminal: would have run sqlite-create_table "
        '{"query": "CREATE TABLE notes (text TEXT)"}; rejected)'
    ) in out
    assert '[tool] sqlite-create_table {"query": "CREATE TABLE notes (text TEXT)"} rejected' in out
    tool_lines = [line for line in out.splitlines() if line.startswith("[tool] sqlite-create")]
    assert [line.split("}")[1].split()[0] for line in tool_lines] == ["waiting", "rejected"]
    assert "assistant> 不能建表" in out
    # the printed counts are the database's: no table was added
    assert (
        "log rows now: 1 (1 at the start) · rows per table: students 2, sqlite_sequence 1, log 1"
    ) in out.splitlines()


def test_demo_asks_before_a_write_at_a_terminal(tmp_path: Path) -> None:
    child = _spawn("demo", "--model", f"replay:{write_then_answers(tmp_path)}")
    child.expect_exact("run sqlite-create_table")
    child.expect_exact("[y/e/n]")
    child.sendline("y")
    child.expect_exact("rows per table: students 2, sqlite_sequence 1, log 1, notes 0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_failed_tool_call_is_shown_as_failed(tmp_path: Path, mcp_json: Path) -> None:
    bad = replay_file(
        tmp_path,
        "bad.json",
        [
            '<tool_call>\n{"name": "sqlite-read_query", "arguments": '
            '{"query": "SELECT * FROM nosuch"}}\n</tool_call>',
            "没有这张表",
        ],
    )
    done = cli(
        "run",
        "--model",
        f"replay:{bad}",
        "--mcp",
        str(mcp_json),
        "--db",
        str(tmp_path / "t.sqlite"),
        "数据",
    )
    assert done.returncode == 0, done.stderr
    assert "sqlite-read_query" in done.stdout
    assert " error " in done.stdout and "no such table: nosuch" in done.stdout
    assert " done" not in done.stdout


def test_run_json_prints_the_thread(tmp_path: Path, mcp_json: Path) -> None:
    done = run_first_question(tmp_path, mcp_json, "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["thread_id"]
    messages = messages_from_dict(document["messages"])
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert messages[1].tool_calls[0]["name"] == "sqlite-list_tables"
    assert messages[2].tool_call_id == messages[1].tool_calls[0]["id"]
    assert (
        messages[2].content
        == "[{'name': 'students'}, {'name': 'sqlite_sequence'}, {'name': 'log'}]"
    )
    assert messages[3].content == CALLS[1]["raw_output"]


def test_prompt_prints_the_seed_system_prompt(mcp_json: Path) -> None:
    done = cli("prompt", "--dialect", "hermes", "--mcp", str(mcp_json), "--system", SYSTEM_PROMPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == CALLS[0]["model_input"][0]["content"] + "\n"


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("unknown spec", "unknown provider 'nosuch'"),
        ("missing key", "OPENAI_API_KEY"),
        ("unreachable server", "cannot reach the model server at http://127.0.0.1:"),
        ("bad mcp.json", "mcpServers.sqlite.args: must be a list of strings"),
    ],
)
def test_errors_are_one_line(case: str, expected: str, tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    args = ["run", "--db", str(tmp_path / "threads.sqlite"), "--model"]
    if case == "unknown spec":
        args += ["nosuch:model"]
    elif case == "missing key":
        args += ["openai:gpt-4o-mini"]
    elif case == "unreachable server":
        env = {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
        }
        args += ["openai:gpt-4o-mini"]
    else:
        bad = tmp_path / "mcp.json"
        bad.write_text(json.dumps({"mcpServers": {"sqlite": {"command": "x", "args": "--db"}}}))
        args += ["replay:database-assistant", "--mcp", str(bad)]
    done = cli(*args, "数据库有几张表", env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("fncall-graph: error: ")
    assert expected in lines[0]
    assert done.stdout == ""


def at_a_terminal() -> None:
    """In the spawned CLI, before it starts: Ctrl-C as at a terminal. A shell without job
    control starts background commands with SIGINT ignored, and a child inherits that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(*args: str) -> pexpect.spawn:
    child = patience.Spawn(
        CLI, list(args), encoding="utf-8", timeout=TIMEOUT, preexec_fn=at_a_terminal
    )
    child.setwinsize(40, 200)
    return child


# x86-64's system calls a blocking read of the terminal waits in: read, poll, select,
# pselect6, ppoll
_READING = {"0", "7", "23", "270", "271"}


def wait_until_reading(child: pexpect.spawn, timeout: float = 60) -> None:
    """Until the CLI's main thread waits for the terminal. Its prompt is written before
    that read starts; a Ctrl-C that lands in between is taken by Python's handler while
    no Python code runs to raise it, and the read then waits for a key."""
    waited = patience.Patience(timeout)
    syscall = Path(f"/proc/{child.pid}/syscall")
    while syscall.read_text().split()[0] not in _READING:
        assert not waited.over(), f"the CLI did not wait for input in {timeout} quiet s"
        time.sleep(0.01)  # poll interval: the read itself is the condition


def _gated_chat(tmp_path: Path, mcp_json: Path, *extra: str) -> pexpect.spawn:
    """``chat`` on the seed replay with ``sqlite-list_tables`` waiting for a decision."""
    return _spawn(
        "chat", *on_the_recording(tmp_path, mcp_json), "--approve", "sqlite-list_tables", *extra
    )


def test_chat_asks_before_a_gated_tool_runs(tmp_path: Path, mcp_json: Path) -> None:
    child = _gated_chat(tmp_path, mcp_json, "--system", SYSTEM_PROMPT)
    # the dialect the recording was made in, and the tools it is given
    child.expect("dialect hermes · 6 tools: sqlite-read_query, ")
    child.expect("thread ")
    child.expect("you> ")
    child.sendline(QUESTIONS[0])
    child.expect(r"run sqlite-list_tables \{\}\? \[y/e/n\]")
    child.sendline("y")
    child.expect("done")  # the tool ran after the answer
    child.expect("三张表")
    child.expect("you> ")
    exit_cleanly(child)


def test_rejection_reason_reaches_the_model(tmp_path: Path, mcp_json: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    child = _gated_chat(tmp_path, mcp_json, "--trace-file", str(trace))
    child.expect("you> ")
    child.sendline(QUESTIONS[0])
    child.expect(r"\[y/e/n\]")
    child.sendline("n")
    child.expect("reason")
    child.sendline("not during office hours")
    child.expect("rejected")
    child.expect("you> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    records = [json.loads(line) for line in trace.read_text("utf-8").splitlines()]
    assert len(records) == 2
    # the tool did not run: the model's next input holds the reason as the call's result
    assert records[1]["processed_input"][-1] == {
        "role": "user",
        "content": "<tool_response>\nnot during office hours\n</tool_response>",
    }


def test_an_interrupted_run_resumes_in_a_later_process(tmp_path: Path, mcp_json: Path) -> None:
    answer, common = interrupted_thread(tmp_path, mcp_json, "t1")

    child = _spawn("run", "--model", f"replay:{answer}", *common, "--resume", "t1", "--json")
    child.expect(r"\[y/e/n\]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    output = child.before.replace("\r\n", "\n")
    document = json.loads(output[output.index("{\n") :])
    messages = messages_from_dict(document["messages"])
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"]
    assert messages[-1].content == "三张表"


class Killed(BaseException):
    """The process stopped right there (its checkpoint already committed)."""


def test_resume_finishes_a_turn_stopped_right_after_its_input_was_saved(tmp_path: Path) -> None:
    """The thread's last checkpoint holds the question and nothing else: ``get_state``
    shows no next node, yet the turn is unfinished, and --resume finishes it."""
    from fncall_graph import create_fncall_graph
    from fncall_graph.adapters.checkpoint import sqlite_saver
    from fncall_graph.testing import ReplayChatModel

    db = tmp_path / "threads.sqlite"
    with sqlite_saver(db) as saver:
        put = saver.put

        def put_then_stop(*args: Any, **kwargs: Any) -> Any:
            put(*args, **kwargs)
            raise Killed

        saver.put = put_then_stop  # type: ignore[method-assign]
        graph = create_fncall_graph(ReplayChatModel(["never asked"]), [], checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t3"}}
        with pytest.raises(Killed):
            graph.invoke({"messages": [("user", QUESTIONS[0])]}, cfg)
        stopped = graph.get_state(cfg)
        assert stopped.next == () and stopped.metadata["source"] == "input"

    answer = replay_file(tmp_path, "answer.json", ["三张表"])
    done = cli("run", "--model", f"replay:{answer}", "--db", str(db), "--resume", "t3", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout[done.stdout.index("{\n") :])
    messages = messages_from_dict(document["messages"])
    assert [(m.type, m.content) for m in messages] == [("human", QUESTIONS[0]), ("ai", "三张表")]


def test_a_running_call_shows_its_servers_progress() -> None:
    import io

    from fncall_graph.cli.terminal import UI

    ui = UI(io.StringIO())
    ui.call_started("c1", "weather-forecast", {"city": "北京"}, waiting=False)
    ui.call_progress("c1", 2, 3, "day 2")
    assert "[#######---] 2/3 day 2" in ui.calls["c1"].line()
    ui.call_progress("c1", 5, None, None)
    assert "[5]" in ui.calls["c1"].line()
    ui.call_finished("c1", "done")
    assert "[5]" not in ui.calls["c1"].line()  # a finished call shows its outcome
    ui.call_progress("unknown", 1, 2, None)  # a report for no call shown is ignored


def test_a_servers_question_is_asked_at_the_terminal() -> None:
    import io
    from types import SimpleNamespace

    from fncall_graph.cli.approval import TerminalReview
    from fncall_graph.cli.terminal import UI

    pending = SimpleNamespace(
        id="i1",
        value={
            "mcp_elicitation": {
                "tool": "weather-book_hotel",
                "message": "在北京订酒店吗?",
                "requested_schema": {
                    "properties": {"confirm": {"type": "boolean"}, "nights": {"type": "integer"}},
                    "required": ["confirm"],
                },
            }
        },
    )

    answers = iter(["y", "yes", "two", "2"])
    ui = UI(io.StringIO())
    ui.ask = lambda prompt: next(answers)  # type: ignore[method-assign]
    review = TerminalReview(ui, "t")
    assert review.decide([pending]) == {
        "action": "accept",
        "content": {"confirm": True, "nights": 2},
    }
    ui.ask = lambda prompt: "n"  # type: ignore[method-assign]
    assert review.decide([pending]) == {"action": "decline"}


def test_a_servers_question_shows_its_defaults_and_choices(capsys) -> None:
    import io
    from types import SimpleNamespace

    from fncall_graph.cli.approval import TerminalReview
    from fncall_graph.cli.terminal import UI

    schema = {
        "properties": {
            "nights": {"type": "integer", "default": 1},
            "room": {"type": "string", "enum": ["single", "double"], "default": "double"},
            "note": {"type": "string"},
        },
        "required": ["nights"],
    }
    question = {
        "tool": "weather-book_hotel",
        "message": "Book?",
        "requested_schema": schema,
        "defaults": {"nights": 1, "room": "double"},
    }
    pending = SimpleNamespace(id="i1", value={"mcp_elicitation": question})
    prompts: list[str] = []
    answers = iter(["y", "", "suite", "single", ""])

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    ui = UI(io.StringIO())
    ui.ask = ask  # type: ignore[method-assign]
    review = TerminalReview(ui, "t")
    # empty takes the default; a value outside the choices is asked again
    assert review.decide([pending]) == {
        "action": "accept",
        "content": {"nights": 1, "room": "single"},
    }
    assert "(integer, default 1)" in prompts[1]
    assert '(single/double, default "double")' in prompts[2]

    url = {
        "tool": "weather-login",
        "message": "Sign in",
        "mode": "url",
        "url": "http://127.0.0.1/x",
    }
    ui = UI(io.StringIO())
    ui.ask = lambda prompt: "y"  # type: ignore[method-assign]
    assert TerminalReview(ui, "t").decide(
        [SimpleNamespace(id="i2", value={"mcp_elicitation": url})]
    ) == {"action": "accept"}
    assert "open http://127.0.0.1/x" in capsys.readouterr().err


def test_chat_lists_mcp_prompts_and_opens_a_turn_with_one(tmp_path: Path) -> None:
    config = tmp_path / "weather.json"
    server = {"command": sys.executable, "args": ["-m", "fncall_graph.examples.weather_server"]}
    config.write_text(json.dumps({"mcpServers": {"weather": server}}), encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    child = _spawn(
        "chat",
        "--model",
        "replay:weather?in-order",  # what it is asked is not its question
        "--mcp",
        str(config),
        "--db",
        str(tmp_path / "threads.sqlite"),
        "--trace-file",
        str(trace),
    )
    child.expect("you> ")
    child.sendline("/prompts")
    child.expect("/prompt weather-weather_report city=…")
    child.expect("you> ")
    child.sendline("/prompt weather-nope")
    child.expect("no MCP prompt named 'weather-nope'")
    child.expect("you> ")
    child.sendline("/prompt weather-weather_report city=北京")
    child.expect("you> ")
    exit_cleanly(child)
    assert "请查询北京的天气" in trace.read_text(encoding="utf-8")


def test_the_terminal_answers_an_approval_bound_to_what_it_showed() -> None:
    import io
    from types import SimpleNamespace

    from fncall_graph.cli.approval import TerminalReview
    from fncall_graph.cli.terminal import UI

    pending = SimpleNamespace(
        id="i1",
        value={
            "action_requests": [
                {"name": "sqlite-write_query", "args": {"query": "DELETE"}, "tool_call_id": "c9"}
            ],
            "review_configs": [
                {"action_name": "sqlite-write_query", "allowed_decisions": ["approve", "reject"]}
            ],
            "review_token": "tok",
        },
    )
    ui = UI(io.StringIO())
    ui.ask = lambda prompt: "y"  # type: ignore[method-assign]
    assert TerminalReview(ui, "t").decide([pending]) == {
        "decisions": [{"type": "approve", "tool_call_id": "c9"}],
        "review_token": "tok",
    }


def test_trace_shows_each_prompt_as_text(tmp_path: Path, mcp_json: Path) -> None:
    done = run_first_question(tmp_path, mcp_json, "--trace")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # the prompt's lines as lines, under the role of their message; no JSON escapes
    assert "\\n" not in done.stdout and '\\"' not in done.stdout
    system = lines.index("  [system]", lines.index("processed input:"))
    assert lines[system + 1] == "    " + CALLS[0]["model_input"][0]["content"].splitlines()[0]
    assert "    <tool_call>" in lines  # the raw output, as the model wrote it
    assert "    → sqlite-list_tables {}" in lines  # the call read from it


def test_resume_restates_the_turn_and_shows_the_approved_call_done(
    tmp_path: Path, mcp_json: Path
) -> None:
    answer, common = interrupted_thread(tmp_path, mcp_json, "t2")

    child = _spawn("run", "--model", f"replay:{answer}", *common, "--resume", "t2")
    child.expect_exact(f"you> {QUESTIONS[0]}")
    child.expect(r"run sqlite-list_tables \{\}\? \[y/e/n\]")
    child.sendline("y")
    child.expect(r"✓ (\x1b\[[0-9;]*m)*sqlite-list_tables \{\} done")  # colours between
    child.expect("三张表")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_chat_commands_are_not_sent_to_the_model(tmp_path: Path, mcp_json: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    child = _gated_chat(tmp_path, mcp_json, "--trace-file", str(trace))
    child.expect("you> ")
    child.sendline("/help")
    child.expect_exact("/prompts")
    child.expect_exact("/exit, /quit, Ctrl-D")
    child.expect("you> ")
    child.sendline("/nosuch a b")
    child.expect_exact("unknown command /nosuch; /help lists the commands")
    child.expect("you> ")
    exit_cleanly(child)
    assert trace.read_text("utf-8") == ""  # the model was never called


def test_ctrl_c_at_an_approval_ends_the_line_first(tmp_path: Path, mcp_json: Path) -> None:
    child = _gated_chat(tmp_path, mcp_json)
    child.expect("you> ")
    child.sendline(QUESTIONS[0])
    child.expect(r"\[y/e/n\] ")
    wait_until_reading(child)
    child.sendintr()
    child.expect_exact("(turn interrupted)")
    assert child.before.endswith("\n"), repr(child.before)  # not glued to the echoed ^C
    child.expect("you> ")
    exit_cleanly(child)


def test_mcp_servers_stderr_goes_to_a_log_named_at_start(tmp_path: Path) -> None:
    server = REPO / "tests" / "servers" / "tools_only_server.py"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"plain": {"command": sys.executable, "args": [str(server)]}}})
    )
    echo = replay_file(
        tmp_path,
        "echo.json",
        ['<tool_call>\n{"name": "plain-echo", "arguments": {"text": "hi"}}\n</tool_call>', "ok"],
    )
    state = tmp_path / "state"
    done = cli(
        "run",
        "--model",
        f"replay:{echo}",
        "--mcp",
        str(config),
        "--db",
        str(state / "t.sqlite"),
        "echo hi",
    )
    assert done.returncode == 0, done.stderr
    log = state / "mcp-servers.log"
    assert f"MCP servers' stderr goes to {log}" in done.stderr
    assert "[tool] plain-echo" in done.stdout
    # FastMCP logs each request on stderr: in the log, not between the session's lines
    assert "Processing request" in log.read_text("utf-8")
    assert "Processing request" not in done.stdout + done.stderr


def test_auto_dialect_is_described_as_it_is_chosen(tmp_path: Path) -> None:
    help_text = " ".join(cli("chat", "--help").stdout.split())
    assert "'local': hermes" in help_text
    assert "else native for models whose LangChain class binds tools" in help_text
    # a recording speaks its own dialect; an OpenAI-compatible server is native
    for spec, dialect in (
        ("replay:database-assistant", "hermes"),
        (f"http://127.0.0.1:{free_port()}/v1#m", "native"),
    ):
        done = cli("run", "--trace", "--model", spec, "--db", str(tmp_path / "t.sqlite"), "hi")
        assert f"dialect {dialect} · 0 tools" in done.stderr, done.stderr


def test_run_without_mcp_warns_that_there_are_no_tools(tmp_path: Path) -> None:
    answer = replay_file(tmp_path, "answer.json", ["你好"])
    done = cli("run", "--model", f"replay:{answer}", "--db", str(tmp_path / "t.sqlite"), "hi")
    assert done.returncode == 0, done.stderr
    assert "warning: no tools: without --mcp" in done.stderr
    assert "assistant> 你好" in done.stdout


def test_bench_prints_a_row_per_mode_and_the_mode_to_use() -> None:
    """``fncall-graph bench`` runs the example per mode over the real mcp-server-sqlite;
    on the recording every mode answers, so the table's shape and the choice are checked."""
    done = cli("bench", "replay:database-assistant", "--modes", "native,hermes+first_call")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("model replay:database-assistant")
    assert lines[1].split()[:3] == ["mode", "answers", "right"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:4]}
    assert set(rows) == {"native", "hermes+first_call"}
    assert all(
        cells[0] == "4/4" and cells[1] == "4/4" and cells[2] == "1" for cells in rows.values()
    )
    assert lines[4].startswith("use: ") and lines[4].split()[1] in rows
    # the servers' own stderr goes to the log it names, one header per server start
    log = Path(done.stderr.split("MCP servers' stderr goes to ")[1].split(")")[0])
    assert log.read_text(encoding="utf-8").count("--- ") >= 2


def test_bench_refuses_an_unknown_mode_naming_the_choices() -> None:
    done = cli("bench", "replay:database-assistant", "--modes", "native,hermes+never")
    assert done.returncode == 1
    assert "'hermes+never' is not DIALECT" in done.stderr and "react" in done.stderr
