import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Repartitioned;

/**
 * Drives KIP-1071 streams groups and a KIP-848 regular-expression group on a Kafka 4.4 broker for
 * {@code test_streams_groups.py}, in one JVM (Kafka Streams with {@code group.protocol=streams},
 * Kafka's consumer with {@code group.protocol=consumer}, Kafka's {@code Admin}).
 *
 * <pre>
 *   StreamsDriver &lt;bootstrap&gt; &lt;state dir&gt; &lt;records&gt;
 * </pre>
 *
 * <p>Topics {@code st-in} (2 partitions, {@code <records>} records round robin) and {@code st-out}
 * (2 partitions).  Then:
 * <ul>
 *   <li>{@code sg-done}: a Streams app {@code st-in -> mapValues -> st-out}; once its committed offsets
 *       reach {@code st-in}'s end offsets it closes (leaves the group: Empty);</li>
 *   <li>{@code sg-live}: {@code st-in -> mapValues -> repartition("rp") -> st-out} (a repartition
 *       topic {@code sg-live-rp-repartition} the broker creates); it keeps running (one member);</li>
 *   <li>{@code rg-848}: a consumer subscribed by the broker-side regular expression
 *       {@code SubscriptionPattern("st-.*")}; reads both topics to their ends, commits, keeps its
 *       membership (no close).</li>
 * </ul>
 * Every wait is bounded polling with a deadline.  Then the truth, tab-separated, ending with {@code END}:
 * <pre>
 *   OFFSETS  group topic partition offset leaderEpoch|null   (listStreamsGroupOffsets / listConsumerGroupOffsets)
 *   DESCRIBE group type state groupEpoch members              (describeStreamsGroups / describeConsumerGroups)
 * </pre>
 * The truth again for each line {@code truth} on stdin; at the end of stdin the JVM halts (the
 * broker is gone by then: nothing is closed, no member leaves).
 */
public final class StreamsDriver {
    static final String IN = "st-in";
    static final String OUT = "st-out";
    static final int PARTITIONS = 2;
    static final List<String> STREAMS_GROUPS = List.of("sg-done", "sg-live");
    static final String REGEX_GROUP = "rg-848";
    static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Path stateDir = Path.of(args[1]);
        int records = Integer.parseInt(args[2]);
        try (Admin admin = admin(bootstrap)) {
            setup(admin, bootstrap, records);
            Map<TopicPartition, Long> inEnds = ends(admin, List.of(IN));

            KafkaStreams done = streams(bootstrap, "sg-done", stateDir, false);
            done.start();
            waitFor("sg-done committed st-in's end offsets", () -> committedAtLeast(admin, "sg-done", inEnds));
            done.close(Duration.ofSeconds(30));
            waitFor("sg-done Empty", () -> "Empty".equals(streamsState(admin, "sg-done")));
            System.out.println("DONE sg-done");

            KafkaStreams live = streams(bootstrap, "sg-live", stateDir, true);
            live.start();
            waitFor("sg-live committed st-in's end offsets", () -> committedAtLeast(admin, "sg-live", inEnds));
            String repartition = "sg-live-rp-repartition";
            waitFor("sg-live committed its repartition topic's end offsets", () -> {
                Map<TopicPartition, Long> rp = ends(admin, List.of(repartition));
                return rp.values().stream().mapToLong(Long::longValue).sum() == records
                    && committedAtLeast(admin, "sg-live", rp);
            });
            waitFor("sg-live Stable", () -> "Stable".equals(streamsState(admin, "sg-live")));
            waitFor("st-out holds both apps' records",
                () -> ends(admin, List.of(OUT)).values().stream().mapToLong(Long::longValue).sum() == 2L * records);
            System.out.println("LIVE sg-live");

            KafkaConsumer<String, String> regex = regexConsumer(bootstrap);
            readToEnds(regex, admin);
            waitFor("rg-848 Stable", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(REGEX_GROUP)).all()
                    .get(30, TimeUnit.SECONDS).get(REGEX_GROUP);
                return "Stable".equals(String.valueOf(d.groupState()));
            });
            System.out.println("REGEX rg-848");

            truth(admin);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.equals("truth")) {
                    truth(admin);
                }
            }
        }
        Runtime.getRuntime().halt(0);
    }

    interface Check {
        boolean ok() throws Exception;
    }

    static void waitFor(String what, Check check) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        Exception last = null;
        while (System.currentTimeMillis() < deadline) {
            try {
                if (check.ok()) {
                    return;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("timed out after " + DEADLINE_MS + " ms waiting for " + what, last);
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static void setup(Admin admin, String bootstrap, int records) throws Exception {
        admin.createTopics(List.of(new NewTopic(IN, PARTITIONS, (short) 1), new NewTopic(OUT, PARTITIONS, (short) 1)))
            .all().get(30, TimeUnit.SECONDS);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(IN, i % PARTITIONS, "k" + i, "v" + i));
            }
            producer.flush();
        }
        System.out.println("PRODUCED " + records);
    }

    static Map<TopicPartition, Long> ends(Admin admin, Collection<String> topics) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (var d : admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS).values()) {
            d.partitions().forEach(p -> specs.put(new TopicPartition(d.name(), p.partition()), OffsetSpec.latest()));
        }
        Map<TopicPartition, Long> out = new HashMap<>();
        admin.listOffsets(specs).all().get(30, TimeUnit.SECONDS).forEach((tp, i) -> out.put(tp, i.offset()));
        return out;
    }

    static Map<TopicPartition, OffsetAndMetadata> streamsOffsets(Admin admin, String group) throws Exception {
        Map<String, ListStreamsGroupOffsetsSpec> spec = Map.of(group, new ListStreamsGroupOffsetsSpec());
        Map<TopicPartition, OffsetAndMetadata> m = admin.listStreamsGroupOffsets(spec).partitionsToOffsetAndMetadata(group)
            .get(30, TimeUnit.SECONDS);
        return m == null ? Map.of() : m;
    }

    static boolean committedAtLeast(Admin admin, String group, Map<TopicPartition, Long> ends) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> m = streamsOffsets(admin, group);
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            OffsetAndMetadata o = m.get(e.getKey());
            if (e.getValue() > 0 && (o == null || o.offset() < e.getValue())) {
                return false;
            }
        }
        return true;
    }

    static String streamsState(Admin admin, String group) throws Exception {
        StreamsGroupDescription d = admin.describeStreamsGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
        return String.valueOf(d.groupState());
    }

    static KafkaStreams streams(String bootstrap, String app, Path stateDir, boolean repartition) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createDirectories(stateDir.resolve(app)).toString());
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.<String, String>stream(IN).mapValues(v -> v.toUpperCase());
        if (repartition) {
            s = s.repartition(Repartitioned.as("rp"));
        }
        s.to(OUT);
        return new KafkaStreams(b.build(), p);
    }

    static KafkaConsumer<String, String> regexConsumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, REGEX_GROUP);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        c.subscribe(new SubscriptionPattern("st-.*"));
        return c;
    }

    /** Poll {@code c} until it has read every record of st-in and st-out, committing as it goes. */
    static void readToEnds(KafkaConsumer<String, String> c, Admin admin) throws Exception {
        Map<TopicPartition, Long> ends = ends(admin, List.of(IN, OUT));
        Map<TopicPartition, Long> next = new HashMap<>();
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (!next.equals(ends)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("rg-848 read " + next + " of " + ends);
            }
            var recs = c.poll(Duration.ofMillis(200));
            for (ConsumerRecord<String, String> r : recs) {
                next.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
            }
            if (!recs.isEmpty()) {
                c.commitSync(Duration.ofSeconds(30));
            }
        }
        c.commitSync(Duration.ofSeconds(30));
    }

    static void truth(Admin admin) throws Exception {
        Comparator<TopicPartition> order = Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);
        for (String g : STREAMS_GROUPS) {
            Map<TopicPartition, OffsetAndMetadata> m = new TreeMap<>(order);
            m.putAll(streamsOffsets(admin, g));
            printOffsets(g, m);
        }
        Map<TopicPartition, OffsetAndMetadata> rm = new TreeMap<>(order);
        rm.putAll(admin.listConsumerGroupOffsets(REGEX_GROUP).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS));
        printOffsets(REGEX_GROUP, rm);
        Map<String, StreamsGroupDescription> sd = admin.describeStreamsGroups(STREAMS_GROUPS).all().get(30, TimeUnit.SECONDS);
        for (String g : STREAMS_GROUPS) {
            StreamsGroupDescription d = sd.get(g);
            System.out.println(String.join("\t", "DESCRIBE", g, "streams", String.valueOf(d.groupState()),
                String.valueOf(d.groupEpoch()), String.valueOf(d.members().size())));
        }
        ConsumerGroupDescription cd = admin.describeConsumerGroups(List.of(REGEX_GROUP)).all().get(30, TimeUnit.SECONDS)
            .get(REGEX_GROUP);
        System.out.println(String.join("\t", "DESCRIBE", REGEX_GROUP, String.valueOf(cd.type()).toLowerCase(),
            String.valueOf(cd.groupState()), cd.groupEpoch().map(String::valueOf).orElse("null"),
            String.valueOf(cd.members().size())));
        System.out.println("END");
        System.out.flush();
    }

    static void printOffsets(String group, Map<TopicPartition, OffsetAndMetadata> m) {
        List<String> lines = new ArrayList<>();
        m.forEach((tp, o) -> lines.add(String.join("\t", "OFFSETS", group, tp.topic(), String.valueOf(tp.partition()),
            o == null ? "null" : String.valueOf(o.offset()),
            o == null ? "null" : o.leaderEpoch().map(String::valueOf).orElse("null"))));
        lines.forEach(System.out::println);
    }
}
