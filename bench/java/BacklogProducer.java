/*
 * Writes a prepared backlog to Kafka's own __consumer_offsets, for bench/steady.py.
 *
 * Clients may not produce to an internal topic, with one exception the broker keeps for its
 * own tools: a producer whose client.id is "__admin_client". Kafka 4.4.0 accepts that from the
 * Java producer; kafka-python cannot (it refuses to send without the internal topic's
 * metadata). bench/steady.py compiles this file on first use with javac against
 * .cache/jars/clients (jvm/clients/pom.xml) into .cache/bench-classes, writes the records to a
 * file and runs one JVM:
 *
 *   java -cp .cache/bench-classes:.cache/jars/clients/* BacklogProducer \
 *       --bootstrap-server H:P --input FILE [--topic __consumer_offsets]
 *
 * The input file is a sequence of records, big-endian, each
 *
 *   int32 partition, int64 timestamp_ms, int32 key length, key bytes,
 *   int32 value length (-1: null value, a tombstone), value bytes
 *
 * (binary rather than hex lines: 10,000 groups are six million records). Each record goes
 * to its partition as is (the coordinator partition of its group, chosen by the Python side),
 * with its timestamp, in file order. The producer is idempotent (acks=all), so a retried batch
 * never lands after a later one and every group's records keep their order.
 *
 * Prints one line on stdout, "sent N records in S s", and exits 0; any failed send prints
 * "error: ..." on stderr and exits 1.
 */

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class BacklogProducer {
    private BacklogProducer() {}

    public static void main(String[] args) throws IOException, InterruptedException {
        String bootstrap = null;
        String input = null;
        String topic = "__consumer_offsets";
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--bootstrap-server" -> bootstrap = args[i + 1];
                case "--input" -> input = args[i + 1];
                case "--topic" -> topic = args[i + 1];
                default -> usage("unknown argument " + args[i]);
            }
        }
        if (bootstrap == null || input == null) {
            usage("--bootstrap-server and --input are required");
        }

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // the one client id the broker lets write to an internal topic
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "__admin_client");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(512 * 1024));
        props.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(128L * 1024 * 1024));
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "600000");
        // a loaded 2-core machine may take minutes for millions of records: no expiry
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "300000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "1800000");

        AtomicLong acked = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        long sent = 0;
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer =
                        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
                DataInputStream in = new DataInputStream(
                        new BufferedInputStream(new FileInputStream(input), 1 << 20))) {
            while (failure.get() == null) {
                int partition;
                try {
                    partition = in.readInt();
                } catch (EOFException end) {
                    break;
                }
                long timestamp = in.readLong();
                byte[] key = new byte[in.readInt()];
                in.readFully(key);
                int valueLength = in.readInt();
                byte[] value = null;
                if (valueLength >= 0) {
                    value = new byte[valueLength];
                    in.readFully(value);
                }
                producer.send(
                        new ProducerRecord<>(topic, partition, timestamp, key, value),
                        (metadata, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                            } else {
                                acked.incrementAndGet();
                            }
                        });
                sent++;
            }
            producer.flush();
        }
        Exception error = failure.get();
        if (error != null || acked.get() != sent) {
            System.err.println("error: " + (error != null ? error : acked.get() + " of " + sent + " acknowledged"));
            System.exit(1);
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.printf("sent %d records in %.1f s%n", sent, seconds);
    }

    private static void usage(String message) {
        System.err.println("error: " + message
                + "\nusage: BacklogProducer --bootstrap-server H:P --input FILE [--topic T]");
        System.exit(2);
    }
}
