#!/bin/sh
# Builds stand-ins for the three base images docker-compose.yml and the Dockerfiles name
# (python:3.11-slim, postgres:16, redis:7), plus debian:bookworm-slim under them, from
# Debian's own packages: for hosts that cannot reach Docker Hub. docs/operations.md says when.
#
#   sudo docker/base-images/build.sh [MIRROR]     (MIRROR: http://deb.debian.org/debian)
#
# Needs debootstrap and a running Docker engine. Existing images of these names are kept
# unless REBUILD=1. The stand-ins differ from the official images where Debian does:
# PostgreSQL is Debian 12's 15 (under the postgres:16 name; a data folder made by one cannot
# be opened by the other) and Python is Debian's 3.11 with its pip.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mirror=${1:-http://deb.debian.org/debian}

have() { [ "${REBUILD:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

if have debian:bookworm-slim; then
  echo "debian:bookworm-slim: present"
else
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase bookworm "$root" "$mirror"
  # What the official slim image also drops: apt's caches and the package lists.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - debian:bookworm-slim
  rm -rf "$root"
  trap - EXIT
fi

for pair in python:3.11-slim postgres:16 redis:7; do
  if have "$pair"; then
    echo "$pair: present"
  else
    docker build -t "$pair" "$here/${pair%%:*}"
  fi
done
docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' \
  | grep -E '^(debian:bookworm-slim|python:3.11-slim|postgres:16|redis:7) '
