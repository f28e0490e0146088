// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package org.tensorflow.lite.gpu;
import java.io.Closeable;
public class CompatibilityList implements Closeable {
    public boolean isDelegateSupportedOnThisDevice() { return false; }
    public GpuDelegateFactory.Options getBestOptionsForThisDevice() { return null; }
    @Override public void close() {}
}
