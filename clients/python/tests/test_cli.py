"""The abn-upload console script: exit status, output, --json, --wait, progress."""

import json
import os
import pty
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from _support import unique
from conftest import read

from abn_client._cli import USAGE

SCRIPT = str(Path(sys.executable).with_name("abn-upload"))


def run(server, args, env=None):
    """Runs abn-upload with the server's URL and key in the environment; the key is in no output."""
    result = subprocess.run(
        [SCRIPT, *args],
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("ABN_")},
            "ABN_URL": server.url,
            "ABN_API_KEY": server.api_key,
            "ABN_UPLOAD_RETRY_BASE_MS": "10",
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert server.api_key not in result.stdout + result.stderr
    return result


def test_a_direct_upload_exits_0_and_prints_what_was_stored(server, files):
    eid = unique("cli")
    r = run(server, [files["large"], "--experiment-id", eid])
    assert r.returncode == 0, r.stderr
    data = read(files["large"])
    assert server.stored(eid) == data
    assert f"experiment_id: {eid}" in r.stdout
    assert f"size: {len(data)} bytes" in r.stdout
    assert re.search(r"sha256: [0-9a-f]{64}", r.stdout)
    # Not a terminal: plain progress lines, ending at 100 %.
    assert re.search(r"^upload: +\d+%", r.stderr, re.M)
    assert "upload: 100%" in r.stderr


def test_json_and_wait_print_the_delivery_and_its_analysis(server, files):
    eid = unique("cli-wait")
    r = run(server, [files["small"], f"--experiment-id={eid}", "--two-step", "--wait", "--json"])
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert answer["route"] == "two_step"
    assert answer["analysis"]["status"] == "ready"
    assert answer["analysis"]["dataset"]["etag"] == answer["etag"]
    direct = run(server, [files["small"], "--experiment-id", eid, "--wait"])
    assert direct.returncode == 0, direct.stderr
    assert re.search(r"^analysis: ready \(etag [0-9a-f]+\)$", direct.stdout, re.M)


def test_a_failed_analysis_under_wait_exits_1(server, files):
    eid = unique("cli-failed")
    r = run(server, [files["invalid"], "--experiment-id", eid, "--two-step", "--wait", "--json"])
    assert r.returncode == 1
    error = json.loads(r.stdout)["error"]
    assert error["status"] is None and error["code"] == "analysis_failed"
    assert "line 2" in error["message"]
    assert re.search(r"^error: analysis of .* failed: .*line 2", r.stderr, re.M)


def test_a_refusal_exits_1_with_the_services_error(server, files):
    eid = unique("cli-bad")
    r = run(server, [files["invalid"], "--experiment-id", eid, "--json"], {"ABN_API_KEY": ""})
    # No key in the environment: a usage error before any request.
    assert r.returncode == 2 and "No API key" in r.stderr
    r = run(server, [files["invalid"], "--experiment-id", eid, "--key", server.api_key, "--json"])
    assert r.returncode == 1
    error = json.loads(r.stdout)["error"]
    assert [error["status"], error["code"]] == [400, "invalid_csv"]
    assert re.fullmatch(r"[0-9a-f-]{36}", error["request_id"])
    assert re.search(r"HTTP 400 invalid_csv: .*line 2", r.stderr)
    assert server.stored(eid) is None


@pytest.mark.parametrize(
    "args, pattern",
    [
        ([], "Missing FILE"),
        (["a.csv"], "Missing --experiment-id"),
        (["a.csv", "b.csv", "--experiment-id", "e"], "Give one FILE, not 2"),
        (["a.csv", "--experiment-id", "e", "--bogus"], "Unknown option: --bogus"),
        (["a.csv", "--experiment-id"], "Missing value for --experiment-id"),
        (["a.csv", "--experiment-id", "e", "--experiment-id", "f"], "Give --experiment-id once"),
        (["a.csv", "--experiment-id", "e", "--retries", "x"], "Invalid --retries x"),
        (["a.csv", "--experiment-id", "e", "--wait-timeout", "0"], "Invalid --wait-timeout 0"),
        (["/nonexistent/a.csv", "--experiment-id", "e"], "Cannot read /nonexistent/a.csv"),
        ([".", "--experiment-id", "e"], "Cannot read .: not a file"),
        (["a.csv", "--experiment-id", "e", "--url", "http://h/api/v1"], "without /api/v1"),
        (["a.csv", "--experiment-id", "e", "--url", "ftp://h"], r"http\(s\) URL"),
    ],
)
def test_a_bad_command_line_exits_2_with_the_usage(server, args, pattern):
    r = run(server, args)
    assert r.returncode == 2
    assert re.search(pattern, r.stderr), r.stderr
    assert "usage: abn-upload FILE" in r.stderr
    assert r.stdout == ""


def test_help_prints_the_usage_and_exits_0(server):
    r = run(server, ["--help"])
    assert r.returncode == 0
    assert r.stdout.rstrip("\n") == USAGE
    # The client's guide shows the same text.
    guide = (Path(__file__).parents[1] / "README.md").read_text()
    assert USAGE in guide


def test_history_appends_todays_utc_date(server, files):
    before = datetime.now(timezone.utc)
    r = run(server, [files["small"], "--experiment-id", "nightly", "--history", "--json"])
    assert r.returncode == 0, r.stderr
    eid = json.loads(r.stdout)["experiment_id"]
    days = {(before + timedelta(seconds=s)).strftime("%Y%m%d") for s in (0, 120)}
    assert eid in {f"nightly_{d}" for d in days}
    assert server.stored(eid) == read(files["small"])


def test_a_terminal_gets_a_bar_redrawn_in_place(server, files):
    main, other = pty.openpty()
    try:
        process = subprocess.Popen(
            [SCRIPT, files["large"], "--experiment-id", unique("tty")],
            env={**os.environ, "ABN_URL": server.url, "ABN_API_KEY": server.api_key},
            stdout=subprocess.DEVNULL,
            stderr=other,
        )
        os.close(other)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(60) == 0
    finally:
        os.close(main)
    text = shown.decode()
    assert "\r\x1b[2K[" in text
    assert re.search(r"\[#{24}\] 100%", text)
    assert "upload: " not in text  # no plain lines on a terminal
