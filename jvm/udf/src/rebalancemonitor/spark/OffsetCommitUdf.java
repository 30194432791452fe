package rebalancemonitor.spark;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The commit lane's decoder: one {@code __consumer_offsets} record (key, value) to an offset
 * commit, in the JVM, without Python.
 *
 * <p>Returns {@code null} for every record that is not a well-formed offset commit or offset
 * tombstone (record types 0 and 1, value versions 0-4): other record types, unknown value
 * versions, and anything malformed. Those records take the group lane, where the Python codec
 * ({@code streaming.codec}) decodes them, or names the field and byte offset that failed and
 * quarantines them. So this decoder never needs an error message of its own; it must only
 * accept exactly the commits the Python codec accepts (checked by {@code tests/spark/
 * test_commit_lane.py} on the codec corpus and mutations of it):
 *
 * <ul>
 *   <li>key: int16 type (0 or 1), then group and topic as non-nullable int16-length UTF-8
 *       strings (invalid UTF-8 refused), then int32 partition; trailing bytes ignored;
 *   <li>value null: a tombstone;
 *   <li>value: int16 version; v0 and v2 offset, metadata, commit timestamp; v1 adds the expire
 *       timestamp; v3 puts the leader epoch after the offset; v4 is v3 with a compact metadata
 *       string (unsigned varint length + 1, at most 0x7FFF) and a tagged-field section (tag 0,
 *       the topic id, must be exactly 16 bytes; other tags are skipped); trailing bytes
 *       ignored; varints beyond the int32 range refused.
 * </ul>
 *
 * <p>The result is a struct (see {@code streaming.spark.commits.COMMIT_STRUCT}): record type,
 * group, topic, partition, value version (-1 for a tombstone), offset, leader epoch, metadata,
 * commit and expire timestamps (Kafka's -1 defaults kept; the SQL side maps them to null), and
 * the topic id of a v4 value (tag 0) as Kafka prints a Uuid (URL-safe base64, no padding; the
 * zero id "AAAAAAAAAAAAAAAAAAAAAA" when absent, as the Python codec has it).
 */
public final class OffsetCommitUdf implements UDF2<byte[], byte[], Row> {
  private static final long serialVersionUID = 1L;
  private static final int MAX_STRING_LENGTH = 0x7FFF;
  private static final int MAX_TAGGED_FIELDS = 10_000;
  private static final String ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA";

  /** Thrown inside the decoder for anything it refuses; never leaves {@link #call}. */
  private static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    static final Refused INSTANCE = new Refused();

    private Refused() {
      super(null, null, false, false);
    }
  }

  private static final ThreadLocal<CharsetDecoder> UTF8 =
      ThreadLocal.withInitial(
          () ->
              StandardCharsets.UTF_8
                  .newDecoder()
                  .onMalformedInput(CodingErrorAction.REPORT)
                  .onUnmappableCharacter(CodingErrorAction.REPORT));

  @Override
  public Row call(byte[] key, byte[] value) {
    if (key == null || key.length < 2 || key[0] != 0 || (key[1] != 0 && key[1] != 1)) {
      return null;
    }
    try {
      return decode(key, value);
    } catch (Refused e) {
      return null;
    }
  }

  private static Row decode(byte[] key, byte[] value) throws Refused {
    Cursor k = new Cursor(key, 2);
    String group = k.string();
    String topic = k.string();
    int partition = k.int32();
    int type = key[1];
    if (value == null) {
      return RowFactory.create(
          type, group, topic, partition, -1, null, null, null, null, null, null);
    }
    Cursor v = new Cursor(value, 0);
    int version = v.int16();
    long offset;
    int leaderEpoch = -1;
    String metadata;
    long commitTs;
    long expireTs = -1L;
    String topicId = ZERO_UUID;
    switch (version) {
      case 0, 2 -> {
        offset = v.int64();
        metadata = v.string();
        commitTs = v.int64();
      }
      case 1 -> {
        offset = v.int64();
        metadata = v.string();
        commitTs = v.int64();
        expireTs = v.int64();
      }
      case 3 -> {
        offset = v.int64();
        leaderEpoch = v.int32();
        metadata = v.string();
        commitTs = v.int64();
      }
      case 4 -> {
        offset = v.int64();
        leaderEpoch = v.int32();
        metadata = v.compactString();
        commitTs = v.int64();
        topicId = v.taggedFields();
      }
      default -> throw Refused.INSTANCE; // an unknown version: the codec's Unknown record
    }
    return RowFactory.create(
        type,
        group,
        topic,
        partition,
        version,
        offset,
        leaderEpoch,
        metadata,
        commitTs,
        expireTs,
        topicId);
  }

  /** A read position in one buffer; every read checks the bounds. */
  private static final class Cursor {
    private final byte[] buf;
    private int pos;

    Cursor(byte[] buf, int pos) {
      this.buf = buf;
      this.pos = pos;
    }

    private void need(int n) throws Refused {
      if (n < 0 || pos + n > buf.length) {
        throw Refused.INSTANCE;
      }
    }

    int int16() throws Refused {
      need(2);
      int v = (short) ((buf[pos] & 0xFF) << 8 | (buf[pos + 1] & 0xFF));
      pos += 2;
      return v;
    }

    int int32() throws Refused {
      need(4);
      int v =
          (buf[pos] & 0xFF) << 24
              | (buf[pos + 1] & 0xFF) << 16
              | (buf[pos + 2] & 0xFF) << 8
              | (buf[pos + 3] & 0xFF);
      pos += 4;
      return v;
    }

    long int64() throws Refused {
      long hi = int32() & 0xFFFFFFFFL;
      long lo = int32() & 0xFFFFFFFFL;
      return hi << 32 | lo;
    }

    /** Unsigned varint of at most 5 bytes within the int32 range. */
    int uvarint() throws Refused {
      long result = 0;
      int shift = 0;
      for (int i = 0; i < 5; i++) {
        need(1);
        int b = buf[pos++] & 0xFF;
        result |= (long) (b & 0x7F) << shift;
        if (b < 0x80) {
          if (result > Integer.MAX_VALUE) {
            throw Refused.INSTANCE;
          }
          return (int) result;
        }
        shift += 7;
      }
      throw Refused.INSTANCE;
    }

    String string() throws Refused {
      int n = int16();
      if (n < 0) {
        throw Refused.INSTANCE;
      }
      return utf8(n);
    }

    String compactString() throws Refused {
      int n = uvarint() - 1;
      if (n < 0 || n > MAX_STRING_LENGTH) {
        throw Refused.INSTANCE;
      }
      return utf8(n);
    }

    private String utf8(int n) throws Refused {
      need(n);
      String text;
      boolean ascii = true;
      for (int i = pos; i < pos + n; i++) {
        if (buf[i] < 0) {
          ascii = false;
          break;
        }
      }
      if (ascii) {
        text = new String(buf, pos, n, StandardCharsets.ISO_8859_1);
      } else {
        try {
          CharBuffer chars = UTF8.get().reset().decode(ByteBuffer.wrap(buf, pos, n));
          text = chars.toString();
        } catch (CharacterCodingException e) {
          throw Refused.INSTANCE;
        }
      }
      pos += n;
      return text;
    }

    /**
     * The tagged-field section: tag 0 (topic id) must be 16 bytes, the rest is skipped. Returns
     * the topic id (the last tag 0 wins, as in the Python codec), or the zero id.
     */
    String taggedFields() throws Refused {
      int count = uvarint();
      if (count > buf.length - pos || count > MAX_TAGGED_FIELDS) {
        throw Refused.INSTANCE;
      }
      String topicId = ZERO_UUID;
      for (int i = 0; i < count; i++) {
        int tag = uvarint();
        int size = uvarint();
        need(size);
        if (tag == 0) {
          if (size != 16) {
            throw Refused.INSTANCE;
          }
          byte[] id = new byte[16];
          System.arraycopy(buf, pos, id, 0, 16);
          topicId = Base64.getUrlEncoder().withoutPadding().encodeToString(id);
        }
        pos += size;
      }
      return topicId;
    }
  }
}
