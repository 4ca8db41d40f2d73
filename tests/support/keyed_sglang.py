"""An SGLang-protocol server started as `python -m sglang.launch_server` would be, that requires the
key of its `--api-key` as `Authorization: Bearer <key>` on every request, as SGLang does.

    python keyed_sglang.py --model-path X --port P --api-key K [any other launch_server flag]

Stricter than SGLang, whose /health answers without a key: here /health wants it too, as an
authenticating proxy in front of a server would. A request without the right key gets HTTP 401.
Without --api-key (or with an empty one) the server refuses to start: a test must never pass because
the key was silently dropped.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = {
    "text": "",
    "meta_info": {"finish_reason": {"type": "stop"}, "output_token_logprobs": [[-0.5, 7, None]]},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model-path", default="/models/keyed-test-model")
    parser.add_argument("--api-key", default="")
    args, _ = parser.parse_known_args()
    if not args.api_key:
        sys.exit("keyed_sglang: no --api-key given")
    # As SGLang does: its arguments, the key among them, in its log.
    print(f"server_args=ServerArgs(port={args.port}, api_key={args.api_key!r})", flush=True)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not self._authorised():
                return
            if self.path == "/health":
                self._send(b"OK")
            elif self.path == "/get_model_info":
                self._send(json.dumps({"model_path": args.model_path, "is_generation": True}).encode())
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self._authorised():
                self._send(json.dumps(REPLY).encode())

        def _authorised(self) -> bool:
            scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
            if scheme.lower() == "bearer" and secrets.compare_digest(token, args.api_key):
                return True
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False

        def _send(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
