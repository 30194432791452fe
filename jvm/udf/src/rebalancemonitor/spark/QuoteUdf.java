package rebalancemonitor.spark;

import java.nio.charset.StandardCharsets;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Percent-encoding for ids, exactly as Python's {@code urllib.parse.quote(text, safe="")}
 * (what {@code streaming.tracking.events.quoted} uses): ASCII letters, digits and {@code _.-~}
 * stay, every other UTF-8 byte becomes {@code %XX} (upper-case hex). The commit lane builds
 * its rows' {@code event_id} with it, so that they equal the ids the tracker builds.
 */
public final class QuoteUdf implements UDF1<String, String> {
  private static final long serialVersionUID = 1L;
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  @Override
  public String call(String text) {
    return text == null ? null : quote(text);
  }

  static boolean safe(int b) {
    return (b >= 'A' && b <= 'Z')
        || (b >= 'a' && b <= 'z')
        || (b >= '0' && b <= '9')
        || b == '_'
        || b == '.'
        || b == '-'
        || b == '~';
  }

  static String quote(String text) {
    boolean plain = true;
    for (int i = 0; i < text.length(); i++) {
      if (!safe(text.charAt(i))) {
        plain = false;
        break;
      }
    }
    if (plain) {
      return text;
    }
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder(bytes.length * 3);
    for (byte raw : bytes) {
      int b = raw & 0xFF;
      if (safe(b)) {
        out.append((char) b);
      } else {
        out.append('%').append(HEX[b >> 4]).append(HEX[b & 0xF]);
      }
    }
    return out.toString();
  }
}
