#!/usr/bin/env python3
"""Keeps the alert thresholds of platoon.rules.yml equal to platoon doctor's.

Each threshold in an alert's expression is written `>= NUMBER  # kName`, kName a constant of
tui/analysis/doctor_thresholds.hpp: a percentage (Pct in its name), NUMBER = kName / 100, or a time
in µs (Us in its name), NUMBER = kName / 1e6 seconds; the comparison `>=`, as doctor reports a
finding once a value reaches its threshold. (In a plain YAML value the `# kName` is a
YAML comment; in a block (`|`) it is a PromQL comment: either way Prometheus ignores it.) Every
numeric comparison in an alert must carry such a name, and docs/exporter.md's alert table must
show each alert's expression as the rules file has it.

  sync-thresholds.py            check; one line per disagreement, exit 1 if there is any
  sync-thresholds.py --write    rewrite the rules file's thresholds from the header, then check

Run by tests/prometheus/prometheus_rules_test.sh. After changing a doctor threshold, --write, then move the
synthetic series of tests/prometheus/platoon.rules.test.yml that sit just above and just below
it, and the "why this threshold" column of docs/exporter.md.
"""
import argparse
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "tui/analysis/doctor_thresholds.hpp")
RULES = os.path.join(ROOT, "scripts/prometheus/platoon.rules.yml")
DOC = os.path.join(ROOT, "docs/exporter.md")

CONSTANT = re.compile(r"inline\s+constexpr\s+[\w:]+\s+(k\w+)\s*=\s*([0-9][0-9.']*)\s*;")
# A comparison with a number, and the doctor constant named after it on the same line.
MARKED = re.compile(r"(>=|<=|==|!=|>|<)(\s*)(-?[0-9][0-9.eE+-]*)(\s*#\s*)(k\w+)")
COMPARISON = re.compile(r"(>=|<=|==|!=|>|<)\s*(bool\s+)?-?[0-9]")


def constants(path):
    with open(path) as f:
        return {m.group(1): float(m.group(2).replace("'", "")) for m in CONSTANT.finditer(f.read())}


def ratio(name, consts):
    """The rules' value for doctor constant NAME (a percentage or µs), or an error line."""
    if name not in consts:
        return None, f"{name} is not a constant of {os.path.relpath(HEADER, ROOT)}"
    if "Pct" in name:
        return consts[name] / 100, None
    if "Us" in name:
        return consts[name] / 1e6, None
    return None, f"{name} is neither a percentage (Pct) nor µs (Us): the rules compare fractions and seconds"


def unit(name):
    return "%" if "Pct" in name else " us"


def fmt(v):
    return f"{v:.6g}"


def alerts_by_line(lines):
    """For each line of the rules file, (n, name) of the alert it belongs to (the n-th `- alert:`
    of the file), or None within a recording rule or the header."""
    owner, cur, n = [], None, -1
    for line in lines:
        m = re.match(r"\s*- (alert|record):\s*(\S+)", line)
        if m:
            n += m.group(1) == "alert"
            cur = (n, m.group(2)) if m.group(1) == "alert" else None
        owner.append(cur)
    return owner


def check(consts, write):
    with open(RULES) as f:
        text = f.read()
    lines = text.split("\n")
    owner = alerts_by_line(lines)
    problems, changed = [], False
    for i, line in enumerate(lines):
        for m in list(MARKED.finditer(line)):
            op, number, name = m.group(1), float(m.group(3)), m.group(5)
            want, err = ratio(name, consts)
            where = f"{os.path.relpath(RULES, ROOT)}:{i + 1}: {owner[i][1] if owner[i] else 'a recording rule'}"
            if err:
                problems.append(f"{where}: {err}")
                continue
            if op == ">=" and abs(number - want) < 1e-12:
                continue
            if write:
                lines[i] = line = line[: m.start()] + f">={m.group(2) or ' '}{fmt(want)}{m.group(4)}{name}" + line[m.end():]
                changed = True
            else:
                problems.append(f"{where}: `{op} {m.group(3)}`, but doctor's {name} is {fmt(consts[name])}{unit(name)}: "
                                f"`>= {fmt(want)}` (scripts/prometheus/sync-thresholds.py --write)")
    if changed:
        with open(RULES, "w") as f:
            f.write("\n".join(lines))
        text = "\n".join(lines)

    doc_rows = {}
    with open(DOC) as f:
        section = re.search(r"^## Alerting rules\n(.*?)(?=^## )", f.read(), re.S | re.M)
    for row in re.finditer(r"^\| `(Platoon\w+)` \| `([^`]*)` \| [^|]* \| (\w+) \|", section.group(1) if section else "", re.M):
        doc_rows[(row.group(1), row.group(3))] = row.group(2)

    n = -1
    for group in yaml.safe_load(text)["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            n += 1
            name, severity = rule["alert"], rule.get("labels", {}).get("severity", "")
            expr = rule["expr"]
            # YAML dropped the comments of a plain value; a block keeps them as PromQL comments.
            bare = " ".join(re.sub(r"#.*", "", l).strip() for l in expr.split("\n")).strip()
            bare = re.sub(r"\s+", " ", bare)
            marked = sum(len(MARKED.findall(l)) for l, o in zip(lines, owner) if o and o[0] == n)
            unmarked = len(COMPARISON.findall(bare)) - marked
            if unmarked > 0:
                problems.append(f"{os.path.relpath(RULES, ROOT)}: {name} ({severity}): a numeric comparison without "
                                f"`# kName` (every alert threshold is one of doctor's): {bare}")
            shown = doc_rows.get((name, severity))
            if shown is None:
                problems.append(f"docs/exporter.md: no row for {name} ({severity}) in the alert table of Alerting rules")
            elif re.sub(r"\s+", " ", shown).strip() != bare:
                problems.append(f"docs/exporter.md: {name} ({severity}) shows `{shown}`, the rules file has `{bare}`")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the rules' thresholds from the header")
    args = ap.parse_args()
    try:
        consts = constants(HEADER)
        problems = check(consts, args.write)
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        print(f"sync-thresholds: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
