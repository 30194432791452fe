// The oracle of the conformance tests and of bench/assignors.py: runs Kafka's own Java
// assignors (kafka-clients, kafka-group-coordinator) on scenario JSON.
//
// Input (stdin), one JSON object per line:
//   {"id": ANY, "strategy": NAME, "scenario": {...scenario JSON...}, "repeat": N (optional),
//    "member_order": "join" (default) | "timeline" (optional, server side)}
// Output (stdout), one JSON object per line:
//   {"id": ANY, "assignment": {member_id: [[topic, partition], ...]}, "elapsed_ns": T}
//   or {"id": ANY, "error": "ExceptionClass: message"}
// With "repeat": N the assignor runs N times on fresh instances and elapsed_ns is the best.
//
// Inputs are built the way production builds them:
// * client side: each member's Subscription is serialized with ConsumerProtocol (v3) and read
//   back, as the leader reads it from the JoinGroup response, then put into a HashMap in
//   member order; the group instance id is set afterwards, as ConsumerCoordinator does. The
//   StickyAssignor/CooperativeStickyAssignor user data come from the assignors themselves
//   (onAssignment + subscriptionUserData); a sticky member with owned partitions and no
//   generation sends the v0 user data (no generation field).
// * server side: members in a HashMap in member order ("join"), or in the iteration order of
//   a TimelineHashMap that received them in member order ("timeline", what ConsumerGroup
//   hands TargetAssignmentBuilder), subscribed topics as
//   new HashSet<>(names) resolved through TopicIds, the current assignment as
//   HashMap<Uuid, HashSet<Integer>> (what Assignment.fromRecord builds; a topic gone from the
//   metadata keeps its id: topic_ids, else the first 16 bytes of SHA-256(name)), the subscription type
//   as ModernGroup.subscriptionType computes it.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.protocol.types.Type;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.TopicIds;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

public final class AssignorOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String GROUP = "oracle-group";

    private static final Schema TOPIC_ASSIGNMENT = new Schema(
        new Field("topic", Type.STRING), new Field("partitions", new ArrayOf(Type.INT32)));
    private static final Schema STICKY_USER_DATA_V0 = new Schema(
        new Field("previous_assignment", new ArrayOf(TOPIC_ASSIGNMENT)));

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode request = JSON.readTree(line);
            ObjectNode response = JSON.createObjectNode();
            response.set("id", request.get("id"));
            try {
                String strategy = request.get("strategy").asText();
                JsonNode scenario = request.get("scenario");
                int repeat = request.has("repeat") ? request.get("repeat").asInt() : 1;
                boolean timeline = request.has("member_order") && request.get("member_order").asText().equals("timeline");
                long best = Long.MAX_VALUE;
                Map<String, List<TopicPartition>> result = null;
                for (int i = 0; i < repeat; i++) {
                    Run run = isServer(strategy) ? serverSide(strategy, scenario, timeline) : clientSide(strategy, scenario);
                    best = Math.min(best, run.elapsedNs);
                    result = run.assignment;
                }
                ObjectNode assignment = JSON.createObjectNode();
                for (Map.Entry<String, List<TopicPartition>> e : result.entrySet()) {
                    ArrayNode list = assignment.putArray(e.getKey());
                    for (TopicPartition tp : e.getValue()) {
                        list.addArray().add(tp.topic()).add(tp.partition());
                    }
                }
                response.set("assignment", assignment);
                response.put("elapsed_ns", best);
            } catch (Exception | StackOverflowError e) {
                response.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(JSON.writeValueAsString(response));
            out.flush();
        }
    }

    private static boolean isServer(String strategy) {
        return strategy.equals("uniform") || strategy.equals("server-range");
    }

    private record Run(Map<String, List<TopicPartition>> assignment, long elapsedNs) { }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        if (array != null && !array.isNull()) array.forEach(n -> out.add(n.asText()));
        return out;
    }

    private static Optional<String> optionalText(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? Optional.empty() : Optional.of(v.asText());
    }

    private static List<TopicPartition> owned(JsonNode member) {
        List<TopicPartition> out = new ArrayList<>();
        JsonNode owned = member.get("owned_partitions");
        if (owned != null) owned.forEach(tp -> out.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt())));
        return out;
    }

    private static int generation(JsonNode member) {
        JsonNode g = member.get("generation");
        return g == null || g.isNull() ? -1 : g.asInt();
    }

    // ---------------------------------------------------------------- client side

    private static Run clientSide(String strategy, JsonNode scenario) {
        ConsumerPartitionAssignor assignor = switch (strategy) {
            case "range" -> new RangeAssignor();
            case "roundrobin" -> new RoundRobinAssignor();
            case "sticky" -> new StickyAssignor();
            case "cooperative-sticky" -> new CooperativeStickyAssignor();
            default -> throw new IllegalArgumentException("unknown strategy " + strategy);
        };
        Map<String, Subscription> subscriptions = new HashMap<>();
        List<String> memberOrder = new ArrayList<>();
        for (JsonNode m : scenario.get("members")) {
            String memberId = m.get("member_id").asText();
            memberOrder.add(memberId);
            List<String> topics = strings(m.get("topics"));
            List<TopicPartition> owned = owned(m);
            int generation = generation(m);
            boolean hasGeneration = m.hasNonNull("generation") && generation >= 0;
            Optional<String> instance = optionalText(m, "group_instance_id");
            ByteBuffer userData = null;
            List<TopicPartition> ownedInSubscription = owned;
            if (strategy.equals("sticky")) {
                ownedInSubscription = List.of();
                if (hasGeneration) {
                    StickyAssignor member = new StickyAssignor();
                    member.onAssignment(new Assignment(owned), new ConsumerGroupMetadata(GROUP, generation, memberId, instance));
                    userData = member.subscriptionUserData(new HashSet<>(topics));
                } else if (!owned.isEmpty()) {
                    userData = stickyUserDataV0(owned);
                }
            } else if (strategy.equals("cooperative-sticky")) {
                CooperativeStickyAssignor member = new CooperativeStickyAssignor();
                if (hasGeneration) {
                    member.onAssignment(new Assignment(owned), new ConsumerGroupMetadata(GROUP, generation, memberId, instance));
                }
                userData = member.subscriptionUserData(new HashSet<>(topics));
            }
            Subscription sent = new Subscription(topics, userData, ownedInSubscription, generation, optionalText(m, "rack"));
            Subscription received = ConsumerProtocol.deserializeSubscription(ConsumerProtocol.serializeSubscription(sent, (short) 3));
            received.setGroupInstanceId(instance);
            subscriptions.put(memberId, received);
        }
        Cluster cluster = cluster(scenario);
        GroupSubscription group = new GroupSubscription(subscriptions);
        long start = System.nanoTime();
        Map<String, Assignment> result = assignor.assign(cluster, group).groupAssignment();
        long elapsed = System.nanoTime() - start;
        Map<String, List<TopicPartition>> out = new LinkedHashMap<>();
        for (String memberId : memberOrder) {
            Assignment a = result.get(memberId);
            out.put(memberId, a == null ? List.of() : a.partitions());
        }
        return new Run(out, elapsed);
    }

    private static ByteBuffer stickyUserDataV0(List<TopicPartition> owned) {
        Map<String, List<Integer>> byTopic = new HashMap<>();
        for (TopicPartition tp : owned) byTopic.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
        List<Struct> topics = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            Struct s = new Struct(TOPIC_ASSIGNMENT);
            s.set("topic", e.getKey());
            s.set("partitions", e.getValue().toArray());
            topics.add(s);
        }
        Struct struct = new Struct(STICKY_USER_DATA_V0);
        struct.set("previous_assignment", topics.toArray());
        ByteBuffer buffer = ByteBuffer.allocate(STICKY_USER_DATA_V0.sizeOf(struct));
        STICKY_USER_DATA_V0.write(buffer, struct);
        buffer.flip();
        return buffer;
    }

    /** One broker per rack (plus a rackless one); replicas of a partition on its racks' brokers. */
    private static Cluster cluster(JsonNode scenario) {
        Map<String, Node> rackNodes = new LinkedHashMap<>();
        Node rackless = new Node(0, "localhost", 9092);
        List<Node> nodes = new ArrayList<>(List.of(rackless));
        List<PartitionInfo> partitions = new ArrayList<>();
        JsonNode racks = scenario.get("partition_racks");
        Iterator<Map.Entry<String, JsonNode>> topics = scenario.get("topics").fields();
        while (topics.hasNext()) {
            Map.Entry<String, JsonNode> t = topics.next();
            int count = t.getValue().asInt();
            JsonNode topicRacks = racks == null ? null : racks.get(t.getKey());
            for (int p = 0; p < count; p++) {
                Node[] replicas;
                if (topicRacks == null) {
                    replicas = new Node[] {rackless};
                } else {
                    List<Node> rs = new ArrayList<>();
                    for (JsonNode rack : topicRacks.get(p)) {
                        Node node = rackNodes.computeIfAbsent(rack.asText(), r -> {
                            Node n = new Node(nodes.size(), "localhost", 9092 + nodes.size(), r);
                            nodes.add(n);
                            return n;
                        });
                        rs.add(node);
                    }
                    replicas = rs.toArray(new Node[0]);
                }
                Node leader = replicas.length > 0 ? replicas[0] : null;
                partitions.add(new PartitionInfo(t.getKey(), p, leader, replicas, replicas));
            }
        }
        return new Cluster("oracle", nodes, partitions, Set.of(), Set.of());
    }

    // ---------------------------------------------------------------- server side

    /** The id a member's current assignment holds for a topic gone from the metadata. */
    private static Uuid vanishedId(JsonNode topicIds, String name) {
        if (topicIds != null && topicIds.hasNonNull(name)) return Uuid.fromString(topicIds.get(name).asText());
        try {
            // assign_core.scenario.default_topic_id: the first 16 bytes of SHA-256(name)
            ByteBuffer digest = ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8)));
            return new Uuid(digest.getLong(), digest.getLong());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Run serverSide(String strategy, JsonNode scenario, boolean timeline) {
        ConsumerGroupPartitionAssignor assignor = strategy.equals("uniform")
            ? new UniformAssignor()
            : new org.apache.kafka.coordinator.group.assignor.RangeAssignor();
        Map<String, Uuid> ids = new HashMap<>();
        Map<Uuid, String> names = new HashMap<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> topics = scenario.get("topics").fields();
        JsonNode topicIds = scenario.get("topic_ids");
        while (topics.hasNext()) {
            Map.Entry<String, JsonNode> t = topics.next();
            Uuid id = Uuid.fromString(topicIds.get(t.getKey()).asText());
            ids.put(t.getKey(), id);
            names.put(id, t.getKey());
            counts.put(id, t.getValue().asInt());
        }
        TopicIds.TopicResolver resolver = new TopicIds.TopicResolver() {
            @Override public CoordinatorMetadataImage image() { return null; }
            @Override public String name(Uuid id) { return names.get(id); }
            @Override public Uuid id(String name) { return ids.get(name); }
            @Override public void clear() { }
        };
        JsonNode racks = scenario.get("partition_racks");
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override public int numPartitions(Uuid topicId) { return counts.getOrDefault(topicId, -1); }
            @Override public Set<String> racksForPartition(Uuid topicId, int partition) {
                String name = names.get(topicId);
                if (name == null || racks == null || !racks.has(name)) return Set.of();
                return new HashSet<>(strings(racks.get(name).get(partition)));
            }
        };

        // JoinGroup order: the members put in scenario order. Timeline order: as
        // TargetAssignmentBuilder.build fills its HashMap from the group's members, a
        // TimelineHashMap (ModernGroup: expected size 0) that received them in scenario order.
        Map<String, MemberSubscriptionAndAssignmentImpl> joined = timeline
            ? new TimelineHashMap<>(new SnapshotRegistry(new LogContext()), 0)
            : new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Map<String, Integer> subscriberCounts = new HashMap<>();
        List<String> memberOrder = new ArrayList<>();
        for (JsonNode m : scenario.get("members")) {
            String memberId = m.get("member_id").asText();
            memberOrder.add(memberId);
            List<String> subscribed = strings(m.get("topics"));
            subscribed.forEach(t -> subscriberCounts.merge(t, 1, Integer::sum));
            Map<String, List<Integer>> ownedByTopic = new LinkedHashMap<>();
            for (TopicPartition tp : owned(m)) ownedByTopic.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
            Map<Uuid, Set<Integer>> current = new HashMap<>();
            for (Map.Entry<String, List<Integer>> e : ownedByTopic.entrySet()) {
                Uuid id = ids.get(e.getKey());
                if (id == null) id = vanishedId(topicIds, e.getKey());
                current.put(id, new HashSet<>(e.getValue()));
                for (Integer p : e.getValue()) inverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, memberId);
            }
            joined.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                optionalText(m, "rack"), optionalText(m, "group_instance_id"),
                new TopicIds(new HashSet<>(subscribed), resolver),
                new org.apache.kafka.coordinator.group.modern.Assignment(current)));
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        joined.forEach(members::put);
        SubscriptionType type = SubscriptionType.HOMOGENEOUS;
        for (int c : subscriberCounts.values()) {
            if (c != memberOrder.size()) type = SubscriptionType.HETEROGENEOUS;
        }
        GroupSpecImpl spec = new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted);
        long start = System.nanoTime();
        GroupAssignment result = assignor.assign(spec, describer);
        long elapsed = System.nanoTime() - start;
        Map<String, List<TopicPartition>> out = new LinkedHashMap<>();
        for (String memberId : memberOrder) {
            List<TopicPartition> list = new ArrayList<>();
            MemberAssignment a = result.members().get(memberId);
            if (a != null) {
                for (Map.Entry<Uuid, Set<Integer>> e : a.partitions().entrySet()) {
                    for (Integer p : e.getValue()) list.add(new TopicPartition(names.get(e.getKey()), p));
                }
            }
            out.put(memberId, list);
        }
        return new Run(out, elapsed);
    }
}
