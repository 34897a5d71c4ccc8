"""wait_for_analysis for this delivery, the reads (every page), settings and delete."""

import json
import time

import pytest
from _support import FaultProxy, csv_bytes, unique, write

from abn_client import AnalysisTimeout, ApiError, Client


def test_wait_for_analysis_answers_the_analysis_of_each_delivery(client, tmp_path):
    eid = unique("wait")
    first = write(tmp_path / "a.csv", csv_bytes(20_000, seed=1))
    second = write(tmp_path / "b.csv", csv_bytes(60_000, seed=2))
    a = client.upload(first, eid)
    ready = client.wait_for_analysis(eid, timeout=60)
    assert ready["status"] == "ready"
    assert ready["dataset"]["etag"] == a["etag"]
    assert ready["dataset"]["rows"] == a["rows"]
    b = client.upload(second, eid)
    assert b["etag"] != a["etag"]
    # Straight after the second delivery: its analysis, never the first one's.
    again = client.wait_for_analysis(eid, timeout=60)
    assert again["dataset"]["etag"] == b["etag"]
    assert again["dataset"]["rows"] == b["rows"] != a["rows"]
    # Asked by ETag: the same.
    assert client.wait_for_analysis(eid, etag=b["etag"])["dataset"]["rows"] == b["rows"]


def test_wait_for_analysis_refuses_a_delivery_that_another_one_replaced(server, client, tmp_path):
    eid = unique("replaced")
    other = Client(server.url, server.api_key)
    client.upload(write(tmp_path / "a.csv", csv_bytes(10_000, seed=3)), eid)
    theirs = other.upload(write(tmp_path / "b.csv", csv_bytes(10_000, seed=4)), eid)
    with pytest.raises(ApiError) as caught:
        client.wait_for_analysis(eid, timeout=30)
    assert caught.value.code == "delivery_replaced"
    assert theirs["etag"] in caught.value.message
    assert other.wait_for_analysis(eid, timeout=60)["dataset"]["etag"] == theirs["etag"]


def test_wait_for_analysis_raises_when_the_analysis_failed(client, files):
    # A two-step file is checked when it is analysed: its CSV error is the analysis's.
    eid = unique("failed")
    client.upload(files["invalid"], eid, two_step=True)
    with pytest.raises(ApiError) as caught:
        client.wait_for_analysis(eid, timeout=60)
    assert caught.value.code == "analysis_failed"
    assert "line 2" in caught.value.message
    assert client.analysis(eid)["status"] == "failed"


def test_wait_for_analysis_times_out_on_a_pending_analysis(server):
    pending = json.dumps({"status": "pending", "dataset": {"etag": "e1"}, "error": None}).encode()
    proxy = FaultProxy(
        server.url,
        lambda line, n: (
            (200, {"Content-Type": "application/json"}, pending)
            if line.endswith("/analysis/")
            else None
        ),
    )
    try:
        c = Client(proxy.url, server.api_key)
        started = time.monotonic()
        with pytest.raises(AnalysisTimeout) as caught:
            c.wait_for_analysis("slow", timeout=0.7, etag="e1")
        took = time.monotonic() - started
    finally:
        proxy.close()
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, ApiError)
    assert caught.value.code == "analysis_timeout"
    assert 0.7 <= took < 5
    assert proxy.count("GET /api/v1/datasets/slow/analysis/") >= 2


def test_analysis_of_an_unknown_experiment_is_not_found(client):
    with pytest.raises(ApiError) as caught:
        client.analysis(unique("none"))
    assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_datasets_reads_every_page(server, client, files):
    ids = sorted(unique("list") for _ in range(5))
    for eid in ids:
        client.upload(files["small"], eid)
    everything = client.datasets()
    proxy = FaultProxy(server.url)
    try:
        paged = Client(proxy.url, server.api_key).datasets(page_size=2)
    finally:
        proxy.close()
    assert paged == everything
    listed = [d["experiment_id"] for d in paged]
    assert set(ids) <= set(listed)
    assert listed == sorted(listed, key=lambda s: s.encode())
    assert proxy.count("GET /api/v1/datasets/") == (len(paged) + 1) // 2


def test_history_reads_every_page_oldest_first(client, tmp_path):
    eid = unique("history")
    etags = []
    for seed in range(3):
        result = client.upload(write(tmp_path / f"h{seed}.csv", csv_bytes(5_000, seed=seed)), eid)
        client.wait_for_analysis(eid, timeout=60)
        etags.append(result["etag"])
    snapshots = client.history(eid, page_size=2)
    assert [s["etag"] for s in snapshots] == etags
    assert snapshots == client.history(eid)


def test_settings_are_saved_read_and_checked(client, files):
    eid = unique("settings")
    client.upload(files["small"], eid)
    client.wait_for_analysis(eid, timeout=60)
    assert client.settings(eid) == {}
    saved = client.put_settings(eid, {"control": "B", "mde": 0.1})
    assert saved == {"control": "B", "mde": 0.1}
    assert client.settings(eid) == saved
    with pytest.raises(ApiError) as unknown:
        client.put_settings(eid, {"controll": "B"})
    assert (unknown.value.status, unknown.value.code) == (400, "invalid_settings")
    with pytest.raises(ApiError) as absent:
        client.put_settings(eid, {"control": "Z"})
    assert absent.value.code == "invalid_settings"
    assert client.settings(eid) == saved


def test_delete_removes_the_dataset(client, files):
    eid = unique("delete")
    client.upload(files["small"], eid)
    assert client.delete(eid) == {"deleted": True, "experiment_id": eid}
    with pytest.raises(ApiError) as caught:
        client.analysis(eid)
    assert caught.value.code == "not_found"
    assert eid not in {d["experiment_id"] for d in client.datasets()}


def test_the_client_reads_its_url_and_key_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("ABN_URL", server.url + "/")
    monkeypatch.setenv("ABN_API_KEY", server.api_key)
    c = Client()
    assert c.url == server.url
    assert isinstance(c.datasets(), list)
    assert server.api_key not in repr(c)
    monkeypatch.delenv("ABN_API_KEY")
    with pytest.raises(ValueError, match="No API key"):
        Client()
    with pytest.raises(ValueError, match="without /api/v1"):
        Client(server.url + "/api/v1", "abn_x")
    with pytest.raises(ValueError, match="http\\(s\\) URL"):
        Client("ftp://example.org", "abn_x")
