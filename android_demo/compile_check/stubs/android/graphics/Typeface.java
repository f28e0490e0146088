// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.graphics;
public class Typeface {
    public static final Typeface MONOSPACE = null;
}
