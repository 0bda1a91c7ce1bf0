#!/usr/bin/env bash
# platoon exporter under hostile clients: a client trickling a byte a second (and one saying
# nothing) is closed at the per-request deadline (5 s), well before evhttp's per-read timeout
# (10 s, restarted by every byte) would; keep-alive requests are still served; past 64 open
# connections new ones are closed at once, and the count comes back down as clients leave; out of
# descriptors (RLIMIT_NOFILE 40), the listener does not spin on accept() and serves again after.
# Clients are python3 sockets, for timings; bounds are generous (noisy 2-core machines).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
require_root "(the exporter attaches to a process)"
require_cmd python3
require_cmd curl
require_cmd prlimit
use_tmp exporter-limits
# watch_sleeper LOG [PREFIX..]: an exporter (procfs: no BPF set-up) watching a sleeper; sets
# exporter and eport. PREFIX runs it (prlimit ...).
watch_sleeper() { local log=$1; shift
                  exporter_prefix=("$@"); start_exporter "$log" --pid "$sleeper" --procfs; exporter_prefix=(); }
# scrape_within S: /metrics answers 200 within S seconds (retrying).
scrape_within() { local end=$((SECONDS + $1))
                  while [ $SECONDS -le $end ]; do
                    curl -sf -m 2 -o /dev/null "http://127.0.0.1:$eport/metrics" && return 0; sleep 0.1
                  done; return 1; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

sleep 3600 & sleeper=$!; pids+=($sleeper)
held=()

# ---- slow clients: the request deadline ----
watch_sleeper "$tmp/exp.log"
python3 - "$eport" > "$tmp/slow.out" <<'EOF' || { cat "$tmp/slow.out"; fail "slow clients"; }
import socket, sys, threading, time
port = int(sys.argv[1])
res = {}
def trickle():
    s = socket.create_connection(("127.0.0.1", port)); t0 = time.time(); s.settimeout(1.0)
    req = b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"  # 35 bytes: 35 s at a byte a second
    for i in range(len(req)):
        if time.time() - t0 > 14: break  # open this long: it is not going to be closed
        try:
            s.send(req[i:i + 1])
            if s.recv(4096) == b"": break
        except socket.timeout: continue
        except OSError: break
    res["trickle"] = time.time() - t0
def silent():
    s = socket.create_connection(("127.0.0.1", port)); t0 = time.time(); s.settimeout(14)
    try: s.recv(10)
    except Exception: pass
    res["silent"] = time.time() - t0
def keepalive():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5); ok = 0
    for _ in range(3):
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"); data = b""
        while b"\r\n\r\n" not in data: data += s.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        while len(body) < n: body += s.recv(65536)
        ok += head.startswith(b"HTTP/1.1 200"); time.sleep(1.5)
    res["keepalive"] = ok
ts = [threading.Thread(target=f) for f in (trickle, silent, keepalive)]
[t.start() for t in ts]; [t.join() for t in ts]
print("trickling client closed after %.2f s, silent client after %.2f s, keep-alive answers %d/3"
      % (res["trickle"], res["silent"], res["keepalive"]))
bad = [k for k in ("trickle", "silent") if not 3.5 <= res[k] <= 8.5]
sys.exit(1 if bad or res["keepalive"] != 3 else 0)
EOF
cat "$tmp/slow.out"

# ---- the connection cap: 200 short scrapes leave nothing counted, then 1.5x the cap held ----
for _ in $(seq 200); do curl -sf -m 2 -o /dev/null "http://127.0.0.1:$eport/metrics" || fail "a short scrape failed"; done
python3 - "$eport" > "$tmp/cap.out" <<'EOF' || { cat "$tmp/cap.out"; fail "connection cap"; }
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(96)]
for s in held: s.setblocking(False)
closed = set()
def count():
    for i, s in enumerate(held):
        if i in closed: continue
        try:
            if s.recv(10) == b"": closed.add(i)
        except BlockingIOError: pass
        except OSError: closed.add(i)
    return len(closed)
end = time.time() + 3  # well inside the 5 s request deadline, which would close the rest
while count() < 32 and time.time() < end: time.sleep(0.05)
time.sleep(0.3)
n = count()
print("96 connections held: %d closed at once (want 32)" % n)
sys.exit(0 if n == 32 else 1)
EOF
cat "$tmp/cap.out"
scrape_within 3 || fail "no answer once the held connections are gone"
grep -q 'connection cap' "$tmp/exp.log" || fail "the cap is not reported on stderr"
echo "after the clients left: /metrics answers"
# SIGTERM with connections open (some just accepted) still ends it cleanly.
for _ in $(seq 10); do exec {c}<>"/dev/tcp/127.0.0.1/$eport"; held+=($c); done
kill -TERM "$exporter"
for _ in $(seq 40); do kill -0 "$exporter" 2>/dev/null || break; sleep 0.05; done
wait "$exporter"; st=$?; [ "$st" = 0 ] || fail "exit status $st after SIGTERM with connections open"
for c in "${held[@]}"; do exec {c}>&-; done
echo "SIGTERM with 10 connections open: exit status 0"

# ---- out of descriptors: no accept() spin ----
watch_sleeper "$tmp/nofile.log" prlimit --nofile=40:40
python3 - "$eport" "$exporter" > "$tmp/nofile.out" <<'EOF' || { cat "$tmp/nofile.out"; fail "accept at the fd limit"; }
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]  # more than 40 fds
time.sleep(0.3)
c0, t0 = cpu(), time.time()
time.sleep(2.0)
used, wall = cpu() - c0, time.time() - t0
print("at the fd limit: %.2f s of CPU in %.2f s" % (used, wall))
sys.exit(0 if used < 0.5 else 1)
EOF
cat "$tmp/nofile.out"
kill -0 "$exporter" 2>/dev/null || fail "the exporter died at the fd limit"
scrape_within 8 || fail "no answer after the fd limit"
echo "after the fd limit: /metrics answers"
echo "PASS"
