/*
 * One group member of `rebalance-monitor simulate`, as a real Java KafkaConsumer.
 *
 * kafka-python has no KIP-848 consumer protocol, so the members of a group.protocol=consumer
 * group are Java consumers (kafka-clients 4.4.0). The simulator compiles this file on first
 * use with javac against .cache/jars/clients (jvm/clients/pom.xml) into .cache/ and starts one
 * JVM per member. It prints the same JSON lines as the Python member
 * (streaming/simulate/member.py), one object per line on stdout:
 *
 *   started     client_id, instance_id, kind ("java"), group_protocol
 *   assignment  member_id, generation (classic: generation id; consumer: member epoch),
 *               partitions [[topic, partition], ...]: whenever one of them changes, checked
 *               after every poll and at the end of every rebalance (onPartitionsAssigned)
 *   revoked / assigned / lost
 *               partitions: the ConsumerRebalanceListener callbacks (incremental under the
 *               consumer protocol and cooperative-sticky, everything under eager assignors)
 *   closed      commits: closed cleanly (committed what it consumed, then a classic member
 *               sent LeaveGroup, a consumer-protocol member its leave heartbeat)
 *   error       message: fatal; exit status 1
 *
 * every line also has event, name, pid and ts_ms (wall clock, ms).
 *
 * SIGTERM and end of stdin close the consumer cleanly; SIGKILL is a crash.
 *
 * Arguments: --bootstrap-server H:P --group G --name N (--topics a,b | --pattern REGEX)
 *   [--client-id ID] [--group-protocol consumer|classic] [--remote-assignor uniform|range]
 *   [--assignor range|roundrobin|sticky|cooperative-sticky] [--instance-id ID]
 *   [--session-timeout-ms MS] [--commit-interval-ms MS] [--poll-ms MS]
 *   [--client-config FILE]  (a .properties file: security.protocol, sasl.*, ssl.*)
 * (--assignor and --session-timeout-ms are classic-protocol settings; a consumer-protocol
 * group takes its session timeout and heartbeat interval from the broker / group config.)
 */

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class SimConsumer {

    private static final PrintStream OUT =
        new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final long PID = ProcessHandle.current().pid();
    private static String name = "?";

    private SimConsumer() {}

    // ------------------------------------------------------------------ JSON output

    private static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    private static List<TopicPartition> sorted(Collection<TopicPartition> tps) {
        List<TopicPartition> list = new ArrayList<>(tps);
        list.sort(Comparator.comparing(TopicPartition::topic)
            .thenComparingInt(TopicPartition::partition));
        return list;
    }

    private static String partitions(Collection<TopicPartition> tps) {
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : sorted(tps)) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('[').append(quote(tp.topic())).append(',').append(tp.partition()).append(']');
        }
        return b.append(']').toString();
    }

    /** One line: event, name, pid, ts_ms, then the given "key": rawJson pairs. */
    private static synchronized void emit(String event, String... fields) {
        StringBuilder b = new StringBuilder("{\"event\":").append(quote(event))
            .append(",\"name\":").append(quote(name))
            .append(",\"pid\":").append(PID)
            .append(",\"ts_ms\":").append(System.currentTimeMillis());
        for (int i = 0; i + 1 < fields.length; i += 2) {
            b.append(',').append(quote(fields[i])).append(':').append(fields[i + 1]);
        }
        OUT.println(b.append('}'));
    }

    // ------------------------------------------------------------------ arguments

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --option value, got " + args[i]);
            }
            opts.put(args[i].substring(2), args[++i]);
        }
        for (String required : List.of("bootstrap-server", "group", "name")) {
            if (!opts.containsKey(required)) {
                throw new IllegalArgumentException("missing --" + required);
            }
        }
        if (opts.containsKey("topics") == opts.containsKey("pattern")) {
            throw new IllegalArgumentException("give exactly one of --topics and --pattern");
        }
        return opts;
    }

    private static String assignorClass(String assignor) {
        switch (assignor) {
            case "range": return "org.apache.kafka.clients.consumer.RangeAssignor";
            case "roundrobin": return "org.apache.kafka.clients.consumer.RoundRobinAssignor";
            case "sticky": return "org.apache.kafka.clients.consumer.StickyAssignor";
            case "cooperative-sticky":
                return "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default: throw new IllegalArgumentException("unknown assignor " + assignor);
        }
    }

    private static Properties config(Map<String, String> opts) {
        Properties props = new Properties();
        if (opts.containsKey("client-config")) {  // the security settings, a 0600 file
            try (Reader in = Files.newBufferedReader(Path.of(opts.get("client-config")),
                    StandardCharsets.UTF_8)) {
                props.load(in);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        String protocol = opts.getOrDefault("group-protocol", "consumer");
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap-server"));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, opts.get("group"));
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, opts.getOrDefault("client-id", name));
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        if (opts.containsKey("instance-id")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, opts.get("instance-id"));
        }
        if (protocol.equals("consumer")) {
            if (opts.containsKey("remote-assignor")) {
                props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, opts.get("remote-assignor"));
            }
        } else {
            int session = Integer.parseInt(opts.getOrDefault("session-timeout-ms", "10000"));
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, String.valueOf(session));
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                String.valueOf(Math.max(100, Math.min(1000, session / 4))));
            props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                assignorClass(opts.getOrDefault("assignor", "range")));
        }
        return props;
    }

    // ------------------------------------------------------------------ main loop

    /** An "assignment" line if the member id, generation or partitions changed. */
    private static void report(KafkaConsumer<byte[], byte[]> consumer,
                               AtomicReference<String> last) {
        ConsumerGroupMetadata meta = consumer.groupMetadata();
        String memberId = meta.memberId();
        if (memberId == null || memberId.isEmpty() || meta.generationId() < 1) {
            return;
        }
        List<TopicPartition> assigned = sorted(consumer.assignment());
        String snapshot = memberId + "/" + meta.generationId() + "/" + assigned;
        if (!Objects.equals(snapshot, last.getAndSet(snapshot))) {
            emit("assignment",
                "member_id", quote(memberId),
                "generation", String.valueOf(meta.generationId()),
                "partitions", partitions(assigned));
        }
    }

    public static void main(String[] args) {
        Map<String, String> opts;
        try {
            opts = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("SimConsumer: " + e.getMessage());
            System.exit(2);
            return;
        }
        name = opts.get("name");
        AtomicBoolean stop = new AtomicBoolean(false);
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger commits = new AtomicInteger();
        long commitIntervalMs = Long.parseLong(opts.getOrDefault("commit-interval-ms", "1000"));
        Duration poll = Duration.ofMillis(Long.parseLong(opts.getOrDefault("poll-ms", "100")));

        emit("started",
            "client_id", quote(opts.getOrDefault("client-id", name)),
            "instance_id", quote(opts.get("instance-id")),
            "kind", quote("java"),
            "group_protocol", quote(opts.getOrDefault("group-protocol", "consumer")));

        int status = 0;
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config(opts));
        Runnable requestStop = () -> {
            if (stop.compareAndSet(false, true)) {
                consumer.wakeup();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            requestStop.run();
            try {
                done.await(15, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "sim-shutdown"));
        Thread stdinWatcher = new Thread(() -> {
            byte[] buf = new byte[4096];
            try (InputStream in = System.in) {
                while (in.read(buf) >= 0) {
                    // the simulator never writes; end of input means it closed the pipe
                }
            } catch (IOException e) {
                // treated as end of input
            }
            requestStop.run();
        }, "sim-stdin");
        stdinWatcher.setDaemon(true);
        stdinWatcher.start();

        AtomicReference<String> last = new AtomicReference<>();
        boolean classic = opts.getOrDefault("group-protocol", "consumer").equals("classic");
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                if (!revoked.isEmpty()) {
                    emit("revoked", "partitions", partitions(revoked));
                }
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                if (!assigned.isEmpty()) {
                    emit("assigned", "partitions", partitions(assigned));
                }
                // classic protocol: called at the end of every rebalance, even with nothing
                // new, with the generation already set: the member's assignment of this
                // generation, even if the next one begins before poll returns (a cooperative
                // follow-up round). The consumer protocol updates the member epoch only after
                // this callback: its lines come from the poll loop.
                if (classic) {
                    report(consumer, last);
                }
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> lost) {
                if (!lost.isEmpty()) {
                    emit("lost", "partitions", partitions(lost));
                }
            }
        };

        try {
            if (opts.containsKey("topics")) {
                consumer.subscribe(Arrays.asList(opts.get("topics").split(",")), listener);
            } else if (opts.getOrDefault("group-protocol", "consumer").equals("consumer")) {
                consumer.subscribe(new SubscriptionPattern(opts.get("pattern")), listener);
            } else {
                consumer.subscribe(Pattern.compile(opts.get("pattern")), listener);
            }
            long nextCommit = System.currentTimeMillis() + commitIntervalMs;
            while (!stop.get()) {
                try {
                    consumer.poll(poll);
                } catch (WakeupException e) {
                    break;
                }
                report(consumer, last);
                if (!consumer.assignment().isEmpty()
                        && System.currentTimeMillis() >= nextCommit) {
                    nextCommit = System.currentTimeMillis() + commitIntervalMs;
                    consumer.commitAsync((offsets, error) -> {
                        if (error == null) {
                            commits.incrementAndGet();
                        }
                    });
                }
            }
        } catch (RuntimeException e) {
            emit("error", "message", quote(e.getClass().getSimpleName() + ": " + e.getMessage()));
            status = 1;
        }
        if (status == 0 && !consumer.assignment().isEmpty()) {
            try {
                // a clean shutdown commits what it consumed, as applications do
                consumer.commitSync(Duration.ofSeconds(5));
                commits.incrementAndGet();
            } catch (RuntimeException e) {
                // fenced or rebalancing: close() still leaves the group
            }
        }
        try {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
        } catch (RuntimeException e) {
            // closing after an error: nothing more to report
        }
        if (status == 0) {
            emit("closed", "commits", String.valueOf(commits.get()));
        }
        done.countDown();
        if (status != 0 && !stop.get()) {
            System.exit(status); // never from inside a shutdown (SIGTERM): that would block
        }
    }
}
