// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package org.tensorflow.lite.gpu;
import org.tensorflow.lite.Delegate;
public class GpuDelegate implements Delegate {
    public GpuDelegate(GpuDelegateFactory.Options options) {}
    @Override public long getNativeHandle() { return 0; }
    @Override public void close() {}
}
