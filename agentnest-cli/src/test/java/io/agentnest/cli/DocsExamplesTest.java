package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.config.AgentNestConfig;
import io.agentnest.server.config.ServerConfig;
import java.io.IOException;
import java.io.StringWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every code block of README.md and docs/*.md is a checked example, so the docs cannot drift from
 * the code again: Java blocks compile against the modules, YAML blocks load with the checker of the
 * file they are written for, and every {@code agentnest ...} line of a shell block parses with the
 * CLI's own commands and options. (Python blocks are run by the Python package's suite.)
 *
 * <p>A Java block that is not a whole class is compiled as the body of a method of a class whose
 * fields are the names the docs use for things made earlier ({@link #GIVEN}); an HTML comment on
 * the line before a block adds to that ({@code <!-- given: void createReport() {} -->}), says what
 * a YAML block is ({@code <!-- example: server.yaml -->}), or says why a block cannot be checked
 * ({@code <!-- not checked: REASON -->}, a reason is required).
 */
class DocsExamplesTest {
  static final Path ROOT = Path.of("").toAbsolutePath().getParent();
  private static final Pattern FENCE = Pattern.compile("^```([a-z]*)\\s*$");
  private static final Pattern TAG =
      Pattern.compile("^<!--\\s*(given|example|not checked):(.*)-->$");
  private static final Pattern TYPE_DECL =
      Pattern.compile("(?m)^public\\s+(final\\s+)?(class|interface|record|enum)\\s+(\\w+)");

  /** The names the docs use for what an earlier paragraph made. */
  static final String GIVEN =
      String.join(
          "\n",
          "  io.agentnest.Sandbox sandbox, sb;",
          "  java.nio.file.Path dir;",
          "  org.slf4j.Logger log;",
          "  io.agentnest.ExecOptions opts;",
          "  java.util.concurrent.Flow.Subscriber<io.agentnest.ExecEvent> mySubscriber;");

  record Block(Path file, int line, String lang, String text, String given, String kind) {
    String where() {
      return ROOT.relativize(file) + ":" + line;
    }
  }

  static List<Block> blocks() throws IOException {
    List<Path> files = new ArrayList<>();
    files.add(ROOT.resolve("README.md"));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
    }
    List<Block> out = new ArrayList<>();
    for (Path f : files) {
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        Matcher open = FENCE.matcher(lines.get(i));
        if (!open.matches()) {
          continue;
        }
        String given = "";
        String kind = "";
        // tags: the comment lines right above the fence
        for (int j = i - 1; j >= 0 && TAG.matcher(lines.get(j).strip()).matches(); j--) {
          Matcher t = TAG.matcher(lines.get(j).strip());
          t.matches();
          String value = t.group(2).strip();
          if (t.group(1).equals("given")) {
            given = value + "\n" + given;
          } else if (t.group(1).equals("example")) {
            kind = value;
          } else {
            kind = "not checked: " + value;
          }
        }
        StringBuilder text = new StringBuilder();
        int start = i + 1;
        for (i = i + 1; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
          text.append(lines.get(i)).append('\n');
        }
        out.add(new Block(f, start, open.group(1), text.toString(), given, kind));
      }
    }
    return out;
  }

  @Test
  void everyBlockThatIsNotCheckedSaysWhy() throws IOException {
    for (Block b : blocks()) {
      if (b.kind().startsWith("not checked:")) {
        assertThat(b.kind().substring("not checked:".length()).strip())
            .as(b.where() + ": a block left unchecked must say why")
            .isNotEmpty();
      }
    }
    assertThat(blocks().stream().filter(b -> b.lang().equals("java")).count())
        .as("the Java examples are found")
        .isGreaterThan(20);
  }

  @Test
  void everyJavaBlockCompiles() throws IOException {
    List<JavaFileObject> units = new ArrayList<>();
    List<Block> javaBlocks = new ArrayList<>();
    for (Block b : blocks()) {
      if (!b.lang().equals("java") || b.kind().startsWith("not checked")) {
        continue;
      }
      javaBlocks.add(b);
      units.add(unit(b, units.size()));
    }
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    Path out = Files.createTempDirectory("agentnest-docs-examples");
    List<String> options =
        List.of(
            "-proc:none",
            "-d",
            out.toString(),
            "-classpath",
            System.getProperty("java.class.path"),
            "-Xlint:none");
    StringWriter noise = new StringWriter();
    Boolean ok;
    try {
      ok = javac.getTask(noise, null, diagnostics, options, null, units).call();
    } finally {
      try (Stream<Path> made = Files.walk(out)) {
        made.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    List<String> errors = new ArrayList<>();
    for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
      if (d.getKind() != Diagnostic.Kind.ERROR || d.getSource() == null) {
        continue;
      }
      Example ex = (Example) d.getSource();
      long blockLine = d.getLineNumber() - ex.offset;
      errors.add(
          ROOT.relativize(ex.block.file())
              + ":"
              + (ex.block.line() + blockLine - 1)
              + ": "
              + d.getMessage(Locale.ROOT));
    }
    assertThat(errors).as("Java examples that do not compile (file:line: error)").isEmpty();
    assertThat(ok).as(noise.toString()).isTrue();
    assertThat(javaBlocks).isNotEmpty();
  }

  /** A block as a compilation unit, and how many lines the wrapper put above the block's text. */
  static final class Example extends SimpleJavaFileObject {
    final Block block;
    final String source;
    final int offset;

    Example(String className, Block block, String source, int offset) {
      super(URI.create("string:///" + className + ".java"), Kind.SOURCE);
      this.block = block;
      this.source = source;
      this.offset = offset;
    }

    @Override
    public CharSequence getCharContent(boolean ignoreEncodingErrors) {
      return source;
    }
  }

  static Example unit(Block b, int n) {
    Matcher type = TYPE_DECL.matcher(b.text());
    if (type.find()) {
      // a whole compilation unit, as a reader would save it
      return new Example(type.group(3), b, b.text(), 0);
    }
    StringBuilder imports = new StringBuilder();
    StringBuilder body = new StringBuilder();
    int importLines = 0;
    for (String line : b.text().split("\n", -1)) {
      if (line.startsWith("import ")) {
        imports.append(line).append('\n');
        importLines++;
        body.append('\n'); // keeps the block's line numbers
      } else {
        body.append(line).append('\n');
      }
    }
    String text = body.toString().stripTrailing();
    String lastCode = text.replaceAll("//[^\\n]*$", "").stripTrailing();
    if (!lastCode.endsWith(";") && !lastCode.endsWith("}")) {
      text = text + ";"; // a builder expression shown on its own
    }
    String name = "DocsExample" + n;
    String head =
        imports
            + "import io.agentnest.*;\n"
            + "import io.agentnest.audit.*;\n"
            + "import io.agentnest.config.*;\n"
            + "import java.nio.file.Path;\n"
            + "import java.time.Duration;\n"
            + "import java.util.*;\n"
            + "import java.util.concurrent.*;\n"
            + "@SuppressWarnings(\"all\")\n"
            + "class "
            + name
            + " {\n"
            + GIVEN
            + "\n"
            + b.given()
            + "\n  void example() throws Exception {\n";
    int offset = (int) head.chars().filter(c -> c == '\n').count() - importLines;
    return new Example(name, b, head + text + "\n  }\n}\n", offset);
  }

  @Test
  void everyYamlBlockLoadsWithTheCheckerOfItsFile() throws IOException {
    List<String> errors = new ArrayList<>();
    int checked = 0;
    for (Block b : blocks()) {
      if (!b.lang().equals("yaml") || b.kind().startsWith("not checked")) {
        continue;
      }
      checked++;
      try {
        if (b.kind().equals("server.yaml")) {
          ServerConfig.parse(b.text(), b.where());
        } else {
          // Secrets named by the example come from the environment: give each a value.
          Map<String, String> env = new HashMap<>();
          Matcher names =
              Pattern.compile("\\$\\{secret:([A-Za-z0-9_]+)}|\\b([A-Z][A-Z0-9_]{2,})\\b")
                  .matcher(b.text());
          while (names.find()) {
            env.put(
                names.group(1) != null ? names.group(1) : names.group(2),
                "docs-example-value-0123");
          }
          AgentNestConfig c = AgentNestConfig.parse(b.text(), b.where(), env);
          c.effectiveYaml(null);
          for (String p : c.profiles()) {
            c.effectiveYaml(p);
          }
        }
      } catch (RuntimeException e) {
        errors.add(b.where() + ": " + e.getMessage());
      }
    }
    assertThat(errors).as("YAML examples the checker refuses").isEmpty();
    assertThat(checked).isGreaterThan(5);
  }

  @Test
  void everyAgentnestCommandInAShellBlockParses() throws IOException {
    List<String> errors = new ArrayList<>();
    int checked = 0;
    for (Block b : blocks()) {
      if (!List.of("bash", "sh").contains(b.lang()) || b.kind().startsWith("not checked")) {
        continue;
      }
      for (ShellLines.Command c : ShellLines.commands(b.text())) {
        checked++;
        try {
          new CommandLine(new AgentNestCli()).parseArgs(c.args().toArray(String[]::new));
        } catch (CommandLine.ParameterException e) {
          errors.add(
              b.where() + " (+" + c.lineInBlock() + "): `" + c.shown() + "`: " + e.getMessage());
        }
      }
    }
    assertThat(errors).as("agentnest commands in the docs that the CLI refuses").isEmpty();
    assertThat(checked).as("agentnest command lines found").isGreaterThan(30);
  }
}
