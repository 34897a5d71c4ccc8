"""``Client``: deliveries (direct and two-step), the wait for their analysis, and the reads."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import ssl
import stat
import time
from typing import Any, Callable, Dict, List, Optional, Union
from urllib.parse import quote, urlencode, urlsplit

from ._answers import describe, failure, parse_json
from ._errors import AnalysisTimeout, ApiError, FileChangedError
from ._retry import RetryPolicy, with_retries
from ._transport import Answer, request, send_file

#: ``progress(sent, total)``: bytes handed to the connection so far, and the file's size.
Progress = Callable[[int, int], None]
PathLike = Union[str, "os.PathLike[str]"]

logger = logging.getLogger("abn_client")

#: Fresh upload URLs fetched at most after a PUT answered 403 (an expired or refused URL).
MAX_REFRESHES = 3
MIB = 1048576


def base_url(raw: str, label: str = "url") -> str:
    """Checks a base URL (http or https, without ``/api/v1``); answers it without a trailing
    slash. Raises ValueError naming ``label``."""
    try:
        parts = urlsplit(raw.strip())
        parts.port  # a port that is not a number raises here
    except ValueError:
        raise ValueError(f"Invalid {label} {raw}: expected an http(s) URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"Invalid {label} {raw}: expected an http(s) URL")
    if parts.query or parts.fragment:
        raise ValueError(f"Invalid {label} {raw}: give the base URL without a query")
    base = f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")
    if base.endswith("/api/v1"):
        raise ValueError(f"Invalid {label} {raw}: give the service's base URL without /api/v1")
    return base


def _segment(experiment_id: str) -> str:
    return quote(experiment_id, safe="")


class Client:
    """A client of one service for one organization (its API key).

    ``url`` is the service's base URL without ``/api/v1`` (default: ``ABN_URL``, then
    ``ABN_PUBLIC_URL``, then ``http://127.0.0.1:8080`` as the service's own default), ``api_key``
    an ``abn_…`` key (default: ``ABN_API_KEY``). Every call retries 5xx, 429 (waiting its
    ``Retry-After``) and network errors ``retries`` times with exponential backoff from
    ``retry_base`` seconds; ``timeout`` bounds each JSON call, ``upload_timeout`` the silence
    of an upload's connection. ``log`` hears the retry notices (default: the ``abn_client``
    logger, level WARNING). Raises ValueError for a bad URL or a missing key.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        retries: int = 4,
        retry_base: float = 1.0,
        timeout: float = 60.0,
        upload_timeout: float = 120.0,
        ssl_context: Optional[ssl.SSLContext] = None,
        log: Optional[Callable[[str], None]] = None,
    ) -> None:
        raw = (
            url
            or os.environ.get("ABN_URL", "").strip()
            or os.environ.get("ABN_PUBLIC_URL", "").strip()
            or "http://127.0.0.1:8080"
        )
        self.url = base_url(raw)
        key = (api_key if api_key is not None else os.environ.get("ABN_API_KEY", "")).strip()
        if not key:
            raise ValueError("No API key: pass api_key= or set ABN_API_KEY")
        self._key = key
        self.retry = RetryPolicy(retries=retries, base=retry_base)
        self.timeout = timeout
        self.upload_timeout = upload_timeout
        self._ssl = ssl_context
        self._log = log or logger.warning
        #: The ETag of each experiment's last delivery through this client.
        self._etags: Dict[str, str] = {}

    def __repr__(self) -> str:
        return f"Client({self.url!r}, api_key='{self._key[:10]}…')"

    # Deliveries ---------------------------------------------------------------------------

    def upload(
        self,
        path: PathLike,
        experiment_id: str,
        two_step: bool = False,
        progress: Optional[Progress] = None,
    ) -> Dict[str, Any]:
        """Delivers the CSV at ``path`` as ``experiment_id``, streaming it from disk.

        Direct (default): ``POST /datasets/upload/``; answers the service's 201 JSON
        (``success``, ``experiment_id``, ``size_bytes``, ``size_mb``, ``rows``, ``sha256``,
        ``etag``, ``message``), after checking its ``sha256`` against the bytes sent.
        ``two_step=True``: ``POST /datasets/initiate/`` with the file's size, then a ``PUT`` of
        the file to the upload URL (a fresh URL when the PUT answers 403, e.g. expired); answers
        ``experiment_id``, ``route`` ``"two_step"``, ``size_bytes``, ``size_mb``, ``sha256``,
        the grant's ``bucket``, ``key``, ``expires_in``, ``method``, ``headers``, and the PUT's
        ``status`` and ``etag``. The service checks a two-step file when it analyses it: wait
        for the analysis to learn whether it passed.

        ``progress(sent, total)`` is called as the bytes go out, from 0 again on a retry.
        Raises ApiError when the service refuses the file (``status``, ``code``) or cannot be
        reached after the retries (``status`` ``None``); OSError when the file cannot be read.
        """
        path = os.fspath(path)
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"Cannot read {path}: not a file")
        sender = _FileSender(self, path, info.st_size, progress)
        try:
            if two_step:
                result = self._two_step(sender, experiment_id)
            else:
                result = self._direct(sender, experiment_id)
        except FileChangedError as error:
            raise ApiError(None, None, str(error), summary=str(error)) from error
        if isinstance(result.get("etag"), str):
            self._etags[experiment_id] = result["etag"]
        return result

    def _direct(self, sender: "_FileSender", experiment_id: str) -> Dict[str, Any]:
        url = f"{self.url}/api/v1/datasets/upload/?{urlencode({'experiment_id': experiment_id})}"
        headers = {"Authorization": f"Bearer {self._key}", "Content-Type": "text/csv"}
        answer = with_retries(
            "upload", self.retry, self._log, lambda: sender.send(url, "POST", headers)
        )
        if answer.status != 201:
            raise failure(answer, "upload")
        body = parse_json(answer, "upload")
        digest = sender.sha256()
        if isinstance(body.get("sha256"), str) and body["sha256"] != digest:
            message = (
                f"upload corrupted: the server stored sha256 {body['sha256']}, "
                f"the file sent has {digest}"
            )
            raise ApiError(None, None, message, summary=message)
        return body

    def _two_step(self, sender: "_FileSender", experiment_id: str) -> Dict[str, Any]:
        refreshes = 0
        while True:
            grant = self._call(
                "POST",
                "/datasets/initiate/",
                body={"experiment_id": experiment_id, "size_bytes": sender.size},
                what="initiate",
                expect=200,
            )
            upload_url = grant.get("upload_url")
            if not isinstance(upload_url, str):
                message = "initiate answered without an upload_url"
                raise ApiError(200, None, message, summary=message)
            extra = grant.get("headers")
            if not isinstance(extra, dict):
                extra = {}
            # No Authorization header: the URL carries the permission.
            headers = {"Content-Type": "text/csv", **{str(k): str(v) for k, v in extra.items()}}
            put = with_retries(
                "PUT", self.retry, self._log, lambda: sender.send(upload_url, "PUT", headers)
            )
            if put.status == 403 and refreshes < MAX_REFRESHES:
                self._log(f"PUT: {describe(put)}; fetching a fresh upload URL")
                refreshes += 1
                continue
            if not 200 <= put.status <= 299:
                raise failure(put, "PUT")
            etag = (put.headers.get("etag") or "").strip('"')
            rest = {k: v for k, v in grant.items() if k != "upload_url"}
            result: Dict[str, Any] = {
                "experiment_id": experiment_id,
                "route": "two_step",
                "size_bytes": sender.size,
                "size_mb": sender.size / MIB,
                "sha256": sender.sha256(),
                **rest,
                "status": put.status,
            }
            if etag:
                result["etag"] = etag
            return result

    def wait_for_analysis(
        self,
        experiment_id: str,
        timeout: float = 600,
        etag: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Waits until the analysis of *this* delivery is ready and answers it (as ``analysis``).

        The delivery is the one whose ETag is ``etag``; by default the last one this client
        made of ``experiment_id``, or else the one stored when the wait starts. Raises ApiError
        with ``code`` ``"analysis_failed"`` (``message``: why, e.g. the CSV error of a two-step
        file) when its analysis failed, ``"delivery_replaced"`` when another delivery has
        replaced it meanwhile (its analysis will never be shown), and AnalysisTimeout (an
        ApiError and a TimeoutError, code ``"analysis_timeout"``) after ``timeout`` seconds.
        """
        wanted = etag or self._etags.get(experiment_id)
        deadline = time.monotonic() + timeout
        delay = 0.2
        while True:
            result = self.analysis(experiment_id)
            dataset = result.get("dataset")
            current = dataset.get("etag") if isinstance(dataset, dict) else None
            if wanted is None:
                wanted = current
            if current != wanted:
                message = (
                    f"Experiment {experiment_id} holds another delivery (etag {current}) than "
                    f"the one waited for (etag {wanted}): a later delivery replaced it"
                )
                raise ApiError(None, "delivery_replaced", message)
            status = result.get("status")
            if status == "ready":
                return result
            if status == "failed":
                message = str(result.get("error") or "the analysis failed")
                raise ApiError(
                    None,
                    "analysis_failed",
                    message,
                    summary=f"analysis of {experiment_id} (etag {wanted}) failed: {message}",
                )
            left = deadline - time.monotonic()
            if left <= 0:
                message = (
                    f"The analysis of {experiment_id} (etag {wanted}) was still {status} "
                    f"after {timeout:g} s"
                )
                raise AnalysisTimeout(None, "analysis_timeout", message, summary=message)
            time.sleep(min(delay, left))
            delay = min(delay * 1.5, 2.0)

    # Reads and settings -------------------------------------------------------------------

    def analysis(self, experiment_id: str) -> Dict[str, Any]:
        """``GET /datasets/ID/analysis/``: the analysis of the stored file, whatever its
        ``status`` (``pending``, ``ready``, ``failed``); ApiError ``not_found`` without one."""
        return self._call("GET", f"/datasets/{_segment(experiment_id)}/analysis/", what="analysis")

    def history(self, experiment_id: str, page_size: int = 1000) -> List[Dict[str, Any]]:
        """``GET /datasets/ID/history/``, every page: the experiment's snapshots, oldest first."""
        return self._pages(
            f"/datasets/{_segment(experiment_id)}/history/", "snapshots", page_size, "history"
        )

    def datasets(self, page_size: int = 1000) -> List[Dict[str, Any]]:
        """``GET /datasets/``, every page: the organization's datasets by ``experiment_id``."""
        return self._pages("/datasets/", "datasets", page_size, "datasets")

    def settings(self, experiment_id: str) -> Dict[str, Any]:
        """``GET /datasets/ID/settings/``: the saved analysis settings, ``{}`` when none."""
        return self._call("GET", f"/datasets/{_segment(experiment_id)}/settings/", what="settings")

    def put_settings(self, experiment_id: str, settings: Dict[str, Any]) -> Dict[str, Any]:
        """``PUT /datasets/ID/settings/``: replaces the settings (re-running the analysis of a
        stored dataset); answers what was saved. ApiError ``invalid_settings`` names a bad
        field."""
        return self._call(
            "PUT",
            f"/datasets/{_segment(experiment_id)}/settings/",
            body=settings,
            what="settings",
        )

    def delete(self, experiment_id: str) -> Dict[str, Any]:
        """``DELETE /datasets/ID/``: removes the file, its analysis and its history (the
        settings stay); answers ``{"deleted": true, "experiment_id": …}``. A delete retried
        after a lost answer may get ApiError ``not_found``: the dataset is gone either way."""
        return self._call("DELETE", f"/datasets/{_segment(experiment_id)}/", what="delete")

    # Plumbing -----------------------------------------------------------------------------

    def _pages(self, path: str, field: str, page_size: int, what: str) -> List[Dict[str, Any]]:
        items: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        while True:
            query = {"limit": str(page_size), **({"cursor": cursor} if cursor else {})}
            page = self._call("GET", path, query=query, what=what)
            items.extend(page.get(field) or [])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Dict[str, str]] = None,
        body: Any = None,
        what: str,
        expect: Optional[int] = None,
    ) -> Dict[str, Any]:
        url = f"{self.url}/api/v1{path}" + (f"?{urlencode(query)}" if query else "")
        headers = {"Authorization": f"Bearer {self._key}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"

        def attempt() -> Answer:
            return request(method, url, headers, data, timeout=self.timeout, ssl_context=self._ssl)

        answer = with_retries(what, self.retry, self._log, attempt)
        if (expect is not None and answer.status != expect) or not 200 <= answer.status <= 299:
            raise failure(answer, what)
        return parse_json(answer, what)


class _FileSender:
    """One file's attempts: each streams it again, hashing it and reporting progress."""

    def __init__(self, client: Client, path: str, size: int, progress: Optional[Progress]):
        self.client = client
        self.path = path
        self.size = size
        self.progress = progress
        self._hash = hashlib.sha256()

    def send(self, url: str, method: str, headers: Dict[str, str]) -> Answer:
        self._hash = hashlib.sha256()
        if self.progress is not None:
            self.progress(0, self.size)
        report = self.progress
        size = self.size
        return send_file(
            url,
            self.path,
            self.size,
            method=method,
            headers=headers,
            on_chunk=self._hash.update,
            on_progress=(lambda sent: report(sent, size)) if report is not None else None,
            idle_timeout=self.client.upload_timeout,
            ssl_context=self.client._ssl,
        )

    def sha256(self) -> str:
        return self._hash.hexdigest()
