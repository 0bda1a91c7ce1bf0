#!/usr/bin/env bash
# Installs the Debian packages platoon needs, and only those that are missing.
# Idempotent: when everything is present it does nothing and touches no network.
# apt-get update runs only when at least one package is missing.
# Every command a test, the demo or a script calls comes from a package listed here or from
# Debian's required set (tests/project/install_deps_test.sh checks it); `--list` prints the list.
set -euo pipefail

PKGS=(
  # build
  g++ make clang llvm pkg-config python3 curl
  # kernel side: libbpf skeletons, vmlinux.h from BTF
  libbpf-dev bpftool libelf-dev zlib1g-dev
  # trace files: zstd chunks (zlib still read); the zstd tool for tests/tools/trace_events.py
  libzstd-dev zstd
  # runtime
  libboost-context-dev libevent-dev systemtap-sdt-dev
  # the exporter's web configuration: TLS (OpenSSL through libevent), bcrypt (libcrypt), YAML
  libssl-dev libcrypt-dev libyaml-cpp-dev
  # the HTML report's charts: Vega, inlined into platoon at build time (tui/outputs/html/)
  libjs-vega
  # server: HTTP parser (llhttp C sources), JSON
  node-llhttp rapidjson-dev
  # command line, formatting, TUI
  libcli11-dev libfmt-dev libncurses-dev
  # tests and benchmarks: pgrep/ps/sysctl (procps), readelf (binutils), /usr/bin/time,
  # jq for the bench summary, git (the file list) and ctags (function lengths) for
  # tests/project/tree_rules_test.sh
  libgtest-dev libgmock-dev tmux sysstat linux-perf bpftrace protobuf-compiler
  procps binutils time jq git universal-ctags
  # the HTML report opened in a real browser: headless Chromium driven over the DevTools
  # protocol (tests/tools/html_page.py), its screenshots read with PIL
  chromium chromium-driver python3-selenium python3-pil
  # the exporter's TLS test: certificates (openssl) and bcrypt hashes (htpasswd)
  openssl apache2-utils
  # promtool checks the exporter's exposition and the alerting rules (the prometheus package ships it)
  prometheus
  # peers measured beside platoon-server; the JDK and Go are also the JVM and the Go program
  # tests/bpf/runtime_detect_test.cpp recognises
  nginx-light golang-go openjdk-17-jdk-headless
)

if [ "${1:-}" = --list ]; then
  printf '%s\n' "${PKGS[@]}"
  exit 0
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root: sudo $0" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
# nginx-light starts a system nginx on port 80 on install; the peers run their own.
if [ -x /usr/sbin/nginx ] && command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now nginx >/dev/null 2>&1 || true
fi
# prometheus starts a system Prometheus on :9090 on install; only promtool is used.
if [ -x /usr/bin/prometheus ] && command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
