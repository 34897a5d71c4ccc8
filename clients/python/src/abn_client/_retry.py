"""When the client tries again: after a 500, 502, 503 or 504, a 429 (waiting what its
``Retry-After`` asks, at most 60 s), or a network error; never after another 4xx. Exponential
backoff with jitter: the n-th retry waits between half and all of min(max, base × 2^(n-1)).
The same rules as the Deno upload client (``main.ts upload``).
"""

import random
import time
from email.utils import parsedate_to_datetime
from typing import Callable, Optional

from ._answers import describe
from ._errors import ApiError, NetworkError
from ._transport import Answer

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


class RetryPolicy:
    """How often and how long to wait: ``retries`` after the first attempt (default 4, five
    attempts in all), ``base`` seconds before the first retry (before jitter), ``max`` the
    longest wait (default 16 × base); ``random`` and ``sleep`` default to the standard ones."""

    def __init__(
        self,
        retries: int = 4,
        base: float = 1.0,
        max: Optional[float] = None,
        random: Callable[[], float] = random.random,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retries = retries
        self.base = base
        self.max = max
        self.random = random
        self.sleep = sleep

    def __repr__(self) -> str:
        return f"RetryPolicy(retries={self.retries}, base={self.base}, max={self.max})"

    def backoff(self, retry: int) -> float:
        """The wait in seconds before retry number ``retry`` (1 for the first)."""
        longest = self.max if self.max is not None else self.base * 16
        ceiling = min(longest, self.base * 2.0 ** (retry - 1))
        return float(ceiling / 2 + self.random() * ceiling / 2)


def retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """The wait a ``Retry-After`` header asks for (seconds or an HTTP date), capped at 60 s."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            seconds = parsedate_to_datetime(text).timestamp() - (
                time.time() if now is None else now
            )
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(60.0, max(0.0, seconds))


def with_retries(
    what: str,
    policy: RetryPolicy,
    log: Callable[[str], None],
    attempt: Callable[[], Answer],
) -> Answer:
    """Calls ``attempt`` until it answers something not worth retrying; network errors and
    retried statuses wait and try again while the policy allows. After the last attempt a
    retried status is answered as it is; a network error raises ApiError (status ``None``)."""
    retry = 0
    while True:
        answer: Optional[Answer] = None
        try:
            answer = attempt()
            if answer.status not in RETRIED_STATUSES:
                return answer
            reason = describe(answer)
        except NetworkError as error:
            reason = f"network error: {error}"
        if retry >= policy.retries:
            if answer is not None:
                return answer
            message = f"{what} gave up after {retry + 1} attempt(s): {reason}"
            raise ApiError(None, None, message, summary=message)
        asked = retry_after(answer.headers.get("retry-after")) if answer is not None else None
        if answer is None or answer.status != 429:
            asked = None
        wait = asked if asked is not None else policy.backoff(retry + 1)
        log(
            f"{what}: {reason}; retrying in {wait:.1f} s "
            f"(attempt {retry + 2} of {policy.retries + 1})"
        )
        policy.sleep(wait)
        retry += 1
