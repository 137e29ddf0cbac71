#!/usr/bin/env bash
# Packs the binary of a wheel built by build-wheel.sh as a release archive, so the
# release's binaries are the wheels' own: dist/agentproxy-VERSION-TARGET.tar.gz holding
# agentproxy-VERSION-TARGET/{agentproxy,README.md,LICENSE}, and its checksum beside it
# (.sha256, in `sha256sum -c` form). Usage: release-archive.sh WHEEL TARGET
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 WHEEL TARGET" >&2
    exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wheel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
target="$2"
version="$(basename "$wheel" | cut -d- -f2)"
name="agentproxy-$version-$target"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mkdir "$work/$name"
# maturin puts a `bin` binding's executable under the wheel's .data/scripts/.
python3 - "$wheel" "$work/$name/agentproxy" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl:
    found = [n for n in whl.namelist() if n.endswith(".data/scripts/agentproxy")]
    if len(found) != 1:
        sys.exit(f"release-archive: no agentproxy binary in {sys.argv[1]}: {found}")
    with open(sys.argv[2], "wb") as out:
        out.write(whl.read(found[0]))
PY
chmod 755 "$work/$name/agentproxy"
cp "$root/README.md" "$root/LICENSE" "$work/$name/"
mkdir -p "$root/dist"
tar -C "$work" -czf "$root/dist/$name.tar.gz" "$name"
(cd "$root/dist" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "release-archive: dist/$name.tar.gz"
