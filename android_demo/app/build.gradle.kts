plugins {
    id("com.android.application")
    id("org.jetbrains.kotlin.android")
}

android {
    namespace = "edgepart.demo"
    compileSdk = 35

    defaultConfig {
        applicationId = "edgepart.demo"
        minSdk = 26
        targetSdk = 35
        versionCode = 1
        versionName = "0.1.0"
    }

    buildTypes {
        release {
            isMinifyEnabled = false
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    kotlinOptions {
        jvmTarget = "17"
    }

    androidResources {
        noCompress += "tflite" // bundles in assets are read whole; keep them uncompressed anyway
    }
}

dependencies {
    implementation(project(":bundlecore"))
    // LiteRT's Interpreter API (org.tensorflow.lite.*), its GPU delegate and NNAPI delegate
    implementation("com.google.ai.edge.litert:litert:1.4.2")
    implementation("com.google.ai.edge.litert:litert-gpu:1.4.2")
}
