#!/usr/bin/env python3
"""Reads `protoc --decode=perfetto.protos.Trace tui/outputs/perfetto_trace.proto` text output on
stdin and prints, as JSON, what a test compares with the recording: sched events per CPU and
kind, thread descriptors, counter tracks and their sample counts, and timestamp checks.
It walks protoc's text format by indentation, so it needs nothing but python3."""
import json, re, sys

SCHED = ("sched_switch", "sched_waking", "sched_wakeup_new", "sched_migrate_task")
by_cpu, threads, processes, tracks, samples = {}, [], {}, {}, {}
out_of_order, first_ts, last_ts = 0, None, None
stack = []          # open message names
cur = {}            # fields of the innermost message being read, per depth
cpu = None
prev_ts = {}        # per bundle cpu: last event timestamp seen
for line in sys.stdin:
    s = line.strip()
    if s.endswith("{"):
        stack.append(s[:-1].strip())
        cur[len(stack)] = {}
        continue
    if s == "}":
        name, fields = stack.pop(), cur.pop(len(stack) + 1)
        if name in SCHED:
            c = by_cpu.setdefault(str(cpu), {})
            c[name] = c.get(name, 0) + 1
        elif name == "thread" and stack[-1:] == ["track_descriptor"]:
            threads.append(fields)
        elif name == "process" and stack[-1:] == ["track_descriptor"]:
            processes[fields["pid"]] = fields.get("process_name")
        elif name == "track_descriptor" and "name" in fields:
            tracks[fields["uuid"]] = fields["name"]
        elif name == "track_event" and fields.get("type") == "TYPE_COUNTER":
            samples[fields["track_uuid"]] = samples.get(fields["track_uuid"], 0) + 1
        continue
    m = re.match(r'(\w+): (.*)$', s)
    if not m:
        continue
    key, value = m.group(1), m.group(2)
    value = json.loads(value) if value.startswith('"') else value
    cur[len(stack)][key] = value
    if key == "cpu" and stack[-1:] == ["ftrace_events"]:
        cpu = int(value)
    if key == "timestamp" and stack[-1:] == ["event"]:
        ts = int(value)
        first_ts = ts if first_ts is None else min(first_ts, ts)
        last_ts = ts if last_ts is None else max(last_ts, ts)
        if ts < prev_ts.get(cpu, 0):
            out_of_order += 1
        prev_ts[cpu] = ts
json.dump({"by_cpu": by_cpu, "threads": threads, "processes": processes,
           "counter_tracks": {name: samples.get(uuid, 0) for uuid, name in tracks.items()},
           "out_of_order": out_of_order, "first_ts": first_ts, "last_ts": last_ts}, sys.stdout)
