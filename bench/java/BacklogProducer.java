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
 *       --bootstrap-server H:P --input FILE [--topic __consumer_offsets] [--paced]
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
 *
 * Paced mode (bench/live.py): "--input -" reads the records from stdin as the writer
 * produces them, and "--paced" sends each record no earlier than its timestamp (wall clock,
 * Unix ms): the writer streams records stamped with the moment they are due, a little ahead
 * of time, and record time is wall time. Two more kinds of stdout line, for the writer:
 *
 *   progress <unix ms> acked=<N> sent=<N> behind_ms=<M>   about once a second; M: the most
 *                                                         any record of that second was sent
 *                                                         after its timestamp
 *   marked <n> sent_ms=<unix ms> acked_ms=<unix ms>      the n-th (from 0) marked record
 *                                                         was acknowledged
 *
 * A record is marked by a negative partition in the input: -1 - p means partition p.
 */

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
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
        boolean paced = false;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--paced")) {
                paced = true;
                continue;
            }
            if (i + 1 >= args.length) {
                usage("no value for " + args[i]);
            }
            switch (args[i]) {
                case "--bootstrap-server" -> bootstrap = args[++i];
                case "--input" -> input = args[++i];
                case "--topic" -> topic = args[++i];
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
        long marked = 0;
        long behindMs = 0;
        long nextProgress = System.currentTimeMillis() + 1000;
        long started = System.nanoTime();
        InputStream source = input.equals("-") ? System.in : new FileInputStream(input);
        try (KafkaProducer<byte[], byte[]> producer =
                        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
                DataInputStream in = new DataInputStream(new BufferedInputStream(source, 1 << 20))) {
            while (failure.get() == null) {
                int partition;
                try {
                    partition = in.readInt();
                } catch (EOFException end) {
                    break;
                }
                long timestamp = in.readLong();
                long marker = -1;
                if (partition < 0) {
                    partition = -1 - partition;
                    marker = marked++;
                }
                long now = System.currentTimeMillis();
                if (paced) {
                    while (now < timestamp) {
                        Thread.sleep(timestamp - now);
                        now = System.currentTimeMillis();
                    }
                    behindMs = Math.max(behindMs, now - timestamp);
                }
                if (now >= nextProgress) {
                    emit(String.format("progress %d acked=%d sent=%d behind_ms=%d",
                            now, acked.get(), sent, behindMs));
                    behindMs = 0;
                    nextProgress = now + 1000;
                }
                byte[] key = new byte[in.readInt()];
                in.readFully(key);
                int valueLength = in.readInt();
                byte[] value = null;
                if (valueLength >= 0) {
                    value = new byte[valueLength];
                    in.readFully(value);
                }
                long id = marker;
                long sentMs = now;
                producer.send(
                        new ProducerRecord<>(topic, partition, timestamp, key, value),
                        (metadata, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                            } else {
                                acked.incrementAndGet();
                                if (id >= 0) {
                                    emit(String.format("marked %d sent_ms=%d acked_ms=%d",
                                            id, sentMs, System.currentTimeMillis()));
                                }
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

    private static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void usage(String message) {
        System.err.println("error: " + message
                + "\nusage: BacklogProducer --bootstrap-server H:P --input FILE|- [--topic T] [--paced]");
        System.exit(2);
    }
}
