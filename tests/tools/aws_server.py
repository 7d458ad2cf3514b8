#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/aws_server.py CERT KEY LOG KEYS: a local HTTPS server playing S3 (path-style
buckets: PUT, GET, HEAD, DELETE and CopyObject of objects, ListObjectsV2) and Lambda's Invoke, that checks
every request's Signature V4 the way AWS does, with botocore's own signer (Debian's
python3-botocore) and the real keys: KEYS is a JSON file {ACCESS_KEY_ID: [SECRET, TOKEN or
null]}, read again at each request (a rotated key is taken at once). Also as AWS: a request
more than 15 minutes from the server's clock is refused (RequestTimeTooSkewed), an
x-amz-content-sha256 that is not the body's (XAmzContentSHA256Mismatch), a PUT without a
length (MissingContentLength). Each request is logged to LOG as "ok METHOD PATH SERVICE
REGION" or "refused METHOD PATH WHY". GET of a key ending in "tattle" answers with every
secret key and token it knows, as a careless API might.

It also plays STS: a POST of Action=AssumeRole signed for "sts" with a real key mints temporary
credentials (ASIA...) for 15 minutes (or DurationSeconds), known from then on like the real
keys, and logs "assumed ROLE policy=POLICY duration=N"; a role whose ARN ends in "/denied" is
refused (AccessDenied, with a message that repeats every secret key, as an error may). Every
verified request logs "key ID" with the key that signed it."""
import datetime
import hashlib
import http.server
import json
import secrets
import sys
import xml.sax.saxutils
from urllib.parse import unquote

import botocore.auth
import botocore.awsrequest
import botocore.credentials

import tls_server

CERT, KEY, LOG, KEYS = sys.argv[1:5]
store = {}  # "bucket/key" -> bytes
temp = {}  # access key id -> [secret, token]: what AssumeRole minted


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


def verify(h, body):
    """None when the request is signed right, else why not."""
    authz = h.headers.get("Authorization", "")
    if not authz.startswith("AWS4-HMAC-SHA256 "):
        return "MissingAuthenticationToken"
    try:
        parts = dict(p.strip().split("=", 1) for p in authz[17:].split(","))
        akid, day, region, service, term = parts["Credential"].split("/")
        signed = parts["SignedHeaders"].split(";")
    except (KeyError, ValueError):
        return "IncompleteSignature"
    keys = dict(json.load(open(KEYS)), **temp)
    if akid not in keys:
        return "InvalidAccessKeyId"
    secret, token = keys[akid]
    if token is not None and h.headers.get("X-Amz-Security-Token") != token:
        return "InvalidToken"
    amz_date = h.headers.get("X-Amz-Date", "")
    try:
        when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    except ValueError:
        return "MissingDateHeader"
    if abs((datetime.datetime.utcnow() - when).total_seconds()) > 900:
        return "RequestTimeTooSkewed"
    if term != "aws4_request" or day != amz_date[:8]:
        return "IncompleteSignature"
    headers = {}
    for name in signed:
        if h.headers.get(name) is None:
            return "SignatureDoesNotMatch (a signed header is missing)"
        headers[name] = h.headers.get(name)
    req = botocore.awsrequest.AWSRequest(
        method=h.command, url="https://%s%s" % (h.headers["Host"], h.path), headers=headers,
        data=body)
    req.context["timestamp"] = amz_date
    creds = botocore.credentials.Credentials(akid, secret, token)
    cls = botocore.auth.S3SigV4Auth if service == "s3" else botocore.auth.SigV4Auth
    auth = cls(creds, service, region)
    want = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
    if want != parts.get("Signature"):
        return "SignatureDoesNotMatch"
    sha = h.headers.get("X-Amz-Content-SHA256")
    if sha and len(sha) == 64 and sha != hashlib.sha256(body).hexdigest():
        return "XAmzContentSHA256Mismatch"
    log("key %s" % akid)
    return None


def assume_role(h, form):
    """STS's AssumeRole: the answer's status and XML."""
    from urllib.parse import parse_qs
    q = {k: v[0] for k, v in parse_qs(form.decode(), keep_blank_values=True).items()}
    role = q.get("RoleArn", "")
    if q.get("Action") != "AssumeRole" or q.get("Version") != "2011-06-15":
        return 400, "<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>"
    if role.endswith("/denied"):
        said = " ".join(s for s, t in json.load(open(KEYS)).values())
        log("refused assume %s" % role)
        return 403, ("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
                     "<Type>Sender</Type><Code>AccessDenied</Code><Message>not for you: %s"
                     "</Message></Error></ErrorResponse>" % said)
    duration = int(q.get("DurationSeconds", "900"))
    akid = "ASIA" + secrets.token_hex(8).upper()
    temp[akid] = ["tmp/" + secrets.token_urlsafe(30), "FwoGZX" + secrets.token_urlsafe(90)]
    until = (datetime.datetime.utcnow() + datetime.timedelta(seconds=duration)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    log("assumed %s policy=%s duration=%d session=%s" % (role, q.get("Policy", "-"), duration,
                                                        q.get("RoleSessionName")))
    log("minted %s %s %s" % (akid, temp[akid][0], temp[akid][1]))
    return 200, ("<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                 "<AssumeRoleResult><AssumedRoleUser><Arn>%s</Arn></AssumedRoleUser><Credentials>"
                 "<AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>"
                 "<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>"
                 "</AssumeRoleResult></AssumeRoleResponse>" % (role, akid, temp[akid][0],
                                                               temp[akid][1], until))


def aws_chunked(data):
    """The object in an aws-chunked body: "SIZE[;...]CRLF DATA CRLF" ... "0" and trailers."""
    out, i = b"", 0
    while True:
        j = data.index(b"\r\n", i)
        size = int(data[i:j].split(b";")[0], 16)
        if not size:
            return out
        out += data[j + 2:j + 2 + size]
        i = j + 2 + size + 2


def list_xml(bucket, prefix):
    keys = sorted(k[len(bucket) + 1:] for k in store if k.startswith(bucket + "/" + prefix))
    items = "".join("<Contents><Key>%s</Key><Size>%d</Size></Contents>" % (
        xml.sax.saxutils.escape(k), len(store[bucket + "/" + k])) for k in keys)
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3."
            "amazonaws.com/doc/2006-03-01/\"><Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d"
            "</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>%s"
            "</ListBucketResult>" % (bucket, xml.sax.saxutils.escape(prefix), len(keys),
                                     items)).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body=b"", ctype="application/xml", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code):
        log("refused %s %s %s" % (self.command, self.path, code))
        self.answer(status, ("<Error><Code>%s</Code></Error>" % code.split()[0]).encode())

    def read_body(self):
        """The body as sent (HTTP chunks joined); None when a PUT has no length."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = self.headers.get("Content-Length")
        if n is None and self.command == "PUT":
            return None
        return self.rfile.read(int(n)) if n else b""

    def handle_any(self):
        body = self.read_body()
        if self.command == "PUT" and "Content-Length" not in self.headers and not \
                self.headers.get("X-Amz-Content-SHA256", "").startswith("STREAMING-"):
            body = None  # as S3: chunked only for aws-chunked bodies
        if body is None:
            return self.error(411, "MissingContentLength")
        why = verify(self, body)
        if why:
            return self.error(403 if "Mismatch" not in why else 400, why)
        path, _, query = self.path.partition("?")
        service = self.headers["Authorization"].split("/")[3]
        log("ok %s %s %s %s" % (self.command, self.path, service,
                                self.headers["Authorization"].split("/")[2]))
        if service == "sts":
            status, answer = assume_role(self, body)
            return self.answer(status, answer.encode(), "text/xml")
        if service == "lambda":
            return self.answer(200, json.dumps({"invoked": path.split("/")[3],
                                                "payload": json.loads(body or b"{}")}).encode(),
                               "application/json")
        bucket, _, key = path[1:].partition("/")
        if not key and self.command == "GET":
            q = dict(p.partition("=")[::2] for p in query.split("&") if p)
            return self.answer(200, list_xml(bucket, unquote(q.get("prefix", ""))))
        if not key and self.command == "HEAD":
            return self.answer(200)
        name = bucket + "/" + unquote(key)
        source = self.headers.get("X-Amz-Copy-Source")
        if self.command == "PUT" and source:
            store[name] = store.get(unquote(source).lstrip("/"), b"")
            return self.answer(200, ("<CopyObjectResult><ETag>\"%s\"</ETag></CopyObjectResult>"
                                     % hashlib.md5(store[name]).hexdigest()).encode())
        if self.command == "PUT":
            if self.headers.get("X-Amz-Content-SHA256", "").startswith("STREAMING-"):
                body = aws_chunked(body)
            store[name] = body
            return self.answer(200, extra=[("ETag", '"%s"' % hashlib.md5(body).hexdigest())])
        if self.command == "DELETE":
            store.pop(name, None)
            return self.answer(204)
        if name.endswith("tattle"):
            keys = dict(json.load(open(KEYS)), **temp)
            said = " ".join("%s %s" % (s, t or "") for s, t in keys.values())
            return self.answer(200, ("keys: " + said).encode(), "text/plain")
        if name not in store:
            return self.error(404, "NoSuchKey")
        self.answer(200, store[name], "application/octet-stream",
                    [("ETag", '"%s"' % hashlib.md5(store[name]).hexdigest())])

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = handle_any


tls_server.serve(Handler, CERT, KEY)
