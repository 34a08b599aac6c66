#!/usr/bin/env bash
# Stop what the acceptance run started, by the pid files in its folder:
#   acceptance/stop.sh          nginx, php-fpm and the tool's processes
#   acceptance/stop.sh moodle   nginx and php-fpm only
# The tool's processes run in process groups of their own (pid file = group leader).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=${ACCEPTANCE_DIR:-$HERE/../var/acceptance}
[ -d "$RUN" ] || exit 0

stop_pid() {  # name, pid file, signal target ("pid" or "group")
  local name=$1 file=$2 target=$3 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    if [ "$target" = group ]; then kill -TERM -- "-$pid" 2>/dev/null; else kill -TERM "$pid"; fi
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      if [ "$target" = group ]; then kill -KILL -- "-$pid" 2>/dev/null; else kill -KILL "$pid"; fi
    fi
    echo "stopped $name ($pid)"
  fi
  rm -f "$file"
}

if [ "${1:-all}" != moodle ]; then
  for file in "$RUN"/tool/*.pid; do
    [ -e "$file" ] && stop_pid "tool $(basename "$file" .pid)" "$file" group
  done
fi
stop_pid nginx "$RUN/nginx/nginx.pid" pid
stop_pid php-fpm "$RUN/php-fpm/php-fpm.pid" pid
exit 0
