package io.agentnest.docker;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The seccomp filters the kernel holds for a process, copied out from the host and run here on a
 * chosen system call: what the kernel itself would decide, without making the call. That answers
 * for ABIs the kernel of the test machine may not serve at all (int 0x80 under some hypervisors).
 */
final class SeccompFilters {
  static final int AUDIT_ARCH_X86_64 = 0xC000003E;
  static final int AUDIT_ARCH_I386 = 0x40000003;
  static final int X32_SYSCALL_BIT = 0x40000000;
  static final long ALLOW = 0x7FFF0000L;
  static final long KILL_THREAD = 0L;
  static final long KILL_PROCESS = 0x80000000L;

  /** One classic BPF instruction. */
  record Insn(int code, int jt, int jf, long k) {}

  private final List<List<Insn>> filters;

  private SeccompFilters(List<List<Insn>> filters) {
    this.filters = filters;
  }

  /** The filters of host process {@code pid}, read with PTRACE_SECCOMP_GET_FILTER (needs root). */
  static SeccompFilters of(long pid) throws IOException, InterruptedException {
    Path script = Files.createTempFile("agentnest-seccomp-filters", ".py");
    try {
      try (InputStream in = SeccompFilters.class.getResourceAsStream("seccomp_filters.py")) {
        if (in == null) {
          throw new IllegalStateException("seccomp_filters.py is missing from the test resources");
        }
        Files.write(script, in.readAllBytes());
      }
      Process p =
          new ProcessBuilder("python3", script.toString(), Long.toString(pid))
              .redirectErrorStream(true)
              .start();
      byte[] out = p.getInputStream().readNBytes(16 << 20);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("reading the seccomp filters of pid " + pid + " hung");
      }
      String text = new String(out, StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new IllegalStateException("reading the seccomp filters failed: " + text);
      }
      List<List<Insn>> filters = new ArrayList<>();
      for (JsonNode f : Json.MAPPER.readTree(text)) {
        List<Insn> prog = new ArrayList<>();
        for (JsonNode i : f) {
          prog.add(
              new Insn(i.get(0).asInt(), i.get(1).asInt(), i.get(2).asInt(), i.get(3).asLong()));
        }
        filters.add(prog);
      }
      return new SeccompFilters(filters);
    } finally {
      Files.deleteIfExists(script);
    }
  }

  int count() {
    return filters.size();
  }

  /**
   * The action the kernel takes for system call {@code nr} of ABI {@code arch} with {@code args}.
   */
  long decide(int arch, int nr, long... args) {
    ByteBuffer data = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
    data.putInt(nr).putInt(arch).putLong(0);
    for (int i = 0; i < 6; i++) {
      data.putLong(i < args.length ? args[i] : 0);
    }
    long result = ALLOW;
    for (List<Insn> f : filters) {
      long r = run(f, data);
      // The kernel takes the most severe action of all filters (the lowest as a signed int).
      if ((int) (r & 0xFFFF0000L) < (int) (result & 0xFFFF0000L)) {
        result = r;
      }
    }
    return result;
  }

  static String name(long action) {
    long a = action & 0xFFFF0000L;
    if (a == ALLOW) {
      return "ALLOW";
    }
    if (a == KILL_THREAD) {
      return "KILL_THREAD";
    }
    if (a == KILL_PROCESS) {
      return "KILL_PROCESS";
    }
    if (a == 0x00050000L) {
      return "ERRNO(" + (action & 0xFFFF) + ")";
    }
    return "0x" + Long.toHexString(action);
  }

  private static long run(List<Insn> prog, ByteBuffer data) {
    long a = 0;
    long x = 0;
    long[] mem = new long[16];
    int pc = 0;
    for (int steps = 0; steps < 65536; steps++) {
      Insn in = prog.get(pc);
      int cls = in.code() & 0x07;
      long src = (in.code() & 0x08) != 0 ? x : in.k();
      switch (cls) {
        case 0x00 -> { // LD
          int mode = in.code() & 0xE0;
          a =
              switch (mode) {
                case 0x20 -> Integer.toUnsignedLong(data.getInt((int) in.k())); // ABS
                case 0x00 -> in.k(); // IMM
                case 0x60 -> mem[(int) in.k()]; // MEM
                default -> throw new IllegalStateException("unsupported load " + in);
              };
        }
        case 0x01 -> x = (in.code() & 0xE0) == 0x60 ? mem[(int) in.k()] : in.k(); // LDX
        case 0x02 -> mem[(int) in.k()] = a; // ST
        case 0x03 -> mem[(int) in.k()] = x; // STX
        case 0x04 -> { // ALU
          a =
              switch (in.code() & 0xF0) {
                case 0x00 -> a + src;
                case 0x10 -> a - src;
                case 0x20 -> a * src;
                case 0x40 -> a | src;
                case 0x50 -> a & src;
                case 0x60 -> a << src;
                case 0x70 -> a >>> src;
                case 0x80 -> -a;
                case 0xA0 -> a ^ src;
                default -> throw new IllegalStateException("unsupported alu " + in);
              };
          a &= 0xFFFFFFFFL;
        }
        case 0x05 -> { // JMP
          int op = in.code() & 0xF0;
          if (op == 0x00) {
            pc += (int) in.k() + 1;
            continue;
          }
          boolean taken =
              switch (op) {
                case 0x10 -> a == src;
                case 0x20 -> a > src;
                case 0x30 -> a >= src;
                case 0x40 -> (a & src) != 0;
                default -> throw new IllegalStateException("unsupported jump " + in);
              };
          pc += 1 + (taken ? in.jt() : in.jf());
          continue;
        }
        case 0x06 -> { // RET
          return (in.code() & 0x18) == 0x10 ? a : in.k();
        }
        default -> { // MISC: TAX / TXA
          if ((in.code() & 0xF8) == 0x80) {
            a = x;
          } else {
            x = a;
          }
        }
      }
      pc++;
    }
    throw new IllegalStateException("the filter did not return within 65536 steps");
  }
}
