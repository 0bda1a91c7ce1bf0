#!/usr/bin/env bash
# A fresh machine is fresh enough (issue 12, defect 9): every command the shell tests, the demo
# and the scripts call comes from a package scripts/install-deps.sh installs or from Debian's
# required set (a minbase root has nothing else), and `make demo` builds only the four
# programs it runs, no test binary.
set -uo pipefail
. "$(dirname "$0")/lib/common.sh"
cd "$(dirname "$0")/.."
require_cmd dpkg-query "not a Debian system"
listed=" $(scripts/install-deps.sh --list | tr '\n' ' ') "
[ "$listed" != "  " ] || fail "install-deps.sh --list printed nothing"
deps_of_listed=" $(apt-cache depends $listed 2>/dev/null | awk '/^ *Depends: [a-z]/ { print $2 }' | sort -u | tr '\n' ' ') "

# Which package ships each file under a bin folder, from dpkg's file lists (merged /usr: a file
# listed as /bin/x is also /usr/bin/x), and the packages behind diversions (perf).
declare -A owner
while read -r path pkg; do owner[$path]=$pkg; owner[/usr${path#/usr}]=$pkg; [ "${path#/usr}" != "$path" ] && owner[${path#/usr}]=$pkg; done < <(
  awk 'FNR == 1 { pkg = FILENAME; sub(/.*\//, "", pkg); sub(/\.list$/, "", pkg); sub(/:.*/, "", pkg) }
       /^(\/usr)?\/s?bin\/[^\/]+$/ { print $0, pkg }' /var/lib/dpkg/info/*.list)
while read -r _ _ pkg _ _ path; do [ -n "$path" ] && owner[$path]=$pkg; done < <(
  dpkg-divert --list 2>/dev/null | awk '/^diversion of/ { print "d o", $NF, "x x", $3 }')
package_of() {
  local p=$1 q
  for q in "$p" "$(readlink -f "$p")"; do
    [ -n "${owner[$q]:-}" ] && { echo "${owner[$q]}"; return; }
    [ -n "${owner[${q#/usr}]:-}" ] && { echo "${owner[${q#/usr}]}"; return; }
  done
}

# Words in command position: after a line start, a pipe, ;, &&, ||, $(, `, then/do/else,
# and the first word of `timeout N`/`nice`/`taskset -c L` prefixes are looked at too.
# (install-deps.sh itself runs before the packages exist: what it calls is guarded there.)
scripts=(tests/*.sh tests/lib/*.sh $(ls scripts/*.sh | grep -v install-deps) scripts/peers/*.sh scripts/peers/*/*.sh)
checked=0; bad=()
declare -A seen
for f in "${scripts[@]}"; do
  [ -f "$f" ] || continue
  funcs=" $(grep -oE '^[[:space:]]*[a-z_][a-z0-9_]*\(\)' "$f" | tr -d '() \t' | tr '\n' ' ') "
  for w in $(sed -E 's/#.*$//' "$f" | grep -oE '(^|[|;&(`]|\$\(|\bthen\b|\bdo\b|\belse\b|\btimeout( --[a-z=A-Z]+)* [0-9.]+|\bnice)[[:space:]]*[a-z][a-z0-9_.+-]*' \
             | grep -oE '[a-z][a-z0-9_.+-]*$' | sort -u); do
    case "$funcs" in *" $w "*) continue ;; esac
    [ -n "${seen[$w]:-}" ] && continue
    seen[$w]=1
    [ "$(type -t "$w")" = file ] || continue    # builtins, keywords, words that are no command here
    path=$(command -v "$w")
    case "$path" in /usr/local/*|/root/*|/work/*) continue ;; esac
    pkg=$(package_of "$path")
    [ -n "$pkg" ] || { bad+=("$w ($path: no package)"); continue; }
    checked=$((checked + 1))
    case "$listed" in *" $pkg "*) continue ;; esac
    prio=$(dpkg-query -W -f='${Priority} ${Essential}' "$pkg" 2>/dev/null)
    case "$prio" in required*|*yes) continue ;; esac
    # A package a listed one depends on directly (golang-go -> golang-1.19-go).
    case "$deps_of_listed" in *" $pkg "*) continue ;; esac
    bad+=("$w (from $pkg, priority $prio, in $f)")
  done
done
echo "commands checked: $checked"
[ "$checked" -ge 20 ] || fail "only $checked commands found: the scan is broken"
[ ${#bad[@]} -eq 0 ] || fail "not installed by scripts/install-deps.sh: ${bad[*]}"

# make demo, dry run into an empty build dir: the programs, and no test.
tmp=$(mktemp -d /tmp/platoon-deps.XXXXXX); trap 'rm -rf "$tmp"' EXIT
make -n --no-print-directory BUILD="$tmp/b" demo > "$tmp/demo.txt" 2>&1 || { tail "$tmp/demo.txt"; fail "make -n demo"; }
for b in platoon platoon-server platoon-mock platoon-load; do
  grep -qE -- "-o $tmp/b/bin/$b( |\$)" "$tmp/demo.txt" || fail "make demo does not build $b"
done
if grep -E -- "tests/|_tests|bench/" "$tmp/demo.txt" | head -3 | grep -q .; then
  fail "make demo builds what it does not run: $(grep -oE -- '-o [^ ]*(tests|bench)[^ ]*' "$tmp/demo.txt" | head -3 | tr '\n' ' ')"
fi
echo "make demo builds $(grep -cE '^\S*(g\+\+|gcc|clang)' "$tmp/demo.txt") objects/binaries, no tests"
echo PASS
