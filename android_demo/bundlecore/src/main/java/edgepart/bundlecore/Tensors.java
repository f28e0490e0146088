package edgepart.bundlecore;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Raw tensor bytes: sizes per dtype, seeded random inputs, decoding to double and the max abs
 * difference of two tensors. Tensors are passed between partitions as raw little-endian bytes in
 * direct {@link ByteBuffer}s (what LiteRT's Java API copies in and out), so routing never needs
 * to know the dtype.
 */
public final class Tensors {
    private Tensors() {}

    /** Bytes per element of a plan dtype (NumPy names). */
    public static int itemSize(String dtype) {
        switch (dtype) {
            case "int8": case "uint8": case "bool":
                return 1;
            case "float16": case "int16": case "uint16":
                return 2;
            case "float32": case "int32": case "uint32":
                return 4;
            case "float64": case "int64": case "uint64": case "complex64":
                return 8;
            case "complex128":
                return 16;
            default:
                throw new IllegalArgumentException("unknown dtype " + Json.repr(dtype));
        }
    }

    public static long nbytes(String dtype, int[] shape) {
        long n = itemSize(dtype);
        for (int d : shape) {
            n *= d;
        }
        return n;
    }

    /** A zeroed direct buffer in native order (what LiteRT accepts without an extra copy). */
    public static ByteBuffer allocate(long nbytes) {
        if (nbytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("tensor of " + nbytes + " bytes is too large");
        }
        return ByteBuffer.allocateDirect((int) nbytes).order(ByteOrder.nativeOrder());
    }

    /** Seeded random values for an input: uniform [-1, 1) for floats, the full range for
     * integers, 0/1 for bool. Same seed, same bytes. */
    public static ByteBuffer random(String dtype, int[] shape, long seed) {
        ByteBuffer b = allocate(nbytes(dtype, shape));
        Random rng = new Random(seed);
        int n = b.capacity() / itemSize(dtype);
        for (int i = 0; i < n; i++) {
            switch (dtype) {
                case "float32":
                    b.putFloat(rng.nextFloat() * 2f - 1f);
                    break;
                case "float64":
                    b.putDouble(rng.nextDouble() * 2 - 1);
                    break;
                case "float16":
                    b.putShort(floatToHalf(rng.nextFloat() * 2f - 1f));
                    break;
                case "bool":
                    b.put((byte) (rng.nextBoolean() ? 1 : 0));
                    break;
                default:
                    byte[] raw = new byte[itemSize(dtype)];
                    rng.nextBytes(raw);
                    b.put(raw);
            }
        }
        b.rewind();
        return b;
    }

    /** Element {@code i} of a tensor as a double (absolute indexing: position is unchanged). */
    public static double get(String dtype, ByteBuffer b, int i) {
        ByteBuffer le = b.duplicate().order(ByteOrder.nativeOrder());
        int at = i * itemSize(dtype);
        switch (dtype) {
            case "float32": return le.getFloat(at);
            case "float64": return le.getDouble(at);
            case "float16": return halfToFloat(le.getShort(at));
            case "int8": case "bool": return le.get(at);
            case "uint8": return le.get(at) & 0xFF;
            case "int16": return le.getShort(at);
            case "uint16": return le.getShort(at) & 0xFFFF;
            case "int32": return le.getInt(at);
            case "uint32": return le.getInt(at) & 0xFFFFFFFFL;
            case "int64": return (double) le.getLong(at);
            case "uint64": {
                long v = le.getLong(at);
                return v >= 0 ? v : (double) (v >>> 1) * 2.0 + (v & 1);
            }
            default:
                throw new IllegalArgumentException("cannot compare " + dtype + " tensors");
        }
    }

    /** {@code max |a - b|} over all elements, computed in double ({@code NaN} if any is NaN). */
    public static double maxAbsDiff(String dtype, ByteBuffer a, ByteBuffer b) {
        if (a.capacity() != b.capacity()) {
            throw new IllegalArgumentException("tensors of " + a.capacity() + " and "
                    + b.capacity() + " bytes cannot be compared");
        }
        int n = a.capacity() / itemSize(dtype);
        double worst = 0;
        for (int i = 0; i < n; i++) {
            double d = Math.abs(get(dtype, a, i) - get(dtype, b, i));
            if (Double.isNaN(d)) {
                return Double.NaN;
            }
            worst = Math.max(worst, d);
        }
        return worst;
    }

    /** True if both buffers hold the same bytes (their whole capacity; positions unchanged). */
    public static boolean sameBytes(ByteBuffer a, ByteBuffer b) {
        ByteBuffer x = a.duplicate();
        ByteBuffer y = b.duplicate();
        x.clear();
        y.clear();
        return x.equals(y);
    }

    /** IEEE 754 half (binary16) to float. */
    public static float halfToFloat(short h) {
        int bits = h & 0xFFFF;
        int sign = (bits >>> 15) << 31;
        int exp = (bits >>> 10) & 0x1F;
        int mant = bits & 0x3FF;
        if (exp == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (mant << 13));
        }
        if (exp == 0) {
            float v = mant / 1024f / 16384f; // subnormal: mant * 2^-24
            return sign != 0 ? -v : v;
        }
        return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
    }

    /** Float to IEEE 754 half, rounding to nearest even (for random float16 inputs). */
    public static short floatToHalf(float f) {
        int bits = Float.floatToIntBits(f);
        int sign = (bits >>> 16) & 0x8000;
        int exp = ((bits >>> 23) & 0xFF) - 127 + 15;
        int mant = bits & 0x7FFFFF;
        if (exp >= 0x1F) {
            return (short) (sign | 0x7C00 | (Float.isNaN(f) ? 0x200 : 0));
        }
        if (exp <= 0) {
            if (exp < -10) {
                return (short) sign;
            }
            mant |= 0x800000;
            int shift = 14 - exp;
            int half = mant >> shift;
            int rem = mant & ((1 << shift) - 1);
            int mid = 1 << (shift - 1);
            if (rem > mid || (rem == mid && (half & 1) == 1)) {
                half++;
            }
            return (short) (sign | half);
        }
        int half = (exp << 10) | (mant >> 13);
        int rem = mant & 0x1FFF;
        if (rem > 0x1000 || (rem == 0x1000 && (half & 1) == 1)) {
            half++;
        }
        return (short) (sign | half);
    }

    static List<Integer> boxed(int[] xs) {
        List<Integer> out = new ArrayList<>();
        for (int x : xs) {
            out.add(x);
        }
        return out;
    }
}
