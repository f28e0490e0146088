// Versions are pinned here; nothing in this project was built on the machine that wrote it
// (no Android SDK, no access to Google's Maven): see README.md.
plugins {
    id("com.android.application") version "8.7.3" apply false
    id("org.jetbrains.kotlin.android") version "2.0.21" apply false
}
