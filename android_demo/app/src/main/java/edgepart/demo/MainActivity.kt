package edgepart.demo

import android.app.Activity
import android.graphics.Typeface
import android.os.Bundle
import android.util.Log
import android.widget.Button
import android.widget.LinearLayout
import android.widget.ScrollView
import android.widget.TextView
import edgepart.bundlecore.BundleException
import edgepart.bundlecore.BundleSource
import edgepart.bundlecore.PlanRunner
import java.io.File
import java.util.concurrent.Executors

/**
 * Lists the bundles it finds (pushed to the app's files directory or `/data/local/tmp/edgepart`,
 * or packed in assets) and runs the one tapped, or the one given with
 * `adb shell am start -n edgepart.demo/.MainActivity --es bundle DIR [--es original MODEL]
 * [--ei runs N] [--ei threads T]`.
 * Results go to the screen and to logcat (tag `edgepart`).
 */
class MainActivity : Activity() {
    private lateinit var output: TextView
    private var original: File? = null
    private val worker = Executors.newSingleThreadExecutor()

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val root = LinearLayout(this).apply {
            orientation = LinearLayout.VERTICAL
            setPadding(24, 24, 24, 24)
        }
        root.addView(TextView(this).apply { text = "edgepart bundles"; textSize = 20f })
        output = TextView(this).apply {
            typeface = Typeface.MONOSPACE
            textSize = 11f
            setTextIsSelectable(true)
        }
        original = intent.getStringExtra("original")?.let { File(it) }
        val runs = intent.getIntExtra("runs", 20).coerceAtLeast(1)
        val threads = intent.getIntExtra("threads", 1).coerceAtLeast(1)
        val sources = findBundles()
        for (s in sources) {
            root.addView(Button(this).apply {
                text = s.root()
                isAllCaps = false
                setOnClickListener { start(s, runs, threads) }
            })
        }
        root.addView(output)
        setContentView(ScrollView(this).apply { addView(root) })
        if (sources.isEmpty()) {
            log("no bundles found in ${bundleDirs().joinToString()} or assets/bundles; " +
                "push one (see android_demo/README.md)")
        }
        intent.getStringExtra("bundle")?.let {
            start(BundleSource.Directory(File(it)), runs, threads)
        }
    }

    private fun bundleDirs(): List<File> =
        listOfNotNull(getExternalFilesDir("bundles"), File("/data/local/tmp/edgepart"))

    /** Directories holding a manifest.json, then bundles packed in the APK. */
    private fun findBundles(): List<BundleSource> {
        val onDisk = bundleDirs().flatMap { dir ->
            dir.listFiles()?.filter { File(it, "manifest.json").isFile }?.sortedBy { it.name }
                ?: emptyList()
        }
        return onDisk.map { BundleSource.Directory(it) } + AssetSource.list(assets)
    }

    private fun start(source: BundleSource, runs: Int, threads: Int) {
        output.text = ""
        log("${source.root()}: $runs timed runs after ${DemoRun.WARMUP} warm-up runs, " +
            "$threads thread(s) per partition unless the plan says")
        worker.execute {
            try {
                DemoRun(source, runs, threads, original, ::log).execute()
                log("done")
            } catch (e: BundleException) {
                log("error: ${e.message}")
            } catch (e: PlanRunner.PartitionFailure) {
                log("error: ${e.message}")
            } catch (e: Throwable) { // LiteRT reports model and native errors as exceptions
                Log.e(TAG, "run failed", e)
                log("error: ${LiteRtPartition.oneLine(e)}")
            }
        }
    }

    private fun log(line: String) {
        Log.i(TAG, line)
        runOnUiThread { output.append(line + "\n") }
    }

    override fun onDestroy() {
        worker.shutdownNow()
        super.onDestroy()
    }

    companion object {
        const val TAG = "edgepart"
    }
}
