#!/usr/bin/env bash
# Type-check the app's Kotlin sources with a real Kotlin compiler, against the real bundle-core
# classes and signature stubs of the Android and LiteRT APIs the app calls (compile_check/stubs).
#
# What this proves: the Kotlin is valid, its use of the bundle core type-checks, and its calls
# match the API shapes in the stubs. What it cannot prove: that the stubs match the real
# android.jar and LiteRT AARs (only a Gradle build with the Android SDK can), or anything about
# running on a phone. Nothing is packaged; outputs go to a temporary directory.
#
# Needs javac and kotlinc (KOTLINC=path, or on PATH; e.g. `npm install kotlin-compiler`).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
demo="$(dirname "$here")"
kotlinc="${KOTLINC:-$(command -v kotlinc || true)}"
[[ -n "$kotlinc" && -x "$kotlinc" ]] || { echo "check_kotlin.sh: error: kotlinc not found; set KOTLINC or put kotlinc on PATH" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/kotlincheck.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mapfile -t core < <(find "$demo/bundlecore/src/main/java" -name '*.java' | sort)
mapfile -t stubs < <(find "$here/stubs" -name '*.java' | sort)
mapfile -t app < <(find "$demo/app/src/main/java" -name '*.kt' | sort)
javac --release 8 -nowarn -d "$tmp/core" "${core[@]}"
javac --release 8 -nowarn -d "$tmp/stubs" "${stubs[@]}"
"$kotlinc" -jvm-target 17 -Werror -cp "$tmp/core:$tmp/stubs" -d "$tmp/app" "${app[@]}" 2>&1
echo "kotlin check: ${#app[@]} Kotlin files compiled against bundlecore and ${#stubs[@]} API stubs"
