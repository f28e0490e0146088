// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.widget;
import android.content.Context;
import android.graphics.Typeface;
import android.view.View;
public class TextView extends View {
    public TextView(Context context) { super(context); }
    public CharSequence getText() { return null; }
    public final void setText(CharSequence text) {}
    public float getTextSize() { return 0; }
    public void setTextSize(float size) {}
    public Typeface getTypeface() { return null; }
    public void setTypeface(Typeface tf) {}
    public boolean isAllCaps() { return false; }
    public void setAllCaps(boolean allCaps) {}
    public void setTextIsSelectable(boolean selectable) {}
    public final void append(CharSequence text) {}
}
