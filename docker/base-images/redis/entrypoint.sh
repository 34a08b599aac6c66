#!/bin/sh
set -eu
if [ "${1:-}" = redis-server ]; then
  shift
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no "$@"
  fi
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
