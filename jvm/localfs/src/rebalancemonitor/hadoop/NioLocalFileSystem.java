package rebalancemonitor.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/**
 * {@code fs.file.impl}: Hadoop's checksummed local file system over {@link
 * NioRawLocalFileSystem}. A {@link LocalFileSystem}, as Spark's RocksDB state store expects.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
  }
}
