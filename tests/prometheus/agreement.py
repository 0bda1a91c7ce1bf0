#!/usr/bin/env python3
"""The alerting rules and `platoon doctor` on one live target (tests/prometheus/prometheus_rules_test.sh).

  agreement.py scrape URL DIR N GAP_S
      GET URL N times GAP_S apart: DIR/NN.prom, and DIR/times (monotonic ns of each scrape).
  agreement.py build RULES DOCTOR_JSON DIR CGROUP CPU OUT
      A `promtool test rules` file (OUT) that evaluates, over the scraped series, the expressions
      of PlatoonServerThrottled (on CGROUP), PlatoonVmSteal and PlatoonIrqPressure (on CPU, the
      one the target ran on) and expects each to hold exactly when doctor reported cpu_throttled,
      vm_steal, irq_pressure; where doctor reported cpu_throttled, the rules' throttled share must
      also be its own within 0.1. Exits 1, with one line each, where a threshold in the rules is
      not the one doctor printed with its finding.

The scrapes are laid 5 s apart on promtool's clock, 13 of them spanning exactly the rules' 1m
rate window at the last one, so rate() reads the whole run without extrapolating. Each counter's
step is scaled by 5 s over the scrape's real gap, so every rate is the real rate of its gap.
The alerts' `for:` is not evaluated: it says how long a condition must hold, not what it is.
"""
import json
import re
import sys
import time
import urllib.request

import yaml

STEP_S = 5
SCRAPES = 13  # 12 gaps of 5 s: the 1m window of the last evaluation holds them all
FAMILIES = ("platoon_cgroup_periods_total", "platoon_cgroup_throttled_periods_total",
            "platoon_cpu_steal_seconds_total", "platoon_cpu_irq_seconds_total", "platoon_cpu_softirq_seconds_total")
# alert -> (doctor's finding, the label that says which cgroup or CPU its series are of)
ALERTS = {
    "PlatoonServerThrottled": ("cpu_throttled", "cgroup"),
    "PlatoonVmSteal": ("vm_steal", "cpu"),
    "PlatoonIrqPressure": ("irq_pressure", "cpu"),
}
MARKED = re.compile(r"(>=|<=|==|!=|>|<)\s*(-?[0-9][0-9.eE+-]*)\s*#\s*(k\w+)")
SAMPLE = re.compile(r'^([a-z_:]+)(\{[^}]*\})? (\S+)$')


def scrape(url, out, n, gap):
    times = []
    for i in range(n):
        t = time.monotonic_ns()
        with urllib.request.urlopen(url, timeout=5) as r:
            body = r.read()
        times.append((t + time.monotonic_ns()) // 2)
        with open(f"{out}/{i:02d}.prom", "wb") as f:
            f.write(body)
        time.sleep(max(0.0, gap - (time.monotonic_ns() - t) / 1e9))
    with open(f"{out}/times", "w") as f:
        f.write("\n".join(map(str, times)) + "\n")


def snake(name):
    """kThrottledPeriodsPctWarn -> throttled_periods_pct_warn, as doctor's JSON names it."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name[1:]).lower()


def build(rules_path, doctor_path, scrapes, cgroup, cpu, out):
    doctor = json.load(open(doctor_path))
    findings = {f["id"]: f for f in doctor["findings"]}
    text = open(rules_path).read()
    exprs, thresholds, cur = {}, {}, None
    for line in text.split("\n"):
        m = re.match(r"\s*- alert:\s*(\S+)", line)
        if m:
            cur = m.group(1)
        elif re.match(r"\s*- record:", line):
            cur = None
        for t in MARKED.finditer(line):
            if cur in ALERTS:
                thresholds.setdefault(cur, []).append((t.group(1), float(t.group(2)), t.group(3)))
    for group in yaml.safe_load(text)["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") in ALERTS:
                exprs[rule["alert"]] = re.sub(r"#[^\n]*", "", rule["expr"]).strip()

    problems = []
    for alert, (finding, _) in ALERTS.items():
        if alert not in exprs:
            problems.append(f"{rules_path}: no alert {alert}")
            continue
        f = findings.get(finding)
        for op, number, name in thresholds.get(alert, []):
            printed = f["threshold"].get(snake(name)) if f else None
            if f and printed is None:
                problems.append(f"doctor's {finding} prints no threshold {snake(name)} (the rules name {name})")
            elif f and (op != ">=" or abs(number - printed / 100) > 1e-9):
                problems.append(f"{alert}: `{op} {number}`, but doctor's {finding} on this run holds "
                                f"{snake(name)} {printed}% (>= {printed / 100:g})")
    if problems:
        print("\n".join(problems))
        return 1

    times = [int(l) for l in open(f"{scrapes}/times")]
    if len(times) != SCRAPES:
        print(f"{len(times)} scrapes, {SCRAPES} expected")
        return 1
    series = {}  # 'name{labels}' -> [values]
    for i in range(SCRAPES):
        for line in open(f"{scrapes}/{i:02d}.prom"):
            m = SAMPLE.match(line.strip())
            if m and m.group(1) in FAMILIES:
                series.setdefault(m.group(1) + (m.group(2) or "{}"), [None] * SCRAPES)[i] = float(m.group(3))
    missing = [k for k, v in series.items() if None in v]
    want = [f'platoon_cgroup_periods_total{{cgroup="{cgroup}"}}', f'platoon_cpu_steal_seconds_total{{cpu="{cpu}"}}']
    absent = [w for w in want if w not in series]
    if missing or absent:
        print(f"series not in every scrape: {missing}; not served at all: {absent}")
        return 1
    input_series = []
    for key, values in sorted(series.items()):
        scaled = [values[0]]
        for i in range(1, SCRAPES):
            scaled.append(scaled[-1] + (values[i] - values[i - 1]) * STEP_S * 1e9 / (times[i] - times[i - 1]))
        input_series.append({"series": key, "values": " ".join(f"{v:.9g}" for v in scaled)})

    tests, verdicts = [], []
    for alert, (finding, label) in ALERTS.items():
        on = f'platoon_cgroup_periods_total{{cgroup="{cgroup}"}}' if label == "cgroup" else \
             f'platoon_cpu_steal_seconds_total{{cpu="{cpu}"}}'
        fires = int(finding in findings)
        verdicts.append(f"{alert} {'fires' if fires else 'silent'} iff {finding} {'reported' if fires else 'absent'}")
        tests.append({"expr": f"count(({exprs[alert]}) and on ({label}) {on}) or vector(0)",
                      "eval_time": f"{STEP_S * (SCRAPES - 1)}s", "exp_samples": [{"labels": "{}", "value": fires}]})
    if "cpu_throttled" in findings:
        share = findings["cpu_throttled"]["evidence"]["throttled_periods_pct"] / 100
        verdicts.append(f"throttled share {share:g} within 0.1")
        tests.append({"expr": f'count(abs(platoon:cgroup_throttled_ratio:rate1m{{cgroup="{cgroup}"}} - {share}) <= 0.1) or vector(0)',
                      "eval_time": f"{STEP_S * (SCRAPES - 1)}s", "exp_samples": [{"labels": "{}", "value": 1}]})
    doc = {"rule_files": [rules_path], "evaluation_interval": f"{STEP_S}s",
           "group_eval_order": ["platoon.recording", "platoon.alerts"],
           "tests": [{"interval": f"{STEP_S}s", "input_series": input_series, "promql_expr_test": tests}]}
    with open(out, "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False, width=1000)
    print("; ".join(verdicts))
    return 0


def main(argv):
    if len(argv) == 5 and argv[0] == "scrape":
        scrape(argv[1], argv[2], int(argv[3]), float(argv[4]))
        return 0
    if len(argv) == 7 and argv[0] == "build":
        return build(*argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
