"""``python -m abn_client FILE --experiment-id ID …``: the same as ``abn-upload``."""

from ._cli import run

run()
