""" "Outcome unknown" says what is known of why the outcome was not recorded."""

from __future__ import annotations

import time

import pytest

from fncall_graph.adapters.checkpoint import claims
from fncall_graph.adapters.checkpoint.claims import ClaimKey, ClaimRow, Owner
from fncall_graph.guarantees.claimed_calls import unknown_outcome

CALL = {"name": "write", "args": {}, "id": "c1", "type": "tool_call"}


def claim(owner: Owner, status: str) -> ClaimRow:
    return ClaimRow(ClaimKey("t", "", "c1"), "write", str(owner), "s", status, time.time())


@pytest.mark.parametrize(
    ("owner", "status", "said", "not_said"),
    [
        ("dead", "running", "exited before the call finished", "cancelled"),
        ("here", "abandoned", "was cancelled, or could not record", "exited"),
        ("dead", "abandoned", "was cancelled, or could not record", "exited"),
        ("elsewhere", "running", "on another machine", "exited"),
        ("here", "running", "ended without recording", "exited"),
        # alive on this machine, its lease lapsed: it stopped renewing, it did not exit
        ("alive", "running", "stopped renewing its claim", "exited"),
    ],
)
def test_the_cause_is_worded_as_known(owner, status, said, not_said):
    me = Owner.here()
    holder = {
        "here": me,
        "dead": Owner(me.host, me.pid, "another-start", "x"),  # same pid, another process
        "elsewhere": Owner("other-host/boot", 4242, "1", "x"),
        "alive": Owner(me.host, 1, claims._start_time(1) or "", "x"),  # init
    }[owner]
    message = unknown_outcome(CALL, claim(holder, status))
    assert message.content.startswith("Outcome unknown: ") and said in message.content
    assert (
        not_said not in message.content
        and "stopped before the call finished" not in message.content
    )
    assert message.status == "error" and message.artifact["outcome"] == "unknown"
