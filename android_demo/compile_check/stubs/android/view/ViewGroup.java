// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.view;
import android.content.Context;
public abstract class ViewGroup extends View {
    public ViewGroup(Context context) { super(context); }
    public void addView(View child) {}
}
