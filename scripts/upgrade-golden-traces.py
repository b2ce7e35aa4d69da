#!/usr/bin/env python3
"""Rewrites golden traces of the zcode:mapper@0.1.0 format in place into the 0.2.0 format
(docs/golden-traces.md, "From the 0.1 format"). Expectations are converted too, so that blessing
the traces afterwards shows only what the mapper's port changed; write labels, which 0.1 did
not have, are left empty for the blessing to fill. Comments and blank lines are kept.

    scripts/upgrade-golden-traces.py mappers/*/traces/*.jsonl
"""

import json
import sys


def text(value):
    """0.1 native text (a JSON value or a string) as 0.2 text native data."""
    return {"text": value}


def reply(value):
    body = value.get("body")
    if isinstance(body, dict) and "ok" in body:
        body = {"ok": text(body["ok"])}
    return {**value, "body": body}


def inbound(item):
    if not isinstance(item, dict):
        return item  # "ready"
    if "reply" in item:
        return {"reply": reply(item["reply"])}
    if "event" in item:
        event = item["event"]
        return {"event": {**event, "payload": text(event.get("payload"))}}
    if "write" in item:
        return {"write": {"bytes": item["write"], "label": ""}}
    return item


def is_error(expect):
    return isinstance(expect, dict) and set(expect) == {"error"}


def convert(line):
    call = line.get("call")
    out = dict(line)
    if call == "session.map-event":
        out = {"call": "session.map"}
        if "name" in line:
            out["name"] = line["name"]
        out["inputs"] = [{"event": text(line["payload"])}]
        if "expect" in line:
            expect = line["expect"]
            out["expect"] = expect if is_error(expect) or expect is None else {"actions": expect}
        return out
    if call in ("connection.resume", "session.resume") and "reply" in line:
        out["reply"] = reply(line["reply"])
    if call in ("connection.push", "connection.finish") and isinstance(line.get("expect"), list):
        out["expect"] = [inbound(item) for item in line["expect"]]
    return out


def main(paths):
    for path in paths:
        with open(path, encoding="utf-8") as file:
            lines = file.read().split("\n")
        upgraded = []
        for raw in lines:
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                upgraded.append(raw)
                continue
            line = json.loads(stripped)
            upgraded.append(json.dumps(convert(line), ensure_ascii=False, separators=(",", ":")))
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(upgraded))
        print(f"upgraded {path}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
