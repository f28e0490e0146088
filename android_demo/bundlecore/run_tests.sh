#!/usr/bin/env bash
# Compile the bundle core (dependency-free Java, Android's language level) and its plain-Java
# test runner with javac, make real bundles with edgepart, and run the tests against them.
# Class files and fixtures go to a temporary directory that is removed afterwards.
#
# Usage: android_demo/bundlecore/run_tests.sh   (needs javac/java >= 11 and edgepart installed)
# Env:   PYTHON (default python3), KEEP_TMP=1 to keep the temporary directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
for tool in javac java; do
    command -v "$tool" >/dev/null || { echo "run_tests.sh: error: $tool not found; install a JDK (e.g. apt-get install openjdk-17-jdk-headless)" >&2; exit 2; }
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/bundlecore.XXXXXX")"
if [[ "${KEEP_TMP:-0}" != 1 ]]; then trap 'rm -rf "$tmp"' EXIT; else echo "keeping $tmp"; fi

# --release 8: the language level and Java API the Android module is held to
mapfile -t main_src < <(find "$here/src/main/java" -name '*.java' | sort)
mapfile -t test_src < <(find "$here/src/test/java" -name '*.java' | sort)
javac --release 8 -Xlint:all,-options -Werror -d "$tmp/classes" "${main_src[@]}"
javac --release 8 -Xlint:all,-options -cp "$tmp/classes" -d "$tmp/test-classes" "${test_src[@]}"

"$python" "$here/make_fixtures.py" "$tmp/fixtures"
java -cp "$tmp/classes:$tmp/test-classes" edgepart.bundlecore.BundleCoreTest "$tmp/fixtures"
