"""Python client of the abn dataset upload service, for data pipelines.

Example::

    from abn_client import Client, ApiError
    c = Client("http://127.0.0.1:8080", api_key="abn_…")   # defaults: ABN_URL, ABN_API_KEY
    c.upload("data.csv", experiment_id="checkout")         # direct; two_step=True: grant + PUT
    a = c.wait_for_analysis("checkout", timeout=600)       # the analysis of this delivery

Uploads stream the file from disk and retry 5xx, 429 and network errors with backoff; every
refusal or failure is an ``ApiError`` with the service's ``status``, ``code``, ``message`` and
``request_id``. The ``abn-upload`` command mirrors the service's own upload client.
"""

from ._client import Client, Progress
from ._errors import AnalysisTimeout, ApiError
from ._progress import ProgressReporter
from ._retry import RetryPolicy
from ._version import __version__

__all__ = [
    "AnalysisTimeout",
    "ApiError",
    "Client",
    "Progress",
    "ProgressReporter",
    "RetryPolicy",
    "__version__",
]
