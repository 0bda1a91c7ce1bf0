#!/usr/bin/env bash
# platoon exporter with an exporter-toolkit web configuration (TLS with client certificates,
# basic auth, headers), scraped by a real Prometheus (Debian's): the job with the right CA,
# certificate and password is up and a PromQL query over a carrier's wait returns data; a wrong
# password, no client certificate, and plain HTTP to the TLS port each leave their job down,
# and the exporter logs each kind of refusal (at most a line per kind every 10 s) while it
# serves the good job. Started as root, it runs as nobody with no capability in any set (from
# /proc/PID/status of every thread), and what it exports still equals /proc: two spinners pinned
# to one CPU, their run and wait between two scrapes against their schedstat; a --comm process
# started after the drop is exported too. Then the web configuration's edge cases: each a
# one-line refusal at start, an expired certificate served with a warning.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
require_root
for c in /usr/bin/prometheus openssl htpasswd curl; do require_cmd "$c" "needs $c (scripts/install-deps.sh)"; done
use_tmp tls
t=30

# ---- certificates: a CA, the exporter's (for 127.0.0.1), Prometheus's client certificate ----
cd "$tmp" || fail "cd"
cert() {  # NAME SUBJECT [EXT-LINE] [DAYS]: NAME.key and NAME.crt signed by the CA
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2> /dev/null &&
    printf '%s\n' "${3:-basicConstraints=CA:FALSE}" > "$1.ext" &&
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "${4:-30}" -extfile "$1.ext" -out "$1.crt" 2> /dev/null ||
    fail "openssl: $1"
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=platoon test CA" \
  -keyout ca.key -out ca.crt 2> /dev/null || fail "openssl: CA"
cert server /CN=127.0.0.1 "subjectAltName=IP:127.0.0.1"
cert client /CN=prometheus
# A client certificate from another CA, which the exporter must refuse.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=stranger" \
  -keyout stranger.key -out stranger.crt 2> /dev/null || fail "openssl: stranger"
hash=$(htpasswd -nbBC 10 "" 's3cret pass' | tr -d ':\n')
[[ $hash == '$2y$10$'* ]] || fail "htpasswd gave no bcrypt hash: $hash"
cat > web.yml <<EOF
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
basic_auth_users:
  prometheus: '$hash'
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
EOF
cd - > /dev/null || fail "cd"

# ---- the exporter over a platoon-server and two spinners sharing CPU 1 ----
start_mock
start_server --carriers 2
for i in 1 2; do taskset -c 1 sh -c 'while :; do :; done' & pids+=($!); done
spin="${pids[-2]},${pids[-1]}"
start_exporter "$tmp/exp.err" --pid "$spid,$spin" --web.config.file "$tmp/web.yml"
started=$(date +%s)
grep -q "TLS, basic auth" "$tmp/exp.err" || { cat "$tmp/exp.err"; fail "the exporter does not say it serves TLS with basic auth"; }
ok_curl=(curl -sf --max-time 5 --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" --key "$tmp/client.key" -u 'prometheus:s3cret pass')
"${ok_curl[@]}" -D "$tmp/h0" "https://127.0.0.1:$eport/metrics" -o "$tmp/m0" || fail "a scrape with the right credentials"
grep -qi '^X-Content-Type-Options: nosniff' "$tmp/h0" || fail "the configured header is missing: $(cat "$tmp/h0")"
# Without credentials, with a malformed or padded-inside header, or a NUL-cut password: 401,
# HEAD as GET; a certificate of another CA: no connection at all.
tls_curl=(curl -s --max-time 5 -o /dev/null -w '%{http_code}' --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" --key "$tmp/client.key")
for how in "GET /" "GET /metrics" "HEAD /metrics" "GET /nothing"; do
  code=$("${tls_curl[@]}" -X "${how% *}" $([ "${how% *}" = HEAD ] && echo -I) "https://127.0.0.1:$eport${how#* }")
  [ "$code" = 401 ] || fail "$how without credentials: $code, not 401"
done
for header in "Basic $(printf 'prometheus:s3cret pass\0x' | base64 -w0)" "Basic cHJv=bWV0aGV1cw==" "Bearer abc" "Basic"; do
  code=$("${tls_curl[@]}" -H "Authorization: $header" "https://127.0.0.1:$eport/metrics")
  [ "$code" = 401 ] || fail "Authorization '$header': $code, not 401"
done
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' --cacert "$tmp/ca.crt" --cert "$tmp/stranger.crt" --key "$tmp/stranger.key" \
  -u 'prometheus:s3cret pass' "https://127.0.0.1:$eport/metrics")
[ "$code" = 000 ] || fail "a client certificate of another CA got HTTP $code"
echo "ok refused: no credentials (GET, HEAD, any path), malformed headers, a NUL-cut password: 401; another CA's certificate: no handshake"

# Privileges, from the outside: every thread is nobody with no capability.
for task in /proc/"$exporter"/task/*; do
  st=$task/status
  awk '/^(Uid|Gid):/ { if ($2 != 65534 || $3 != 65534 || $4 != 65534 || $5 != 65534) exit 1 }' "$st" ||
    fail "$(basename "$task"): $(grep -E '^(Uid|Gid)' "$st")"
  [ -z "$(awk '$1 == "Groups:" { $1 = ""; print }' "$st" | tr -d ' ')" ] || fail "$(basename "$task"): $(grep ^Groups "$st")"
  for cap in CapInh CapPrm CapEff CapBnd CapAmb; do
    [ "$(awk -v k="$cap:" '$1 == k { print $2 }' "$st")" = 0000000000000000 ] || fail "$(basename "$task"): $(grep "^$cap" "$st")"
  done
  [ "$(awk '$1 == "NoNewPrivs:" { print $2 }' "$st")" = 1 ] || fail "$(basename "$task"): no_new_privs is not set"
done
echo "ok privileges: $(ls /proc/"$exporter"/task | wc -l) threads of uid 65534 with no capability, no_new_privs"

# Still equal to /proc: the spinners' run and wait between two scrapes, against schedstat.
schedstat() { awk '{ print $1, $2 }' "/proc/$1/schedstat"; }
val() { awk -v m="$2{" -v t="tid=\"$3\"" 'index($1, m) == 1 && index($1, t) { print $2 }' "$1"; }
for p in ${spin//,/ }; do echo "$p $(schedstat "$p")"; done > "$tmp/s0"
"${ok_curl[@]}" "https://127.0.0.1:$eport/metrics" -o "$tmp/m1" || fail "scrape"
sleep 2
"${ok_curl[@]}" "https://127.0.0.1:$eport/metrics" -o "$tmp/m2" || fail "scrape"
for p in ${spin//,/ }; do echo "$p $(schedstat "$p")"; done > "$tmp/s1"
for p in ${spin//,/ }; do
  for k in run wait; do
    a=$(val "$tmp/m1" "platoon_thread_${k}_seconds_total" "$p"); b=$(val "$tmp/m2" "platoon_thread_${k}_seconds_total" "$p")
    field=$([ "$k" = run ] && echo 2 || echo 3)
    truth=$(awk -v p="$p" -v c="$field" 'NR == FNR { if ($1 == p) s = $c; next } $1 == p { printf "%.6f\n", ($c - s) / 1e9 }' "$tmp/s0" "$tmp/s1")
    [ -n "$a" ] && [ -n "$b" ] || fail "no $k series for spinner $p"
    python3 - "$a" "$b" "$truth" "$p" "$k" <<'PY' || fail "spinner exports differ from /proc"
import sys
a, b, truth = map(float, sys.argv[1:4])
got = b - a
# The scrapes sit inside the schedstat readings by a few ms at each end (two spinners: each
# gains at most that): the exported delta is the truth less up to 0.15 s, never more.
print(f"spinner {sys.argv[4]} {sys.argv[5]}: exported {got:.3f} s, schedstat {truth:.3f} s")
assert truth * 0.9 - 0.15 <= got <= truth + 0.01, "outside [truth - 10% - 0.15 s, truth]"
assert truth > 0.5, "the spinners did not share the CPU as designed"
PY
  done
done

# ---- Prometheus: the right job and three wrong ones ----
pport=$(free_port)
cat > "$tmp/prometheus.yml" <<EOF
global: {scrape_interval: 1s, scrape_timeout: 900ms}
scrape_configs:
  - job_name: good
    scheme: https
    static_configs: [{targets: ['127.0.0.1:$eport']}]
    basic_auth: {username: prometheus, password: 's3cret pass'}
    tls_config: {ca_file: $tmp/ca.crt, cert_file: $tmp/client.crt, key_file: $tmp/client.key}
  - job_name: wrong_password
    scheme: https
    static_configs: [{targets: ['127.0.0.1:$eport']}]
    basic_auth: {username: prometheus, password: guess}
    tls_config: {ca_file: $tmp/ca.crt, cert_file: $tmp/client.crt, key_file: $tmp/client.key}
  - job_name: no_client_cert
    scheme: https
    static_configs: [{targets: ['127.0.0.1:$eport']}]
    basic_auth: {username: prometheus, password: 's3cret pass'}
    tls_config: {ca_file: $tmp/ca.crt}
  - job_name: plain_http
    scheme: http
    static_configs: [{targets: ['127.0.0.1:$eport']}]
EOF
promtool check config "$tmp/prometheus.yml" > /dev/null 2>&1 || fail "promtool rejects the test's own config"
timeout 120 /usr/bin/prometheus --config.file "$tmp/prometheus.yml" --storage.tsdb.path "$tmp/tsdb" \
  --web.listen-address "127.0.0.1:$pport" > "$tmp/prom.log" 2>&1 & pids+=($!)
api() { curl -sf --max-time 5 "http://127.0.0.1:$pport/api/v1/$1"; }
for _ in $(seq 150); do
  api targets > "$tmp/targets.json" 2> /dev/null &&
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["data"]["activeTargets"]; sys.exit(0 if len(t) == 4 and all(x["health"] != "unknown" for x in t) else 1)' "$tmp/targets.json" &&
    break
  sleep 0.2
done
sleep 3  # a few scrapes of each job
api targets > "$tmp/targets.json" || fail "Prometheus's API does not answer ($(tail -3 "$tmp/prom.log"))"
python3 - "$tmp/targets.json" <<'PY' || fail "Prometheus's targets"
import json, sys
t = {x["labels"]["job"]: x for x in json.load(open(sys.argv[1]))["data"]["activeTargets"]}
want = {"good": "up", "wrong_password": "down", "no_client_cert": "down", "plain_http": "down"}
bad = [f"{j}: {t.get(j, {}).get('health')} ({t.get(j, {}).get('lastError', '')})" for j, h in want.items() if t.get(j, {}).get("health") != h]
for j in want: print(f"ok Prometheus job {j}: {t[j]['health']} {t[j]['lastError']!r}" if j in t else f"no job {j}")
assert not bad, bad
assert "401" in t["wrong_password"]["lastError"], "a wrong password is not a 401"
PY
api 'query?query=platoon_thread_wait_seconds_total%7Bjob%3D%22good%22%2Cthread%3D~%22carrier.*%22%7D' > "$tmp/q.json" ||
  fail "PromQL query"
n=$(json "$tmp/q.json" 'len(d["data"]["result"])')
[ "$n" = 2 ] || fail "PromQL over the carriers' wait: $n series, expected 2: $(head -c 300 "$tmp/q.json")"
echo "ok PromQL platoon_thread_wait_seconds_total{job=\"good\",thread=~\"carrier.*\"}: $n series"

# The exporter said why it refused, a line per kind at most every 10 s, and still serves.
grep -q "refused a request from 127.0.0.1:[0-9]*: a wrong password (user 'prometheus')" "$tmp/exp.err" ||
  { cat "$tmp/exp.err"; fail "no log line for the wrong password"; }
for why in "peer did not return a certificate" "http request"; do  # no client certificate; plain HTTP
  grep -q "TLS handshake with 127.0.0.1:[0-9]* failed: $why" "$tmp/exp.err" || { cat "$tmp/exp.err"; fail "no log line for '$why'"; }
done
# Prometheus tried each wrong job every second; the log may hold one line per kind per 10 s.
allowed=$(( ($(date +%s) - started) / 10 + 1 ))
for kind in "a wrong password" "no credentials" "peer did not return a certificate" "http request"; do
  n=$(grep -c "$kind" "$tmp/exp.err")
  [ "$n" -le "$allowed" ] || { cat "$tmp/exp.err"; fail "$n '$kind' lines in $(( $(date +%s) - started )) s: not rate-limited"; }
done
"${ok_curl[@]}" "https://127.0.0.1:$eport/metrics" -o /dev/null || fail "the exporter stopped serving"
echo "ok refusals logged: $(grep -c 'refused a request\|TLS handshake' "$tmp/exp.err") lines"
kill -TERM "$exporter"; wait "$exporter" 2> /dev/null

# A process that appears after the drop (--comm) is still watched: the in-kernel exec hook adds
# it, and its thread is exported.
cp /bin/sleep "$tmp/late-sleeper" || fail "cp"
start_exporter "$tmp/late.err" --comm late-sleeper
grep -q "uid 65534" "$tmp/late.err" || { cat "$tmp/late.err"; fail "the --comm exporter did not drop root"; }
"$tmp/late-sleeper" 30 & late=$!; pids+=($late)
sleep 2.2  # the exporter looks for new --comm processes once a second
curl -sf --max-time 5 "http://127.0.0.1:$eport/metrics" -o "$tmp/late.prom" || fail "scrape of the --comm exporter"
grep -q "^platoon_thread_run_seconds_total{pid=\"$late\"" "$tmp/late.prom" ||
  { cat "$tmp/late.err"; fail "the process started after the drop is not exported"; }
echo "ok a process started after the drop is exported ($(grep -c "pid=\"$late\"" "$tmp/late.prom") series)"
kill -TERM "$exporter"; wait "$exporter" 2> /dev/null

# ---- the web configuration's edge cases: one line each at start, nothing served ----
# bad NAME PATTERN: web.yml rewritten by the here-document on stdin, refused with PATTERN.
bad() {
  cat > "$tmp/bad.yml"
  expect_error --status 2 "$2" timeout 10 "$platoon" exporter --pid "$spid" --listen 127.0.0.1:0 --web.config.file "$tmp/bad.yml"
}
c="cert_file: $tmp/server.crt"; k="key_file: $tmp/server.key"
bad unknown "not a key of the web configuration format" <<< "tls_server_config: {$c, $k, colour: blue}"
bad unknown-top "not a key of the web configuration format" <<< "tls_servr_config: {$c, $k}"
bad no-key "missing key_file" <<< "tls_server_config: {$c}"
bad unreadable "key_file .*nope.key is not a readable file" <<< "tls_server_config: {$c, key_file: $tmp/nope.key}"
bad wrong-key "does not match" <<< "tls_server_config: {$c, key_file: $tmp/client.key}"
bad sha512 "not a bcrypt hash" <<< "basic_auth_users: {prometheus: '$(openssl passwd -6 x)'}"
bad md5 "not a bcrypt hash" <<< "basic_auth_users: {prometheus: '$(openssl passwd -1 x)'}"
for key in "cipher_suites: [TLS_AES_128_GCM_SHA256]" "curve_preferences: [X25519]" "client_allowed_sans: [a]" \
           "prefer_server_cipher_suites: false"; do
  bad "$key" "is not implemented by platoon" <<< "tls_server_config: {$c, $k, $key}"
done
bad http2 "http2 is not implemented" <<< "http_server_config: {http2: false}"
bad header "not a header the web configuration format allows" <<< "http_server_config: {headers: {X-Evil: 1}}"
bad frame "must be deny or sameorigin" <<< "http_server_config: {headers: {X-Frame-Options: allow}}"
bad ca-without-policy "client_auth_type is NoClientCert" <<< "tls_server_config: {$c, $k, client_ca_file: $tmp/ca.crt}"
bad version "is not one of TLS10" <<< "tls_server_config: {$c, $k, min_version: SSL3}"
bad max-below-default "max_version is below min_version" <<< "tls_server_config: {$c, $k, max_version: TLS11}"
bad twice "given twice" < <(printf "basic_auth_users: {a: '%s'}\nbasic_auth_users: {b: '%s'}\n" "$hash" "$hash")
expect_error --status 2 "no such user" timeout 10 "$platoon" exporter --pid "$spid" --listen 127.0.0.1:0 --user no-such-user-here
bad yaml "not YAML" <<< "tls_server_config: {$c"
expect_error --status 2 "cannot be read" timeout 10 "$platoon" exporter --pid "$spid" --listen 127.0.0.1:0 --web.config.file "$tmp/none.yml"

# An expired certificate is served, with a warning at start (as node_exporter serves it).
# (openssl ca: OpenSSL 3.0's req and x509 cannot date a certificate in the past)
cd "$tmp" && mkdir -p db && : > db/index.txt && echo 01 > db/serial &&
  printf '[ca]\ndefault_ca = d\n[d]\ndatabase = db/index.txt\nserial = db/serial\nnew_certs_dir = db\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n' > ca.cnf &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=old -keyout old.key -out old.csr 2> /dev/null &&
  openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in old.csr -out old.crt \
    -startdate 20200101000000Z -enddate 20200102000000Z > /dev/null 2>&1 || fail "openssl: an expired certificate"
cd - > /dev/null || fail "cd"
printf 'tls_server_config: {cert_file: %s, key_file: %s}\n' "$tmp/old.crt" "$tmp/old.key" > "$tmp/old.yml"
start_exporter "$tmp/old.err" --pid "$spid" --web.config.file "$tmp/old.yml"
grep -q "warning: the certificate in .*old.crt expired on Jan  2 00:00:00 2020 GMT" "$tmp/old.err" || { cat "$tmp/old.err"; fail "no warning for the expired certificate"; }
curl -sfk --max-time 5 "https://127.0.0.1:$eport/metrics" -o /dev/null || fail "the expired certificate is not served"
echo "ok expired certificate: served, with '$(grep -o 'warning: .*' "$tmp/old.err")'"
echo PASS
