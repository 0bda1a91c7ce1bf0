"""The summary of scripts/bench-observer-cpu.sh: per condition, the server's CPU per request
against the same round's untraced window, raw and at the reference CPU speed, with 90% bootstrap
intervals; and the control that makes the speed adjustment fair: whether a tracer slows the
speedometer itself (it would then hide part of its own cost).

usage: observer_cpu_summary.py DEST_JSON RATE none,cond,... OUT_DIR [OUT_DIR...]
  Several OUT_DIRs (runs of the same conditions) are pooled: their rounds are taken together.
"""
import json
import random
import statistics
import sys


# (a, b): a's overhead minus b's, reported when a run has both.
PAIRS = [("platoon", "perf"), ("platoon-noio", "perf"), ("platoon", "platoon-noio"), ("top", "platoon"),
         ("top", "platoon-noevents"), ("top", "floor"), ("top", "top-sched"), ("floor", "floor-sched"),
         ("top-sched", "floor-sched"), ("exporter", "top"), ("platoon-requests", "platoon"),
         ("floor-requests", "floor"), ("exporter", "exporter-root")]


def trimmed_mean(values, cut=0.1):
    v = sorted(values)
    k = int(len(v) * cut)
    return statistics.mean(v[k:len(v) - k])


def ci90(values, stat):
    rng = random.Random(1)  # fixed seed: a rerun of the summary prints the same
    b = sorted(stat(rng.choices(values, k=len(values))) for _ in range(2000))
    return [b[100], b[1899]]


def change(values):
    """Per-round percentage changes summarised: 10%-trimmed mean, its 90% interval, median, sd."""
    return {"trimmed_mean": trimmed_mean(values), "ci90": ci90(values, trimmed_mean),
            "median": statistics.median(values), "sd": statistics.stdev(values), "per_round": values}


def load_windows(out, conds):
    # The rounds every condition finished (an interrupted run is summarised up to its last).
    def complete(c, r):
        try:
            return len(open(f"{out}/window-{c}-{r}").read().split("\n")) >= 3
        except OSError:
            return False
    rounds = 0
    while all(complete(c, rounds + 1) for c in conds):
        rounds += 1
    speed = [tuple(map(int, l.split())) for l in open(f"{out}/speed.txt") if len(l.split()) == 3]

    def window(c, r):
        lines = [tuple(map(float, l.split())) for l in open(f"{out}/window-{c}-{r}")]
        (t0, s0, q0, c0, z0), (t1, s1, q1, c1, z1) = lines
        q = q1 - q0
        if q <= 0:
            sys.exit(f"observer_cpu_summary: {out}: the server answered no request in {c}'s window of round {r}")
        sp = [w for (t, w, _) in speed if t0 <= t <= t1]
        return {"us_per_request": (s1 - s0) * 1e6 / q, "requests": q, "cycles_per_request": (c1 - c0) / q,
                "sleeps_per_request": (z1 - z0) / q, "speed_ns": statistics.median(sp), "speed_samples": len(sp)}

    return {c: [window(c, r) for r in range(1, rounds + 1)] for c in conds}


def main():
    dest, rate, conds, outs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4:]
    W = {c: [] for c in conds}
    for out in outs:
        for c, ws in load_windows(out, conds).items():
            W[c] += ws
    rounds = len(W["none"])
    ref = statistics.median(w["speed_ns"] for ws in W.values() for w in ws)
    for ws in W.values():
        for w in ws:
            w["us_per_request_at_ref_speed"] = w["us_per_request"] * ref / w["speed_ns"]
    res = {}
    for c in conds:
        res[c] = {"windows": W[c]}
        for key in ("us_per_request", "us_per_request_at_ref_speed", "cycles_per_request", "sleeps_per_request", "speed_ns"):
            res[c][key + "_median"] = statistics.median(w[key] for w in W[c])
        if c == "none":
            continue
        for key, name in (("us_per_request", "overhead_pct"), ("us_per_request_at_ref_speed", "overhead_at_ref_speed_pct"),
                          ("cycles_per_request", "cycles_change_pct"), ("sleeps_per_request", "sleeps_change_pct"),
                          ("speed_ns", "speedometer_change_pct")):
            # A change against zero has no value: a saturated server never sleeps, for one.
            base = [W["none"][i][key] for i in range(rounds)]
            res[c][name] = None if 0 in base else change([100.0 * (W[c][i][key] / base[i] - 1) for i in range(rounds)])
    # Differences paired per round, where both conditions ran: record's goal is perf's overhead
    # in the same run; the others split a cost into its parts (what the epoll hooks add to the
    # floor, what top's process adds to the same programs in record --no-events, what top's
    # programs add to the hooks, what IO columns add to top).
    for a, b in PAIRS:
        if a in res and b in res:
            if res[a]["overhead_at_ref_speed_pct"] is None or res[b]["overhead_at_ref_speed_pct"] is None:
                continue
            x = res[a]["overhead_at_ref_speed_pct"]["per_round"]
            y = res[b]["overhead_at_ref_speed_pct"]["per_round"]
            res[a][f"minus_{b}_at_ref_speed_points"] = change([u - v for u, v in zip(x, y)])
    none_us = [w["us_per_request"] for w in W["none"]]
    none_sp = [w["speed_ns"] for w in W["none"]]
    corr = statistics.correlation(none_us, none_sp) if len(set(none_sp)) > 1 and len(set(none_us)) > 1 else None
    summary = {"cpus": {"server": "1 (one carrier)", "speedometer": "1", "mock_load_tracers": "0"}, "runs": outs, "rounds": rounds,
               "rate": rate, "reference_speed_ns": ref, "untraced_cpu_speed_correlation": corr, "conditions": res}
    with open(dest, "w") as f:
        json.dump(summary, f, indent=2)

    def fmt(ch):
        if ch is None:
            return "n/a (zero untraced)"
        return f"{ch['trimmed_mean']:+6.2f}% [{ch['ci90'][0]:+5.2f}, {ch['ci90'][1]:+5.2f}]"

    print(f"{'condition':16} {'us/req':>7} {'overhead [90% interval]':>24} {'at ref speed [90%]':>24} "
          f"{'speedometer [90%]':>24} {'cycles/req':>10} {'sleeps/req':>10}")
    for c in conds:
        r = res[c]
        line = f"{c:16} {r['us_per_request_median']:7.2f} "
        if c == "none":
            line += " " * 74
        else:
            line += f"{fmt(r['overhead_pct']):>24} {fmt(r['overhead_at_ref_speed_pct']):>24} {fmt(r['speedometer_change_pct']):>24}"
        print(line + f" {r['cycles_per_request_median']:10.3f} {r['sleeps_per_request_median']:10.3f}")
    print(f"(10%-trimmed means over {rounds} rounds of the change against that round's untraced window; at ref speed:"
          " each window's CPU per request divided by the speedometer's ns; speedometer: the control, a tracer that"
          " slowed it would hide part of its own cost)")
    for a, b in PAIRS:
        d = res.get(a, {}).get(f"minus_{b}_at_ref_speed_points")
        if d:
            print(f"{a} minus {b}, paired, at ref speed: {d['trimmed_mean']:+.2f} points "
                  f"[{d['ci90'][0]:+.2f}, {d['ci90'][1]:+.2f}]")
    if corr is not None:
        print(f"untraced windows: CPU per request against the speedometer's ns, correlation {corr:.2f}")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
