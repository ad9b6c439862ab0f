package io.agentnest.tools;

import io.agentnest.AgentNestException;
import io.agentnest.Backpressure;
import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.RichOutput;
import io.agentnest.Sandbox;
import io.agentnest.tools.ToolOutput.Attachment;
import io.agentnest.tools.ToolOutput.Kind;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The sandbox operations a model gets as tools (Python, shell, files, artifacts), with answers it
 * can read: bounded text, images as attachments, failures as text that says what to do. Shared by
 * the MCP server, the LangChain4j tools and the Spring AI tool callbacks, so every integration
 * behaves the same and the sandbox's policy (limits, network, approvals, redaction, audit) applies
 * exactly as for the Java API: these methods only call {@link Sandbox}.
 *
 * <pre>{@code
 * try (Sandbox sandbox = Sandbox.create()) {
 *   SandboxTools tools = SandboxTools.of(sandbox);
 *   tools.runPython("x = 21", null, null);
 *   tools.runPython("x * 2", null, null).text();   // "[result]\n42"
 * }
 * }</pre>
 *
 * <p>Why it is over 600 lines: one method per tool, each with the description a model reads;
 * keeping them together keeps the three integrations identical.
 */
public final class SandboxTools {
  /** Description of the Python tool, for a model. */
  public static final String RUN_PYTHON_DESCRIPTION =
      "Run Python 3 code in a persistent interpreter inside an isolated sandbox (no network unless"
          + " the operator allowed hosts; files live in /workspace). Variables, imports and"
          + " definitions persist across calls of the same session. Returns stdout, stderr, the"
          + " repr of the last expression's value, a traceback on error, and images (e.g. a"
          + " matplotlib figure as the last expression) as image content.";

  /** Description of the shell tool, for a model. */
  public static final String RUN_SHELL_DESCRIPTION =
      "Run a shell command (/bin/sh -c) inside the isolated sandbox, in /workspace or a"
          + " subdirectory. Returns the exit code, stdout and stderr. Each call is a fresh shell:"
          + " use files, not environment variables or cd, to keep state between calls.";

  /** Description of the write tool, for a model. */
  public static final String WRITE_FILE_DESCRIPTION =
      "Write a file in the sandbox workspace, creating parent directories and replacing an"
          + " existing file. Paths are relative to /workspace; absolute paths and '..' are"
          + " refused.";

  /** Description of the read tool, for a model. */
  public static final String READ_FILE_DESCRIPTION =
      "Read a UTF-8 text file from the sandbox workspace (path relative to /workspace). Large"
          + " files are cut; binary files are refused: use export_artifact for images and binary"
          + " files.";

  /** Description of the list tool, for a model. */
  public static final String LIST_FILES_DESCRIPTION =
      "List files and directories in the sandbox workspace: type, size and path relative to"
          + " /workspace. Use path \"\" for the workspace root.";

  /** Description of the artifact tool, for a model. */
  public static final String EXPORT_ARTIFACT_DESCRIPTION =
      "Export a file produced in the sandbox (a report, plot, dataset, model): images come back"
          + " as image content you can look at, text as text, anything else as an embedded"
          + " binary resource. Size-capped; compress or split larger files first.";

  private final Supplier<Sandbox> sandbox;
  private final ToolLimits limits;

  private SandboxTools(Supplier<Sandbox> sandbox, ToolLimits limits) {
    this.sandbox = sandbox;
    this.limits = limits;
  }

  /** Tools on one sandbox with {@link ToolLimits#DEFAULTS}. */
  public static SandboxTools of(Sandbox sandbox) {
    return of(sandbox, ToolLimits.DEFAULTS);
  }

  /** Tools on one sandbox. */
  public static SandboxTools of(Sandbox sandbox, ToolLimits limits) {
    Objects.requireNonNull(sandbox, "sandbox");
    return new SandboxTools(() -> sandbox, limits);
  }

  /**
   * Tools on a sandbox obtained when a tool is first used (e.g. created lazily); the supplier is
   * asked on every call and should cache.
   */
  public static SandboxTools lazy(Supplier<Sandbox> sandbox, ToolLimits limits) {
    return new SandboxTools(Objects.requireNonNull(sandbox, "sandbox"), limits);
  }

  public ToolLimits limits() {
    return limits;
  }

  /** Runs Python code; see {@link #runPython(String, String, Duration, Consumer)}. */
  public ToolOutput runPython(String code, @Nullable String session, @Nullable Duration timeout) {
    return runPython(code, session, timeout, null);
  }

  /**
   * Runs Python code in a persistent session.
   *
   * @param session session name; null or blank for the default session
   * @param timeout wall-time limit; null for the sandbox's; never more than the sandbox's
   * @param events receives output as it is produced (for progress reports); null to just wait
   */
  public ToolOutput runPython(
      String code,
      @Nullable String session,
      @Nullable Duration timeout,
      @Nullable Consumer<ExecEvent> events) {
    if (code == null || code.isBlank()) {
      return ToolOutput.error("error: 'code' is empty: pass the Python source to run");
    }
    return guarded(
        () -> {
          Sandbox sb = sandbox.get();
          ExecOptions opts = options(sb, timeout, null, events != null);
          String name = session == null ? "" : session.strip();
          boolean defaultSession = name.isEmpty();
          ExecResult r;
          if (events == null) {
            r = defaultSession ? sb.runCode(code, opts) : sb.pythonSession(name).run(code, opts);
          } else {
            Execution ex =
                defaultSession
                    ? sb.startCode(code, opts)
                    : sb.pythonSession(name).start(code, opts);
            r = drain(ex, events);
          }
          return format(r, true);
        });
  }

  /** Runs a shell command; see {@link #runShell(String, String, Duration, Consumer)}. */
  public ToolOutput runShell(String command, @Nullable String workdir, @Nullable Duration timeout) {
    return runShell(command, workdir, timeout, null);
  }

  /**
   * Runs a shell command.
   *
   * @param workdir directory relative to the workspace (or {@code /workspace/...}); null for the
   *     workspace; a path outside it is refused
   * @param timeout wall-time limit; null for the sandbox's; never more than the sandbox's
   * @param events receives output as it is produced; null to just wait
   */
  public ToolOutput runShell(
      String command,
      @Nullable String workdir,
      @Nullable Duration timeout,
      @Nullable Consumer<ExecEvent> events) {
    if (command == null || command.isBlank()) {
      return ToolOutput.error("error: 'command' is empty: pass the shell command to run");
    }
    return guarded(
        () -> {
          // Checked before the sandbox is even created: a refused workdir runs nothing.
          String dir = workdir == null || workdir.isBlank() ? "" : WorkspaceDir.relative(workdir);
          Sandbox sb = sandbox.get();
          ExecOptions opts = options(sb, timeout, dir, events != null);
          ExecResult r =
              events == null ? sb.exec(command, opts) : drain(sb.start(command, opts), events);
          return format(r, false);
        });
  }

  /**
   * Writes a file.
   *
   * @param base64 whether {@code content} is base64 (binary files) rather than UTF-8 text
   */
  public ToolOutput writeFile(String path, String content, boolean base64) {
    if (path == null || path.isBlank()) {
      return ToolOutput.error("error: 'path' is empty: give a path relative to /workspace");
    }
    if (content == null) {
      return ToolOutput.error("error: 'content' is missing");
    }
    return guarded(
        () -> {
          byte[] data;
          if (base64) {
            try {
              data = Base64.getMimeDecoder().decode(content);
            } catch (IllegalArgumentException e) {
              return ToolOutput.error(
                  "error: 'content' is not valid base64 ("
                      + e.getMessage()
                      + "); send text with encoding 'utf-8' or fix the base64");
            }
          } else {
            data = content.getBytes(StandardCharsets.UTF_8);
          }
          FileInfo info = sandbox.get().files().write(path, data);
          return ToolOutput.ok("wrote " + info.size() + " bytes to " + info.path());
        });
  }

  /** Reads a text file, cut at {@link ToolLimits#maxReadBytes()}. */
  public ToolOutput readFile(String path) {
    if (path == null || path.isBlank()) {
      return ToolOutput.error("error: 'path' is empty: give a path relative to /workspace");
    }
    return guarded(
        () -> {
          Sandbox sb = sandbox.get();
          FileInfo info = sb.files().stat(path);
          if (info.isDirectory()) {
            return ToolOutput.error(
                "error: " + path + " is a directory; use list_files to see what is in it");
          }
          byte[] data = sb.files().read(path);
          boolean cut = data.length > limits.maxReadBytes();
          byte[] shown = cut ? Arrays.copyOf(data, limits.maxReadBytes()) : data;
          String text = decodeUtf8(shown, cut);
          if (text == null || text.indexOf('\0') >= 0) {
            return ToolOutput.error(
                "error: "
                    + path
                    + " is a binary file ("
                    + data.length
                    + " bytes, not UTF-8 text); use export_artifact to get it");
          }
          String body = bound(text, limits.maxTextChars());
          if (cut || body.length() < text.length()) {
            body +=
                "\n[file is "
                    + data.length
                    + " bytes; only the beginning is shown: use run_shell with head, tail, grep"
                    + " or sed -n to read other parts]";
          }
          return ToolOutput.ok(body);
        });
  }

  /** Lists a directory ({@code ""} for the workspace root). */
  public ToolOutput listFiles(@Nullable String path, boolean recursive) {
    String dir = path == null ? "" : path;
    return guarded(
        () -> {
          Sandbox sb = sandbox.get();
          List<FileInfo> entries = recursive ? sb.files().listRecursive(dir) : sb.files().list(dir);
          if (entries.isEmpty()) {
            return ToolOutput.ok("(empty directory: " + (dir.isEmpty() ? "/workspace" : dir) + ")");
          }
          StringBuilder out = new StringBuilder();
          int n = 0;
          for (FileInfo f : entries) {
            if (n == limits.maxListEntries() || out.length() > limits.maxTextChars() - 200) {
              out.append("[")
                  .append(entries.size() - n)
                  .append(" more entries not shown; list a subdirectory]\n");
              break;
            }
            out.append(f.type().name().toLowerCase(Locale.ROOT))
                .append('\t')
                .append(f.isDirectory() ? "-" : Long.toString(f.size()))
                .append('\t')
                .append(bound(f.path(), 1024))
                .append(f.isDirectory() ? "/" : "")
                .append('\n');
            n++;
          }
          return ToolOutput.ok(out.toString());
        });
  }

  /**
   * Exports a workspace file: images as an {@link Kind#IMAGE} attachment, UTF-8 text as text,
   * anything else as a {@link Kind#BLOB}; refused above {@link ToolLimits#maxArtifactBytes()}.
   */
  public ToolOutput exportArtifact(String path) {
    if (path == null || path.isBlank()) {
      return ToolOutput.error("error: 'path' is empty: give a path relative to /workspace");
    }
    return guarded(
        () -> {
          Sandbox sb = sandbox.get();
          FileInfo info = sb.files().stat(path);
          if (info.isDirectory()) {
            return ToolOutput.error(
                "error: "
                    + path
                    + " is a directory; pack it first, e.g. run_shell 'tar czf out.tgz "
                    + path
                    + "', then export out.tgz");
          }
          if (info.size() > limits.maxArtifactBytes()) {
            return tooLarge(path, info.size());
          }
          byte[] data = sb.files().read(path);
          if (data.length > limits.maxArtifactBytes()) {
            return tooLarge(path, data.length);
          }
          String name = baseName(info.path());
          String mime = mimeOf(name, data);
          String sha = sha256(data);
          String summary =
              "exported "
                  + info.path()
                  + " ("
                  + data.length
                  + " bytes, "
                  + mime
                  + ", sha256 "
                  + sha;
          if (mime.startsWith("image/")) {
            return new ToolOutput(
                summary + ")", List.of(new Attachment(name, mime, Kind.IMAGE, data)), false);
          }
          String text = decodeUtf8(data, false);
          if (text != null && text.indexOf('\0') < 0 && isTextual(mime)) {
            String body = bound(text, limits.maxTextChars());
            String note =
                body.length() < text.length()
                    ? "; the text below is cut at " + limits.maxTextChars() + " characters"
                    : "";
            return new ToolOutput(
                summary + note + ")", List.of(new Attachment(name, mime, Kind.TEXT, data)), false);
          }
          return new ToolOutput(
              summary + ")", List.of(new Attachment(name, mime, Kind.BLOB, data)), false);
        });
  }

  private ToolOutput tooLarge(String path, long size) {
    return ToolOutput.error(
        "error: "
            + path
            + " is "
            + size
            + " bytes, more than the export limit of "
            + limits.maxArtifactBytes()
            + " bytes; compress it (run_shell 'gzip -k FILE') or split it (run_shell 'split -b"
            + " 4M FILE part_') and export the parts");
  }

  private ExecOptions options(
      Sandbox sb, @Nullable Duration timeout, @Nullable String workdir, boolean streaming) {
    ExecOptions.Builder b = ExecOptions.builder();
    if (timeout != null) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException(
            "timeout must be positive; leave it out for the sandbox's limit of "
                + sb.config().execTimeout().toSeconds()
                + " s");
      }
      Duration max = sb.config().execTimeout();
      b.timeout(timeout.compareTo(max) > 0 ? max : timeout);
    }
    if (workdir != null && !workdir.isEmpty()) {
      b.workdir(workdir);
    }
    if (streaming) {
      // A slow consumer (a client that reads progress slowly) must never stall the sandbox.
      b.backpressure(Backpressure.DROP);
    }
    return b.build();
  }

  private static ExecResult drain(Execution ex, Consumer<ExecEvent> events) {
    ExecResult result = null;
    for (ExecEvent e : ex) {
      if (e instanceof ExecEvent.Finished f) {
        result = f.result();
      } else {
        try {
          events.accept(e);
        } catch (RuntimeException listenerFailure) {
          // A failing progress listener must not lose the result.
        }
      }
    }
    if (result == null) {
      result = ex.result().join();
    }
    return result;
  }

  /** The text a model reads for an execution result, bounded. */
  ToolOutput format(ExecResult r, boolean python) {
    int budget = limits.maxTextChars();
    StringBuilder out = new StringBuilder();
    if (!python) {
      out.append("[exit code ").append(r.exitCode()).append("]\n");
    }
    int streams = (r.stdout().isEmpty() ? 0 : 1) + (r.stderr().isEmpty() ? 0 : 1);
    int share = streams == 0 ? budget : budget / (streams + (r.error() != null ? 1 : 0));
    if (!r.stdout().isEmpty()) {
      out.append("[stdout]\n").append(headTail(r.stdout(), share)).append(endLine(r.stdout()));
    }
    if (!r.stderr().isEmpty()) {
      out.append("[stderr]\n").append(headTail(r.stderr(), share)).append(endLine(r.stderr()));
    }
    if (r.result() != null) {
      out.append("[result]\n").append(bound(r.result(), Math.min(share, 10_000))).append('\n');
    }
    if (r.error() != null) {
      out.append("[error] ")
          .append(bound(r.error().name(), 200))
          .append(": ")
          .append(bound(r.error().value(), 2000))
          .append('\n');
      out.append("[traceback]\n").append(headTail(r.error().traceback(), share));
      out.append(endLine(r.error().traceback()));
    }
    if (r.limit() != null) {
      out.append("[limit] ").append(limitText(r)).append('\n');
    } else if (r.truncated()) {
      out.append("[note] output was cut at the output cap; write large output to a file\n");
    }
    if (r.stateLost()) {
      out.append(
          "[note] the Python session was restarted: variables and imports from earlier calls are"
              + " gone\n");
    }
    List<Attachment> images = new ArrayList<>();
    int index = 0;
    for (RichOutput rich : r.rich()) {
      String mime = rich.mimeType();
      if (!mime.startsWith("image/")) {
        continue;
      }
      byte[] data = rich.data();
      if (data.length > limits.maxArtifactBytes()) {
        out.append("[note] an image of ")
            .append(data.length)
            .append(" bytes was left out (limit ")
            .append(limits.maxArtifactBytes())
            .append("); save it to a file with a lower resolution\n");
        continue;
      }
      images.add(new Attachment("output-" + index++ + extension(mime), mime, Kind.IMAGE, data));
    }
    if (!images.isEmpty()) {
      out.append("[images] ").append(images.size()).append(" image(s) attached\n");
    }
    if (out.length() == 0) {
      out.append("(no output)\n");
    }
    if (!r.redactions().isEmpty()) {
      int total = r.redactions().values().stream().mapToInt(Integer::intValue).sum();
      out.append("[note] ").append(total).append(" secret value(s) were masked\n");
    }
    return new ToolOutput(out.toString(), images, !r.ok());
  }

  private static String limitText(ExecResult r) {
    Duration d = r.duration();
    switch (Objects.requireNonNull(r.limit())) {
      case TIMEOUT:
        return "TIMEOUT: stopped after "
            + d.toMillis()
            + " ms, the time limit; files and (unless noted) session variables are kept. Split"
            + " the work into shorter steps or run it in the background writing to a file.";
      case OUTPUT:
        return "OUTPUT: stopped at the output cap; write large output to a file and read parts"
            + " of it.";
      case MEMORY:
        return "MEMORY: killed by the sandbox's memory limit; process the data in chunks.";
      case PIDS:
        return "PIDS: the process limit was reached; start fewer processes or threads.";
      case DISK:
        return "DISK: the workspace or /tmp is full; delete files you no longer need.";
      case CANCELLED:
        return "CANCELLED: the call was cancelled.";
    }
    return r.limit().name();
  }

  private static String endLine(String s) {
    return s.endsWith("\n") ? "" : "\n";
  }

  private ToolOutput guarded(Supplier<ToolOutput> call) {
    try {
      return call.get();
    } catch (FileOperationException e) {
      return ToolOutput.error("error (" + e.code() + "): " + bound(e.getMessage(), 2000));
    } catch (AgentNestException e) {
      return ToolOutput.error("error: " + bound(String.valueOf(e.getMessage()), 2000));
    } catch (IllegalArgumentException e) {
      return ToolOutput.error("error: invalid argument: " + bound(e.getMessage(), 2000));
    }
  }

  /**
   * Cuts text to {@code max} characters, saying how much was left out. The one truncation helper of
   * the integration modules (MCP, Spring AI, LangChain4j), which may not use core's internal {@code
   * Bounded}.
   */
  public static String bound(@Nullable String s, int max) {
    if (s == null) {
      return "";
    }
    if (s.length() <= max) {
      return s;
    }
    return s.substring(0, max) + "... [" + (s.length() - max) + " more characters cut]";
  }

  /** Keeps the beginning and the end (where errors usually are) of long output. */
  static String headTail(String s, int max) {
    if (s.length() <= max) {
      return s;
    }
    int head = max * 2 / 3;
    int tail = max - head;
    return s.substring(0, head)
        + "\n... ["
        + (s.length() - head - tail)
        + " characters cut; write long output to a file and read parts of it] ...\n"
        + s.substring(s.length() - tail);
  }

  private static @Nullable String decodeUtf8(byte[] data, boolean mayBeCut) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(data))
          .toString();
    } catch (CharacterCodingException e) {
      if (mayBeCut && data.length > 4) {
        // The cut may have split a multi-byte character: drop up to 3 trailing bytes.
        for (int drop = 1; drop <= 3; drop++) {
          try {
            return StandardCharsets.UTF_8
                .newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(data, 0, data.length - drop))
                .toString();
          } catch (CharacterCodingException again) {
            // try one more byte
          }
        }
      }
      return null;
    }
  }

  private static final Map<String, String> MIME =
      Map.ofEntries(
          Map.entry("png", "image/png"),
          Map.entry("jpg", "image/jpeg"),
          Map.entry("jpeg", "image/jpeg"),
          Map.entry("gif", "image/gif"),
          Map.entry("webp", "image/webp"),
          Map.entry("svg", "image/svg+xml"),
          Map.entry("txt", "text/plain"),
          Map.entry("log", "text/plain"),
          Map.entry("md", "text/markdown"),
          Map.entry("csv", "text/csv"),
          Map.entry("tsv", "text/tab-separated-values"),
          Map.entry("json", "application/json"),
          Map.entry("jsonl", "application/jsonl"),
          Map.entry("html", "text/html"),
          Map.entry("xml", "application/xml"),
          Map.entry("yaml", "application/yaml"),
          Map.entry("yml", "application/yaml"),
          Map.entry("py", "text/x-python"),
          Map.entry("sh", "text/x-shellscript"),
          Map.entry("pdf", "application/pdf"),
          Map.entry("zip", "application/zip"),
          Map.entry("gz", "application/gzip"),
          Map.entry("tgz", "application/gzip"),
          Map.entry("tar", "application/x-tar"));

  /** MIME type by extension, checked against the content for raster images. */
  static String mimeOf(String name, byte[] data) {
    int dot = name.lastIndexOf('.');
    String ext = dot < 0 ? "" : name.substring(dot + 1).toLowerCase(Locale.ROOT);
    String mime = MIME.getOrDefault(ext, "");
    if (mime.equals("image/png") && !startsWith(data, 0x89, 'P', 'N', 'G')) {
      mime = "";
    } else if (mime.equals("image/jpeg") && !startsWith(data, 0xFF, 0xD8, 0xFF)) {
      mime = "";
    } else if (mime.equals("image/gif") && !startsWith(data, 'G', 'I', 'F', '8')) {
      mime = "";
    } else if (mime.equals("image/webp") && !(data.length > 12 && data[8] == 'W')) {
      mime = "";
    }
    if (mime.isEmpty()) {
      if (startsWith(data, 0x89, 'P', 'N', 'G')) {
        return "image/png";
      }
      if (startsWith(data, 0xFF, 0xD8, 0xFF)) {
        return "image/jpeg";
      }
      return decodeUtf8(data, false) != null ? "text/plain" : "application/octet-stream";
    }
    return mime;
  }

  private static boolean isTextual(String mime) {
    return mime.startsWith("text/")
        || mime.equals("application/json")
        || mime.equals("application/jsonl")
        || mime.equals("application/xml")
        || mime.equals("application/yaml");
  }

  private static boolean startsWith(byte[] data, int... prefix) {
    if (data.length < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if ((data[i] & 0xFF) != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  private static String extension(String mime) {
    switch (mime) {
      case "image/png":
        return ".png";
      case "image/jpeg":
        return ".jpg";
      case "image/svg+xml":
        return ".svg";
      case "image/gif":
        return ".gif";
      default:
        return "";
    }
  }

  private static String baseName(String path) {
    int slash = path.lastIndexOf('/');
    return slash < 0 ? path : path.substring(slash + 1);
  }

  static String sha256(byte[] data) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(data);
      StringBuilder sb = new StringBuilder();
      for (byte b : d) {
        sb.append(String.format(Locale.ROOT, "%02x", b));
      }
      return sb.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 missing from the JDK", e);
    }
  }
}
