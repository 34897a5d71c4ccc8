"""Client.upload against the real service: both routes, progress, refusals, retries, renewal."""

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import FaultProxy, Server, csv_bytes, error_answer, free_port, unique, write
from conftest import read

from abn_client import ApiError, Client


def test_direct_upload_stores_the_bytes_and_answers_the_services_json(server, client, files):
    eid = unique("direct")
    result = client.upload(files["large"], eid)
    data = read(files["large"])
    assert server.stored(eid) == data
    assert result["success"] is True
    assert result["experiment_id"] == eid
    assert result["size_bytes"] == len(data)
    assert result["sha256"] == hashlib.sha256(data).hexdigest()
    assert isinstance(result["etag"], str) and result["etag"]
    assert result["rows"] == data.count(b"\n") - 1


def test_direct_upload_sends_the_files_size_as_content_length(server, files):
    proxy = FaultProxy(server.url)
    try:
        Client(proxy.url, server.api_key).upload(files["large"], unique("length"))
    finally:
        proxy.close()
    sent = proxy.headers[0]
    assert sent["content-length"] == str(Path(files["large"]).stat().st_size)
    assert "transfer-encoding" not in sent
    assert sent["authorization"] == f"Bearer {server.api_key}"


def test_progress_goes_from_0_to_the_size_in_steps(client, files):
    calls = []
    client.upload(files["large"], unique("progress"), progress=lambda s, t: calls.append((s, t)))
    size = Path(files["large"]).stat().st_size
    assert calls[0] == (0, size)
    assert calls[-1] == (size, size)
    sent = [s for s, _ in calls]
    assert sent == sorted(sent) and len(set(sent)) == len(sent)
    assert len(calls) >= 4  # 3 MB in 1 MiB chunks: the file is streamed, not sent at once
    assert {t for _, t in calls} == {size}


def test_two_step_upload_answers_the_grant_and_the_put(server, client, files):
    eid = unique("two")
    calls = []
    result = client.upload(
        files["large"], eid, two_step=True, progress=lambda s, t: calls.append(s)
    )
    data = read(files["large"])
    assert server.stored(eid) == data
    assert result["experiment_id"] == eid
    assert result["route"] == "two_step"
    assert result["size_bytes"] == len(data)
    assert result["sha256"] == hashlib.sha256(data).hexdigest()
    assert result["key"].endswith(f"/experiments/{eid}/latest.csv")
    assert result["bucket"] == "local"
    assert result["status"] == 200
    assert "upload_url" not in result
    listed = {d["experiment_id"]: d for d in client.datasets()}
    assert listed[eid]["etag"] == result["etag"]
    assert calls[0] == 0 and calls[-1] == len(data)


def test_a_400_raises_api_error_with_the_services_code_and_stores_nothing(server, client, files):
    eid = unique("bad")
    with pytest.raises(ApiError) as caught:
        client.upload(files["invalid"], eid)
    error = caught.value
    assert (error.status, error.code) == (400, "invalid_csv")
    assert "line 2" in error.message
    assert len(error.request_id or "") == 36
    assert str(error).startswith("upload refused: HTTP 400 invalid_csv: ")
    assert server.stored(eid) is None


def test_a_csv_error_answered_mid_body_is_read_not_taken_for_a_network_error(server, files):
    # The service answers line 2's error while the client is still sending 3 MB.
    proxy_free = Client(server.url, server.api_key, retries=0)
    calls = []
    with pytest.raises(ApiError) as caught:
        proxy_free.upload(
            files["invalid_large"], unique("early"), progress=lambda s, t: calls.append(s)
        )
    assert (caught.value.status, caught.value.code) == (400, "invalid_csv")
    assert calls[-1] < Path(files["invalid_large"]).stat().st_size


def test_other_refusals_carry_their_codes(server, client, files):
    with pytest.raises(ApiError) as bad_id:
        client.upload(files["small"], "bad id")
    assert (bad_id.value.status, bad_id.value.code) == (400, "invalid_experiment_id")
    wrong = Client(server.url, "abn_wrong", retry_base=0.01)
    with pytest.raises(ApiError) as unauthorized:
        wrong.upload(files["small"], unique("key"))
    assert (unauthorized.value.status, unauthorized.value.code) == (401, "unauthorized")
    with pytest.raises(ApiError) as two_step:
        wrong.upload(files["small"], unique("key"), two_step=True)
    assert (two_step.value.status, two_step.value.code) == (401, "unauthorized")


def test_an_oversize_file_gets_413_before_its_body(files, tmp_path):
    small_limit = Server({"ABN_MAX_UPLOAD_BYTES": "65536"})
    try:
        c = Client(small_limit.url, small_limit.api_key, retry_base=0.01)
        with pytest.raises(ApiError) as direct:
            c.upload(files["large"], "too-big")
        assert (direct.value.status, direct.value.code) == (413, "payload_too_large")
        with pytest.raises(ApiError) as two_step:
            c.upload(files["large"], "too-big", two_step=True)
        assert (two_step.value.status, two_step.value.code) == (413, "payload_too_large")
    finally:
        small_limit.stop()


def test_a_missing_file_raises_before_any_request(client, tmp_path):
    with pytest.raises(FileNotFoundError):
        client.upload(tmp_path / "absent.csv", unique("absent"))
    with pytest.raises(ValueError, match="not a file"):
        client.upload(tmp_path, unique("dir"))


def test_a_503_is_retried_and_the_upload_succeeds(server, files):
    notices = []
    proxy = FaultProxy(
        server.url,
        lambda line, n: (
            error_answer(503, "service_unavailable")
            if line.startswith("POST /api/v1/datasets/upload") and n == 1
            else None
        ),
    )
    calls = []
    try:
        c = Client(proxy.url, server.api_key, retry_base=0.01, log=notices.append)
        eid = unique("retried")
        result = c.upload(files["large"], eid, progress=lambda s, t: calls.append(s))
    finally:
        proxy.close()
    assert proxy.count("POST /api/v1/datasets/upload") == 2
    assert result["sha256"] == hashlib.sha256(read(files["large"])).hexdigest()
    assert server.stored(eid) == read(files["large"])
    assert "HTTP 503 service_unavailable: injected service_unavailable; retrying in" in notices[0]
    assert "(attempt 2 of 5)" in notices[0]
    assert calls.count(0) == 2  # progress starts over with the second attempt


def test_a_429_waits_what_its_retry_after_asks(server, files):
    notices = []
    proxy = FaultProxy(
        server.url,
        lambda line, n: (
            error_answer(429, "rate_limited", {"Retry-After": "1"})
            if line.startswith("POST /api/v1/datasets/upload") and n == 1
            else None
        ),
    )
    try:
        c = Client(proxy.url, server.api_key, retry_base=0.01, log=notices.append)
        started = time.monotonic()
        c.upload(files["small"], unique("limited"))
        waited = time.monotonic() - started
    finally:
        proxy.close()
    assert waited >= 1.0
    assert "HTTP 429 rate_limited" in notices[0] and "retrying in 1.0 s" in notices[0]
    assert proxy.count("POST /api/v1/datasets/upload") == 2


def test_a_dropped_connection_is_retried(server, files):
    notices = []
    proxy = FaultProxy(
        server.url,
        lambda line, n: (
            "drop" if line.startswith("POST /api/v1/datasets/upload") and n == 1 else None
        ),
    )
    try:
        c = Client(proxy.url, server.api_key, retry_base=0.01, log=notices.append)
        eid = unique("dropped")
        c.upload(files["large"], eid)
    finally:
        proxy.close()
    assert proxy.count("POST /api/v1/datasets/upload") == 2
    assert "network error" in notices[0]
    assert server.stored(eid) == read(files["large"])


def test_retries_give_up_with_the_last_answer(server, files):
    proxy = FaultProxy(server.url, lambda line, n: error_answer(503, "service_unavailable"))
    try:
        c = Client(proxy.url, server.api_key, retries=2, retry_base=0.01, log=lambda _: None)
        with pytest.raises(ApiError) as caught:
            c.upload(files["small"], unique("gave-up"))
    finally:
        proxy.close()
    assert (caught.value.status, caught.value.code) == (503, "service_unavailable")
    assert str(caught.value).startswith("upload failed: HTTP 503")
    assert proxy.count("POST") == 3


def test_an_unreachable_service_fails_after_the_retries(files):
    notices = []
    c = Client(
        f"http://127.0.0.1:{free_port()}", "abn_x", retries=2, retry_base=0.01, log=notices.append
    )
    with pytest.raises(ApiError) as caught:
        c.upload(files["small"], "nowhere")
    assert caught.value.status is None and caught.value.code is None
    assert str(caught.value).startswith("upload gave up after 3 attempt(s): network error")
    assert len(notices) == 2


def test_a_4xx_is_never_retried(server, files):
    proxy = FaultProxy(server.url)
    try:
        c = Client(proxy.url, server.api_key, retry_base=0.01)
        with pytest.raises(ApiError):
            c.upload(files["invalid"], unique("once"))
    finally:
        proxy.close()
    assert proxy.seen == ["POST /api/v1/datasets/upload/"]


def test_two_step_retries_initiate_after_503_and_429(server, files):
    def rule(line, n):
        if not line.startswith("POST /api/v1/datasets/initiate"):
            return None
        if n == 1:
            return error_answer(503, "service_unavailable")
        if n == 2:
            return error_answer(429, "rate_limited", {"Retry-After": "0"})
        return None

    proxy = FaultProxy(server.url, rule)
    try:
        c = Client(proxy.url, server.api_key, retry_base=0.01, log=lambda _: None)
        eid = unique("two-retried")
        c.upload(files["small"], eid, two_step=True)
    finally:
        proxy.close()
    assert proxy.count("POST /api/v1/datasets/initiate") == 3
    assert server.stored(eid) == read(files["small"])


def test_an_expired_upload_url_is_replaced_by_a_fresh_grant(files):
    # Upload URLs live 1 s and point at a proxy that holds the first PUT back 2.2 s.
    port = free_port()
    proxy = FaultProxy(
        f"http://127.0.0.1:{port}",
        lambda line, n: ("delay", 2.2) if line.startswith("PUT /storage/") and n == 1 else None,
    )
    short = Server({"ABN_PRESIGN_TTL_SECONDS": "1", "ABN_PUBLIC_URL": proxy.url}, port=port)
    notices = []
    try:
        c = Client(short.url, short.api_key, retry_base=0.01, log=notices.append)
        result = c.upload(files["small"], "renewed", two_step=True)
        assert short.stored("renewed") == read(files["small"])
        assert result["status"] == 200
    finally:
        short.stop()
        proxy.close()
    assert proxy.count("PUT /storage/") == 2
    assert "PUT: HTTP 403 url_expired" in notices[0]
    assert notices[0].endswith("fetching a fresh upload URL")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_the_file_is_streamed_in_bounded_memory(server, tmp_path):
    # 48 MB through a fresh interpreter: its peak resident set stays far below the file's size.
    path = write(tmp_path / "big.csv", csv_bytes(48 * 1024 * 1024, seed=9))
    # VmHWM is this process's own peak (ru_maxrss would count the forking parent's pages too).
    script = (
        "import json, re, sys\n"
        "from abn_client import Client\n"
        "r = Client(sys.argv[1], sys.argv[2]).upload(sys.argv[3], 'streamed')\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read())\n"
        "print(json.dumps({'size': r['size_bytes'], 'rss_mb': int(peak.group(1)) / 1024}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, server.url, server.api_key, path],
        check=True,
        capture_output=True,
        text=True,
    )
    figures = json.loads(out.stdout)
    assert figures["size"] == Path(path).stat().st_size
    assert figures["rss_mb"] < 40, figures
