# SPDX-License-Identifier: Apache-2.0
# tests/node-clients/agent.py: the Python side of tests/e2e/test_stream_clients.sh: requests
# (Debian's python3-requests, unchanged, through HTTPS_PROXY) reads an NDJSON streamed answer
# line by line, acknowledging each at once (the upstream sends the next only then).
# Usage: python3 agent.py https://HOST:PORT
import json
import sys

import requests

base = sys.argv[1]
s = requests.Session()
r = s.post(base + "/api/generate", json={"model": "test", "prompt": "hello"}, stream=True,
           timeout=30)
k, text = 0, ""
for line in r.iter_lines(chunk_size=1):
    if not line:
        continue
    m = json.loads(line)
    if m["done"]:
        break
    text += m["response"]
    a = s.get(base + "/ack", params={"s": "ndjson", "k": k}, timeout=30)
    assert a.status_code == 204, a.status_code
    k += 1
print("requests lines=%d text=%s" % (k, json.dumps(text)))
