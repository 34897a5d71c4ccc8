"""``abn-upload FILE --experiment-id ID …``: the command line of the Python client, mirroring
the Deno upload client (``main.ts upload``): the same flags, output, ``--json`` shapes, retry
rules and exit status (0 stored, 1 refused or failed, 2 usage), plus ``--wait``."""

import json
import os
import sys
from datetime import datetime, timezone
from typing import Callable, Dict, List, Mapping, Optional, Set

from ._client import Client, base_url
from ._errors import ApiError
from ._progress import ProgressReporter

USAGE = """usage: abn-upload FILE --experiment-id ID [--two-step] [--wait] [--history] [--url URL] [--key KEY] [--json]

  FILE                  the CSV to deliver (streamed, never read whole)
  --experiment-id ID    the experiment (A-Z a-z 0-9 . _ -, at most 128 characters)
  --two-step            initiate an upload URL, then PUT the file to it (default: direct upload)
  --wait                then wait for this delivery's analysis (exit 1 when it failed)
  --wait-timeout S      how long --wait waits, in seconds (default 600)
  --history             append _YYYYMMDD (today, UTC) to the id, keeping one dataset per day
  --url URL             the service's base URL, without /api/v1 (default: ABN_URL, else
                        ABN_PUBLIC_URL, else http://127.0.0.1:8080)
  --key KEY             the API key (default: ABN_API_KEY; prefer the variable: flags show in ps)
  --json                print the server's final answer as JSON (a refusal as {"error": …})
  --retries N           retries after a 5xx, 429 or network error (default 4)

exit status: 0 stored (with --wait: and analysed), 1 refused or failed, 2 usage error"""

VALUE_FLAGS = {"--experiment-id", "--url", "--key", "--retries", "--wait-timeout"}
SWITCHES = {"--two-step", "--history", "--json", "--wait", "--help", "-h"}


class UsageError(Exception):
    """A command line that cannot be run; answered with exit status 2."""


class Args:
    def __init__(self, values: Dict[str, str], switches: Set[str], file: str) -> None:
        self.file = file
        self.experiment_id = values.get("--experiment-id", "")
        self.url = values.get("--url")
        self.key = values.get("--key")
        self.two_step = "--two-step" in switches
        self.history = "--history" in switches
        self.json = "--json" in switches
        self.wait = "--wait" in switches
        retries = values.get("--retries")
        if retries is not None and not (retries.isdigit() and len(retries) <= 2):
            raise UsageError(f"Invalid --retries {retries}: expected a whole number from 0 to 99")
        self.retries = 4 if retries is None else int(retries)
        timeout = values.get("--wait-timeout")
        self.wait_timeout = 600.0
        if timeout is not None:
            try:
                self.wait_timeout = float(timeout)
            except ValueError:
                self.wait_timeout = -1.0
            if not 0 < self.wait_timeout < float("inf"):
                raise UsageError(f"Invalid --wait-timeout {timeout}: expected seconds above 0")


def parse_args(argv: List[str]) -> Optional[Args]:
    """Parses the arguments (``--name value`` or ``--name=value``, one FILE); None for
    ``--help``. Raises UsageError."""
    values: Dict[str, str] = {}
    switches: Set[str] = set()
    files: List[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            files.extend(argv[i:])
            break
        if not arg.startswith("-") or arg == "-":
            files.append(arg)
            continue
        name, eq, inline = arg.partition("=")
        if name in SWITCHES and not eq:
            switches.add(name)
            continue
        if name not in VALUE_FLAGS:
            raise UsageError(f"Unknown option: {name}")
        if eq:
            value: Optional[str] = inline
        else:
            value = argv[i] if i < len(argv) else None
            i += 1
        if not value:
            raise UsageError(f"Missing value for {name}")
        if name in values:
            raise UsageError(f"Give {name} once")
        values[name] = value
    if "--help" in switches or "-h" in switches:
        return None
    if len(files) != 1:
        raise UsageError("Missing FILE" if not files else f"Give one FILE, not {len(files)}")
    if "--experiment-id" not in values:
        raise UsageError("Missing --experiment-id")
    return Args(values, switches, files[0])


def history_id(experiment_id: str, now: datetime) -> str:
    """``id_YYYYMMDD`` for the UTC day of ``now`` (one dataset per day)."""
    return f"{experiment_id}_{now.astimezone(timezone.utc).strftime('%Y%m%d')}"


def _retry_base(env: Mapping[str, str]) -> float:
    raw = env.get("ABN_UPLOAD_RETRY_BASE_MS", "").strip()
    if raw == "":
        return 1.0
    if not (raw.isdigit() and len(raw) <= 9):
        raise UsageError(
            f"Invalid ABN_UPLOAD_RETRY_BASE_MS={json.dumps(raw)}: expected milliseconds"
        )
    return int(raw) / 1000


def main(
    argv: List[str],
    env: Optional[Mapping[str, str]] = None,
    out: Optional[Callable[[str], None]] = None,
    err: Optional[Callable[[str], None]] = None,
    progress: Optional[Callable[[str], None]] = None,
    terminal: Optional[bool] = None,
) -> int:
    """Runs ``abn-upload ARGV``; answers the exit status (0 stored, 1 refused or failed,
    2 usage). ``env`` defaults to the process's environment, ``out``/``err`` print a line to
    stdout/stderr, ``progress`` writes progress text to stderr as is."""
    env = os.environ if env is None else env
    key = ""

    def redact(text: str) -> str:
        # The key never reaches the output, whatever a message quotes.
        return text.replace(key, "abn_…") if key else text

    say = out or (lambda line: print(line, flush=True))
    warn = err or (lambda line: print(line, file=sys.stderr, flush=True))
    write = progress or _stderr_write
    is_terminal = sys.stderr.isatty() if terminal is None else terminal

    def emit(line: str) -> None:
        say(redact(line))

    reporter = ProgressReporter(write, is_terminal)

    def notice(line: str) -> None:
        reporter.finish()
        warn(redact(line))

    as_json = False
    try:
        args = parse_args(argv)
        if args is None:
            emit(USAGE)
            return 0
        as_json = args.json
        key = (args.key if args.key is not None else env.get("ABN_API_KEY", "")).strip()
        if not key:
            raise UsageError("No API key: set ABN_API_KEY or pass --key")
        raw_url = (
            args.url
            or env.get("ABN_URL", "").strip()
            or env.get("ABN_PUBLIC_URL", "").strip()
            or "http://127.0.0.1:8080"
        )
        try:
            url = base_url(raw_url, "--url")
        except ValueError as error:
            raise UsageError(str(error)) from None
        try:
            info = os.stat(args.file)
        except OSError as error:
            raise UsageError(f"Cannot read {args.file}: {error.strerror or error}") from None
        if not os.path.isfile(args.file):
            raise UsageError(f"Cannot read {args.file}: not a file")
        client = Client(url, key, retries=args.retries, retry_base=_retry_base(env), log=notice)
        experiment_id = (
            history_id(args.experiment_id, datetime.now(timezone.utc))
            if args.history
            else args.experiment_id
        )
    except UsageError as error:
        warn(redact(f"{error}\n\n{USAGE}"))
        return 2

    try:
        try:
            result = client.upload(args.file, experiment_id, args.two_step, progress=reporter)
        finally:
            reporter.finish()
        analysis = None
        if args.wait:
            analysis = client.wait_for_analysis(
                experiment_id, timeout=args.wait_timeout, etag=result.get("etag")
            )
    except Exception as error:  # an ApiError, or the file vanished: reported, not a traceback
        notice(f"error: {error}")
        if as_json:
            answer = (
                error.to_json()
                if isinstance(error, ApiError)
                else {
                    "error": {
                        "status": None,
                        "code": None,
                        "message": str(error),
                        "request_id": None,
                    }
                }
            )
            emit(_json(answer))
        return 1

    if as_json:
        emit(_json({**result, **({"analysis": analysis} if args.wait else {})}))
        return 0
    route = "direct upload" if result.get("route", "direct") == "direct" else "two-step upload"
    size = int(result.get("size_bytes", info.st_size))
    rows = f", {result['rows']} rows" if isinstance(result.get("rows"), int) else ""
    emit(f"Stored {args.file} as experiment {experiment_id} ({route})")
    emit(f"experiment_id: {experiment_id}")
    emit(f"size: {size} bytes ({size / 1048576:.2f} MB){rows}")
    emit(f"sha256: {result.get('sha256')}")
    if isinstance(result.get("message"), str):
        emit(f"message: {result['message']}")
    if analysis is not None:
        emit(f"analysis: {analysis.get('status')} (etag {analysis['dataset'].get('etag')})")
    return 0


def _json(value: object) -> str:
    """One line of JSON as the Deno client prints it (``JSON.stringify``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _stderr_write(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def run() -> None:
    """The ``abn-upload`` console script."""
    try:
        code = main(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
