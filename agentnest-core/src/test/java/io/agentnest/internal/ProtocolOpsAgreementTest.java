package io.agentnest.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.agent.AgentSources;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The op list exists three times: {@link Ops} on the host, the dispatch table {@code OPS} in the
 * agent (asked with {@code python3 agent.py --protocol}), and the tables in {@code
 * docs/architecture.md}. They must name the same ops and frame types; a difference fails with the
 * name and where it is missing. The core's sources must use the {@link Ops} constants, not
 * literals, so that the list is the only place an op is spelled.
 */
class ProtocolOpsAgreementTest {
  private static final Path DOC = repoRoot().resolve("docs/architecture.md");
  private static JsonNode agent;

  @BeforeAll
  static void askTheAgent(@TempDir Path tmp) throws Exception {
    Path source = tmp.resolve("agent.py");
    try (InputStream in = AgentSources.class.getResourceAsStream("agent.py")) {
      assertThat(in).as("agent.py on the class path (module agentnest-agent)").isNotNull();
      Files.write(source, in.readAllBytes());
    }
    Process p;
    try {
      p =
          new ProcessBuilder("python3", source.toString(), "--protocol")
              .redirectErrorStream(true)
              .start();
    } catch (IOException e) {
      throw new AssertionError(
          "python3 is needed to read the agent's op list (and to run the agent's own tests):"
              + " install it (Debian: apt-get install python3)",
          e);
    }
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readNBytes(1 << 20);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("python3 agent.py --protocol ended").isTrue();
    String text = new String(out, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as("python3 agent.py --protocol: %s", text).isZero();
    agent = Json.MAPPER.readTree(text);
  }

  @Test
  void javaPythonAndTheDocsNameTheSameOps() throws IOException {
    assertAgree("op", Ops.ops(), strings(agent.path("ops")), docTable("### Ops (host -> agent)"));
  }

  @Test
  void javaPythonAndTheDocsNameTheSameFrameTypes() throws IOException {
    assertAgree(
        "frame type",
        Ops.events(),
        strings(agent.path("events")),
        docTable("### Frame types (agent -> host)"));
  }

  @Test
  void theOpListIsNotEmptyOrHalfRead() {
    // A parser that found nothing would make the comparison pass vacuously.
    assertThat(Ops.ops()).contains(Ops.OP_EXEC, Ops.OP_FS_WRITE, Ops.OP_TCP_CLOSE).hasSize(31);
    assertThat(Ops.events()).contains(Ops.EV_RESULT, Ops.EV_ERROR, Ops.EV_TCP_OPEN).hasSize(13);
  }

  @Test
  void aDifferenceNamesTheOpAndEveryListItIsMissingFrom() {
    assertThat(
            disagreements(
                "op", List.of("exec", "fs_read"), List.of("exec", "zap"), List.of("exec", "zap")))
        .containsExactly(
            "op 'fs_read' is missing from agent.py (the OPS table) and docs/architecture.md (its op"
                + " table)",
            "op 'zap' is missing from Ops.java (an OP_/EV_ constant)");
    assertThat(disagreements("op", List.of("a"), List.of("a"), List.of("a"))).isEmpty();
  }

  @Test
  void coreWritesNoOpOrFrameTypeAsALiteralOutsideOps() throws IOException {
    Path main = repoRoot().resolve("agentnest-core/src/main/java");
    List<Path> sources;
    try (Stream<Path> files = Files.walk(main)) {
      sources = files.filter(f -> f.toString().endsWith(".java")).sorted().toList();
    }
    assertThat(sources).as("Java sources under %s", main).hasSizeGreaterThan(100);
    List<String> literals = new ArrayList<>();
    for (Path f : sources) {
      if (f.getFileName().toString().equals("Ops.java")) {
        continue;
      }
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        if (LITERAL_OP.matcher(lines.get(i)).find()) {
          literals.add(main.relativize(f) + ":" + (i + 1) + ": " + lines.get(i).strip());
        }
      }
    }
    assertThat(literals)
        .as(
            "ops and frame types written as literals: use the Ops constants (Ops.OP, Ops.OP_*, Ops.EV_*)")
        .isEmpty();
  }

  @Test
  void theLiteralScanSeesEachShapeOfAWrittenOutOp() {
    assertThat(
            Stream.of(
                "Json.object().put(\"op\", \"exec\")",
                "h.put(Ops.OP, \"tar_in\")",
                "h.path(\"op\").asText()",
                "if (f.ev().equals(\"err\")) {",
                "header.path(\"ev\").asText()",
                "ch.sendChunks(\"py_load\", id, first, data, CHUNK, done);"))
        .allMatch(line -> LITERAL_OP.matcher(line).find());
    assertThat(
            Stream.of(
                "Json.object().put(Ops.OP, Ops.OP_EXEC)",
                "if (f.ev().equals(Ops.EV_ERROR)) {",
                "m.put(\"operation\", \"exec\")"))
        .noneMatch(line -> LITERAL_OP.matcher(line).find());
  }

  /**
   * The shapes an op or frame type takes when written out by hand: the {@code op}/{@code ev} field
   * named as a literal, a literal op value, a frame type compared as a literal, chunks of a literal
   * op.
   */
  private static final Pattern LITERAL_OP =
      Pattern.compile(
          "\"(op|ev)\"\\s*[,)]|Ops\\.OP,\\s*\"|\\bev\\(\\)\\.equals\\(\"|sendChunks\\(\\s*\"");

  private static void assertAgree(
      String what, List<String> java, List<String> python, List<String> docs) {
    assertThat(disagreements(what, java, python, docs)).as("the %s lists disagree", what).isEmpty();
    assertThat(docs).as("%s rows in docs/architecture.md, each once", what).doesNotHaveDuplicates();
  }

  static List<String> disagreements(
      String what, List<String> java, List<String> python, List<String> docs) {
    Set<String> all = new TreeSet<>(java);
    all.addAll(python);
    all.addAll(docs);
    List<String> problems = new ArrayList<>();
    for (String name : all) {
      List<String> missing = new ArrayList<>();
      if (!java.contains(name)) {
        missing.add("Ops.java (an OP_/EV_ constant)");
      }
      if (!python.contains(name)) {
        missing.add("agent.py (" + (what.equals("op") ? "the OPS table" : "an EV_ constant") + ")");
      }
      if (!docs.contains(name)) {
        missing.add("docs/architecture.md (its " + what + " table)");
      }
      if (!missing.isEmpty()) {
        problems.add(what + " '" + name + "' is missing from " + String.join(" and ", missing));
      }
    }
    return problems;
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  /** The first cell of each row of the table that follows {@code heading}: one `name` per row. */
  private static List<String> docTable(String heading) throws IOException {
    List<String> lines = Files.readAllLines(DOC, StandardCharsets.UTF_8);
    int at = lines.indexOf(heading);
    assertThat(at).as("heading '%s' in %s", heading, DOC).isNotNegative();
    Pattern row = Pattern.compile("^\\| `([a-z_]+)` \\|");
    List<String> names = new ArrayList<>();
    boolean inTable = false;
    for (String line : lines.subList(at + 1, lines.size())) {
      if (line.startsWith("|")) {
        inTable = true;
        Matcher m = row.matcher(line);
        if (m.find()) {
          names.add(m.group(1));
        }
      } else if (inTable || line.startsWith("#")) {
        break;
      }
    }
    return names;
  }

  private static Path repoRoot() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.exists(dir.resolve("docs/architecture.md"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException(
          "docs/architecture.md not found above " + Path.of("").toAbsolutePath());
    }
    return dir;
  }
}
