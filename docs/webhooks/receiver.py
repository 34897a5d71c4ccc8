"""A receiver for abn's webhooks that checks every request's signature (Standard Webhooks 1.0)
before it trusts the event. Python 3.8 or later, standard library only:

    WEBHOOK_SECRET=whsec_... python3 receiver.py

WEBHOOK_SECRET is the secret the service showed when the endpoint was created (or rotated); HOST
and PORT say where to listen (default 127.0.0.1:8000). Each verified event is printed as one JSON
line; replace `handle` with what your pipeline does.

The checks, in order: the three webhook-* headers are present; webhook-timestamp is within five
minutes of this machine's clock (an old request replayed is refused); one of the space-separated
"v1," signatures is the HMAC-SHA256 of "id.timestamp.body" with the secret's decoded bytes,
compared in constant time (hmac.compare_digest). The raw body is verified before it is parsed:
JSON parsed and written again may differ by a byte. A webhook-id seen in the last ten minutes is
answered 204 and not handled twice (the service delivers at least once; a real receiver keeps the
ids it handled with what it did, in its own database).
"""

import base64
import binascii
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 5 * 60
MAX_BODY_BYTES = 1 << 20


def secret_key(secret):
    """The HMAC key of a whsec_... secret."""
    if not secret.startswith("whsec_"):
        raise ValueError("WEBHOOK_SECRET must start with whsec_")
    return base64.b64decode(secret[len("whsec_"):], validate=True)


def check_signature(key, headers, body, now=None):
    """Why a request was refused, or None when its signature holds."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not msg_id or not timestamp or not signatures:
        return "missing webhook-id, -timestamp or -signature"
    now = time.time() if now is None else now
    if not timestamp.isdigit() or abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        return "timestamp too old or too new"
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    for entry in signatures.split(" "):
        version, _, encoded = entry.partition(",")
        if version != "v1" or not encoded:
            continue
        try:
            given = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(given, expected):
            return None
    return "no valid signature"


def handle(msg_id, event):
    """What to do with a verified event: here, print it."""
    line = {"verified": msg_id, "type": event["type"], "data": event["data"]}
    print(json.dumps(line), flush=True)


class Receiver(BaseHTTPRequestHandler):
    key = b""
    seen = {}
    lock = threading.Lock()

    def answer(self, status, text=""):
        payload = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            return self.answer(413, "too large")
        body = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        problem = check_signature(self.key, headers, body)
        if problem is not None:
            print(f"refused: {problem}", file=sys.stderr, flush=True)
            return self.answer(400 if problem.startswith("missing") else 401, problem)
        msg_id = headers["webhook-id"]
        now = time.time()
        with self.lock:
            for old, at in list(self.seen.items()):
                if now - at > 2 * TOLERANCE_SECONDS:
                    del self.seen[old]
            first = msg_id not in self.seen
            self.seen[msg_id] = now
        if first:
            handle(msg_id, json.loads(body))
        self.answer(204)

    def log_message(self, format, *args):
        pass


def main():
    secret = os.environ.get("WEBHOOK_SECRET")
    if not secret:
        sys.exit("Set WEBHOOK_SECRET to the endpoint's whsec_... secret")
    Receiver.key = secret_key(secret)
    host = os.environ.get("HOST", "127.0.0.1")
    server = ThreadingHTTPServer((host, int(os.environ.get("PORT", "8000"))), Receiver)
    print(f"Listening on http://{host}:{server.server_address[1]}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
