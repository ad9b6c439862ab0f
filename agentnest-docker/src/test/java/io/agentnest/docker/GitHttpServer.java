package io.agentnest.docker;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;

/**
 * Git's smart HTTP protocol on the host's loopback for tests: {@code git http-backend} run as a CGI
 * per request against the bare repositories under a root directory, behind basic auth that accepts
 * any user with the one token (none when the token is null). Bodies are bounded; every request's
 * outcome is recorded.
 */
public final class GitHttpServer implements AutoCloseable {
  private static final int MAX_BODY = 16 << 20;

  private final HttpServer server;
  private final ExecutorService pool = Executors.newFixedThreadPool(4);
  private final Path root;
  private final @Nullable String token;

  /** Each request: method, path, status ("GET /app.git/info/refs 401"). */
  public final List<String> requests = new CopyOnWriteArrayList<>();

  /** The Authorization headers that came in (to show the token went over the wire). */
  final List<String> authorizations = new CopyOnWriteArrayList<>();

  public GitHttpServer(Path root, @Nullable String token) throws IOException {
    this(root, token, null);
  }

  /** The same over HTTPS with {@code tls} (a server context) when it is not null. */
  public GitHttpServer(Path root, @Nullable String token, @Nullable SSLContext tls)
      throws IOException {
    this.root = root;
    this.token = token;
    InetSocketAddress loopback = new InetSocketAddress("127.0.0.1", 0);
    if (tls == null) {
      server = HttpServer.create(loopback, 16);
    } else {
      HttpsServer https = HttpsServer.create(loopback, 16);
      https.setHttpsConfigurator(new HttpsConfigurator(tls));
      server = https;
    }
    server.setExecutor(pool);
    server.createContext("/", this::handle);
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  private void handle(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getRawPath();
    try {
      String auth = ex.getRequestHeaders().getFirst("Authorization");
      if (auth != null) {
        authorizations.add(auth);
      }
      if (!authorized(auth)) {
        ex.getResponseHeaders().add("WWW-Authenticate", "Basic realm=\"git test\"");
        record(ex, 401);
        ex.sendResponseHeaders(401, -1);
        return;
      }
      byte[] body = readBounded(ex.getRequestBody());
      ProcessBuilder pb = new ProcessBuilder("git", "http-backend");
      Map<String, String> env = pb.environment();
      env.put("GIT_PROJECT_ROOT", root.toString());
      env.put("GIT_HTTP_EXPORT_ALL", "1");
      env.put("REMOTE_USER", "tester");
      env.put("REMOTE_ADDR", "127.0.0.1");
      env.put("REQUEST_METHOD", ex.getRequestMethod());
      env.put("PATH_INFO", path);
      String q = ex.getRequestURI().getRawQuery();
      env.put("QUERY_STRING", q == null ? "" : q);
      env.put("CONTENT_LENGTH", Integer.toString(body.length));
      String type = ex.getRequestHeaders().getFirst("Content-Type");
      if (type != null) {
        env.put("CONTENT_TYPE", type);
      }
      String encoding = ex.getRequestHeaders().getFirst("Content-Encoding");
      if (encoding != null) {
        env.put("HTTP_CONTENT_ENCODING", encoding);
      }
      String protocol = ex.getRequestHeaders().getFirst("Git-Protocol");
      if (protocol != null) {
        env.put("GIT_PROTOCOL", protocol);
      }
      pb.redirectError(ProcessBuilder.Redirect.DISCARD);
      Process p = pb.start();
      // The body goes in on its own thread: http-backend may answer before it has read all.
      Thread feeder =
          new Thread(
              () -> {
                try (OutputStream in = p.getOutputStream()) {
                  in.write(body);
                } catch (IOException e) {
                  // http-backend stopped reading: its answer says why.
                }
              });
      feeder.start();
      byte[] out = readBounded(p.getInputStream());
      p.waitFor(60, TimeUnit.SECONDS);
      p.destroyForcibly();
      respond(ex, out);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      ex.sendResponseHeaders(500, -1);
    } catch (IOException | RuntimeException e) {
      record(ex, 500);
      ex.sendResponseHeaders(500, -1);
    } finally {
      ex.close();
    }
  }

  private boolean authorized(@Nullable String auth) {
    if (token == null) {
      return true;
    }
    if (auth == null || !auth.startsWith("Basic ")) {
      return false;
    }
    String pair =
        new String(Base64.getDecoder().decode(auth.substring(6).strip()), StandardCharsets.UTF_8);
    int colon = pair.indexOf(':');
    return colon > 0 && pair.substring(colon + 1).equals(token);
  }

  /** Splits the CGI answer into its header lines and body. */
  private void respond(HttpExchange ex, byte[] cgi) throws IOException {
    int split = -1;
    int skip = 0;
    for (int i = 0; i + 1 < cgi.length; i++) {
      if (cgi[i] == '\n' && cgi[i + 1] == '\n') {
        split = i;
        skip = 2;
        break;
      }
      if (i + 3 < cgi.length
          && cgi[i] == '\r'
          && cgi[i + 1] == '\n'
          && cgi[i + 2] == '\r'
          && cgi[i + 3] == '\n') {
        split = i;
        skip = 4;
        break;
      }
    }
    if (split < 0) {
      record(ex, 502);
      ex.sendResponseHeaders(502, -1);
      return;
    }
    int status = 200;
    for (String line : new String(cgi, 0, split, StandardCharsets.ISO_8859_1).split("\r?\n")) {
      int colon = line.indexOf(':');
      if (colon <= 0) {
        continue;
      }
      String name = line.substring(0, colon).strip();
      String value = line.substring(colon + 1).strip();
      if (name.equalsIgnoreCase("Status")) {
        status = Integer.parseInt(value.split(" ")[0]);
      } else {
        ex.getResponseHeaders().add(name, value);
      }
    }
    int len = cgi.length - split - skip;
    record(ex, status);
    ex.sendResponseHeaders(status, len == 0 ? -1 : len);
    if (len > 0) {
      try (OutputStream o = ex.getResponseBody()) {
        o.write(cgi, split + skip, len);
      }
    }
  }

  private void record(HttpExchange ex, int status) {
    if (requests.size() < 1000) {
      requests.add(ex.getRequestMethod() + " " + ex.getRequestURI().getRawPath() + " " + status);
    }
  }

  private static byte[] readBounded(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buf = new byte[64 * 1024];
    int n;
    while ((n = in.read(buf)) > 0) {
      if (out.size() + n > MAX_BODY) {
        throw new IOException("body larger than " + MAX_BODY + " bytes");
      }
      out.write(buf, 0, n);
    }
    return out.toByteArray();
  }

  /**
   * A bare repository {@code name} under {@code root} with one commit on main: README.md ("A test
   * repository.") and src/app.txt ("line one", "line two"), made with host git in {@code work}.
   */
  public static void seed(Path root, String name, Path work) throws IOException {
    git(root, "init", "-q", "--bare", "-b", "main", name);
    Path seed = work.resolve("seed-" + name);
    git(work, "init", "-q", "-b", "main", seed.toString());
    Files.writeString(seed.resolve("README.md"), "# app\n\nA test repository.\n");
    Files.createDirectories(seed.resolve("src"));
    Files.writeString(seed.resolve("src/app.txt"), "line one\nline two\n");
    git(seed, "add", "-A");
    git(seed, "-c", "user.name=Seed", "-c", "user.email=seed@test", "commit", "-q", "-m", "init");
    git(seed, "push", "-q", root.resolve(name).toString(), "main");
  }

  /** Host git is there, or the test fails under CI (skips visibly elsewhere). */
  public static void requireHostGit() {
    if (BaseImageBuilder.findOnPath("git") == null) {
      DockerEngineRequired.missing(
          "git on the host", "the test's git server runs git http-backend");
    }
  }

  /** Runs host git in {@code dir}; its output (bounded), or an exception naming its failure. */
  public static String git(Path dir, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of("git", "-C", dir.toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String text;
    try (InputStream in = p.getInputStream()) {
      text = new String(readBounded(in), StandardCharsets.UTF_8);
    }
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("git " + cmd + " did not finish");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
    if (p.exitValue() != 0) {
      throw new IOException("git " + cmd + " failed: " + text);
    }
    return text;
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
