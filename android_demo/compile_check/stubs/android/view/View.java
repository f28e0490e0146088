// Signature stub for compile_check/check_kotlin.sh only: the shape of the real Android/LiteRT
// API the app calls (as documented), with no behaviour. Never packaged into the app.
package android.view;
import android.content.Context;
public class View {
    public interface OnClickListener {
        void onClick(View v);
    }
    public View(Context context) {}
    public void setPadding(int left, int top, int right, int bottom) {}
    public void setOnClickListener(OnClickListener l) {}
}
