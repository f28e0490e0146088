pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}

dependencyResolutionManagement {
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google() // LiteRT (com.google.ai.edge.litert) is published on Google's Maven only
        mavenCentral()
    }
}

rootProject.name = "edgepart-demo"
include(":app", ":bundlecore")
