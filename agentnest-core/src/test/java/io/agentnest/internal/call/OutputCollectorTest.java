package io.agentnest.internal.call;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.OutputChunk;
import io.agentnest.RichOutput;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutputCollectorTest {
  private static final int SLACK = 256 * 1024;

  private static Frame out(String stream, byte[] data) {
    return new Frame(Json.object().put(Ops.EV, Ops.EV_OUT).put("id", 1).put("s", stream), data);
  }

  private static Frame out(String stream, String text) {
    return out(stream, text.getBytes(StandardCharsets.UTF_8));
  }

  private static Frame rich(String mime, byte[] data) {
    ObjectNode h = Json.object().put(Ops.EV, Ops.EV_RICH).put("id", 1);
    if (mime != null) {
      h.put("mime", mime);
    }
    return new Frame(h, data);
  }

  private static ObjectNode res() {
    return Json.object().put(Ops.EV, Ops.EV_RESULT).put("id", 1);
  }

  @Test
  void shellResultCarriesExitCodeStreamsAndDuration() {
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(out("o", "hello "));
    c.accept(out("e", "warning\n"));
    c.accept(out("o", "world\n"));

    ExecResult r = c.toResult(res().put("exit_code", 3).put("duration_ms", 12), false);

    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.stdout()).isEqualTo("hello world\n").isEqualTo(r.output());
    assertThat(r.stderr()).isEqualTo("warning\n");
    assertThat(r.result()).isNull();
    assertThat(r.error()).isNull();
    assertThat(r.rich()).isEmpty();
    assertThat(r.limit()).isNull();
    assertThat(r.truncated()).isFalse();
    assertThat(r.stateLost()).isFalse();
    assertThat(r.duration()).isEqualTo(Duration.ofMillis(12));
    assertThat(r.ok()).isFalse();
  }

  @Test
  void shellSuccessIsOk() {
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(out("o", "x"));
    ExecResult r = c.toResult(res().put("exit_code", 0), false);
    assertThat(r.exitCode()).isZero();
    assertThat(r.ok()).isTrue();
  }

  @Test
  void missingExitCodeIsMinusOneAndNegativeDurationIsZero() {
    ExecResult r = new OutputCollector(1000, null).toResult(res().put("duration_ms", -5), false);
    assertThat(r.exitCode()).isEqualTo(-1);
    assertThat(r.duration()).isEqualTo(Duration.ZERO);
  }

  @Test
  void shellStartFailureIsAppendedToStderr() {
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(out("e", "partial\n"));
    ExecResult r =
        c.toResult(res().put("exit_code", 127).put("error", "nosuchcmd: not found"), false);
    assertThat(r.exitCode()).isEqualTo(127);
    assertThat(r.stderr()).isEqualTo("partial\nnosuchcmd: not found\n");
    assertThat(r.error()).isNull();
  }

  @Test
  void pythonSuccessHasResultAndExitZero() {
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(out("o", "20\n"));
    ExecResult r = c.toResult(res().put("result", "11").put("exit_code", 5), true);

    assertThat(r.exitCode()).as("python exit code ignores exit_code").isZero();
    assertThat(r.stdout()).isEqualTo("20\n");
    assertThat(r.result()).isEqualTo("11");
    assertThat(r.error()).isNull();
    assertThat(r.ok()).isTrue();
  }

  @Test
  void pythonErrorGivesExitOneAndTheError() {
    OutputCollector c = new OutputCollector(1000, null);
    ObjectNode h = res();
    h.putObject("error")
        .put("name", "ZeroDivisionError")
        .put("value", "division by zero")
        .put("traceback", "Traceback (most recent call last):\n  ...\nZeroDivisionError");
    h.putNull("result");
    h.put("state_lost", true);

    ExecResult r = c.toResult(h, true);

    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.error()).isNotNull();
    assertThat(r.error().name()).isEqualTo("ZeroDivisionError");
    assertThat(r.error().value()).isEqualTo("division by zero");
    assertThat(r.error().traceback()).startsWith("Traceback").endsWith("ZeroDivisionError");
    assertThat(r.result()).isNull();
    assertThat(r.stateLost()).isTrue();
    assertThat(r.ok()).isFalse();
    assertThat(r.stderr()).isEmpty();
  }

  @Test
  void pythonErrorFieldsAreBoundedAndDefaulted() {
    ObjectNode h = res();
    h.putObject("error").put("name", "E".repeat(1000));
    ExecResult r = new OutputCollector(1000, null).toResult(h, true);
    assertThat(r.error().name()).startsWith("E".repeat(200)).contains("[truncated 800 chars]");
    assertThat(r.error().value()).isEmpty();
    assertThat(r.error().traceback()).isEmpty();

    ObjectNode h2 = res();
    h2.putObject("error");
    assertThat(new OutputCollector(1000, null).toResult(h2, true).error().name())
        .isEqualTo("Error");
  }

  @Test
  void nonTextualResultIsIgnored() {
    ObjectNode h = res().put("result", 42);
    assertThat(new OutputCollector(1000, null).toResult(h, true).result()).isNull();
  }

  @Test
  void invalidUtf8IsDecodedToReplacementCharacter() {
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(out("o", new byte[] {'f', (byte) 0xff, 'o'}));
    c.accept(out("e", new byte[] {(byte) 0xc3})); // truncated 2-byte sequence at the end
    ExecResult r = c.toResult(res().put("exit_code", 0), false);
    assertThat(r.stdout()).isEqualTo("f\uFFFDo");
    assertThat(r.stderr()).isEqualTo("\uFFFD");
  }

  @Test
  void multiByteCharacterSplitAcrossFramesIsDecodedWhole() {
    byte[] e = "é".getBytes(StandardCharsets.UTF_8);
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(out("o", new byte[] {e[0]}));
    c.accept(out("o", new byte[] {e[1]}));
    assertThat(c.toResult(res(), false).stdout()).isEqualTo("é");
  }

  @Test
  void hostCapTruncatesOutputBeyondMaxOutputPlusSlack() {
    List<OutputChunk> chunks = new ArrayList<>();
    OutputCollector c = new OutputCollector(100, chunks::add);
    int cap = 100 + SLACK;
    byte[] block = new byte[cap];
    Arrays.fill(block, (byte) 'a');

    c.accept(out("o", block)); // exactly fills the cap
    c.accept(out("o", "more")); // beyond the cap: dropped, marks truncation
    c.accept(out("e", "even more"));

    ExecResult r = c.toResult(res().put("exit_code", 0), false);
    assertThat(r.stdout()).hasSize(cap);
    assertThat(r.stderr()).isEmpty();
    assertThat(r.truncated()).isTrue();
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
    assertThat(r.ok()).isFalse();
    assertThat(chunks).hasSize(1);
    assertThat(chunks.get(0).data()).hasSize(cap);
  }

  @Test
  void frameCrossingTheCapIsCutAndListenerGetsTheSlice() {
    List<OutputChunk> chunks = new ArrayList<>();
    OutputCollector c = new OutputCollector(0, chunks::add);
    byte[] first = new byte[SLACK - 10];
    Arrays.fill(first, (byte) 'a');
    byte[] second = new byte[100];
    Arrays.fill(second, (byte) 'b');

    c.accept(out("o", first));
    c.accept(out("e", second)); // only 10 bytes fit
    c.accept(out("o", "x")); // nothing fits any more

    ExecResult r = c.toResult(res().put("exit_code", 0), false);
    assertThat(r.stdout()).hasSize(SLACK - 10);
    assertThat(r.stderr()).isEqualTo("b".repeat(10));
    assertThat(r.truncated()).isTrue();
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
    // The redactor may hold a trailing byte back until the end ('b' could start "bearer "),
    // so count bytes per stream rather than chunks.
    assertThat(
            chunks.stream()
                .filter(ch -> ch.stream() == OutputChunk.Stream.STDERR)
                .mapToInt(ch -> ch.data().length)
                .sum())
        .isEqualTo(10);
  }

  @Test
  void agentLimitWinsOverHostTruncation() {
    OutputCollector c = new OutputCollector(0, null);
    c.accept(out("o", new byte[SLACK]));
    c.accept(out("o", "x"));
    ExecResult r = c.toResult(res().put("limit", "timeout").put("exit_code", 137), false);
    assertThat(r.limit()).isEqualTo(Limit.TIMEOUT);
    assertThat(r.truncated()).isTrue();
  }

  @Test
  void agentReportedLimitAndTruncationArePassedOn() {
    ExecResult r =
        new OutputCollector(1000, null)
            .toResult(res().put("limit", "OUTPUT").put("truncated", true), false);
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
    assertThat(r.truncated()).isTrue();

    ExecResult m = new OutputCollector(1000, null).toResult(res().put("limit", "memory"), true);
    assertThat(m.limit()).isEqualTo(Limit.MEMORY);
  }

  @Test
  void unknownLimitIsIgnored() {
    ExecResult r = new OutputCollector(1000, null).toResult(res().put("limit", "weird"), false);
    assertThat(r.limit()).isNull();
  }

  @Test
  void listenerReceivesChunksInOrderWithTheirStream() {
    List<OutputChunk> chunks = new ArrayList<>();
    OutputCollector c = new OutputCollector(1000, chunks::add);
    c.accept(out("o", "1"));
    c.accept(out("e", "2"));
    c.accept(out("o", "3"));
    c.accept(out("x", "4")); // anything but "e" is stdout
    c.accept(new Frame(Json.object().put(Ops.EV, "progress"), new byte[] {9})); // ignored

    assertThat(chunks).extracting(OutputChunk::text).containsExactly("1", "2", "3", "4");
    assertThat(chunks)
        .extracting(OutputChunk::stream)
        .containsExactly(
            OutputChunk.Stream.STDOUT,
            OutputChunk.Stream.STDERR,
            OutputChunk.Stream.STDOUT,
            OutputChunk.Stream.STDOUT);
    ExecResult r = c.toResult(res(), false);
    assertThat(r.stdout()).isEqualTo("134");
    assertThat(r.stderr()).isEqualTo("2");
  }

  @Test
  void richItemsAreCollectedWithMimeTypes() {
    OutputCollector c = new OutputCollector(1000, null);
    byte[] png = {(byte) 0x89, 'P', 'N', 'G'};
    c.accept(rich("image/png", png));
    c.accept(rich(null, new byte[] {1}));
    c.accept(rich("x/" + "y".repeat(200), new byte[0]));

    List<RichOutput> rich = c.toResult(res(), true).rich();
    assertThat(rich).hasSize(3);
    assertThat(rich.get(0).mimeType()).isEqualTo("image/png");
    assertThat(rich.get(0).data()).isEqualTo(png);
    assertThat(rich.get(1).mimeType()).isEqualTo("application/octet-stream");
    assertThat(rich.get(2).mimeType()).hasSize(100);
  }

  @Test
  void richItemsAreBoundedInNumber() {
    OutputCollector c = new OutputCollector(1000, null);
    for (int i = 0; i < 40; i++) {
      c.accept(rich("text/plain", new byte[] {(byte) i}));
    }
    List<RichOutput> rich = c.toResult(res(), true).rich();
    assertThat(rich).hasSize(16);
    assertThat(rich.get(15).data()).containsExactly(15);
  }

  @Test
  void richItemsAreBoundedInBytes() {
    OutputCollector c = new OutputCollector(1000, null);
    c.accept(rich("image/png", new byte[20 << 20]));
    c.accept(rich("image/png", new byte[20 << 20])); // would exceed 32 MiB: dropped
    c.accept(rich("image/png", new byte[12 << 20])); // exactly reaches 32 MiB: kept
    c.accept(rich("text/plain", new byte[1])); // over: dropped
    List<RichOutput> rich = c.toResult(res(), true).rich();
    assertThat(rich).extracting(x -> x.data().length).containsExactly(20 << 20, 12 << 20);
  }

  @Test
  void richOutputDoesNotCountAsTextOutput() {
    OutputCollector c = new OutputCollector(0, null);
    c.accept(rich("image/png", new byte[SLACK + 10]));
    ExecResult r = c.toResult(res(), true);
    assertThat(r.truncated()).isFalse();
    assertThat(r.limit()).isNull();
    assertThat(r.stdout()).isEmpty();
  }

  @Test
  void aFrameCrossingTheHostCapIsReportedTruncated() {
    OutputCollector c = new OutputCollector(0, null);
    c.accept(out("o", new byte[SLACK + 1000]));
    ExecResult r = c.toResult(res().put("exit_code", 0), false);
    assertThat(r.stdout()).hasSize(SLACK);
    assertThat(r.truncated()).isTrue();
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
  }

  @Test
  void anUnlimitedCapDoesNotOverflow() {
    OutputCollector c = new OutputCollector(Long.MAX_VALUE, null);
    c.accept(out("o", "kept"));
    ExecResult r = c.toResult(res().put("exit_code", 0), false);
    assertThat(r.stdout()).isEqualTo("kept");
    assertThat(r.truncated()).isFalse();
  }
}
