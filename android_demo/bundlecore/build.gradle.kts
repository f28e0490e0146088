// The bundle core: plain Java with no dependencies (and no Android API), so the same code that
// the app runs is tested on any JVM. Its tests need bundles made by edgepart (Python), so they
// run from run_tests.sh (`gradle :bundlecore:jvmTests` calls it), not from Gradle's `test`.
plugins {
    `java-library`
}

tasks.withType<JavaCompile>().configureEach {
    options.release.set(8) // the level run_tests.sh compiles with: what D8 takes as-is
}

tasks.register<Exec>("jvmTests") {
    description = "Runs the bundle-core tests against real edgepart bundles (needs edgepart)."
    workingDir = projectDir
    commandLine("bash", "run_tests.sh")
}
