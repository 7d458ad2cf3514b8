#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/aws_client.py PROXY CA ENDPOINT CASE: what an agent's code does with AWS, through
a broker: Debian's python3-boto3 with placeholder keys (as a guest's environment holds), the
broker's session CA and its proxy. Prints one line per step: "ok STEP ...", or
"refused STEP STATUS" with the broker's or the server's words."""
import sys
import urllib.request

import boto3
import botocore.config
import botocore.exceptions

PROXY, CA, ENDPOINT, CASE = sys.argv[1:5]


def client(service, region="us-east-1"):
    cfg = botocore.config.Config(proxies={"https": PROXY}, s3={"addressing_style": "path"},
                                 retries={"max_attempts": 1})
    return boto3.client(service, endpoint_url=ENDPOINT, region_name=region, verify=CA,
                        aws_access_key_id="AKIAPLACEHOLDER00000",
                        aws_secret_access_key="placeholder-not-the-key", config=cfg)


def step(name, fn):
    try:
        r = fn()
        print("ok %s %s" % (name, r if r is not None else ""), flush=True)
    except botocore.exceptions.ClientError as e:
        body = e.response.get("Error", {})
        print("refused %s %s %s" % (name, e.response["ResponseMetadata"]["HTTPStatusCode"],
                                    body.get("Message") or body.get("Code") or ""), flush=True)


s3 = client("s3")
if CASE == "s3":
    big = b"0123456789abcdef" * 16384  # 256 KiB: streamed with its length
    step("put", lambda: s3.put_object(Bucket="agent-data", Key="runs/a.txt",
                                      Body=b"hello from the session")["ETag"])
    step("get", lambda: s3.get_object(Bucket="agent-data", Key="runs/a.txt")["Body"].read())
    step("put-big", lambda: s3.put_object(Bucket="agent-data", Key="runs/big.bin",
                                          Body=big)["ETag"])
    step("get-big", lambda: s3.get_object(Bucket="agent-data", Key="runs/big.bin")["Body"]
         .read() == big)
    step("list", lambda: sorted(o["Key"] for o in s3.list_objects_v2(
        Bucket="agent-data", Prefix="runs/")["Contents"]))
    step("delete", lambda: s3.delete_object(Bucket="agent-data", Key="runs/big.bin")
         ["ResponseMetadata"]["HTTPStatusCode"])
    step("put-outside", lambda: s3.put_object(Bucket="agent-data", Key="other/x", Body=b"x"))
    step("get-other-bucket", lambda: s3.get_object(Bucket="billing", Key="runs/a.txt"))
    step("list-outside", lambda: s3.list_objects_v2(Bucket="agent-data", Prefix="other/"))
    step("list-all", lambda: s3.list_objects_v2(Bucket="agent-data"))
    step("copy-inside", lambda: s3.copy_object(
        Bucket="agent-data", Key="runs/copy", CopySource={"Bucket": "agent-data",
                                                          "Key": "runs/a.txt"})
         ["ResponseMetadata"]["HTTPStatusCode"])
    step("get-copy", lambda: s3.get_object(Bucket="agent-data", Key="runs/copy")["Body"].read())
    step("copy-from-outside", lambda: s3.copy_object(
        Bucket="agent-data", Key="runs/copy", CopySource={"Bucket": "billing", "Key": "k"}))
    step("bucket-policy", lambda: s3.get_bucket_policy(Bucket="agent-data"))
    step("public-read", lambda: s3.put_object(Bucket="agent-data", Key="runs/pub", Body=b"x",
                                              ACL="public-read"))
    step("tattle", lambda: s3.get_object(Bucket="agent-data", Key="runs/tattle")["Body"]
         .read().decode())
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "agent-data",
                                                          "Key": "runs/a.txt"})
    op = urllib.request.build_opener(
        urllib.request.ProxyHandler({"https": PROXY}),
        urllib.request.HTTPSHandler(context=__import__("ssl").create_default_context(
            cafile=CA)))
    try:
        op.open(url, timeout=20)
        print("ok presigned", flush=True)
    except urllib.error.HTTPError as e:
        print("refused presigned %d %s" % (e.code, e.read().decode().replace("\n", " ")),
              flush=True)
elif CASE == "lambda":
    lam = client("lambda")
    step("invoke", lambda: lam.invoke(FunctionName="agent-fn", Payload=b'{"n": 41}')
         ["Payload"].read().decode())
elif CASE == "region":
    step("other-region", lambda: client("s3", "eu-west-1").get_object(
        Bucket="agent-data", Key="runs/a.txt"))
elif CASE == "tattle":
    step("tattle", lambda: s3.get_object(Bucket="agent-data", Key="runs/tattle")["Body"]
         .read().decode())
elif CASE == "get":
    step("get", lambda: s3.get_object(Bucket="agent-data", Key="runs/a.txt")["Body"].read())
