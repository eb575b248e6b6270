import java.io.BufferedReader;
import java.io.FileReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka's own admin client asking a broker ListOffsets for every spec, including those kafka-python
 * cannot send (earliest-local -4, latest-tiered -5, earliest-pending-upload -6).
 *
 * <p>Usage: {@code ListOffsetsDriver <bootstrap> <jobs file>}; each line of the jobs file is
 * {@code topic TAB partition TAB spec TAB isolation} (spec: -1 latest, -2 earliest, -3 max
 * timestamp, -4 earliest local, -5 latest tiered, -6 earliest pending upload, else a timestamp;
 * isolation: read_uncommitted or read_committed).  Jobs of the same (spec, isolation) go in one
 * {@code Admin.listOffsets} call.  One line per job on stdout, in the jobs' order:
 * {@code topic TAB partition TAB spec TAB isolation TAB OK TAB offset TAB timestamp TAB leaderEpoch}
 * (leaderEpoch empty when the broker gave none) or {@code ... TAB ERROR TAB <exception>}.
 */
public final class ListOffsetsDriver {
    private static OffsetSpec spec(long value) {
        if (value == -1L) {
            return OffsetSpec.latest();
        } else if (value == -2L) {
            return OffsetSpec.earliest();
        } else if (value == -3L) {
            return OffsetSpec.maxTimestamp();
        } else if (value == -4L) {
            return OffsetSpec.earliestLocal();
        } else if (value == -5L) {
            return OffsetSpec.latestTiered();
        } else if (value == -6L) {
            return OffsetSpec.earliestPendingUpload();
        }
        return OffsetSpec.forTimestamp(value);
    }

    public static void main(String[] args) throws Exception {
        List<String[]> jobs = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new FileReader(args[1]))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.isEmpty()) {
                    jobs.add(line.split("\t"));
                }
            }
        }
        // (spec, isolation) -> the partitions asked with it
        Map<String, List<TopicPartition>> groups = new LinkedHashMap<>();
        for (String[] job : jobs) {
            groups.computeIfAbsent(job[2] + "\t" + job[3], k -> new ArrayList<>())
                  .add(new TopicPartition(job[0], Integer.parseInt(job[1])));
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        Map<String, String> answers = new HashMap<>();
        try (Admin admin = Admin.create(props)) {
            for (Map.Entry<String, List<TopicPartition>> group : groups.entrySet()) {
                String[] key = group.getKey().split("\t");
                long value = Long.parseLong(key[0]);
                IsolationLevel isolation = "read_committed".equals(key[1])
                        ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED;
                Map<TopicPartition, OffsetSpec> ask = new LinkedHashMap<>();
                for (TopicPartition tp : group.getValue()) {
                    ask.put(tp, spec(value));
                }
                ListOffsetsResult result = admin.listOffsets(ask, new ListOffsetsOptions(isolation));
                for (TopicPartition tp : group.getValue()) {
                    String answer;
                    try {
                        ListOffsetsResult.ListOffsetsResultInfo info =
                                result.partitionResult(tp).get(60, TimeUnit.SECONDS);
                        answer = "OK\t" + info.offset() + "\t" + info.timestamp() + "\t"
                                + info.leaderEpoch().map(String::valueOf).orElse("");
                    } catch (ExecutionException e) {
                        answer = "ERROR\t" + e.getCause();
                    }
                    answers.put(tp.topic() + "\t" + tp.partition() + "\t" + group.getKey(), answer);
                }
            }
        }
        StringBuilder out = new StringBuilder();
        for (String[] job : jobs) {
            String k = String.join("\t", job);
            out.append(k).append('\t').append(answers.get(k)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }
}
