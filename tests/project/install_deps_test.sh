#!/usr/bin/env bash
# A fresh machine is fresh enough: every command the shell tests, the C++ tests, the demo and the
# scripts call comes from a package scripts/install-deps.sh installs, from a direct Depends or
# Pre-Depends of one, or from Debian's required set (a minbase root has nothing else); and
# `make demo` builds only the four programs it runs, no test binary. Commands are looked up as a
# fresh root's PATH finds them: a copy only under /root or /usr/local (pyenv's python3) is no
# evidence that a fresh machine has one.
set -uo pipefail
. "$(dirname "$0")/../lib/common.sh"
cd "$(dirname "$0")/../.."
require_cmd dpkg-query "not a Debian system"
require_cmd perl "no perl (perl-base is Essential in Debian)"
use_tmp deps
listed=" $(scripts/install-deps.sh --list | tr '\n' ' ') "
[ "$listed" != "  " ] || fail "install-deps.sh --list printed nothing"
# What apt installs with them, one level down: each Depends and Pre-Depends, the first of a set
# of alternatives (golang-go -> golang-1.19-go, python3 -> python3-minimal). Not the whole
# closure: that takes in most of Debian and would accept nearly any command.
deps_of_listed=" $(apt-cache depends $listed 2>/dev/null | awk '
  /^ *\|?(Pre)?Depends: / { if (!alt && $2 ~ /^[a-z]/) print $2; alt = ($1 ~ /^\|/); next }
  /^ *[A-Z][A-Za-z]*: / { alt = 0 }' | sort -u | tr '\n' ' ') "

# Which package ships each file under a bin folder, from dpkg's file lists (merged /usr: a file
# listed as /bin/x is also /usr/bin/x), and the packages behind diversions (perf).
declare -A owner
while read -r path pkg; do owner[$path]=$pkg; owner[/usr${path#/usr}]=$pkg; [ "${path#/usr}" != "$path" ] && owner[${path#/usr}]=$pkg; done < <(
  awk 'FNR == 1 { pkg = FILENAME; sub(/.*\//, "", pkg); sub(/\.list$/, "", pkg); sub(/:.*/, "", pkg) }
       /^(\/usr)?\/s?bin\/[^\/]+$/ { print $0, pkg }' /var/lib/dpkg/info/*.list)
while read -r _ _ pkg _ _ path; do [ -n "$path" ] && owner[$path]=$pkg; done < <(
  dpkg-divert --list 2>/dev/null | awk '/^diversion of/ { print "d o", $NF, "x x", $3 }')
# pkg=PACKAGE: the package of the first file dpkg lists along P's chain of symlinks
# (/usr/bin/java -> /etc/alternatives/java -> /usr/lib/jvm/.../bin/java of
# openjdk-17-jre-headless, /usr/bin/cc -> ... -> /usr/bin/gcc of gcc), or "". Sets pkg rather
# than printing it: no subshell per lookup, and the cache survives.
declare -A pkg_cache
package_of() {
  local p=$1 i t
  if [ -n "${pkg_cache[$p]+set}" ]; then pkg=${pkg_cache[$p]}; return; fi
  for i in 1 2 3 4 5 6 7 8; do
    pkg=${owner[$p]:-${owner[${p#/usr}]:-}}
    if [ -z "$pkg" ] && [ "${p#/etc/}" = "$p" ]; then
      pkg=$(grep -lxF -e "$p" -e "${p#/usr}" /var/lib/dpkg/info/*.list 2>/dev/null | head -1)
      pkg=${pkg##*/}; pkg=${pkg%.list}; pkg=${pkg%%:*}
    fi
    [ -n "$pkg" ] && break
    [ -L "$p" ] || break
    t=$(readlink "$p")
    case $t in /*) ;; *) t=$(dirname "$p")/$t ;; esac
    p=$(realpath -ms "$t")
  done
  pkg_cache[$1]=$pkg
}

checked=0; bad=()
declare -A priority
while read -r p rest; do priority[$p]=$rest; done < <(dpkg-query -W -f='${Package} ${Priority} ${Essential}\n')
declare -A seen not_programs
# Builtins, keywords and the functions common.sh defines run no program.
for w in $(compgen -b) $(compgen -k) $(compgen -A function); do not_programs[$w]=1; done
# Words the scan finds in awk programs and messages ("; print $2", "(see LOG)", open=$(..)) that
# name programs of packages the browser tests pull in (mailcap's print and see, xdg-utils'
# open): no script runs them.
for w in print see open; do not_programs[$w]=1; done
IFS=: read -ra fresh_path <<< /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
IFS=: read -ra this_path <<< "$PATH"
# hold WHAT FILE WHERE: the package of FILE (what runs for WHAT) is installed by install-deps.
hold() {
  local pkg prio
  package_of "$2"
  [ -n "$pkg" ] || { bad+=("$1 ($2: in no package, in $3)"); return; }
  checked=$((checked + 1))
  case "$listed $deps_of_listed" in *" $pkg "*) return ;; esac
  prio=${priority[$pkg]:-}
  case "$prio" in required*|*yes) return ;; esac
  bad+=("$1 (from $pkg, priority $prio, in $3)")
}
# hold_word NAME WHERE: NAME as a fresh root's PATH finds it, the first copy a package owns.
hold_word() {
  local w=$1 d first="" pkg
  [ -n "${not_programs[$w]:-}" ] && return
  for d in "${fresh_path[@]}"; do
    [ -f "$d/$w" ] && [ -x "$d/$w" ] || continue
    [ -n "$first" ] || first=$d/$w
    package_of "$d/$w"
    [ -n "$pkg" ] && { hold "$w" "$d/$w" "$2"; return; }
  done
  [ -z "$first" ] || { bad+=("$w ($first: in no package, in $2)"); return; }
  for d in "${this_path[@]}"; do
    [ -f "$d/$w" ] && [ -x "$d/$w" ] || continue
    bad+=("$w (only $d/$w, not on a fresh root's PATH, in $2)")
    return
  done    # else a word that is no command (an argument, a heredoc's text)
}
# hold_path PATH WHERE: a program named by its path must be there, from a package held above.
hold_path() {
  [ -x "$1" ] || { bad+=("$1 (not installed, in $2)"); return; }
  hold "$1" "$1" "$2"
}

read -r -d '' scan <<'PERL'
# Each file named: "word FILE NAME" for a word in command position, "path FILE PATH" for a
# program named by its path. Shell files are read as they are (comments dropped); a C++ file
# by its string literals: the shell text among them (what goes to system(), popen() or sh -c,
# including a command string built in a variable first) for words, all of them for paths.
use strict; use warnings;

# Words in command position: after a line start, a pipe, ;, &, $(, `, then/do/else, and the
# first word after `timeout N`/`nice` prefixes too (listed first: where two match at one place,
# the longer one counts, as with grep -E).
sub words {
  my %w;
  $w{$1} = 1 while $_[0] =~ /(?:\btimeout(?: --[a-z=A-Z]+)* [0-9.]+|\bnice|\bthen\b|\bdo\b|\belse\b|\$\(|^|[|;&(`])[^\S\n]*([a-z][a-z0-9_.+-]*)/mg;
  return sort keys %w;
}
# Programs named by path: /bin/x, /usr/sbin/x, /usr/local/bin/x after a space, quote, = or (.
sub paths {
  my %p;
  $p{$1} = 1 while $_[0] =~ m{(?:^|[\s"'=(|;&])((?:/usr)?(?:/local)?/s?bin/[A-Za-z0-9_.+-]+)}mg;
  return sort keys %p;
}

sub shell_file {
  my ($f, $src) = @_;
  $src =~ s/#.*$//mg;
  # A quoted here-document (<<'PY') is text for another program: python's print and open are
  # not commands.
  $src =~ s/<<-?[ \t]*(['"])(\w+)\1([^\n]*)\n.*?\n[ \t]*\2[ \t]*(?=\n|\z)/$3/msg;
  my %funcs = map { $_ => 1 } $src =~ /^\s*([a-z_][a-z0-9_]*)\(\)/mg;
  print "word $f $_\n" for grep { !$funcs{$_} } words($src);
  print "path $f $_\n" for paths($src);
}

sub cxx_file {
  my ($f, $src) = @_;
  my (@lit, $code);
  $code = '';
  # Raw strings, string literals, character literals, comments, the rest (digit separators kept).
  while ($src =~ /\G(?:R"([^()\\\s]{0,16})\((.*?)\)\1"|"((?:[^"\\\n]|\\.)*)"|'(?:[^'\\\n]|\\.)*'|\/\/[^\n]*|\/\*.*?\*\/|((?:[0-9]'(?=[0-9])|[^"'\/R])+)|(.))/gs) {
    if (defined $2) { push @lit, $2; $code .= "\x01$#lit\x01" }
    elsif (defined $3) { (my $s = $3) =~ s/\\(.)/$1 eq 'n' ? "\n" : $1 eq 't' ? "\t" : $1/ges; push @lit, $s; $code .= "\x01$#lit\x01" }
    elsif (defined $4) { $code .= $4 }
    elsif (defined $5) { $code .= $5 }
    else { $code .= ' ' }
  }
  # Statements: split at ; outside parentheses and at braces that open a block (not an initializer).
  my (@chunks, @brace); my ($cur, $paren, $prev) = ('', 0, '');
  for my $ch (split //, $code) {
    $paren++ if $ch eq '(';
    $paren-- if $ch eq ')' && $paren > 0;
    my $cut = 0;
    if ($ch eq ';' && $paren == 0) { $cut = 1 }
    elsif ($ch eq '{') { my $init = $paren > 0 || $prev =~ /[=,({]/ || $cur =~ /\breturn\s*$/; push @brace, $init; $cut = !$init }
    elsif ($ch eq '}') { $cut = !(@brace ? pop @brace : 0) }
    if ($cut) { push @chunks, $cur; $cur = ''; $prev = $ch; next }
    $cur .= $ch;
    $prev = $ch if $ch !~ /\s/;
  }
  push @chunks, $cur;
  my @lits_of = map { [map { $lit[$_] } /\x01(\d+)\x01/g] } @chunks;
  my (%shell, %idents);
  for my $i (0 .. $#chunks) {
    my @l = @{$lits_of[$i]};
    next unless $chunks[$i] =~ /\b(?:system|popen)\s*\(/
        || ((grep { $_ eq '-c' } @l) && (grep { m{^(?:/usr)?(?:/bin/)?(?:ba|da)?sh$} } @l));
    $shell{$i} = 1;
    $idents{$_} = 1 for $chunks[$i] =~ /\b([A-Za-z_]\w*)/g;
  }
  # The command string built in a variable first (cmd = "python3 " + script + "; true").
  for my $i (0 .. $#chunks) {
    next if $shell{$i} || !@{$lits_of[$i]};
    my ($name) = $chunks[$i] =~ /\b([A-Za-z_]\w*)\s*\+?=(?!=)/;
    $shell{$i} = 1 if defined $name && $idents{$name};
  }
  my $text = '';
  for my $i (sort { $a <=> $b } keys %shell) {
    # Literals joined as the shell sees them: concatenated ones with ARG for what lies between,
    # separate arguments on lines of their own.
    my @parts = split /\x01(\d+)\x01/, $chunks[$i], -1;
    for (my $k = 1; $k < @parts; $k += 2) {
      my $between = $parts[$k - 1];
      if ($k == 1) { $text .= "\n" . ($between =~ /\+\s*$/ ? 'ARG ' : '') }
      elsif ($between =~ /[,(]/ || ($between !~ /\+/ && $between =~ /\S/)) { $text .= "\n" }
      elsif ($between =~ /[\w)\]]/) { $text .= ' ARG ' }
      $text .= $lit[$parts[$k]];
    }
  }
  print "word $f $_\n" for words($text);
  print "path $f $_\n" for paths(join "\n", @lit);
  print "shell $f\n" if %shell;
}

for my $f (@ARGV) {
  open my $in, '<', $f or die "$f: $!\n";
  my $src = do { local $/; <$in> };
  if ($f =~ /\.[ch]pp$/) { cxx_file($f, $src) } else { shell_file($f, $src) }
}
PERL

# (install-deps.sh itself runs before the packages exist: what it calls is guarded there.)
# C++ first: a command is reported in the first file that names it, best the test that runs it.
files=($(find tests -name '*.cpp' -o -name '*.hpp' | sort) $(find tests -name '*.sh' -not -path 'tests/lib/*' | sort) tests/lib/*.sh
       $(ls scripts/*.sh | grep -v install-deps) scripts/peers/*.sh scripts/peers/*/*.sh)
perl -e "$scan" "${files[@]}" > "$tmp/scan" || fail "scanning the tests failed"
cxx_shell=0
while read -r kind f w; do
  case $kind in shell) cxx_shell=$((cxx_shell + 1)); continue ;; esac
  [ -n "${seen[$w]:-}" ] && continue
  seen[$w]=1
  case $kind in word) hold_word "$w" "$f" ;; path) hold_path "$w" "$f" ;; esac
done < "$tmp/scan"
echo "commands checked: $checked (shell text in $cxx_shell C++ files)"
[ "$checked" -ge 20 ] || fail "only $checked commands found: the scan is broken"
# follow_forks_test runs python3 through sh -c, prom_metrics_test promtool through system(),
# runtime_detect_test /usr/bin/java: if these are not seen, the C++ scan is broken.
for w in python3 /usr/bin/promtool /usr/bin/java; do
  [ -n "${seen[$w]:-}" ] || fail "the C++ scan did not find $w"
done
[ ${#bad[@]} -eq 0 ] || fail "not installed by scripts/install-deps.sh: ${bad[*]}"

# make demo, dry run into an empty build dir: the programs, and no test.
make -n --no-print-directory BUILD="$tmp/b" demo > "$tmp/demo.txt" 2>&1 || { tail "$tmp/demo.txt"; fail "make -n demo"; }
for b in platoon platoon-server platoon-mock platoon-load; do
  grep -qE -- "-o $tmp/b/bin/$b( |\$)" "$tmp/demo.txt" || fail "make demo does not build $b"
done
if grep -E -- "tests/|_tests|bench/" "$tmp/demo.txt" | head -3 | grep -q .; then
  fail "make demo builds what it does not run: $(grep -oE -- '-o [^ ]*(tests|bench)[^ ]*' "$tmp/demo.txt" | head -3 | tr '\n' ' ')"
fi
echo "make demo builds $(grep -cE '^\S*(g\+\+|gcc|clang)' "$tmp/demo.txt") objects/binaries, no tests"
echo PASS
