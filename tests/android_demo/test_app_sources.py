"""The Android app's sources, checked as far as this machine allows (no Android SDK here).

The Kotlin sources are type-checked by a real Kotlin compiler against the real bundle-core
classes and signature stubs of the Android/LiteRT APIs (``android_demo/compile_check``); the
manifest and Gradle files are checked for consistency with the sources. Building the APK needs
the Android SDK and Google's Maven: see ``android_demo/README.md``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "android_demo"
ANDROID = "{http://schemas.android.com/apk/res/android}"


def _kotlinc() -> str:
    """``KOTLINC``, a ``kotlinc`` on PATH, or the pinned one fetched from npm
    (``tools/kotlin_compiler.py``; ``.ci/run`` fetches it beforehand)."""
    given = os.environ.get("KOTLINC") or shutil.which("kotlinc")
    if given:
        return given
    import kotlin_compiler  # tools/ is on sys.path (tests/conftest.py)

    return str(kotlin_compiler.ensure())


@pytest.mark.slow
def test_kotlin_sources_typecheck() -> None:
    """Runs wherever the suite runs (CI included): a missing JDK or compiler is a failure with
    the fix, not a skip."""
    assert shutil.which("javac"), (
        "javac not found: install a JDK (apt-get install openjdk-17-jdk-headless)"
    )
    proc = subprocess.run(
        ["bash", str(DEMO / "compile_check" / "check_kotlin.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "KOTLINC": _kotlinc()},
        timeout=1800,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "Kotlin files compiled" in proc.stdout


def test_manifest_declares_the_launcher_activity() -> None:
    root = ET.parse(DEMO / "app" / "src" / "main" / "AndroidManifest.xml").getroot()
    activities = root.findall("./application/activity")
    assert [a.get(f"{ANDROID}name") for a in activities] == [".MainActivity"]
    (activity,) = activities
    assert activity.get(f"{ANDROID}exported") == "true"
    actions = [e.get(f"{ANDROID}name") for e in activity.iter("action")]
    assert actions == ["android.intent.action.MAIN"]
    # the class it names exists in the app's namespace
    gradle = (DEMO / "app" / "build.gradle.kts").read_text()
    namespace = re.search(r'namespace = "([^"]+)"', gradle)
    assert namespace is not None
    src = DEMO / "app" / "src" / "main" / "java" / Path(*namespace[1].split("."))
    assert "class MainActivity : Activity()" in (src / "MainActivity.kt").read_text()


def test_gradle_modules_and_versions() -> None:
    settings = (DEMO / "settings.gradle.kts").read_text()
    assert 'include(":app", ":bundlecore")' in settings
    app = (DEMO / "app" / "build.gradle.kts").read_text()
    assert re.search(r"minSdk = 26\b", app)
    assert 'implementation(project(":bundlecore"))' in app
    litert = re.findall(r'"com\.google\.ai\.edge\.litert:(litert(?:-gpu)?):([^"]+)"', app)
    assert sorted(name for name, _ in litert) == ["litert", "litert-gpu"]
    assert len({version for _, version in litert}) == 1, "litert and litert-gpu must match"
    # the bundle core stays free of Android and third-party imports (it is tested on the JVM)
    for f in (DEMO / "bundlecore" / "src" / "main" / "java").rglob("*.java"):
        imports = re.findall(r"^import (?:static )?([\w.]+)", f.read_text(), re.MULTILINE)
        assert all(i.startswith("java.") for i in imports), (f.name, imports)
