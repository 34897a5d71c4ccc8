"""The errors the client raises: the service's refusals and failures, and its own."""

from typing import Any, Dict, Optional


class ApiError(Exception):
    """A call the service refused or that failed.

    ``status`` is the HTTP status (``None`` when no answer came: the service could not be
    reached, or the failure is the client's finding, e.g. an analysis that failed), ``code`` the
    service's stable error code (``invalid_csv``, ``unauthorized``, …; ``None`` when the answer
    had none), ``message`` the service's sentence for people and ``request_id`` the id to quote
    to the operator (the ``X-Request-Id`` header). ``str(error)`` is one line with all of them,
    e.g. ``upload refused: HTTP 400 invalid_csv: Row 2 has 3 fields … (request id …)``.
    """

    def __init__(
        self,
        status: Optional[int],
        code: Optional[str],
        message: str,
        request_id: Optional[str] = None,
        *,
        summary: Optional[str] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        if summary is None:
            head = f"HTTP {status}" if status is not None else "error"
            summary = f"{head}{f' {code}' if code else ''}: {message}"
            if request_id:
                summary += f" (request id {request_id})"
        super().__init__(summary)

    def to_json(self) -> Dict[str, Dict[str, Any]]:
        """``{"error": {"status", "code", "message", "request_id"}}``, as ``abn-upload --json``
        prints a refusal (``message`` is the one-line summary)."""
        return {
            "error": {
                "status": self.status,
                "code": self.code,
                "message": str(self),
                "request_id": self.request_id,
            }
        }


class AnalysisTimeout(ApiError, TimeoutError):
    """``wait_for_analysis`` gave up: the delivery's analysis was still pending at its timeout."""


class NetworkError(Exception):
    """The connection failed or stalled: worth another attempt."""


class FileChangedError(Exception):
    """The file is not the size it had when the upload started."""
