import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer of Kafka's own client joining a group with the consumer rebalance protocol (KIP-848,
 * {@code group.protocol=consumer}), which kafka-python cannot speak: it subscribes to a topic, polls
 * until the coordinator has assigned it every partition, commits the given offsets, and leaves.
 *
 * <p>Usage: {@code GroupsDriver <bootstrap> <group> <topic> <offset of partition 0> [<offset of 1> ...]}.
 * Prints {@code ASSIGNED <n>} then {@code COMMITTED} on stdout.
 */
public final class GroupsDriver {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "groups-driver");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        int partitions = args.length - 3;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (consumer.assignment().size() < partitions) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("not assigned " + partitions + " partitions: " + consumer.assignment());
                }
                consumer.poll(Duration.ofMillis(200));
            }
            System.out.println("ASSIGNED " + consumer.assignment().size());
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                offsets.put(new TopicPartition(topic, p), new OffsetAndMetadata(Long.parseLong(args[3 + p]), "kip848"));
            }
            consumer.commitSync(offsets);
            System.out.println("COMMITTED");
        }
    }
}
