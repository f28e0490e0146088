// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.util;
public final class Log {
    public static int i(String tag, String msg) { return 0; }
    public static int e(String tag, String msg, Throwable tr) { return 0; }
}
