import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives share groups (KIP-932) on a Kafka 4.x broker for {@code test_share_groups.py}, in one JVM,
 * so that the share coordinator writes {@code __share_group_state} and the group coordinator writes
 * the share-group records of {@code __consumer_offsets}.
 *
 * <pre>
 *   ShareDriver &lt;bootstrap&gt; scenario &lt;topic&gt; &lt;partitions&gt; &lt;records&gt;
 *   ShareDriver &lt;bootstrap&gt; truth
 * </pre>
 *
 * <p>scenario: topic {@code <topic>} with the records spread round robin; groups sg-a..sg-d with
 * {@code share.auto.offset.reset=earliest}; sg-a in explicit mode (offset % 7 == 3 REJECT; offset % 5
 * == 0 RELEASE while the delivery count is below 3, then ACCEPT; offset % 11 == 4 RELEASE always;
 * else ACCEPT) until it has seen 120 distinct offsets; sg-b everything (implicit mode); sg-a again
 * for up to 40 distinct offsets, or until nothing more comes (released records come back with
 * higher delivery counts); sg-c everything,
 * then {@code alterShareGroupOffsets(<topic>-0 -> records/4)}; sg-d everything, then
 * {@code deleteShareGroups}.  Ends with the truth.
 *
 * <p>truth: the live share groups ({@code listGroups(forShareGroups())}), then tab-separated lines
 * <pre>
 *   TOPIC    name topicId                                                 (listTopics)
 *   OFFSETS  group topic partition startOffset leaderEpoch|null lag|null   (listShareGroupOffsets)
 *   DESCRIBE group state groupEpoch members                               (describeShareGroups)
 * </pre>
 * Waiting (group empty before alter/delete) is bounded polling with a deadline.
 */
public final class ShareDriver {
    private static final List<String> GROUPS = List.of("sg-a", "sg-b", "sg-c", "sg-d");
    private static final long DEADLINE_MS = 60_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        switch (args[1]) {
            case "scenario" -> {
                scenario(bootstrap, args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                truth(bootstrap);
            }
            case "truth" -> truth(bootstrap);
            default -> throw new IllegalArgumentException("mode " + args[1]);
        }
    }

    private static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    static void scenario(String bootstrap, String topic, int partitions, int records) throws Exception {
        setup(bootstrap, topic, partitions, records);
        consumeA(bootstrap, topic, "sg-a", 120);
        consumeAll(bootstrap, topic, "sg-b", records);
        consumeA(bootstrap, topic, "sg-a", 40);
        consumeAll(bootstrap, topic, "sg-c", records);
        consumeAll(bootstrap, topic, "sg-d", records);
        try (Admin admin = admin(bootstrap)) {
            long alterTo = records / 4;
            retry("alter sg-c", () -> admin.alterShareGroupOffsets("sg-c",
                Map.of(new TopicPartition(topic, 0), alterTo)).all().get(30, TimeUnit.SECONDS));
            System.out.println("ALTERED sg-c " + topic + "-0 startOffset=" + alterTo);
            retry("delete sg-d", () -> admin.deleteShareGroups(List.of("sg-d")).all().get(30, TimeUnit.SECONDS));
            System.out.println("DELETED sg-d");
        }
    }

    interface Step {
        void run() throws Exception;
    }

    /** Run {@code step} until it succeeds (the group may still be leaving: NON_EMPTY_GROUP), bounded. */
    private static void retry(String what, Step step) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (true) {
            try {
                step.run();
                return;
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException(what + " did not succeed in " + DEADLINE_MS + " ms", e);
                }
                System.out.println("RETRY " + what + ": " + e);
                Thread.sleep(200);
            }
        }
    }

    static void setup(String bootstrap, String topic, int partitions, int records) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
            for (String g : GROUPS) {   // share groups start at the latest offset by default
                ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, g);
                admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all().get(30, TimeUnit.SECONDS);
            }
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "2048");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            }
            producer.flush();
        }
        System.out.println("PRODUCED " + records);
    }

    private static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, String ackMode) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "share-driver-" + group);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, ackMode);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "25");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    static void consumeA(String bootstrap, String topic, String group, int maxDistinct) {
        Set<String> seen = new TreeSet<>();
        int acks = 0;
        try (KafkaShareConsumer<String, String> c = consumer(bootstrap, group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            int idle = 0;
            // until maxDistinct offsets, or (something seen) four empty polls in a row: nothing left
            while (seen.size() < maxDistinct && System.currentTimeMillis() < deadline && !(acks > 0 && idle >= 4)) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                if (recs.isEmpty()) {
                    idle++;
                    continue;
                }
                idle = 0;
                for (ConsumerRecord<String, String> r : recs) {
                    short dc = r.deliveryCount().orElse((short) -1);
                    long o = r.offset();
                    AcknowledgeType t;
                    if (o % 7 == 3) {
                        t = AcknowledgeType.REJECT;
                    } else if (o % 5 == 0) {
                        t = dc < 3 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                    } else if (o % 11 == 4) {
                        t = AcknowledgeType.RELEASE;
                    } else {
                        t = AcknowledgeType.ACCEPT;
                    }
                    c.acknowledge(r, t);
                    seen.add(r.partition() + ":" + o);
                    acks++;
                }
                Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofSeconds(30));
                res.forEach((tip, e) -> e.ifPresent(ex -> System.out.println("COMMITERR " + tip + " " + ex)));
            }
        }
        if (seen.isEmpty()) {
            throw new IllegalStateException(group + " saw no record");
        }
        System.out.println("DONE " + group + " distinct=" + seen.size() + " acks=" + acks);
    }

    static void consumeAll(String bootstrap, String topic, String group, int records) {
        Set<String> seen = new TreeSet<>();
        try (KafkaShareConsumer<String, String> c = consumer(bootstrap, group, "implicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (seen.size() < records && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : recs) {
                    seen.add(r.partition() + ":" + r.offset());
                }
                if (!recs.isEmpty()) {
                    c.commitSync(Duration.ofSeconds(30));
                }
            }
        }
        if (seen.size() < records) {
            throw new IllegalStateException(group + " saw " + seen.size() + " of " + records + " records");
        }
        System.out.println("DONE " + group + " distinct=" + seen.size());
    }

    static void truth(String bootstrap) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            List<String> groups = new ArrayList<>();
            for (GroupListing g : admin.listGroups(ListGroupsOptions.forShareGroups()).all().get(30, TimeUnit.SECONDS)) {
                groups.add(g.groupId());
            }
            groups.sort(null);
            System.out.println("GROUPS\t" + String.join("\t", groups));
            for (TopicListing t : admin.listTopics().listings().get(30, TimeUnit.SECONDS)) {
                System.out.println("TOPIC\t" + t.name() + "\t" + t.topicId());
            }
            if (groups.isEmpty()) {
                return;
            }
            Map<String, ListShareGroupOffsetsSpec> specs = new HashMap<>();
            for (String g : groups) {
                specs.put(g, new ListShareGroupOffsetsSpec());
            }
            Map<String, Map<TopicPartition, SharePartitionOffsetInfo>> all =
                admin.listShareGroupOffsets(specs).all().get(30, TimeUnit.SECONDS);
            for (String g : groups) {
                Map<TopicPartition, SharePartitionOffsetInfo> m = new TreeMap<>(
                    (a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition())
                        : a.topic().compareTo(b.topic()));
                m.putAll(all.get(g));
                for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : m.entrySet()) {
                    SharePartitionOffsetInfo i = e.getValue();
                    System.out.println(String.join("\t", "OFFSETS", g, e.getKey().topic(),
                        String.valueOf(e.getKey().partition()),
                        i == null ? "null" : String.valueOf(i.startOffset()),
                        i == null ? "null" : i.leaderEpoch().map(String::valueOf).orElse("null"),
                        i == null ? "null" : i.lag().map(String::valueOf).orElse("null")));
                }
            }
            Map<String, ShareGroupDescription> desc = admin.describeShareGroups(groups).all().get(30, TimeUnit.SECONDS);
            for (String g : groups) {
                ShareGroupDescription d = desc.get(g);
                System.out.println(String.join("\t", "DESCRIBE", g, String.valueOf(d.groupState()),
                    String.valueOf(d.groupEpoch()), String.valueOf(d.members().size())));
            }
        }
    }
}
