#!/usr/bin/env bash
# What an HTML report weighs and how fast it opens, and how fast its chart library draws many
# points. (1) A loaded two-carrier platoon-server recorded for --duration with --requests: the
# page's size, the time `platoon report --format html` takes, and the time headless Chromium
# takes from navigation to every chart drawn (tests/tools/html_page.py's ready_ms), --opens
# times with the network cut. (2) Vega drawing one line chart of 10k and 100k points and a heat
# map of 10k and 100k cells, through the report's own charts.js, as the report would if it did
# not bin: why the report bins long recordings and the batch scatter.
#
# usage: scripts/bench-html-report.sh [BUILD_DIR] [--opens N] [--duration S] [--rate R]
#   CPUs: server (two carriers) on CPU 1; mock, load and the recorder on CPU 0; Chromium
#   unpinned (both CPUs), alone.
# Writes BUILD_DIR/bench/html-report.json and prints the medians with their min and max.
set -euo pipefail
script=bench-html-report
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
source "$here/lib/common.sh"
build=build
[ $# -gt 0 ] && [[ $1 != --* ]] && { build=$1; shift; }
opens=5 duration=10 rate=4000
options=(--opens=opens --duration=duration --rate=rate)
parse_options "$@"
[[ $opens =~ ^[0-9]+$ && $opens -ge 1 ]] || die "--opens needs a whole number >= 1, got $opens"
[[ $rate =~ ^[0-9]+$ && $rate -ge 1 ]] || die "--rate needs a whole number of requests per second, got $rate"
[[ $duration =~ ^[0-9]+$ && $duration -ge 1 ]] || die "--duration needs whole seconds, got $duration"
bin=$build/bin
out=$build/bench/html-report
py=/usr/bin/python3
[ "$(id -u)" = 0 ] || die "needs root"
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || die "needs chromium and chromium-driver (scripts/install-deps.sh)"
[ -f "$build/share/chart-lib.js" ] || die "$build/share/chart-lib.js missing: make BUILD=$build"
rm -rf "$out"; mkdir -p "$out"
export HTML_PAGE_PROFILE=$out/profile
pids=()
trap 'stop_pids 3 "${pids[@]}"' EXIT

# open PAGE NAME: one opening in Chromium with no network; its ready_ms on stdout.
open_page() {
  timeout -k 5 120 unshare -n -p -f -m --mount-proc --kill-child "$py" "$root/tests/tools/html_page.py" "$1" > "$out/$2.json" 2> "$out/$2.err" ||
    die "Chromium did not open $1 (see $out/$2.err)"
  "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ready"] and not d["console"], d.get("console"); print(round(d["ready_ms"]))' "$out/$2.json"
}

echo "== (1) a ${duration} s recording of platoon-server at $rate req/s" >&2
taskset -c 0 "$bin/platoon-mock" --port 0 --think-time-ms 1 --threads 1 > "$out/mock.log" 2>&1 & pids+=($!)
mport=$(port_of "$out/mock.log") || die "platoon-mock did not start"
taskset -c 1 "$bin/platoon-server" --port 0 --backend "127.0.0.1:$mport" --carriers 2 > "$out/server.log" 2>&1 & spid=$!; pids+=($spid)
sport=$(port_of "$out/server.log") || die "platoon-server did not start"
taskset -c 0 "$bin/platoon-load" --url "http://127.0.0.1:$sport/fruits" --rate "$rate" --connections 100 --threads 1 \
  --duration $((duration + 4)) > "$out/load.log" 2>&1 & pids+=($!)
sleep 1
taskset -c 0 "$bin/platoon" record --requests --pid "$spid" --duration "$duration" -o "$out/server.trace" 2> "$out/record.log" ||
  die "record failed (see $out/record.log)"
stop_pids 3 "${pids[@]}"; pids=()
start=$(date +%s%N)
"$bin/platoon" report "$out/server.trace" --format html -o "$out/server.html" 2> "$out/report.log" || die "report --format html failed"
make_ms=$(( ($(date +%s%N) - start) / 1000000 ))
opens_ms=()
for i in $(seq "$opens"); do opens_ms+=("$(open_page "$out/server.html" "open-$i")"); done

echo "== (2) Vega through charts.js: 10k and 100k points, unbinned" >&2
"$py" - "$root/tui/outputs/html" "$build/share/chart-lib.js" "$out" <<'PY'
import json, os, random, re, sys
assets, lib, out = sys.argv[1:]
page = open(os.path.join(assets, "page.html")).read()
charts = open(os.path.join(assets, "charts.js")).read()
for kind in ("line", "heatmap"):
    for n in (10000, 100000):
        random.seed(n)
        if kind == "line":
            app = ("(function(){const c=platoonCharts(document.getElementById('report'));const pts=[];"
                   f"for(let i=0;i<{n};i++)pts.push([i, 50+40*Math.sin(i/500)+Math.random()*5]);"
                   "c.build([()=>c.lineChart(document.getElementById('report'),'many','many points',"
                   "{xTitle:'x',yTitle:'y'},[{name:'s',points:pts}])]);})();")
        else:
            side = int(n ** 0.5)
            app = ("(function(){const c=platoonCharts(document.getElementById('report'));const cells=[],rows=[],cols=[];"
                   f"for(let r=0;r<{side};r++)rows.push('r'+r);for(let k=0;k<{n // side};k++)cols.push('c'+k);"
                   "for(const r of rows)for(const k of cols)cells.push({row:r,col:k,v:Math.random()});"
                   "c.build([()=>c.heatmap(document.getElementById('report'),'many','many cells',"
                   "{xTitle:'x',yTitle:'y',vTitle:'v'},rows,cols,cells,rows.length)]);})();")
        slots = {"{{TITLE}}": f"{n} {kind}", "{{CSS}}": "", "{{CHART_LIB}}": open(lib).read(),
                 "{{DATA}}": "{}", "{{APP}}": charts + "\n" + app}
        html = re.sub(r"\{\{(TITLE|CSS|CHART_LIB|DATA|APP)\}\}", lambda m: slots[m.group(0)], page)
        open(os.path.join(out, f"{kind}-{n}.html"), "w").write(html)
PY
declare -A vega
for kind in line heatmap; do
  for n in 10000 100000; do
    runs=()
    for i in $(seq 3); do runs+=("$(open_page "$out/$kind-$n.html" "$kind-$n-$i")"); done
    vega[$kind-$n]=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
  done
done

size=$(stat -c %s "$out/server.html")
"$py" - "$out/../html-report.json" "$size" "$make_ms" "$duration" "$rate" "${opens_ms[*]}" \
  "${vega[line-10000]}" "${vega[line-100000]}" "${vega[heatmap-10000]}" "${vega[heatmap-100000]}" <<'PY'
import json, statistics, sys
path, size, make_ms, duration, rate, opens = sys.argv[1:7]
line10k, line100k, heat10k, heat100k = map(int, sys.argv[7:11])
o = sorted(map(int, opens.split()))
d = {"recording_s": int(duration), "rate": int(rate), "page_bytes": int(size), "make_ms": int(make_ms),
     "open_ms": {"median": statistics.median(o), "min": o[0], "max": o[-1], "n": len(o)},
     "vega_svg_ready_ms": {"line_10k": line10k, "line_100k": line100k, "heatmap_10k": heat10k, "heatmap_100k": heat100k},
     "cpus": "server CPU 1; mock, load, recorder CPU 0; Chromium unpinned"}
json.dump(d, open(path, "w"), indent=1)
print(f"report of a {duration} s recording at {rate} req/s: {int(size) / 1e6:.2f} MB, made in {make_ms} ms, "
      f"open to every chart drawn: median {d['open_ms']['median']} ms [{o[0]}, {o[-1]}] over {len(o)} opens")
print(f"Vega (SVG) to drawn, median of 3: line 10k points {line10k} ms, 100k {line100k} ms; "
      f"heat map 10k cells {heat10k} ms, 100k {heat100k} ms")
PY
