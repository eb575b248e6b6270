import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.kafka.server.log.remote.metadata.storage.serialization.RemoteLogMetadataSerde;
import org.apache.kafka.server.log.remote.storage.RemoteLogMetadata;

/**
 * Kafka's own {@code RemoteLogMetadataSerde} on record values, for the encoder of
 * kafka_format/internal/remote_log_metadata.py to be checked against.
 *
 * <p>Reads one hex-encoded value a line from stdin; for each prints {@code OK<TAB>hex of
 * serialize(deserialize(value))<TAB>toString()}, or {@code ERROR<TAB>exception class<TAB>message}.
 */
public final class RemoteLogMetadataSerdeDriver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, "UTF-8");
        RemoteLogMetadataSerde serde = new RemoteLogMetadataSerde();
        HexFormat hex = HexFormat.of();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            try {
                RemoteLogMetadata metadata = serde.deserialize(hex.parseHex(line.trim()));
                out.println("OK\t" + hex.formatHex(serde.serialize(metadata)) + "\t" + metadata);
            } catch (Exception e) {
                out.println("ERROR\t" + e.getClass().getName() + "\t" + e.getMessage());
            }
        }
    }
}
