"""What the client makes of an answer that is not a success: the service's JSON error
``{"error": {"code", "message", "request_id"}}``, an S3 XML error (a presigned PUT), or text."""

import json
import re
from typing import TYPE_CHECKING, Any, Dict, NamedTuple, Optional

from ._errors import ApiError

if TYPE_CHECKING:
    from ._transport import Answer


class ErrorDetails(NamedTuple):
    code: Optional[str]
    message: str
    request_id: Optional[str]


def error_details(answer: "Answer") -> ErrorDetails:
    """Reads the service's JSON error or an S3 XML error; falls back to the start of the text."""
    text = answer.text
    try:
        error = json.loads(text).get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            code = error.get("code")
            request_id = error.get("request_id")
            return ErrorDetails(
                code if isinstance(code, str) else None,
                error["message"],
                request_id if isinstance(request_id, str) else None,
            )
    except (ValueError, AttributeError):
        pass

    def tag(name: str) -> Optional[str]:
        found = re.search(f"<{name}>([^<]*)</{name}>", text)
        return found.group(1) if found else None

    if tag("Code"):
        return ErrorDetails(tag("Code"), tag("Message") or "", tag("RequestId"))
    return ErrorDetails(
        None, text.strip()[:200] or f"HTTP {answer.status}", answer.headers.get("x-request-id")
    )


def failure(answer: "Answer", what: str) -> ApiError:
    """The error for a final answer, e.g.
    ``upload refused: HTTP 400 invalid_csv: … (request id …)``."""
    code, message, request_id = error_details(answer)
    request_id = request_id or answer.headers.get("x-request-id")
    verb = "failed" if answer.status >= 500 else "refused"
    summary = f"{what} {verb}: HTTP {answer.status}{f' {code}' if code else ''}: {message}"
    if request_id:
        summary += f" (request id {request_id})"
    return ApiError(answer.status, code, message, request_id, summary=summary)


def describe(answer: "Answer") -> str:
    """``HTTP 503 service_unavailable: …``, for a retry notice."""
    code, message, _ = error_details(answer)
    return f"HTTP {answer.status}{f' {code}' if code else ''}: {message}"


def parse_json(answer: "Answer", what: str) -> Dict[str, Any]:
    """The answer's JSON object; ApiError when the body is not one."""
    try:
        value = json.loads(answer.body)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    message = f"{what}: HTTP {answer.status} with a body that is not a JSON object"
    raise ApiError(answer.status, None, message, summary=message)
