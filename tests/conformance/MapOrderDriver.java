import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The key order of the two hash maps DumpLogSegments keeps its end-of-run reports in, for the model
 * of klogs dump to be checked against (kafka_format/cli/jvm_maps.py).
 *
 * <p>Reads key lists from stdin (one key a line, each list ended by a line {@code --}); for each list
 * fills a {@code java.util.HashMap} with {@code computeIfAbsent} and a Scala 2.13
 * {@code mutable.HashMap} with {@code put}, one call per line, and prints their keys in iteration
 * order: a line {@code J<TAB>key<TAB>key...}, then {@code S<TAB>...}.
 */
public final class MapOrderDriver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        List<String> keys = new ArrayList<>();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.equals("--")) {
                print(keys, out);
                keys.clear();
            } else {
                keys.add(line);
            }
        }
    }

    private static void print(List<String> keys, PrintStream out) {
        Map<String, Object> java = new HashMap<>();
        scala.collection.mutable.HashMap<String, Object> scalaMap = new scala.collection.mutable.HashMap<>();
        for (String key : keys) {
            java.computeIfAbsent(key, k -> new ArrayList<Object>());
            scalaMap.put(key, "");
        }
        StringBuilder j = new StringBuilder("J");
        java.forEach((k, v) -> j.append('\t').append(k));
        out.println(j);
        StringBuilder s = new StringBuilder("S");
        scala.collection.Iterator<scala.Tuple2<String, Object>> it = scalaMap.iterator();
        while (it.hasNext()) {
            s.append('\t').append(it.next()._1());
        }
        out.println(s);
    }
}
