import java.io.BufferedReader;
import java.io.FileReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs Kafka's DumpLogSegments many times in one JVM (a JVM start costs 1-2 s).
 *
 * <p>Usage: {@code DumpDriver <tool class> <jobs file>}; each line of the jobs file is one run's
 * arguments, tab-separated.  Before each run a marker line {@code ##KLOGS-RUN <n>} goes to stdout
 * (after a newline, so one empty line ends each run's stdout) and stderr; an exception escaping the tool is printed as the JVM would print it (its first line
 * only) and the next run starts; each run ends with {@code ##KLOGS-EXIT <0 or 1>} on stderr.
 */
public final class DumpDriver {
    public static void main(String[] args) throws Exception {
        Method tool = Class.forName(args[0]).getMethod("main", String[].class);
        List<String[]> jobs = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new FileReader(args[1]))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.isEmpty()) {
                    jobs.add(line.split("\t"));
                }
            }
        }
        for (int n = 0; n < jobs.size(); n++) {
            // a run that died mid-line leaves its line open: the marker starts on a line of its own
            System.out.println("\n##KLOGS-RUN " + n);
            System.err.println("##KLOGS-RUN " + n);
            int status = 0;
            try {
                tool.invoke(null, (Object) jobs.get(n));
            } catch (InvocationTargetException e) {
                status = 1;
                System.out.flush();
                System.err.println("Exception in thread \"main\" " + e.getCause());
            }
            System.out.flush();
            System.err.println("##KLOGS-EXIT " + status);
            System.err.flush();
        }
    }
}
