#!/usr/bin/env python3
"""Reads `protoc --decode=perfetto.protos.Trace tui/outputs/perfetto_trace.proto` text output on
stdin and prints, as JSON, the track events as Perfetto's trace_processor would make slices of
them (per its documentation, docs/reference/synthetic-track-event.md): the packets sorted by
timestamp (a stable sort: equal stamps keep file order), then on each track a SLICE_BEGIN opens a
slice inside the innermost open one, a SLICE_END closes the innermost, an INSTANT is a slice of
no duration. Flows join the slice whose event lists an id in flow_ids to the next slice whose
event lists it in terminating_flow_ids.

Output: {"tracks": {uuid: {"name", "parent", "thread": {pid, tid}, "process": {pid}}},
         "slices": [{"track", "ts", "dur", "name", "depth", "parent", "args", "flow_out", "flow_in"}],
         "flows": [[from slice index, to slice index]], "errors": [...]}
It needs nothing but python3."""
import json, re, sys


def parse(lines):
    """protoc's text format as nested dicts: field name -> list of values (strings or dicts)."""
    root, stack = {}, []
    cur = root
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if s.endswith("{"):
            child = {}
            cur.setdefault(s[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif s == "}":
            cur = stack.pop()
        else:
            m = re.match(r"(\w+): (.*)$", s)
            value = m.group(2)
            cur.setdefault(m.group(1), []).append(json.loads(value) if value.startswith('"') else value)
    return root


def one(msg, key, default=None):
    return msg.get(key, [default])[0]


def annotation_value(a):
    for key in ("uint_value", "int_value", "string_value", "double_value"):
        if key in a:
            v = one(a, key)
            return v if key == "string_value" else (float(v) if key == "double_value" else int(v))
    if "bool_value" in a:
        return one(a, "bool_value") == "true"
    return None


def main():
    packets = parse(sys.stdin).get("packet", [])
    tracks, events = {}, []
    for i, p in enumerate(packets):
        if "track_descriptor" in p:
            d = one(p, "track_descriptor")
            t = {"name": one(d, "name"), "parent": one(d, "parent_uuid")}
            if "thread" in d:
                th = one(d, "thread")
                t["thread"] = {"pid": int(one(th, "pid")), "tid": int(one(th, "tid"))}
            if "process" in d:
                t["process"] = {"pid": int(one(one(d, "process"), "pid"))}
            tracks[one(d, "uuid")] = t
        if "track_event" in p:
            ev = one(p, "track_event")
            if one(ev, "type") in ("TYPE_SLICE_BEGIN", "TYPE_SLICE_END", "TYPE_INSTANT"):
                events.append((int(one(p, "timestamp")), i, ev))
    events.sort(key=lambda e: (e[0], e[1]))
    slices, errors, open_on = [], [], {}
    flow_from, flows = {}, []

    def new_slice(ts, ev, track, stack):
        s = {"track": track, "ts": ts, "dur": 0, "name": one(ev, "name"), "depth": len(stack),
             "parent": stack[-1] if stack else None,
             "args": {one(a, "name"): annotation_value(a) for a in ev.get("debug_annotations", [])},
             "flow_out": [int(x) for x in ev.get("flow_ids", [])],
             "flow_in": [int(x) for x in ev.get("terminating_flow_ids", [])]}
        slices.append(s)
        index = len(slices) - 1
        for f in s["flow_in"]:
            if f not in flow_from:
                errors.append(f"flow {f} ends before it starts")
            else:
                flows.append([flow_from.pop(f), index])
        for f in s["flow_out"]:
            flow_from[f] = index
        return index

    for ts, _, ev in events:
        track = one(ev, "track_uuid")
        if track not in tracks:
            errors.append(f"event on undescribed track {track}")
        stack = open_on.setdefault(track, [])
        kind = one(ev, "type")
        if kind == "TYPE_SLICE_BEGIN":
            stack.append(new_slice(ts, ev, track, stack))
        elif kind == "TYPE_INSTANT":
            new_slice(ts, ev, track, stack)
        elif not stack:
            errors.append(f"end without a begin on track {track} at {ts}")
        else:
            s = slices[stack.pop()]
            s["dur"] = ts - s["ts"]
    for track, stack in open_on.items():
        if stack:
            errors.append(f"{len(stack)} slices left open on track {track}")
    if flow_from:
        errors.append(f"{len(flow_from)} flows never end")
    json.dump({"tracks": tracks, "slices": slices, "flows": flows, "errors": errors}, sys.stdout)


if __name__ == "__main__":
    main()
