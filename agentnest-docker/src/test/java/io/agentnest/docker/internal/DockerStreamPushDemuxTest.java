package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The push demultiplexer must give what the stream one gives, however the bytes are split. */
class DockerStreamPushDemuxTest {

  private static void frame(ByteArrayOutputStream out, int stream, String text) {
    byte[] b = text.getBytes(StandardCharsets.UTF_8);
    out.writeBytes(ByteBuffer.allocate(8).put(0, (byte) stream).putInt(4, b.length).array());
    out.writeBytes(b);
  }

  private static byte[] sample() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    frame(out, 1, "hello ");
    frame(out, 2, "python3: warning\n");
    frame(out, 1, "");
    frame(out, 1, "world");
    frame(out, 2, "bye\n");
    return out.toByteArray();
  }

  private static String pushAll(DockerStreamPushDemux d, byte[] bytes, int cut) {
    ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    d.push(
        ByteBuffer.wrap(bytes, 0, cut), b -> stdout.write(b.array(), b.position(), b.remaining()));
    d.push(
        ByteBuffer.wrap(bytes, cut, bytes.length - cut),
        b -> stdout.write(b.array(), b.position(), b.remaining()));
    return stdout.toString(StandardCharsets.UTF_8);
  }

  @Test
  void splitAtEveryByteBoundaryGivesStdoutAndKeepsStderr() throws IOException {
    byte[] bytes = sample();
    DockerStreamDemux blocking = new DockerStreamDemux(new ByteArrayInputStream(bytes));
    String expected = new String(blocking.readAllBytes(), StandardCharsets.UTF_8);
    assertThat(expected).isEqualTo("hello world");
    for (int cut = 0; cut <= bytes.length; cut++) {
      DockerStreamPushDemux d = new DockerStreamPushDemux();
      assertThat(pushAll(d, bytes, cut)).as("cut at %d", cut).isEqualTo(expected);
      assertThat(d.diagnostics()).isEqualTo("python3: warning\nbye\n");
    }
  }

  @Test
  void stderrIsKeptToItsLastFourKibibytes() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    frame(out, 2, "x".repeat(10_000) + "END");
    DockerStreamPushDemux d = new DockerStreamPushDemux();
    StringBuilder stdout = new StringBuilder();
    d.push(ByteBuffer.wrap(out.toByteArray()), b -> stdout.append(b.remaining()));
    assertThat(stdout).isEmpty();
    assertThat(d.diagnostics()).hasSize(4096).endsWith("xEND");
  }
}
