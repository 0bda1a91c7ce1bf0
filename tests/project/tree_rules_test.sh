#!/usr/bin/env bash
# The tree's shape rules, checked over the source files of the checkout (tracked, or
# new and not ignored; deleted ones are left out):
#  a. nothing under bpf/, runtime/ or server/ includes anything from tui/ (the layers point down);
#  b. no source file (.c .cpp .h .hpp) outside tests/ is over 800 lines;
#  c. no C++ function outside tests/ is over 80 lines, as universal-ctags measures it (from its
#     line to its end); the BPF programs (bpf/*.bpf.c, bpf/*.bpf.h) are C and not measured;
#  d. a file's namespace follows its folder (the table below): every namespace a C++ file outside
#     tests/ opens at its top level is the folder's or one inside it (a one-line forward
#     declaration of another's name is allowed).
# Every offender is printed with its size. Exit 0 pass, 1 fail, 77 skip (no git or ctags).
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
cd "$(dirname "$0")/../.."
require_cmd git
require_cmd ctags "needs universal-ctags (scripts/install-deps.sh)"
ctags --version 2>/dev/null | grep -q 'Universal Ctags' || skip "ctags is not universal-ctags"
git rev-parse --is-inside-work-tree > /dev/null 2>&1 || skip "not a git checkout"

max_file_lines=800
max_function_lines=80

# sources PATTERN..: the existing files matching git pathspecs, one a line.
sources() {
  git ls-files --cached --others --exclude-standard -- "$@" | sort -u |
    while read -r f; do [ -f "$f" ] && echo "$f"; done
}

bad=0

# a. Layering: includes of tui/ from below it.
while IFS= read -r hit; do
  echo "includes tui/: $hit"; bad=$((bad + 1))
done < <(sources 'bpf/*' 'runtime/*' 'server/*' | xargs -r grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]tui/')

# b. File length.
while read -r lines f; do
  echo "file over $max_file_lines lines: $f ($lines lines)"; bad=$((bad + 1))
done < <(sources '*.c' '*.cpp' '*.h' '*.hpp' | grep -v '^tests/' | xargs -r wc -l | grep -v ' total$' |
         awk -v max="$max_file_lines" '$1 > max { print $1, $2 }')

# c. Function length: FILE:LINE:END:NAME from ctags, function definitions only.
while read -r where lines; do
  echo "function over $max_function_lines lines: $where ($lines lines)"; bad=$((bad + 1))
done < <(sources '*.cpp' '*.hpp' | grep -v '^tests/' |
         xargs -r ctags --fields=+ne -x --_xformat='%{input}:%{line}:%{end}:%{name}' --kinds-c++=f |
         awk -F: -v max="$max_function_lines" '$3 != "" && $3 - $2 + 1 > max { print $1 ":" $2 ":" $4, $3 - $2 + 1 }')

# d. Namespaces follow folders: FOLDER NAMESPACE-PATTERN (an extended regex, anchored).
folder_namespaces='
bpf/snapshot/      platoon::snapshot
bpf/collectors/    platoon::collectors
tui/trace/         platoon::trace
tui/metrics/       platoon::metrics
tui/analysis/      platoon::analysis
tui/outputs/       platoon::outputs
tui/dashboard/     platoon::dashboard
tui/commands/      platoon::cli
tui/web/           platoon::web
runtime/           platoon::rt
server/handoff/    platoon::server
server/mock/       platoon::mock
server/load/       platoon::load
server/common/     platoon::(fruits|http|json|process)
'
while read -r folder pattern; do
  [ -n "$folder" ] || continue
  while IFS=: read -r f line ns; do
    echo "namespace $ns in $f:$line is not $pattern (its folder is $folder)"; bad=$((bad + 1))
  done < <(sources "$folder*.cpp" "$folder*.hpp" "$folder*.h" |
           xargs -r awk '
             FNR == 1 { depth = 0 }
             /^namespace +[A-Za-z_:]* *\{ *(\/\/.*)?$/ {
               name = $2; sub(/\{.*/, "", name)
               if (depth == 0 && name != "") print FILENAME ":" FNR ":" name
               depth++; next
             }
             /^\} *\/\/ *namespace/ { depth-- }' |
           grep -vE ":(${pattern})(::[A-Za-z_:]+)?$")
done <<< "$folder_namespaces"

[ "$bad" -eq 0 ] || fail "$bad offender(s) of the tree rules above"
echo PASS
