#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/request_schema_check.py TABLE OPENAPI API_MD HELP: checks the documents of a
session request against its table of fields (tests/tools/request_schema.c's JSON): every
field with an API key is in docs/openapi.json's SessionCreate with the table's type and
bounds, every property there is a field (or one of the API's own, below), docs/API.md states
each number's range, and `bulkhead run --help` (HELP, a file) shows every option. Prints one
line per difference; exit status 1 when there is any."""
import json
import re
import sys

# What a create may say that is not a field of the session request: how the work share's
# mode is given, and whether a pool guest may be taken.
API_OWN = {"work_ro", "pool"}


def main():
    table_path, openapi_path, api_md_path, help_path = sys.argv[1:5]
    table = json.load(open(table_path))
    props = json.load(open(openapi_path))["components"]["schemas"]["SessionCreate"]["properties"]
    api_md = open(api_md_path).read()
    help_text = open(help_path).read()
    problems = []
    keys = set()
    for f in table:
        key, kind = f.get("key"), f["type"]
        if f.get("flag") and not re.search(r"--%s\b" % re.escape(f["flag"]), help_text):
            problems.append(f"--{f['flag']}: not in `bulkhead run --help`")
        if kind == "uint" and not re.search(r"\b%d\.\.%d\b" % (f["min"], f["max"]), help_text):
            problems.append(f"--{f['flag']}: --help does not say {f['min']:.0f}..{f['max']:.0f}")
        if not key:
            continue
        keys.add(key)
        p = props.get(key)
        if p is None:
            problems.append(f"{key}: not a property of openapi.json's SessionCreate")
            continue
        if kind == "uint":
            want = {"type": "integer", "minimum": f["min"], "maximum": f["max"]}
            got = {k: p.get(k) for k in want}
            if got != want:
                problems.append(f"{key}: openapi.json says {got}, the table {want}")
            if not re.search(r"`%s` \(%d\.\.%d\)" % (key, f["min"], f["max"]), api_md):
                problems.append(f"{key}: docs/API.md does not say `{key}` "
                                f"({f['min']:.0f}..{f['max']:.0f})")
        elif kind == "seconds":
            want = {"type": "number", "minimum": f["min"], "exclusiveMinimum": True,
                    "maximum": f["max"]}
            got = {k: p.get(k) for k in want}
            if got != want:
                problems.append(f"{key}: openapi.json says {got}, the table {want}")
            days = f["max"] / 86400
            if not re.search(r"more than %d and at most %d days" % (f["min"], days), api_md):
                problems.append(f"{key}: docs/API.md does not say more than {f['min']:.0f} "
                                f"and at most {days:.0f} days")
        elif kind == "choice":
            if sorted(p.get("enum", [])) != sorted(f["choices"].split("|")):
                problems.append(f"{key}: openapi.json's enum {p.get('enum')}, "
                                f"the table {f['choices']}")
        elif kind == "list":
            bound = p.get("maxItems", p.get("maxProperties"))
            if bound != f["max"]:
                problems.append(f"{key}: openapi.json bounds it at {bound}, the table at "
                                f"{f['max']:.0f}")
        elif kind == "text":
            types = [p.get("type")] + [o.get("type") for o in p.get("oneOf", [])]
            if "string" not in types:
                problems.append(f"{key}: openapi.json does not take a string")
    for key in sorted(set(props) - keys - API_OWN):
        problems.append(f"{key}: in openapi.json's SessionCreate but not a field of the request")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
