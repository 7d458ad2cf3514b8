#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/grpc_peer.py: both ends of gRPC through the broker, with Debian's python3-grpcio
# (generic handlers on raw bytes: no generated code).
#   serve  --cert PEM --key KEY --secret S    a TLS gRPC server (HTTP/2 only); prints its port
#   client --proxy URL --port N --ca PEM      calls it through the broker's CONNECT (the
#                                             channel's grpc.http_proxy) with the session CA
#                                             as its only root, and prints JSON
# Methods of /t.Echo: Unary answers whether the x-api-key it got is S, and sends "key=<it>"
# as trailing metadata; Stream answers 20 messages of 1 KiB, 100 ms apart; Upload takes a stream of
# messages and answers their SHA-256 and length; Say answers the key inside its message;
# Pause answers two messages 3 s apart (longer than the suite's --io-timeout).
import hashlib
import json
import sys
import time
from concurrent import futures

import grpc


def key_of(ctx):
    return dict(ctx.invocation_metadata()).get("x-api-key", "")


def serve(args):
    secret = args["--secret"]

    def unary(req, ctx):
        key = key_of(ctx)
        ctx.set_trailing_metadata((("x-echo", "key=" + key),))
        return b"key_ok" if key == secret else b"key_bad:" + req

    def stream(req, ctx):
        for i in range(20):
            yield (b"msg %d " % i).ljust(1024, b".")
            time.sleep(0.1)

    def upload(reqs, ctx):
        h, n = hashlib.sha256(), 0
        for r in reqs:
            h.update(r)
            n += len(r)
        return ("%s %d" % (h.hexdigest(), n)).encode()

    def pause(req, ctx):
        yield b"before"
        time.sleep(3)
        yield b"after"

    def say(req, ctx):
        return b"key=" + key_of(ctx).encode()

    handler = grpc.method_handlers_generic_handler("t.Echo", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
        "Upload": grpc.stream_unary_rpc_method_handler(upload),
        "Say": grpc.unary_unary_rpc_method_handler(say),
        "Pause": grpc.unary_stream_rpc_method_handler(pause),
    })
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    srv.add_generic_rpc_handlers((handler,))
    creds = grpc.ssl_server_credentials(
        ((open(args["--key"], "rb").read(), open(args["--cert"], "rb").read()),))
    port = srv.add_secure_port("127.0.0.1:0", creds)
    srv.start()
    print(port, flush=True)
    srv.wait_for_termination()


def client(args):
    creds = grpc.ssl_channel_credentials(root_certificates=open(args["--ca"], "rb").read())
    ch = grpc.secure_channel("localhost:%s" % args["--port"], creds,
                             options=[("grpc.http_proxy", args["--proxy"]),
                                      ("grpc.enable_retries", 0)])
    out = {}
    unary = ch.unary_unary("/t.Echo/Unary")
    msg, call = unary.with_call(b"ping", timeout=20)
    out["unary"] = msg.decode(errors="replace")
    out["trailing"] = dict(call.trailing_metadata()).get("x-echo")
    t0 = time.monotonic()
    times = []
    got = []
    for m in ch.unary_stream("/t.Echo/Stream")(b"", timeout=30):
        got.append(m.decode().split(" ")[0] + " " + m.decode().split(" ")[1])
        times.append(time.monotonic() - t0)
    out["stream"] = got
    # Streamed, not held to the end: the first message long before the last.
    out["stream_spread_s"] = round(times[-1] - times[0], 2) if times else 0
    chunks = [bytes([i % 256]) * 65536 for i in range(48)]
    out["upload"] = ch.stream_unary("/t.Echo/Upload")(iter(chunks), timeout=30).decode()
    out["upload_want"] = "%s %d" % (hashlib.sha256(b"".join(chunks)).hexdigest(),
                                    sum(map(len, chunks)))
    try:
        out["pause"] = [m.decode() for m in ch.unary_stream("/t.Echo/Pause")(b"", timeout=30)]
    except grpc.RpcError as e:
        out["pause"] = "error: %s %s" % (e.code().name, e.details())
    try:
        said = ch.unary_unary("/t.Echo/Say")(b"", timeout=20)
        out["say"] = said.decode(errors="replace") if said is not None else "no message"
    except grpc.RpcError as e:
        out["say"] = "error: %s %s" % (e.code().name, e.details())
    print(json.dumps(out))


def main():
    args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    {"serve": serve, "client": client}[sys.argv[1]](args)


if __name__ == "__main__":
    main()
