package io.agentnest.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent compiled by the host's python3 (the build needs python3 for the agent's own tests, so
 * it is there): its magic number first, cached under the home, read back by the next process, and
 * sent after the sources in the bootstrap's payload.
 */
class AgentBytecodeTest {
  @Test
  void theHostCompilesTheAgentOnceAndTheNextProcessReadsTheCache(@TempDir Path cache)
      throws Exception {
    AgentBytecode.load(cache);
    byte[] code = AgentBytecode.current();
    assertThat(Arrays.copyOf(code, 4)).isEqualTo(hostMagic());
    assertThat(code.length).isGreaterThan(10_000);
    Path[] files;
    try (var s = Files.list(cache)) {
      files = s.toArray(Path[]::new);
    }
    assertThat(files).hasSize(1);
    assertThat(files[0].getFileName().toString()).matches("agent-[0-9a-f]{24}\\.bin");
    // A later process reads the file as it is: the cache, not a new compile.
    byte[] marked = code.clone();
    marked[marked.length - 1] ^= 1;
    Files.write(files[0], marked);
    AgentBytecode.load(cache);
    assertThat(AgentBytecode.current()).isEqualTo(marked);
    // back to a sound compiled agent for whatever else this JVM starts
    AgentBytecode.load(cache.resolve("fresh"));

    byte[] payload = AgentSources.payload(code);
    String head = new String(payload, 0, 30, StandardCharsets.US_ASCII);
    assertThat(Long.parseLong(head.substring(20, 30))).isEqualTo(code.length);
    assertThat(Arrays.copyOfRange(payload, payload.length - code.length, payload.length))
        .isEqualTo(code);
  }

  @Test
  void aSourceThatDoesNotCompileGivesNoCode() throws Exception {
    assertThat(AgentBytecode.compile("def (".getBytes(StandardCharsets.UTF_8))).isEmpty();
  }

  private static byte[] hostMagic() throws Exception {
    Process p =
        new ProcessBuilder(
                "python3",
                "-I",
                "-S",
                "-c",
                "import sys,importlib.util as u;sys.stdout.buffer.write(u.MAGIC_NUMBER)")
            .start();
    byte[] magic;
    try (InputStream in = p.getInputStream()) {
      magic = in.readNBytes(4);
    }
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return magic;
  }
}
