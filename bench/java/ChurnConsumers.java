/*
 * Many classic-protocol group members in one JVM, joined and closed on command, for
 * bench/footprint.py: they make the groups a watcher is measured against rebalance.
 *
 * bench/footprint.py compiles this file on first use with javac against .cache/jars/clients
 * (jvm/clients/pom.xml) into .cache/bench-classes and runs one JVM:
 *
 *   java -cp .cache/bench-classes/<hash>:.cache/jars/clients/* ChurnConsumers \
 *       --bootstrap-server H:P [--client-prefix P]
 *
 * Commands, one a line on stdin:
 *
 *   prepare <group> <topic>   build the group's KafkaConsumer (no request yet), so that many
 *                             members can join at the same moment without each paying for
 *                             its construction then
 *   join <group> <topic>      subscribe to the topic and poll: the member joins the group
 *                             (Empty -> PreparingRebalance -> CompletingRebalance -> Stable)
 *   leave <group>             close the consumer: LeaveGroup, the group goes back to Empty
 *   stats                     print a stats line
 *   quit                      close every member, then exit 0 (so does the end of stdin)
 *
 * Lines on stdout:
 *
 *   ready
 *   joined <group> <ms>       its partitions were assigned, <ms> after the join command
 *   left <group> <ms>         closed, <ms> after the leave command
 *   error <group> <message>   that member failed (closed); the JVM keeps running
 *   stats live=<members> peak=<most at once> threads=<live threads> heap=<bytes used>
 *
 * Each member: client.id <prefix><group>, group.protocol=classic, the client's defaults
 * otherwise (session.timeout.ms 45 s, heartbeat.interval.ms 3 s), auto-commit off (the
 * group's committed offsets stay as they are). Its assigned partitions are paused at once:
 * a member fetches no records, its requests are those of group membership. One thread per
 * member (a small stack) polls it; its heartbeats come from the client's heartbeat thread.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ChurnConsumers {

    private static final PrintStream OUT =
        new PrintStream(System.out, true, StandardCharsets.UTF_8);
    private static final long STACK_BYTES = 512 * 1024;

    private static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();
    private static final AtomicInteger LIVE = new AtomicInteger();
    private static final AtomicInteger PEAK = new AtomicInteger();

    private ChurnConsumers() {}

    private static void say(String line) {
        synchronized (OUT) {
            OUT.println(line);
        }
    }

    /** One group member: its consumer and the thread that polls it. */
    private static final class Member implements Runnable {
        final String group;
        final String topic;
        final KafkaConsumer<byte[], byte[]> consumer;
        final CountDownLatch joinCommand = new CountDownLatch(1);
        final Thread thread;
        volatile long joinAtNs;
        volatile long leaveAtNs;
        volatile boolean leaving;
        boolean joinedSaid;

        Member(String bootstrap, String clientPrefix, String group, String topic) {
            this.group = group;
            this.topic = topic;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientPrefix + group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
            this.consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.thread = new Thread(null, this, "member-" + group, STACK_BYTES);
            this.thread.setDaemon(true);
        }

        @Override
        public void run() {
            try {
                joinCommand.await();
                if (!leaving) {
                    consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                        @Override
                        public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

                        @Override
                        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                            consumer.pause(parts);
                            if (!joinedSaid) {
                                joinedSaid = true;
                                long ms = (System.nanoTime() - joinAtNs) / 1_000_000;
                                say("joined " + group + " " + ms);
                            }
                        }
                    });
                    while (!leaving) {
                        try {
                            consumer.poll(Duration.ofMillis(1000));
                        } catch (WakeupException e) {
                            // leave: the loop's condition ends it
                        }
                    }
                }
                consumer.close();
                say("left " + group + " " + (System.nanoTime() - leaveAtNs) / 1_000_000);
            } catch (Exception e) {
                String msg = String.valueOf(e).replace('\n', ' ');
                try {
                    consumer.close(Duration.ZERO);
                } catch (Exception ignored) {
                    // already failing: the error line says why
                }
                say("error " + group + " " + msg);
            } finally {
                MEMBERS.remove(group, this);
                LIVE.decrementAndGet();
            }
        }

        void join() {
            joinAtNs = System.nanoTime();
            joinCommand.countDown();
        }

        void leave() {
            leaveAtNs = System.nanoTime();
            leaving = true;
            joinCommand.countDown();
            consumer.wakeup();
        }
    }

    private static Member prepare(String bootstrap, String prefix, String group, String topic) {
        Member m = MEMBERS.get(group);
        if (m != null && !m.leaving) {
            return m;
        }
        m = new Member(bootstrap, prefix, group, topic);
        MEMBERS.put(group, m);
        PEAK.accumulateAndGet(LIVE.incrementAndGet(), Math::max);
        m.thread.start();
        return m;
    }

    private static void stats() {
        Runtime rt = Runtime.getRuntime();
        say("stats live=" + LIVE.get() + " peak=" + PEAK.get() + " threads="
            + Thread.activeCount() + " heap=" + (rt.totalMemory() - rt.freeMemory()));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = null;
        String prefix = "footprint-churn-";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap-server" -> bootstrap = args[++i];
                case "--client-prefix" -> prefix = args[++i];
                default -> {
                    System.err.println("error: unknown argument " + args[i]);
                    System.exit(2);
                }
            }
        }
        if (bootstrap == null) {
            System.err.println("error: --bootstrap-server is required");
            System.exit(2);
        }
        say("ready");
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) {
                continue;
            }
            try {
                switch (w[0]) {
                    case "prepare" -> prepare(bootstrap, prefix, arg(w, 1), arg(w, 2));
                    case "join" -> prepare(bootstrap, prefix, arg(w, 1), arg(w, 2)).join();
                    case "leave" -> {
                        Member m = MEMBERS.get(arg(w, 1));
                        if (m == null) {
                            say("error " + w[1] + " leave: no such member");
                        } else {
                            m.leave();
                        }
                    }
                    case "stats" -> stats();
                    case "quit" -> {
                        quit();
                        return;
                    }
                    default -> say("error - unknown command: " + line);
                }
            } catch (RuntimeException e) {  // a bad command, a consumer that cannot be built
                String group = w.length > 1 ? w[1] : "-";
                say("error " + group + " " + String.valueOf(e).replace('\n', ' '));
            }
        }
        quit();
    }

    private static String arg(String[] words, int i) {
        if (words.length <= i) {
            throw new IllegalArgumentException("missing argument " + i + " in: "
                + String.join(" ", words));
        }
        return words[i];
    }

    private static void quit() throws InterruptedException {
        List<Member> all = new ArrayList<>(MEMBERS.values());
        for (Member m : all) {
            m.leave();
        }
        for (Member m : all) {
            m.thread.join(60_000);
        }
        stats();
    }
}
