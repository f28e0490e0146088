package edgepart.bundlecore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Typed, checked access to one JSON object of a bundle file, with the JSON path in every error.
 *
 * <p>This is the hand-written part of the bundle JSON Schemas the demo relies on (required keys,
 * types, minimums, patterns, enums, no unknown keys where the schema forbids them); messages
 * follow the {@code jsonschema} wording edgepart's Python loader prints.
 */
final class Doc {
    private final Map<String, Object> map;
    private final String where;
    private final String path;
    private final String schema;

    private Doc(Map<String, Object> map, String where, String path, String schema) {
        this.map = map;
        this.where = where;
        this.path = path;
        this.schema = schema;
    }

    /** The top-level object of a file ({@code where} names the file). */
    @SuppressWarnings("unchecked")
    static Doc root(Object v, String where, String schema) {
        if (!(v instanceof Map)) {
            throw new BundleException(where + ": expected a JSON object, found " + pyType(v));
        }
        return new Doc((Map<String, Object>) v, where, "$", schema);
    }

    Map<String, Object> map() {
        return map;
    }

    boolean has(String key) {
        return map.containsKey(key);
    }

    Object raw(String key) {
        return map.get(key);
    }

    /** Refuse keys outside {@code allowed} (the schema's {@code additionalProperties: false}). */
    void onlyKeys(String... allowed) {
        Set<String> ok = new HashSet<>(Arrays.asList(allowed));
        for (String k : map.keySet()) {
            if (!ok.contains(k)) {
                throw fail(path, "Additional properties are not allowed (" + Json.repr(k)
                        + " was unexpected)");
            }
        }
    }

    /** Every key must be present (the schema's {@code required}). */
    void require(String... keys) {
        for (String k : keys) {
            need(k);
        }
    }

    private Object need(String key) {
        if (!map.containsKey(key)) {
            throw fail(path, Json.repr(key) + " is a required property");
        }
        return map.get(key);
    }

    String str(String key) {
        Object v = need(key);
        if (!(v instanceof String)) {
            throw typeError(key, v, "'string'");
        }
        return (String) v;
    }

    String strOrNull(String key) {
        Object v = need(key);
        if (v != null && !(v instanceof String)) {
            throw typeError(key, v, "'string', 'null'");
        }
        return (String) v;
    }

    String str(String key, Pattern pattern) {
        String s = str(key);
        if (!pattern.matcher(s).matches()) {
            throw fail(at(key), Json.repr(s) + " does not match " + Json.repr(pattern.pattern()));
        }
        return s;
    }

    String oneOf(String key, List<String> values) {
        String s = str(key);
        if (!values.contains(s)) {
            throw fail(at(key), Json.repr(s) + " is not one of " + Json.repr(values));
        }
        return s;
    }

    long integer(String key, long min) {
        Object v = need(key);
        if (!isInteger(v)) {
            throw typeError(key, v, "'integer'");
        }
        return checkMin(key, ((Number) v).longValue(), min);
    }

    Long integerOrNull(String key, long min) {
        Object v = need(key);
        if (v == null) {
            return null;
        }
        if (!isInteger(v)) {
            throw typeError(key, v, "'integer', 'null'");
        }
        return checkMin(key, ((Number) v).longValue(), min);
    }

    Doc obj(String key) {
        Object v = need(key);
        if (!(v instanceof Map)) {
            throw typeError(key, v, "'object'");
        }
        return child(key, v);
    }

    /** An optional object: absent or {@code null} gives {@code null}. */
    Doc objOrNull(String key) {
        Object v = map.get(key);
        if (v == null) {
            return null;
        }
        if (!(v instanceof Map)) {
            throw typeError(key, v, "'object', 'null'");
        }
        return child(key, v);
    }

    List<Object> list(String key) {
        Object v = need(key);
        if (!(v instanceof List)) {
            throw typeError(key, v, "'array'");
        }
        @SuppressWarnings("unchecked")
        List<Object> out = (List<Object>) v;
        return out;
    }

    List<Doc> objects(String key, int minItems) {
        List<Object> items = list(key);
        if (items.size() < minItems) {
            throw fail(at(key), (items.isEmpty() ? "[]" : "the list")
                    + " should be non-empty");
        }
        List<Doc> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            Object v = items.get(i);
            String p = at(key) + "[" + i + "]";
            if (!(v instanceof Map)) {
                throw fail(p, shortRepr(v) + " is not of type 'object'");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> m = (Map<String, Object>) v;
            out.add(new Doc(m, where, p, schema));
        }
        return out;
    }

    int[] ints(String key, long min) {
        List<Object> items = list(key);
        int[] out = new int[items.size()];
        for (int i = 0; i < out.length; i++) {
            Object v = items.get(i);
            String p = at(key) + "[" + i + "]";
            if (!isInteger(v)) {
                throw fail(p, shortRepr(v) + " is not of type 'integer'");
            }
            long x = ((Number) v).longValue();
            if (x < min) {
                throw fail(p, x + " is less than the minimum of " + min);
            }
            out[i] = (int) x;
        }
        return out;
    }

    int[] intsOrNull(String key, long min) {
        return need(key) == null ? null : ints(key, min);
    }

    List<String> strings(String key) {
        List<Object> items = list(key);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            Object v = items.get(i);
            if (!(v instanceof String)) {
                throw fail(at(key) + "[" + i + "]", shortRepr(v) + " is not of type 'string'");
            }
            out.add((String) v);
        }
        return out;
    }

    boolean bool(String key) {
        Object v = need(key);
        if (!(v instanceof Boolean)) {
            throw typeError(key, v, "'boolean'");
        }
        return (Boolean) v;
    }

    /** A number (integer or float) at least {@code min}, or {@code null}. */
    Double numberOrNull(String key, double min) {
        Object v = need(key);
        if (v == null) {
            return null;
        }
        if (!(v instanceof Long || v instanceof Double)) {
            throw typeError(key, v, "'number', 'null'");
        }
        double x = ((Number) v).doubleValue();
        if (x < min) {
            throw fail(at(key), Json.repr(v) + " is less than the minimum of "
                    + (min == Math.rint(min) ? Long.toString((long) min) : Double.toString(min)));
        }
        return x;
    }

    /** Items each a string or {@code null}. */
    List<String> stringsOrNulls(String key) {
        List<Object> items = list(key);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            Object v = items.get(i);
            if (v != null && !(v instanceof String)) {
                throw fail(at(key) + "[" + i + "]", shortRepr(v) + " is not of type 'string', "
                        + "'null'");
            }
            out.add((String) v);
        }
        return out;
    }

    /** The value must equal {@code want} (the schema's {@code const}). */
    void constant(String key, Object want) {
        Object v = need(key);
        if (want instanceof Long ? !(isInteger(v) && ((Number) v).longValue() == (Long) want)
                : !want.equals(v)) {
            throw fail(at(key), Json.repr(want) + " was expected");
        }
    }

    /** An error about the whole file (no JSON path, no schema: a cross-check). */
    BundleException error(String msg) {
        return new BundleException(where + ": " + msg);
    }

    BundleException fail(String jsonPath, String msg) {
        if (msg.length() > 160) {
            msg = msg.substring(0, 157) + "...";
        }
        return new BundleException(where + ": " + jsonPath + ": " + msg + " (schema " + schema
                + ")");
    }

    String at(String key) {
        return path + "." + key;
    }

    private Doc child(String key, Object v) {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) v;
        return new Doc(m, where, at(key), schema);
    }

    private long checkMin(String key, long v, long min) {
        if (v < min) {
            throw fail(at(key), v + " is less than the minimum of " + min);
        }
        return v;
    }

    private BundleException typeError(String key, Object v, String types) {
        return fail(at(key), shortRepr(v) + " is not of type " + types);
    }

    static boolean isInteger(Object v) {
        if (v instanceof Long) {
            return true;
        }
        // JSON Schema counts 2.0 as an integer
        return v instanceof Double && ((Double) v) == Math.rint((Double) v)
                && !Double.isInfinite((Double) v);
    }

    private static String shortRepr(Object v) {
        if (v instanceof Map) {
            return "{...}";
        }
        return Json.repr(v);
    }

    static String pyType(Object v) {
        if (v == null) {
            return "NoneType";
        }
        if (v instanceof List) {
            return "list";
        }
        if (v instanceof String) {
            return "str";
        }
        if (v instanceof Boolean) {
            return "bool";
        }
        if (v instanceof Long) {
            return "int";
        }
        if (v instanceof Double) {
            return "float";
        }
        return "dict";
    }
}
