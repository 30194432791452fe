package rebalancemonitor.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per call.
 *
 * <p>Without Hadoop's native library (pyspark does not ship it), {@link RawLocalFileSystem}
 * runs {@code chmod} for every file it creates with a permission and {@code readlink} for
 * every link status (each rename asks for two). A micro-batch writes a dozen checkpoint and
 * state files, each through a temporary file and a rename: about 0.3 s of process starts per
 * batch on a 2-core machine. Here the permission is set and the link is checked with
 * {@code java.nio} instead; symbolic links still go through Hadoop's own code.
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {
  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    if (Files.isSymbolicLink(pathToFile(f).toPath())) {
      return super.getFileLinkStatus(f);
    }
    return getFileStatus(f);
  }

  /** The read, write and execute bits of user, group and others (no sticky bit). */
  static Set<PosixFilePermission> posix(FsPermission permission) {
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    add(out, permission.getUserAction(),
        PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_EXECUTE);
    add(out, permission.getGroupAction(),
        PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
        PosixFilePermission.GROUP_EXECUTE);
    add(out, permission.getOtherAction(),
        PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_EXECUTE);
    return out;
  }

  private static void add(
      Set<PosixFilePermission> out, FsAction action,
      PosixFilePermission read, PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) {
      out.add(read);
    }
    if (action.implies(FsAction.WRITE)) {
      out.add(write);
    }
    if (action.implies(FsAction.EXECUTE)) {
      out.add(execute);
    }
  }
}
