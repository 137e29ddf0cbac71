#!/usr/bin/env bash
# Builds the npm packages from release binaries: the main package `agentproxy` (the
# launcher, the vitest and jest helpers, from npm/agentproxy) and one package per platform,
# `@agentproxy/PLATFORM`, carrying that platform's binary, an optional dependency of the
# main one (the layout of esbuild and biome: npm installs only the one whose os and cpu
# match). Each is packed into OUT_DIR as a tarball `npm publish` takes; the version is
# Cargo.toml's. In GitHub Actions each names its repository (GITHUB_SERVER_URL,
# GITHUB_REPOSITORY), which npm's provenance requires.
#
# Usage: scripts/build-npm.sh OUT_DIR PLATFORM=BINARY...
#   PLATFORM is Node's name for it: linux-x64, linux-arm64, darwin-x64 or darwin-arm64.
#   e.g. scripts/build-npm.sh dist/npm linux-x64=target/release/agentproxy
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -lt 2 ]]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
out="$(mkdir -p "$1" && cd "$1" && pwd)"
shift
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The repository a package names, when the build runs in GitHub Actions.
repository() {
    [[ -n "${GITHUB_REPOSITORY:-}" ]] || return 0
    URL="${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY" node -e '
const fs = require("fs");
const file = process.argv[1];
const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
pkg.repository = { type: "git", url: `git+${process.env.URL}.git` };
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
' "$1"
}

platforms=()
for pair in "$@"; do
    platform="${pair%%=*}"
    binary="${pair#*=}"
    case "$platform" in
        linux-x64 | linux-arm64 | darwin-x64 | darwin-arm64) ;;
        *)
            echo "build-npm: unknown platform $platform (linux-x64, linux-arm64, darwin-x64 or darwin-arm64)" >&2
            exit 2
            ;;
    esac
    if [[ ! -x "$binary" ]]; then
        echo "build-npm: $binary is not an executable file" >&2
        exit 2
    fi
    platforms+=("$platform")
    dir="$stage/$platform"
    mkdir -p "$dir/bin"
    cp "$binary" "$dir/bin/agentproxy"
    chmod 755 "$dir/bin/agentproxy"
    os="${platform%-*}"
    cpu="${platform#*-}"
    cat >"$dir/package.json" <<JSON
{
  "name": "@agentproxy/$platform",
  "version": "$version",
  "description": "The agentproxy binary for $platform (installed by the agentproxy package)",
  "license": "Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin"],
  "preferUnplugged": true
}
JSON
    repository "$dir/package.json"
    cp "$root/LICENSE" "$dir/"
done

main="$stage/agentproxy"
cp -R "$root/npm/agentproxy" "$main"
cp "$root/LICENSE" "$main/"
# The version, and exactly the platforms built as optional dependencies.
VERSION="$version" PLATFORMS="${platforms[*]}" node -e '
const fs = require("fs");
const file = process.argv[1];
const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
pkg.version = process.env.VERSION;
pkg.optionalDependencies = Object.fromEntries(
  process.env.PLATFORMS.split(" ").map((p) => [`@agentproxy/${p}`, process.env.VERSION]));
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");
' "$main/package.json"
repository "$main/package.json"

for dir in "$main" "${platforms[@]/#/$stage/}"; do
    (cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
done
ls "$out"/*.tgz
