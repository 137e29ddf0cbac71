#!/usr/bin/env bash
# Installs the npm packages of this checkout into a Node project, the way to install them
# until they are published (then: npm install --save-dev agentproxy): packs the main
# package `agentproxy` and this platform's `@agentproxy/PLATFORM` (the binary) with
# scripts/build-npm.sh, copies the two tarballs into PROJECT_DIR/.agentproxy/ as
# agentproxy.tgz and agentproxy-PLATFORM.tgz, and runs `npm install --save-dev` of both
# in PROJECT_DIR, so its package.json names them as `file:.agentproxy/…` entries.
#
# Usage: scripts/install-npm.sh PROJECT_DIR
#   PROJECT_DIR          the directory of the project's package.json
#   AGENTPROXY_BINARY    the binary to pack (default: target/release/agentproxy, built with
#                        `cargo build --release --locked` when it is missing)
#   AGENTPROXY_NPM_FLAGS more flags for npm install, split on spaces (e.g. --offline)
#   PLATFORM is this machine's: linux-x64, linux-arm64, darwin-x64 or darwin-arm64.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -ne 1 ]]; then
    sed -n '2,14p' "$0" >&2
    exit 2
fi
if [[ ! -f "$1/package.json" ]]; then
    echo "install-npm: $1/package.json does not exist (run npm init there first)" >&2
    exit 2
fi
project="$(cd "$1" && pwd)"

# Node's name for this platform, as build-npm.sh and the launcher (lib/binary.js) use it.
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) platform=linux-x64 ;;
    Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
    Darwin-x86_64) platform=darwin-x64 ;;
    Darwin-arm64) platform=darwin-arm64 ;;
    *)
        echo "install-npm: no npm package is made for $(uname -s)-$(uname -m) (linux-x64, linux-arm64, darwin-x64 or darwin-arm64)" >&2
        exit 2
        ;;
esac

if [[ -n "${AGENTPROXY_BINARY:-}" ]]; then
    binary="$AGENTPROXY_BINARY"
else
    binary="$root/target/release/agentproxy"
    if [[ ! -e "$binary" ]]; then
        echo "install-npm: building $binary (cargo build --release --locked)" >&2
        (cd "$root" && cargo build --release --locked)
    fi
fi
if [[ ! -x "$binary" ]]; then
    echo "install-npm: $binary is not an executable file" >&2
    exit 2
fi
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"

packs="$(mktemp -d)"
trap 'rm -rf "$packs"' EXIT
"$root/scripts/build-npm.sh" "$packs" "$platform=$binary" >/dev/null
# build-npm.sh names them as npm pack does: agentproxy-VERSION.tgz and, for the scoped
# @agentproxy/PLATFORM, agentproxy-PLATFORM-VERSION.tgz.
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
main="$packs/agentproxy-$version.tgz"
native="$packs/agentproxy-$platform-$version.tgz"
for pack in "$main" "$native"; do
    if [[ ! -f "$pack" ]]; then
        echo "install-npm: build-npm.sh did not write $pack" >&2
        exit 1
    fi
done

# Names without the version: package.json's `file:` entries (and the lockfile) name these
# paths, so they must stay valid when the version changes and the script runs again (a
# later `npm install` in the project then finds the tarballs where package.json says).
mkdir -p "$project/.agentproxy"
cp "$main" "$project/.agentproxy/agentproxy.tgz"
cp "$native" "$project/.agentproxy/agentproxy-$platform.tgz"

# The main package's optional dependency on @agentproxy/PLATFORM (of this version, the
# only platform packed) is met by the one installed from its tarball here, so npm asks
# the registry for neither.
flags=()
if [[ -n "${AGENTPROXY_NPM_FLAGS:-}" ]]; then
    read -r -a flags <<<"$AGENTPROXY_NPM_FLAGS"
fi
cd "$project"
# ${flags[@]+…}: macOS's bash 3.2 calls an empty array unbound under `set -u`.
npm install --save-dev ${flags[@]+"${flags[@]}"} ./.agentproxy/agentproxy.tgz "./.agentproxy/agentproxy-$platform.tgz"
echo "install-npm: installed agentproxy $version and @agentproxy/$platform into $project from $project/.agentproxy/"
