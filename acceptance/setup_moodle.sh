#!/usr/bin/env bash
# A fresh Moodle 5.1 site for the acceptance run, from a source tree exported by
# acceptance/export_moodle.sh:
#   1. PHP 8.2 (with the extensions Moodle needs) and nginx from Debian's packages, when missing;
#   2. nginx and php-fpm configurations written from acceptance/templates/ into the run's folder;
#   3. the Moodle database dropped and created again, the data root emptied;
#   4. Moodle installed by its CLI, then the site set up by acceptance/php/setup_site.php
#      (loopback allowed for cURL, users, a course, enrolments);
#   5. php-fpm and nginx started (stopped first if a previous run left them).
# Everything it starts runs from the run's folder; acceptance/stop.sh stops it.
#
# Environment (the Makefile passes these): MOODLE_SRC, ACCEPTANCE_DIR, MOODLE_HOST,
# MOODLE_PORT, MOODLE_DB_NAME, MOODLE_DB_HOST, MOODLE_DB_PORT, MOODLE_DB_USER, MOODLE_DB_PASS,
# MOODLE_PASSWORD (every test user's password), FPM_CHILDREN, MOODLE_DB_PERSIST.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
: "${MOODLE_SRC:?set MOODLE_SRC to a Moodle 5.1 source tree (see docs/acceptance-moodle.md)}"
MOODLE_SRC=$(cd "$MOODLE_SRC" && pwd)
RUN=${ACCEPTANCE_DIR:-$HERE/../var/acceptance}
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd)
MOODLE_HOST=${MOODLE_HOST:-127.0.0.1}
MOODLE_PORT=${MOODLE_PORT:-8180}
MOODLE_DB_NAME=${MOODLE_DB_NAME:-moodle_acceptance}
MOODLE_DB_HOST=${MOODLE_DB_HOST:-127.0.0.1}
MOODLE_DB_PORT=${MOODLE_DB_PORT:-5432}
MOODLE_DB_USER=${MOODLE_DB_USER:-postgres}
MOODLE_DB_PASS=${MOODLE_DB_PASS:-}
MOODLE_PASSWORD=${MOODLE_PASSWORD:-Acceptance-1}
FPM_CHILDREN=${FPM_CHILDREN:-4}
# 1 for persistent database connections (the benchmark: its backends then live long enough for
# /proc to attribute their CPU to Moodle); Moodle's default, 0, otherwise.
MOODLE_DB_PERSIST=${MOODLE_DB_PERSIST:-0}
TOOL_CROSS_SITE_HOST=${TOOL_CROSS_SITE_HOST:-localhost}
TOOL_TLS_PORT=${TOOL_TLS_PORT:-8443}
TOOL_TLS_BACKEND_PORT=${TOOL_TLS_BACKEND_PORT:-8108}
DATAROOT="$RUN/moodledata"
PHP="php -d max_input_vars=5000 -d memory_limit=1G"

say() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

test -f "$MOODLE_SRC/public/version.php" && test -f "$MOODLE_SRC/admin/cli/install_database.php" || {
  echo "$MOODLE_SRC is not a Moodle 5.1 tree (public/version.php, admin/cli/ at its root)" >&2
  exit 1
}

# 1. Packages -------------------------------------------------------------------------
PHP_PACKAGES="php8.2-cli php8.2-fpm php8.2-pgsql php8.2-curl php8.2-mbstring php8.2-zip php8.2-gd php8.2-xml php8.2-intl php8.2-soap php8.2-opcache php8.2-readline"
missing=""
for package in $PHP_PACKAGES nginx; do
  if [ "$package" = nginx ]; then
    command -v nginx >/dev/null || missing="$missing nginx"
  elif ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $package"
  fi
done
if [ -n "$missing" ]; then
  say "installing from Debian's packages:$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
command -v php-fpm8.2 >/dev/null || { echo "php-fpm8.2 is not installed" >&2; exit 1; }

# 2. Stop what a previous run left, write the configurations ---------------------------
"$HERE/stop.sh" moodle >/dev/null 2>&1 || true
mkdir -p "$RUN/nginx/tmp" "$RUN/php-fpm"
render() {  # template, output: @NAME@ -> value of the shell variable NAME
  sed -e "s|@RUN@|$RUN|g" -e "s|@MOODLE_SRC@|$MOODLE_SRC|g" -e "s|@MOODLE_HOST@|$MOODLE_HOST|g" \
      -e "s|@MOODLE_PORT@|$MOODLE_PORT|g" -e "s|@USER@|$(id -un)|g" -e "s|@GROUP@|$(id -gn)|g" \
      -e "s|@FPM_CHILDREN@|$FPM_CHILDREN|g" -e "s|@DB_HOST@|$MOODLE_DB_HOST|g" \
      -e "s|@DB_PORT@|$MOODLE_DB_PORT|g" -e "s|@DB_NAME@|$MOODLE_DB_NAME|g" \
      -e "s|@DB_USER@|$MOODLE_DB_USER|g" -e "s|@DB_PASS@|$MOODLE_DB_PASS|g" \
      -e "s|@DB_PERSIST@|$MOODLE_DB_PERSIST|g" \
      -e "s|@DATAROOT@|$DATAROOT|g" -e "s|@TOOL_CROSS_SITE_HOST@|$TOOL_CROSS_SITE_HOST|g" \
      -e "s|@TOOL_TLS_PORT@|$TOOL_TLS_PORT|g" -e "s|@TOOL_TLS_BACKEND_PORT@|$TOOL_TLS_BACKEND_PORT|g" \
      "$1" >"$2"
}
# A throw-away CA and a certificate for the tool's other site (step 6 runs over HTTPS, as a
# cross-site deployment must). Chromium is told to accept it; Moodle's cURL trusts it through
# <dataroot>/moodleorgca.crt (Moodle's own place for an extra CA bundle).
TLS="$RUN/tls"
if [ ! -f "$TLS/tool.pem" ]; then
  mkdir -p "$TLS"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=acceptance test CA" \
    -keyout "$TLS/ca.key" -out "$TLS/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$TOOL_CROSS_SITE_HOST" \
    -keyout "$TLS/tool.key" -out "$TLS/tool.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1,IP:::1\n' "$TOOL_CROSS_SITE_HOST" >"$TLS/san.ext"
  openssl x509 -req -in "$TLS/tool.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" -CAcreateserial \
    -days 3650 -extfile "$TLS/san.ext" -out "$TLS/tool.pem" 2>/dev/null
fi
render "$HERE/templates/nginx.conf.in" "$RUN/nginx/nginx.conf"
render "$HERE/templates/php-fpm.conf.in" "$RUN/php-fpm/php-fpm.conf"
# Moodle reads config.php at the root of its tree: the export's own was removed, this one
# is ours (the tree is outside the repository; nothing of Moodle's is committed).
render "$HERE/templates/config.php.in" "$MOODLE_SRC/config.php"

# 3. A clean database and data root ----------------------------------------------------
say "database $MOODLE_DB_NAME dropped and created; data root $DATAROOT emptied"
export PGPASSWORD="$MOODLE_DB_PASS"
psql_admin() { psql -q -v ON_ERROR_STOP=1 -h "$MOODLE_DB_HOST" -p "$MOODLE_DB_PORT" -U "$MOODLE_DB_USER" -d postgres "$@"; }
psql_admin -c "DROP DATABASE IF EXISTS \"$MOODLE_DB_NAME\" WITH (FORCE)"
psql_admin -c "CREATE DATABASE \"$MOODLE_DB_NAME\" ENCODING 'UTF8' TEMPLATE template0"
rm -rf "$DATAROOT"
mkdir -p "$DATAROOT"
cat /etc/ssl/certs/ca-certificates.crt "$TLS/ca.pem" >"$DATAROOT/moodleorgca.crt"

# 4. Moodle's CLI install, then our site set-up ----------------------------------------
say "installing Moodle by CLI (about a minute)"
started=$(date +%s)
$PHP "$MOODLE_SRC/admin/cli/install_database.php" --agree-license --lang=en \
  --fullname="Checkpointing Lab acceptance" --shortname=acceptance \
  --adminuser=admin --adminpass="$MOODLE_PASSWORD" --adminemail=admin@example.invalid \
  --supportemail=admin@example.invalid >"$RUN/moodle-install.log" 2>&1 || {
  tail -30 "$RUN/moodle-install.log" >&2
  exit 1
}
say "Moodle installed in $(($(date +%s) - started)) s"
$PHP "$HERE/php/setup_site.php" --moodle="$MOODLE_SRC" --password="$MOODLE_PASSWORD" \
  --out="$RUN/site.json"

# 5. Start php-fpm and nginx -------------------------------------------------------------
php-fpm8.2 --allow-to-run-as-root --fpm-config "$RUN/php-fpm/php-fpm.conf"
nginx -c "$RUN/nginx/nginx.conf" -p "$RUN/nginx" -e "$RUN/nginx/error.log"
for _ in $(seq 1 50); do
  if curl -fsS -o /dev/null "http://$MOODLE_HOST:$MOODLE_PORT/login/index.php"; then
    say "Moodle serves http://$MOODLE_HOST:$MOODLE_PORT/"
    exit 0
  fi
  sleep 0.2
done
echo "Moodle does not answer on http://$MOODLE_HOST:$MOODLE_PORT/ (see $RUN/nginx/error.log, $RUN/php-fpm/)" >&2
exit 1
