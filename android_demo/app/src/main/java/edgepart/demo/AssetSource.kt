package edgepart.demo

import android.content.res.AssetManager
import edgepart.bundlecore.BundleSource
import java.io.FileNotFoundException

/** A bundle packed into the APK under `assets/<dir>/`. */
class AssetSource(private val assets: AssetManager, private val dir: String) : BundleSource {
    override fun root(): String = "assets/$dir"

    override fun read(relPath: String): ByteArray? =
        try {
            assets.open("$dir/$relPath").use { BundleSource.readAll(it) }
        } catch (e: FileNotFoundException) {
            null
        }

    companion object {
        /** Every `assets/bundles/<name>` directory that holds a manifest.json. */
        fun list(assets: AssetManager): List<AssetSource> =
            (assets.list("bundles") ?: emptyArray())
                .sorted()
                .filter { name -> assets.list("bundles/$name")?.contains("manifest.json") == true }
                .map { AssetSource(assets, "bundles/$it") }
    }
}
