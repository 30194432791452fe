// The oracle of the codec's differential tests: Kafka's own (4.4.0) serializers and readers
// for every record the group coordinator writes to __consumer_offsets.
//
// java RecordOracle generate SEED N TOMBSTONES
//   For every record type of CoordinatorRecordType and every value version, N records with
//   random field contents (java.util.Random(SEED)), plus TOMBSTONES null-value records per
//   type. Records are built with the generated message classes and serialized as the
//   coordinator does (MessageUtil.toCoordinatorTypePrefixedBytes for keys,
//   toVersionPrefixedBytes for values); classic-group member payloads with
//   ConsumerProtocol.serializeSubscription/serializeAssignment and the sticky assignors'
//   user-data schemas. Flexible structs sometimes carry unknown tagged fields.
//   Each record is then read back by Kafka (below) and printed, one JSON line each:
//     {"t": TYPE, "v": VERSION|null, "k": KEY_HEX, "val": VALUE_HEX|null, "java": VIEW}
//
// java RecordOracle decode
//   Reads lines "KEY_HEX|VALUE_HEX" ("-" for a null value) and prints one JSON line each:
//     {"java": VIEW} | {"unknown": "type"|"version"} | {"error": "..."}
//
// VIEW is what Kafka reads: GroupCoordinatorRecordSerde.deserialize (type 0 values of
// versions 1-4, which 4.4.0 rejects, are read with OffsetCommitValue as 3.x brokers did),
// every field dumped through its accessor (camelCase names; uuids as Uuid.toString, bytes as
// hex, unknown tagged fields as "_unknownTaggedFields": [[tag, hex], ...]):
//     {"key": {...}, "valueVersion": V, "value": {...}|null, "members": [...]}
// "members" (GroupMetadata with protocolType "consumer") holds, per member, the payloads read
// by ConsumerProtocol.deserializeConsumerProtocolSubscription/Assignment (with "version", the
// version as written; null for an empty payload), "sticky" = StickyAssignor.memberData
// ({"partitions": [[topic, p]...], "generation": g|null}) when the group protocol is "sticky"
// and the user data is non-empty, and "coop" = the generation CooperativeStickyAssignor
// .memberData reads from the user data when the protocol is "cooperative-sticky".

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.Deserializer;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.CoordinatorRecordType;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.LegacyOffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.LegacyOffsetCommitValue;
import org.apache.kafka.coordinator.group.generated.OffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.OffsetCommitValue;

public class RecordOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final HexFormat HEX = HexFormat.of();
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    private static final Schema TOPIC_ASSIGNMENT = new Schema(
        new Field("topic", org.apache.kafka.common.protocol.types.Type.STRING),
        new Field("partitions", new ArrayOf(org.apache.kafka.common.protocol.types.Type.INT32)));
    private static final Schema STICKY_V0 = new Schema(
        new Field("previous_assignment", new ArrayOf(TOPIC_ASSIGNMENT)));
    private static final Schema STICKY_V1 = new Schema(
        new Field("previous_assignment", new ArrayOf(TOPIC_ASSIGNMENT)),
        new Field("generation", org.apache.kafka.common.protocol.types.Type.INT32));

    // Nullable fields of the KIP-848 / share / streams values (filled reflectively).
    private static final Set<String> NULLABLE = Set.of(
        "instanceId", "rackId", "subscribedTopicRegex", "serverAssignor", "classicMemberMetadata",
        "assignmentEpochs", "lastAssignmentConfigs", "userEndpoint");
    // Zero-argument accessors that are not fields.
    private static final Set<String> NOT_FIELDS = Set.of(
        "apiKey", "lowestSupportedVersion", "highestSupportedVersion", "hashCode", "toString",
        "duplicate", "unknownTaggedFields", "next", "prev", "getClass", "size");

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        if (args.length >= 1 && args[0].equals("generate")) {
            long seed = Long.parseLong(args[1]);
            int n = Integer.parseInt(args[2]);
            int tombstones = Integer.parseInt(args[3]);
            generate(new Gen(seed), n, tombstones, out);
        } else if (args.length >= 1 && args[0].equals("decode")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) continue;
                String[] parts = line.trim().split("\\|", -1);
                byte[] key = HEX.parseHex(parts[0]);
                byte[] value = parts[1].equals("-") ? null : HEX.parseHex(parts[1]);
                out.println(JSON.writeValueAsString(answer(key, value)));
                if (!in.ready()) out.flush();
            }
        } else {
            System.err.println("usage: RecordOracle generate SEED N TOMBSTONES | decode");
            System.exit(2);
        }
        out.flush();
    }

    // -- generation ------------------------------------------------------------------------

    private static void generate(Gen g, int n, int tombstones, PrintStream out) throws Exception {
        for (CoordinatorRecordType type : CoordinatorRecordType.values()) {
            short id = type.id();
            int lowest = type.lowestSupportedVersion();
            int highest = id == 0 ? 4 : type.highestSupportedVersion();
            for (int version = lowest; version <= highest; version++) {
                for (int i = 0; i < n; i++) {
                    ApiMessage key = g.key(type);
                    Message value = g.value(type, (short) version);
                    emit(out, id, version, MessageUtil.toCoordinatorTypePrefixedBytes(key),
                        MessageUtil.toVersionPrefixedBytes((short) version, value));
                }
            }
            for (int i = 0; i < tombstones; i++) {
                emit(out, id, null, MessageUtil.toCoordinatorTypePrefixedBytes(g.key(type)), null);
            }
        }
    }

    private static void emit(PrintStream out, int type, Integer version, byte[] key, byte[] value)
            throws Exception {
        ObjectNode line = NODES.objectNode();
        line.put("t", type);
        if (version == null) line.putNull("v"); else line.put("v", version);
        line.put("k", HEX.formatHex(key));
        if (value == null) line.putNull("val"); else line.put("val", HEX.formatHex(value));
        ObjectNode answer = answer(key, value);
        if (!answer.has("java")) {
            throw new IllegalStateException("Kafka cannot read back its own record: " + answer);
        }
        line.set("java", answer.get("java"));
        out.println(JSON.writeValueAsString(line));
    }

    static final class Gen {
        final Random rnd;
        private static final String[] PIECES = {
            "a", "b", "c", "x", "y", "z", "0", "1", "9", "-", "_", ".", " ", "é", "ß", "Ω",
            "中", "文", "😀", "𝄞", "\u0000", "consumer", "topic", "group", "member"};

        Gen(long seed) { this.rnd = new Random(seed); }

        boolean chance(int percent) { return rnd.nextInt(100) < percent; }

        String str() {
            int kind = rnd.nextInt(20);
            if (kind == 0) return "";
            int len = kind == 1 ? 50 + rnd.nextInt(300) : 1 + rnd.nextInt(12);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < len; i++) sb.append(PIECES[rnd.nextInt(PIECES.length)]);
            return sb.toString();
        }

        String nstr() { return chance(25) ? null : str(); }

        int i32() {
            switch (rnd.nextInt(7)) {
                case 0: return 0;
                case 1: return -1;
                case 2: return rnd.nextInt();
                case 3: return rnd.nextBoolean() ? Integer.MAX_VALUE : Integer.MIN_VALUE;
                default: return rnd.nextInt(10000);
            }
        }

        long i64() {
            switch (rnd.nextInt(6)) {
                case 0: return 0;
                case 1: return -1;
                case 2: return rnd.nextLong();
                case 3: return rnd.nextBoolean() ? Long.MAX_VALUE : Long.MIN_VALUE;
                default: return 1_600_000_000_000L + (long) rnd.nextInt(Integer.MAX_VALUE);
            }
        }

        short i16() { return rnd.nextBoolean() ? (short) rnd.nextInt(100) : (short) rnd.nextInt(); }

        byte i8() {
            int[] states = {0, 1, 2, 127};
            return rnd.nextBoolean() ? (byte) states[rnd.nextInt(4)] : (byte) rnd.nextInt();
        }

        Uuid uuid() { return chance(10) ? Uuid.ZERO_UUID : new Uuid(rnd.nextLong(), rnd.nextLong()); }

        byte[] bytes(int max) {
            byte[] b = new byte[rnd.nextInt(max + 1)];
            rnd.nextBytes(b);
            return b;
        }

        int count() { return chance(5) ? 10 + rnd.nextInt(40) : rnd.nextInt(5); }

        List<Integer> ints() {
            List<Integer> l = new ArrayList<>();
            for (int i = 0, n = count(); i < n; i++) l.add(rnd.nextInt(chance(20) ? Integer.MAX_VALUE : 64));
            return l;
        }

        void unknownTags(Message m) {
            if (!chance(15)) return;
            int tag = 10 + rnd.nextInt(5);
            for (int i = 0, n = 1 + rnd.nextInt(2); i < n; i++) {
                m.unknownTaggedFields().add(new RawTaggedField(tag, bytes(8)));
                tag += 1 + rnd.nextInt(100);
            }
        }

        ApiMessage key(CoordinatorRecordType type) throws Exception {
            ApiMessage key = type.newRecordKey();
            fill(key, false);
            return key;
        }

        Message value(CoordinatorRecordType type, short version) throws Exception {
            switch (type.id()) {
                case 0:
                    return version == 0 ? legacyOffsetValue() : offsetValue(version);
                case 1:
                    return offsetValue(version);
                case 2:
                    return groupMetadataValue(version);
                default:
                    Message m = type.newRecordValue();
                    fill(m, true);
                    return m;
            }
        }

        Message legacyOffsetValue() {
            return new LegacyOffsetCommitValue().setOffset(i64()).setMetadata(str())
                .setCommitTimestamp(i64());
        }

        Message offsetValue(short version) {
            OffsetCommitValue v = new OffsetCommitValue().setOffset(i64()).setMetadata(str())
                .setCommitTimestamp(i64());
            if (version >= 3) v.setLeaderEpoch(i32());
            if (version == 1) v.setExpireTimestamp(i64());
            if (version >= 4) {
                v.setTopicId(uuid());
                unknownTags(v);
            }
            return v;
        }

        // -- classic group metadata with consumer-protocol payloads --------------------------

        static final String[] PROTOCOL_TYPES = {"consumer", "consumer", "consumer", "consumer", "connect", ""};
        static final String[] PROTOCOLS = {"range", "roundrobin", "sticky", "cooperative-sticky", "stream", null};

        Message groupMetadataValue(short version) {
            String protocolType = chance(10) ? str() : PROTOCOL_TYPES[rnd.nextInt(PROTOCOL_TYPES.length)];
            String protocol = chance(10) ? nstr() : PROTOCOLS[rnd.nextInt(PROTOCOLS.length)];
            GroupMetadataValue v = new GroupMetadataValue().setProtocolType(protocolType)
                .setGeneration(i32()).setProtocol(protocol).setLeader(nstr());
            if (version >= 2) v.setCurrentStateTimestamp(i64());
            List<GroupMetadataValue.MemberMetadata> members = new ArrayList<>();
            for (int i = 0, n = rnd.nextInt(7); i < n; i++) {
                GroupMetadataValue.MemberMetadata m = new GroupMetadataValue.MemberMetadata()
                    .setMemberId(str()).setClientId(str()).setClientHost(str())
                    .setSessionTimeout(i32());
                if (version >= 3) m.setGroupInstanceId(nstr());
                if (version >= 1) m.setRebalanceTimeout(i32());
                boolean consumer = protocolType.equals("consumer");
                m.setSubscription(consumer ? subscription(protocol) : bytes(30));
                m.setAssignment(consumer ? assignment() : bytes(30));
                if (version >= 4) unknownTags(m);
                members.add(m);
            }
            v.setMembers(members);
            if (version >= 4) unknownTags(v);
            return v;
        }

        List<TopicPartition> partitions() {
            List<TopicPartition> l = new ArrayList<>();
            List<String> topics = new ArrayList<>();
            for (int i = 0, n = 1 + rnd.nextInt(3); i < n; i++) topics.add(str());
            for (int i = 0, n = count(); i < n; i++) {
                l.add(new TopicPartition(topics.get(rnd.nextInt(topics.size())), rnd.nextInt(100)));
            }
            return l;
        }

        ByteBuffer userData(String protocol) {
            int kind = rnd.nextInt(10);
            if (kind == 0) return null;
            if (kind == 1) return ByteBuffer.allocate(0);
            if (kind == 2) return ByteBuffer.wrap(bytes(12));
            if ("sticky".equals(protocol)) return stickyUserData(kind >= 6 ? STICKY_V1 : STICKY_V0);
            if ("cooperative-sticky".equals(protocol)) {
                ByteBuffer b = ByteBuffer.allocate(4 + (kind == 3 ? rnd.nextInt(4) : 0));
                b.putInt(0, i32());
                return b;
            }
            return ByteBuffer.wrap(bytes(40));
        }

        ByteBuffer stickyUserData(Schema schema) {
            List<Struct> topics = new ArrayList<>();
            for (int i = 0, n = rnd.nextInt(4); i < n; i++) {
                Struct t = new Struct(TOPIC_ASSIGNMENT);
                t.set("topic", str());
                t.set("partitions", ints().toArray());
                topics.add(t);
            }
            Struct s = new Struct(schema);
            s.set("previous_assignment", topics.toArray());
            if (schema == STICKY_V1) s.set("generation", i32());
            ByteBuffer b = ByteBuffer.allocate(schema.sizeOf(s));
            schema.write(b, s);
            b.flip();
            if (chance(10)) {  // trailing bytes (Java reads the schema and ignores them)
                byte[] tail = new byte[1 + rnd.nextInt(6)];
                rnd.nextBytes(tail);
                ByteBuffer t = ByteBuffer.allocate(b.remaining() + tail.length);
                t.put(b).put(tail).flip();
                return t;
            }
            return b;
        }

        byte[] subscription(String protocol) {
            if (chance(8)) return new byte[0];
            List<String> topics = new ArrayList<>();
            for (int i = 0, n = count(); i < n; i++) topics.add(str());
            ConsumerPartitionAssignor.Subscription s = new ConsumerPartitionAssignor.Subscription(
                topics, userData(protocol), partitions(), chance(30) ? -1 : rnd.nextInt(1000),
                chance(40) ? Optional.empty() : Optional.of(str()));
            short version = (short) rnd.nextInt(4);
            return patchVersion(ConsumerProtocol.serializeSubscription(s, version));
        }

        byte[] assignment() {
            if (chance(25)) return new byte[0];
            ByteBuffer ud = chance(70) ? null : ByteBuffer.wrap(bytes(10));
            ConsumerPartitionAssignor.Assignment a = new ConsumerPartitionAssignor.Assignment(partitions(), ud);
            short version = (short) rnd.nextInt(4);
            return patchVersion(ConsumerProtocol.serializeAssignment(a, version));
        }

        // Sometimes a future version (read as v3 by Kafka) and/or trailing bytes (ignored).
        byte[] patchVersion(ByteBuffer buf) {
            byte[] b = MessageUtil.byteBufferToArray(buf);
            if (chance(10) && b.length >= 2 && b[1] == 3) {
                short future = chance(50) ? (short) (4 + rnd.nextInt(10)) : Short.MAX_VALUE;
                b[0] = (byte) (future >> 8);
                b[1] = (byte) future;
            }
            if (chance(10)) {
                byte[] tail = bytes(8);
                byte[] t = Arrays.copyOf(b, b.length + tail.length);
                System.arraycopy(tail, 0, t, b.length, tail.length);
                return t;
            }
            return b;
        }

        // -- reflective filler for keys and the flexible (v0) values ----------------------------

        void fill(Message m, boolean flexible) throws Exception {
            Method[] methods = m.getClass().getMethods();
            Arrays.sort(methods, Comparator.comparing(Method::getName));
            for (Method setter : methods) {
                if (!setter.getName().startsWith("set") || setter.getParameterCount() != 1) continue;
                if (Modifier.isStatic(setter.getModifiers()) || setter.getDeclaringClass() != m.getClass()) continue;
                String field = Character.toLowerCase(setter.getName().charAt(3)) + setter.getName().substring(4);
                if (field.equals("next") || field.equals("prev")) continue;
                Object value = NULLABLE.contains(field) && chance(30) ? null
                    : random(field, setter.getParameterTypes()[0], setter.getGenericParameterTypes()[0], flexible);
                setter.invoke(m, value);
            }
            if (flexible) unknownTags(m);
        }

        Object random(String field, Class<?> cls, Type generic, boolean flexible) throws Exception {
            if (cls == int.class) return field.equals("port") ? rnd.nextInt(65536) : i32();
            if (cls == long.class) return i64();
            if (cls == short.class) return i16();
            if (cls == byte.class) return i8();
            if (cls == String.class) return str();
            if (cls == Uuid.class) return uuid();
            if (cls == byte[].class) return bytes(20);
            if (cls == Integer.class) return rnd.nextInt(chance(20) ? Integer.MAX_VALUE : 64);
            if (cls == Short.class) return (short) rnd.nextInt(chance(20) ? Short.MAX_VALUE : 10);
            if (List.class.isAssignableFrom(cls)) {
                Type elem = ((ParameterizedType) generic).getActualTypeArguments()[0];
                List<Object> list = new ArrayList<>();
                for (int i = 0, n = count(); i < n; i++) list.add(random(field, (Class<?>) elem, elem, flexible));
                return list;
            }
            if (Message.class.isAssignableFrom(cls)) {
                Message nested = (Message) cls.getDeclaredConstructor().newInstance();
                fill(nested, flexible);
                return nested;
            }
            throw new IllegalArgumentException("no generator for " + field + ": " + cls);
        }
    }

    // -- reading back (Kafka's view) ---------------------------------------------------------

    static ObjectNode answer(byte[] key, byte[] value) {
        ObjectNode out = NODES.objectNode();
        try {
            out.set("java", view(key, value));
        } catch (Deserializer.UnknownRecordTypeException e) {
            out.put("unknown", "type");
        } catch (Deserializer.UnknownRecordVersionException e) {
            out.put("unknown", "version");
        } catch (Exception | StackOverflowError e) {
            Throwable root = e;
            while (root.getCause() != null) root = root.getCause();
            out.put("error", e.getClass().getSimpleName() + ": " + e.getMessage() + " / "
                + root.getClass().getSimpleName() + ": " + root.getMessage());
        }
        return out;
    }

    static ObjectNode view(byte[] key, byte[] value) throws Exception {
        ApiMessage keyMsg;
        Message valueMsg = null;
        short version = -1;
        ByteBuffer keyBuf = ByteBuffer.wrap(key);
        if (key.length >= 2 && keyBuf.getShort(0) == 0 && value != null && value.length >= 2
                && ByteBuffer.wrap(value).getShort(0) >= 1 && ByteBuffer.wrap(value).getShort(0) <= 4) {
            // Type 0 with a value version 4.4.0 does not define for it: read as 3.x brokers did.
            keyBuf.getShort();
            keyMsg = new LegacyOffsetCommitKey();
            keyMsg.read(new ByteBufferAccessor(keyBuf), (short) 0);
            ByteBuffer valueBuf = ByteBuffer.wrap(value);
            version = valueBuf.getShort();
            valueMsg = new OffsetCommitValue();
            valueMsg.read(new ByteBufferAccessor(valueBuf), version);
        } else {
            CoordinatorRecord record = SERDE.deserialize(
                ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value));
            keyMsg = record.key();
            if (record.value() != null) {
                valueMsg = record.value().message();
                version = record.value().version();
            }
        }
        ObjectNode view = NODES.objectNode();
        view.set("key", dump(keyMsg));
        view.put("valueVersion", version);
        view.set("value", valueMsg == null ? NODES.nullNode() : dump(valueMsg));
        if (valueMsg instanceof GroupMetadataValue) {
            GroupMetadataValue gm = (GroupMetadataValue) valueMsg;
            if (gm.protocolType().equals("consumer")) view.set("members", members(gm));
        }
        return view;
    }

    static ArrayNode members(GroupMetadataValue gm) throws Exception {
        ArrayNode members = NODES.arrayNode();
        for (GroupMetadataValue.MemberMetadata m : gm.members()) {
            ObjectNode member = members.addObject();
            byte[] sub = m.subscription();
            if (sub.length == 0) {
                member.putNull("subscription");
            } else {
                short v = ConsumerProtocol.deserializeVersion(ByteBuffer.wrap(sub));
                ConsumerProtocolSubscription data =
                    ConsumerProtocol.deserializeConsumerProtocolSubscription(ByteBuffer.wrap(sub));
                ObjectNode node = (ObjectNode) dump(data);
                node.put("version", v);
                member.set("subscription", node);
                ConsumerPartitionAssignor.Subscription s = ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(sub));
                ByteBuffer ud = s.userData();
                if ("sticky".equals(gm.protocol()) && ud != null && ud.hasRemaining()) {
                    Object md = memberData(new StickyAssignor(), s);
                    member.set("sticky", memberDataNode(md));
                }
                if ("cooperative-sticky".equals(gm.protocol()) && ud != null) {
                    ConsumerPartitionAssignor.Subscription noGeneration = new ConsumerPartitionAssignor.Subscription(
                        s.topics(), ud.duplicate(), s.ownedPartitions(), -1, Optional.empty());
                    Object md = memberData(new CooperativeStickyAssignor(), noGeneration);
                    member.set("coop", memberDataNode(md).get("generation"));
                }
            }
            byte[] asg = m.assignment();
            if (asg.length == 0) {
                member.putNull("assignment");
            } else {
                short v = ConsumerProtocol.deserializeVersion(ByteBuffer.wrap(asg));
                ConsumerProtocolAssignment data =
                    ConsumerProtocol.deserializeConsumerProtocolAssignment(ByteBuffer.wrap(asg));
                ObjectNode node = (ObjectNode) dump(data);
                node.put("version", v);
                member.set("assignment", node);
            }
        }
        return members;
    }

    static Object memberData(Object assignor, ConsumerPartitionAssignor.Subscription s) throws Exception {
        Class<?> cls = assignor.getClass();
        Method m = cls.getDeclaredMethod("memberData", ConsumerPartitionAssignor.Subscription.class);
        m.setAccessible(true);
        try {
            return m.invoke(assignor, s);
        } catch (InvocationTargetException e) {
            throw (Exception) e.getCause();
        }
    }

    @SuppressWarnings("unchecked")
    static ObjectNode memberDataNode(Object md) throws Exception {
        List<TopicPartition> partitions = (List<TopicPartition>) md.getClass().getField("partitions").get(md);
        Optional<Integer> generation = (Optional<Integer>) md.getClass().getField("generation").get(md);
        ObjectNode node = NODES.objectNode();
        ArrayNode list = node.putArray("partitions");
        for (TopicPartition tp : partitions) list.addArray().add(tp.topic()).add(tp.partition());
        if (generation.isPresent()) node.put("generation", generation.get()); else node.putNull("generation");
        return node;
    }

    static JsonNode dump(Object o) throws Exception {
        if (o == null) return NODES.nullNode();
        if (o instanceof Long) return NODES.numberNode((Long) o);
        if (o instanceof Integer) return NODES.numberNode((Integer) o);
        if (o instanceof Short) return NODES.numberNode((Short) o);
        if (o instanceof Byte) return NODES.numberNode((Byte) o);
        if (o instanceof String) return NODES.textNode((String) o);
        if (o instanceof Uuid) return NODES.textNode(o.toString());
        if (o instanceof byte[]) return NODES.textNode(HEX.formatHex((byte[]) o));
        if (o instanceof ByteBuffer) {
            return NODES.textNode(HEX.formatHex(MessageUtil.byteBufferToArray(((ByteBuffer) o).duplicate())));
        }
        if (o instanceof Collection) {
            ArrayNode a = NODES.arrayNode();
            for (Object item : (Collection<?>) o) a.add(dump(item));
            return a;
        }
        if (o instanceof Message) {
            Message m = (Message) o;
            ObjectNode node = NODES.objectNode();
            for (Method acc : m.getClass().getMethods()) {
                if (acc.getParameterCount() != 0 || Modifier.isStatic(acc.getModifiers())) continue;
                if (acc.getDeclaringClass() != m.getClass() || NOT_FIELDS.contains(acc.getName())) continue;
                if (acc.getReturnType() == void.class) continue;
                node.set(acc.getName(), dump(acc.invoke(m)));
            }
            List<RawTaggedField> unknown = m.unknownTaggedFields();
            if (!unknown.isEmpty()) {
                ArrayNode tags = node.putArray("_unknownTaggedFields");
                for (RawTaggedField f : unknown) tags.addArray().add(f.tag()).add(HEX.formatHex(f.data()));
            }
            return node;
        }
        throw new IllegalArgumentException("cannot dump " + o.getClass());
    }
}
