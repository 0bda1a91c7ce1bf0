#!/usr/bin/env bash
# Runs Debian's nginx as a reverse proxy in front of the backend (platoon-mock): the peer of
# `platoon-server --passthrough`. Renders nginx.conf.template into DIR and execs nginx in the
# foreground (master process with N workers; the master keeps this script's pid, so taskset,
# kill -INT and /proc/PID/task of the caller all reach it). SIGINT/SIGTERM: fast shutdown.
#
# usage: run-nginx.sh --port N --backend HOST:PORT [--workers N] [--dir DIR]
#                     [--host ADDR] [--keepalive N] [--backend-timeout-ms MS] [--nginx PATH] [--access-log]
#   --port N                 listen port on --host (required)
#   --backend HOST:PORT      the backend to proxy GET /fruits to (required)
#   --workers N              worker_processes (default 1)
#   --dir DIR                run directory: rendered nginx.conf, pid, logs/error.log, tmp/
#                            (default: a new mktemp -d directory)
#   --host ADDR              listen address (default 127.0.0.1)
#   --keepalive N            idle upstream keep-alive connections cached per worker (default 128)
#   --backend-timeout-ms MS  connect/read/send timeout towards the backend (default 1000, then 504)
#   --nginx PATH             nginx binary (default /usr/sbin/nginx)
#   --access-log             one line per request in DIR/logs/access.log (default: none, as it
#                            costs a write per request)
# The system nginx service (port 80, /etc/nginx) is neither used nor touched.
set -euo pipefail
script=run-nginx
. "$(cd "$(dirname "$0")" && pwd)/../../lib/common.sh"

here=$(cd "$(dirname "$0")" && pwd)
port= backend= workers=1 dir= host=127.0.0.1 keepalive=128 timeout_ms=1000 nginx=/usr/sbin/nginx access_log=
options=(
  --port=port --backend=backend --workers=workers --dir=dir --host=host --keepalive=keepalive
  --backend-timeout-ms=timeout_ms --nginx=nginx --access-log+access_log
)
parse_options "$@"
[ -n "$port" ] || die "--port is required"
[ -n "$backend" ] || die "--backend HOST:PORT is required"
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "--port must be 1..65535, got '$port'"
[[ $backend =~ ^[A-Za-z0-9._-]+:[0-9]+$ ]] || die "--backend must be HOST:PORT, got '$backend'"
[[ $host =~ ^[A-Za-z0-9._:-]+$ ]] || die "--host must be an address or a name, got '$host'"
[[ $workers =~ ^[0-9]+$ ]] && [ "$workers" -ge 1 ] || die "--workers must be a positive whole number, got '$workers'"
[[ $keepalive =~ ^[0-9]+$ ]] && [ "$keepalive" -ge 1 ] || die "--keepalive must be a positive whole number"
[[ $timeout_ms =~ ^[0-9]+$ ]] && [ "$timeout_ms" -ge 1 ] || die "--backend-timeout-ms must be a positive whole number"
[ -x "$nginx" ] || die "$nginx not found (apt-get install nginx-light, or scripts/install-deps.sh)"
[ -f "$here/nginx.conf.template" ] || die "$here/nginx.conf.template is missing"

if [ -z "$dir" ]; then
  dir=$(mktemp -d /tmp/platoon-nginx.XXXXXX)
fi
[[ $dir != *[[:space:]\;\{\}\'\"\|\&\#]* ]] || die "--dir must not contain spaces, quotes, braces or ; | & #: $dir"
mkdir -p "$dir/logs" "$dir/tmp" && : > "$dir/logs/error.log" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)   # nginx wants absolute paths; -p is the prefix for anything relative
[[ $dir != *[[:space:]\;\{\}\'\"\|\&\#]* ]] || die "--dir must not contain spaces, quotes, braces or ; | & #: $dir"

# As root, workers run as root too: the default (nobody) may not be able to reach a run dir
# under a private tree. As anyone else nginx ignores "user", so leave it out.
user_line=
[ "$(id -u)" -eq 0 ] && user_line="user root;"

# Open files: as many as allowed up to 65536 (raising the hard limit needs CAP_SYS_RESOURCE);
# each client uses one descriptor and, while its request is in flight, one to the backend.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
nofile=$(ulimit -n)
[ "$nofile" = unlimited ] && nofile=65536
connections=$(( nofile / 2 < 16384 ? nofile / 2 : 16384 ))

conf=$dir/nginx.conf
sed -e "s|@USER_LINE@|$user_line|" \
    -e "s|@WORKERS@|$workers|" \
    -e "s|@NOFILE@|$nofile|" \
    -e "s|@CONNECTIONS@|$connections|" \
    -e "s|@DIR@|$dir|g" \
    -e "s|@LISTEN@|$host:$port|" \
    -e "s|@BACKEND@|$backend|" \
    -e "s|@KEEPALIVE@|$keepalive|" \
    -e "s|@TIMEOUT@|${timeout_ms}ms|g" \
    -e "s|@ACCESS_LOG@|${access_log:+$dir/logs/access.log}|" -e "s|access_log ;|access_log off;|" \
    "$here/nginx.conf.template" > "$conf"
! grep -n '@[A-Z_]*@' "$conf" >&2 || die "unrendered placeholder in $conf"

# Check the configuration first, so that its errors reach the caller's stderr (once running,
# nginx logs to $dir/logs/error.log). -e keeps even start-up messages out of /var/log.
"$nginx" -t -q -p "$dir/" -c "$conf" -e "$dir/logs/error.log" -g 'daemon off;' \
  || die "nginx -t failed for $conf"

echo "run-nginx: starting $nginx -p $dir/ -c $conf (workers $workers, backend $backend, will listen on $host:$port)"
exec "$nginx" -p "$dir/" -c "$conf" -e "$dir/logs/error.log" -g 'daemon off;'
