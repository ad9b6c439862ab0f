package io.agentnest.escapes.internal;

import static io.agentnest.escapes.internal.Judges.attempt;
import static io.agentnest.escapes.internal.Judges.timeout;

import io.agentnest.AgentNestException;
import io.agentnest.ExecResult;
import io.agentnest.spi.AgentProbes;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.jspecify.annotations.Nullable;

/**
 * File transfer, judged by the host: traversal, symlinks (also raced), tar-slip and special files.
 */
final class FileProbes {
  private FileProbes() {}

  static void addTo(ProbeList p) {
    p.add(
        "files.traversal",
        "read or write outside the workspace through the file API with '..', absolute paths or NUL bytes",
        Map.of(),
        FileProbes::traversal);
    p.add(
        "files.symlink-outside",
        "read, write or list outside the workspace through symlinks planted in it",
        Map.of(),
        FileProbes::symlinkOutside);
    p.add(
        "files.symlink-swap-race",
        "swap a directory for a symlink while the host reads and writes through it (TOCTOU)",
        Map.of(),
        FileProbes::symlinkSwap);
    p.add(
        "files.tar-slip",
        "unpack archive entries outside the target: '..', absolute names, links pointing out",
        Map.of(),
        FileProbes::tarSlip);
    p.add(
        "files.special-files",
        "make the file API hang or read without bound (fifo, huge sparse file, socket)",
        Map.of(),
        FileProbes::specialFiles);
  }

  private static Judgement traversal(ProbeContext ctx) {
    var files = ctx.target.files();
    Map<String, String> out = new LinkedHashMap<>();
    for (String p :
        List.of(
            "../etc/passwd",
            "/etc/passwd",
            "a/../../etc/passwd",
            "..",
            "./../../proc/self/environ",
            "ok\0/../../etc/passwd",
            "//etc/passwd")) {
      out.put("read " + p.replace("\0", "\\0"), attempt(() -> files.read(p)));
    }
    out.put("write ../../tmp/x", attempt(() -> files.write("../../tmp/escape-x", "x")));
    out.put("list ..", attempt(() -> files.list("..")));
    out.put(
        "delete ../tmp",
        attempt(
            () -> {
              files.delete("../tmp");
              return "deleted";
            }));
    out.put("mkdir /tmp/y", attempt(() -> files.mkdir("/tmp/escape-y")));
    return refusedAll(out);
  }

  private static Judgement refusedAll(Map<String, String> out) {
    List<String> allowed =
        out.entrySet().stream()
            .filter(e -> !e.getValue().equals("refused"))
            .map(e -> e.getKey() + " " + e.getValue())
            .toList();
    return Judgement.of(
        !allowed.isEmpty(),
        allowed.isEmpty() ? out.size() + " attempts, all refused" : "got through: " + allowed);
  }

  private static Judgement symlinkOutside(ProbeContext ctx) {
    ctx.target.exec(
        "mkdir -p /workspace/sl && cd /workspace/sl && ln -sfn /etc/passwd pw && ln -sfn / root && ln -sfn /proc/self/environ env && ln -sfn /tmp tmp && ln -sfn ../.. up");
    var files = ctx.target.files();
    Map<String, String> out = new LinkedHashMap<>();
    out.put("read sl/pw", attempt(() -> files.read("sl/pw")));
    out.put("read sl/root/etc/passwd", attempt(() -> files.read("sl/root/etc/passwd")));
    out.put("read sl/env", attempt(() -> files.read("sl/env")));
    out.put("read sl/up/etc/passwd", attempt(() -> files.read("sl/up/etc/passwd")));
    out.put("write sl/tmp/escape", attempt(() -> files.write("sl/tmp/escape", "x")));
    out.put("write sl/pw", attempt(() -> files.write("sl/pw", "x")));
    out.put("list sl/root", attempt(() -> files.list("sl/root")));
    out.put("stat sl/root/etc", attempt(() -> files.stat("sl/root/etc")));
    out.put(
        "delete sl/tmp/",
        attempt(
            () -> {
              files.deleteRecursive("sl/tmp/.");
              return "deleted";
            }));
    Judgement j = refusedAll(out);
    boolean written =
        ctx.target.exec("test -e /tmp/escape && echo yes || true").stdout().contains("yes");
    return j.or(written, "/tmp/escape was created outside the workspace");
  }

  private static Judgement symlinkSwap(ProbeContext ctx) {
    ctx.target.exec(
        "rm -rf /workspace/race /tmp/race-out && mkdir -p /workspace/race/d /tmp/race-out && echo SAFE > /workspace/race/d/passwd && ln -s /etc/passwd /tmp/race-out/passwd");
    // Swaps race/d between a real directory and a symlink to /tmp/race-out, for a bounded time.
    var swapper =
        ctx.target.runCodeAsync(
            "import os, shutil, time\n"
                + "d, real, out = '/workspace/race/d', '/workspace/race/real', '/tmp/race-out'\n"
                + "end = time.time() + 12\n"
                + "n = 0\n"
                + "while time.time() < end and not os.path.exists('/workspace/race/stop'):\n"
                + "    try:\n"
                + "        os.rename(d, real); os.symlink(out, d); time.sleep(0.0005)\n"
                + "        os.unlink(d); os.rename(real, d)\n"
                + "    except OSError:\n"
                + "        if os.path.islink(d): os.unlink(d)\n"
                + "        elif os.path.isdir(d) and os.path.isdir(real): shutil.rmtree(d)\n"
                + "        if os.path.isdir(real): os.rename(real, d)\n"
                + "    time.sleep(0.0005)\n"
                + "    n += 1\n"
                + "n",
            timeout(30));
    var files = ctx.target.files();
    int reads = 0;
    int outside = 0;
    int refusedOrMissing = 0;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
    for (int i = 0; i < 400 && System.nanoTime() < deadline; i++) {
      try {
        String s = files.readString("race/d/passwd");
        reads++;
        if (s.startsWith("root:")) {
          outside++;
        }
      } catch (AgentNestException e) {
        refusedOrMissing++;
      }
      try {
        files.write("race/d/w" + i, "x");
      } catch (AgentNestException e) {
        refusedOrMissing++;
      }
    }
    ctx.target.exec("touch /workspace/race/stop");
    String swaps;
    try {
      ExecResult r = swapper.get(30, TimeUnit.SECONDS);
      swaps =
          r.result() != null ? r.result() : "? (" + Verdicts.clean(String.valueOf(r.error())) + ")";
    } catch (Exception e) {
      swaps = "? (" + e + ")";
    }
    String escaped = ctx.target.exec("ls /tmp/race-out | grep -c '^w' || true").stdout().strip();
    int writesOut = escaped.isEmpty() ? 0 : Integer.parseInt(escaped);
    return Judgement.of(
        outside > 0 || writesOut > 0,
        swaps
            + " swaps; "
            + reads
            + " reads ("
            + outside
            + " outside the workspace), "
            + writesOut
            + " writes landed outside, "
            + refusedOrMissing
            + " refused or missing");
  }

  private static byte[] tar(String name, byte type, @Nullable String link) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(bytes)) {
      t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      TarArchiveEntry e = new TarArchiveEntry(name, type, true);
      if (link != null) {
        e.setLinkName(link);
      }
      byte[] data = "slipped\n".getBytes(StandardCharsets.UTF_8);
      if (type == TarArchiveEntry.LF_NORMAL) {
        e.setSize(data.length);
      }
      e.setMode(0644);
      t.putArchiveEntry(e);
      if (type == TarArchiveEntry.LF_NORMAL) {
        t.write(data);
      }
      t.closeArchiveEntry();
      if (link != null && type == TarArchiveEntry.LF_SYMLINK) {
        // Then a file written through the symlink just created.
        TarArchiveEntry f =
            new TarArchiveEntry(name + "/through.txt", TarArchiveEntry.LF_NORMAL, true);
        f.setSize(data.length);
        t.putArchiveEntry(f);
        t.write(data);
        t.closeArchiveEntry();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  private static Judgement tarSlip(ProbeContext ctx) {
    // The agent's own checks, alone: the API would refuse these archives on the host first.
    AgentProbes agent = AgentProbes.load();
    if (!agent.supports(ctx.target)) {
      return Judgement.of(false, "not an AgentNest sandbox");
    }
    ctx.target.exec("rm -rf /tmp/slip && mkdir -p /tmp/slip /workspace/slip");
    Map<String, byte[]> archives = new LinkedHashMap<>();
    archives.put(
        "../../../tmp/slip/dotdot.txt",
        tar("../../../tmp/slip/dotdot.txt", TarArchiveEntry.LF_NORMAL, null));
    archives.put("/tmp/slip/abs.txt", tar("/tmp/slip/abs.txt", TarArchiveEntry.LF_NORMAL, null));
    archives.put(
        "symlink to /tmp/slip, then a file through it",
        tar("ln", TarArchiveEntry.LF_SYMLINK, "/tmp/slip"));
    archives.put(
        "symlink ../../tmp/slip, then a file through it",
        tar("ln2", TarArchiveEntry.LF_SYMLINK, "../../tmp/slip"));
    archives.put("hardlink to /etc/passwd", tar("hl", TarArchiveEntry.LF_LINK, "/etc/passwd"));
    archives.put(
        "hardlink ../../etc/passwd", tar("hl2", TarArchiveEntry.LF_LINK, "../../etc/passwd"));
    archives.put("char device 1,1", tar("mem", TarArchiveEntry.LF_CHR, null));
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> a : archives.entrySet()) {
      try {
        agent.unpackUnchecked(ctx.target, "slip", new ByteArrayInputStream(a.getValue()), 1 << 20);
        out.put(a.getKey(), "unpacked");
      } catch (AgentNestException | IOException e) {
        out.put(a.getKey(), "refused");
      }
    }
    String outside =
        ctx.target
            .exec(
                "ls -A /tmp/slip; find /workspace/slip -samefile /etc/passwd 2>/dev/null; find /workspace/slip -type c -o -type b 2>/dev/null")
            .stdout()
            .strip();
    String unpacked =
        String.join(
            ", ",
            out.entrySet().stream()
                .filter(e -> !e.getValue().equals("refused"))
                .map(Map.Entry::getKey)
                .toList());
    return Judgement.of(
        !outside.isEmpty(),
        out.size()
            + " hostile archives; outside the target or linked out: "
            + (outside.isEmpty() ? "nothing" : Verdicts.clean(outside))
            + (unpacked.isEmpty() ? "; all refused" : "; unpacked harmlessly: " + unpacked));
  }

  private static Judgement specialFiles(ProbeContext ctx) {
    ctx.target.exec(
        "cd /workspace && rm -f fifo sparse sock && mkfifo fifo && truncate -s 5G sparse && python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('sock')\"");
    var files = ctx.target.files();
    Map<String, String> out = new LinkedHashMap<>();
    for (String p : List.of("fifo", "sparse", "sock")) {
      CompletableFuture<String> f =
          CompletableFuture.supplyAsync(() -> attempt(() -> files.read(p)));
      try {
        out.put("read " + p, f.get(20, TimeUnit.SECONDS));
      } catch (Exception e) {
        f.cancel(true);
        out.put("read " + p, "HUNG for 20 s");
      }
    }
    ctx.target.exec("rm -f /workspace/fifo /workspace/sparse /workspace/sock");
    return refusedAll(out);
  }
}
