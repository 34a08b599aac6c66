#!/usr/bin/env bash
# Export a Moodle 5.1 source tree from a git directory whose history lacks some objects
# (the public snapshot train2023-31/moodle lacks two: an h5p ckeditor.js.map and a backup zip
# under public/local/), without touching that git directory.
#
#   acceptance/export_moodle.sh GITDIR DEST
#
# `git archive` fails on a missing object even with exclude pathspecs, so: a temporary index
# of HEAD, every path whose blob is missing force-removed from it, `checkout-index -a` into
# DEST. Then the snapshot's own config.php (MariaDB, Windows paths) is removed (the
# acceptance run writes its own) and the plugins that are not in Moodle's standard
# distribution (lib/plugins.json) are moved to DEST.set-aside/, so the install is plain Moodle.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 GITDIR DEST" >&2
  exit 2
fi
GITDIR=$(cd "$1" && pwd)
DEST=$2
ASIDE="$DEST.set-aside"

if [ -e "$DEST" ] && [ -n "$(ls -A "$DEST" 2>/dev/null)" ]; then
  echo "$DEST exists and is not empty; remove it first (rm -rf '$DEST' '$ASIDE')" >&2
  exit 1
fi
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
ASIDE="$DEST.set-aside"

export GIT_DIR="$GITDIR"
INDEX=$(mktemp)
trap 'rm -f "$INDEX"' EXIT
export GIT_INDEX_FILE="$INDEX"

git read-tree HEAD
# Every path whose blob this clone does not have (found, not hard-coded: a newer snapshot
# may lack others).
missing=$(git ls-files -s | awk '{print $2}' | git cat-file --batch-check | awk '$2 == "missing" {print $1}')
if [ -n "$missing" ]; then
  pattern=$(echo "$missing" | paste -sd'|')
  git ls-files -s | grep -E "^[0-9]+ ($pattern) " | cut -f2- | while IFS= read -r path; do
    echo "missing in the clone, not exported: $path"
    git update-index --force-remove -- "$path"
  done
fi
GIT_WORK_TREE="$DEST" git checkout-index -a -f --prefix="$DEST/"
echo "exported $(git rev-parse --short HEAD) to $DEST"

cd "$DEST"
test -f public/version.php || { echo "$DEST/public/version.php missing: not a Moodle 5.1 tree" >&2; exit 1; }
rm -f config.php

# Plugins outside Moodle's standard distribution: every <type dir>/<name>/version.php whose
# name lib/plugins.json does not list for that type, plus everything under public/local/
# except its readme and upgrade notes.
mkdir -p "$ASIDE"
python3 - "$DEST" "$ASIDE" <<'PY'
import json
import shutil
import sys
from pathlib import Path

dest, aside = Path(sys.argv[1]), Path(sys.argv[2])
standard = json.loads((dest / "lib/plugins.json").read_text())["standard"]
types = json.loads((dest / "lib/components.json").read_text())["plugintypes"]
moved = []
for plugin_type, folder in types.items():
    root = dest / folder
    if not root.is_dir():
        continue
    for child in sorted(root.iterdir()):
        if plugin_type == "local":
            keep = child.is_file() and child.name in {"readme.txt", "upgrade.txt", "UPGRADING.md"}
        else:
            keep = not (child / "version.php").is_file() or child.name in standard.get(plugin_type, [])
        if not keep:
            target = aside / child.relative_to(dest)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(child), str(target))
            moved.append(str(child.relative_to(dest)))
print("set aside (not standard Moodle):", ", ".join(moved) or "nothing")
PY
echo "Moodle $(grep -o "release *= *'[^']*'" public/version.php | cut -d"'" -f2) ready in $DEST (plugins set aside in $ASIDE)"
