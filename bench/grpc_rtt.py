#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/grpc_rtt.py: gRPC unary round trips and held streams, with Debian's python3-grpcio
# (generic handlers on raw bytes), for bench/broker-grpc.sh.
#   serve --cert PEM --key KEY       services open and cred, each with Unary (echoes 64 bytes
#                                    as 100) and Hold (two messages, then open until
#                                    cancelled);
#                                    prints its port
#   client --port N --ca PEM [--proxy URL] --path /open/Unary --n N
#                                    N calls on one channel; one line per call: microseconds
#   hold --port N --ca PEM --proxy URL --n K
#                                    K Hold streams at once; prints "open" when all have their
#                                    first message, holds them until stdin ends
import sys
import threading
import time
from concurrent import futures

import grpc


def serve(args):
    def unary(req, ctx):
        return (req * 2)[:100].ljust(100, b".")

    def hold(req, ctx):
        # The scrubber's fixed lag holds a message's last bytes until more come (THREAT-MODEL
        # "HTTP/2", gRPC): a second message lets the first through.
        yield b"held".ljust(1024, b".")
        yield b"pad".ljust(4096, b".")
        while ctx.is_active():
            time.sleep(0.2)

    handlers = [grpc.method_handlers_generic_handler(svc, {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Hold": grpc.unary_stream_rpc_method_handler(hold)}) for svc in ("open", "cred")]
    srv = grpc.server(futures.ThreadPoolExecutor(max_workers=200))
    srv.add_generic_rpc_handlers(handlers)
    creds = grpc.ssl_server_credentials(
        ((open(args["--key"], "rb").read(), open(args["--cert"], "rb").read()),))
    print(srv.add_secure_port("127.0.0.1:0", creds), flush=True)
    srv.start()
    srv.wait_for_termination()


def channel(args):
    creds = grpc.ssl_channel_credentials(root_certificates=open(args["--ca"], "rb").read())
    opts = [("grpc.enable_retries", 0)]
    if "--proxy" in args:
        opts.append(("grpc.http_proxy", args["--proxy"]))
    else:
        opts.append(("grpc.enable_http_proxy", 0))
    return grpc.secure_channel("localhost:%s" % args["--port"], creds, options=opts)


def client(args):
    ch = channel(args)
    call = ch.unary_unary(args["--path"])
    call(b"w" * 64, timeout=30)  # the connection and TLS are not what is measured
    out = []
    for _ in range(int(args["--n"])):
        t0 = time.perf_counter_ns()
        call(b"x" * 64, timeout=30)
        out.append((time.perf_counter_ns() - t0) // 1000)
    print("\n".join(map(str, out)))


def hold(args):
    ch = channel(args)
    n = int(args["--n"])
    calls = [ch.unary_stream("/cred/Hold")(b"", timeout=600) for _ in range(n)]
    for c in calls:
        next(c)
    print("open", flush=True)
    sys.stdin.read()
    for c in calls:
        c.cancel()


def main():
    args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    {"serve": serve, "client": client, "hold": hold}[sys.argv[1]](args)


if __name__ == "__main__":
    main()
