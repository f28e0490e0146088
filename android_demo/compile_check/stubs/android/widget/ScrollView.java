// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.widget;
import android.content.Context;
import android.view.ViewGroup;
public class ScrollView extends ViewGroup {
    public ScrollView(Context context) { super(context); }
}
