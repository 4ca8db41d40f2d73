"""An SGLang-protocol server that answers every /generate with the same reply and dies on cue.

    python dying_sglang.py --port P --reply-ids 1,2,3 [--die-after N] [--model-path X] [SGLang's --tp,
    --tool-call-parser, --reasoning-parser, --host: ignored]

`/health` and `/get_model_info` answer like SGLang's; after N `/generate` answers the process exits
at once (no response, no clean shutdown), as a crashed or OOM-killed server does mid-eval.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--reply-ids", required=True, help="token ids of every reply, comma-separated")
    parser.add_argument("--die-after", type=int, default=-1, help="answers before dying; -1 = never")
    parser.add_argument("--model-path", default="/models/dying-test-model")
    # The rest of what t3rl's eval adds when it launches a server itself (t3rl_core.eval.server.launch_argv),
    # taken and ignored, so an eval can launch this in SGLang's place.
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--tool-call-parser")
    parser.add_argument("--reasoning-parser")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    ids = [int(token) for token in args.reply_ids.split(",")]
    body = json.dumps(
        {
            "text": "",
            "meta_info": {
                "finish_reason": {"type": "stop"},
                "output_token_logprobs": [[-0.5, token, None] for token in ids],
            },
        }
    ).encode()
    answered = 0
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(b"OK")
            elif self.path == "/get_model_info":
                self._send(json.dumps({"model_path": args.model_path, "is_generation": True}).encode())
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            nonlocal answered
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                if answered == args.die_after:
                    os._exit(1)
                answered += 1
            self._send(body)

        def _send(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
