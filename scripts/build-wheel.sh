#!/usr/bin/env bash
# Builds the agentproxy wheel into dist/ with maturin (installed from PyPI into
# target/wheel-venv on first use, with the pinned tools below). No arguments.
# AGENTPROXY_WHEEL_PROFILE picks the cargo profile (default release; the test suite uses
# dev); AGENTPROXY_WHEEL_TARGET a Rust target triple (default: this machine's; the
# release workflow, .github/workflows/release.yml, builds every platform with it).
# On Linux the wheel is linked by zig: against glibc 2.17 for a -gnu target (tag
# manylinux2014, so it installs on any Linux of the last decade), statically against musl
# for a -musl one (musllinux_1_2); then `auditwheel show` must confirm the tag, and the
# script fails if the binary needs more.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/wheel-venv"
profile="${AGENTPROXY_WHEEL_PROFILE:-release}"
tools=("maturin==1.16.0" "ziglang==0.15.1" "auditwheel==6.8.2")

if [[ ! -x "$venv/bin/maturin" ]] || [[ "$(cat "$venv/tools" 2>/dev/null)" != "${tools[*]}" ]]; then
    python="${PYTHON:-python3}"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${tools[@]}"
    echo "${tools[*]}" > "$venv/tools"
fi
cd "$root"
rm -f dist/agentproxy-*.whl
target="${AGENTPROXY_WHEEL_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
case "$target" in
    *-linux-gnu) flags=(--zig --compatibility manylinux2014); want=manylinux_2_17_ ;;
    *-linux-musl) flags=(--zig --compatibility musllinux_1_2); want=musllinux_1_2_ ;;
    *) flags=(); want="" ;;
esac
# maturin finds `python -m ziglang` through the venv's python on PATH.
PATH="$venv/bin:$PATH" maturin build --locked --profile "$profile" --target "$target" \
    --out dist --quiet "${flags[@]}"
wheel="$(ls dist/agentproxy-*.whl)"
if [[ -n "$want" ]]; then
    shown="$("$venv/bin/auditwheel" show "$wheel")"
    tag="$(tr -d '\n' <<< "$shown" | grep -o 'consistent with the following platform tag: *"[^"]*"' | grep -o '"[^"]*"' | tr -d '"')"
    if [[ "$tag" != "$want"* ]]; then
        echo "build-wheel: auditwheel says the wheel needs more than ${want%_}:" >&2
        echo "$shown" >&2
        exit 1
    fi
    echo "build-wheel: auditwheel: $tag"
fi
echo "build-wheel: $wheel"
