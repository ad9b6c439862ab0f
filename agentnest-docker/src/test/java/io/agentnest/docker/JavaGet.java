package io.agentnest.docker;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * A tiny Java client for sandboxes with only a JRE (no javac, so no single-file source launch): it
 * is compiled here on the host for release 17 and its class copied in. {@code java Get MODE URL
 * [HEADER...]} does one HTTPS GET with {@code HttpsURLConnection} (MODE {@code url}) or {@code
 * HttpClient} ({@code client}) with the JVM's default trust, prints the status and at most 64 KiB
 * of the body, or the failure and its causes with exit 3.
 */
final class JavaGet {
  static final String SOURCE =
      """
      import java.io.InputStream;
      import java.net.URI;
      import java.net.URL;
      import java.net.http.HttpClient;
      import java.net.http.HttpRequest;
      import java.net.http.HttpResponse;
      import java.nio.charset.StandardCharsets;
      import java.time.Duration;
      import javax.net.ssl.HttpsURLConnection;

      public class Get {
        public static void main(String[] args) {
          System.out.println("property agentnest.it=" + System.getProperty("agentnest.it"));
          try {
            if (args[0].equals("client")) {
              HttpRequest.Builder r =
                  HttpRequest.newBuilder(URI.create(args[1])).timeout(Duration.ofSeconds(30));
              for (int i = 2; i < args.length; i++) {
                String[] h = args[i].split(": ", 2);
                r.header(h[0], h[1]);
              }
              HttpClient c =
                  HttpClient.newBuilder()
                      .version(HttpClient.Version.HTTP_1_1)
                      .connectTimeout(Duration.ofSeconds(30))
                      .build();
              HttpResponse<InputStream> res = c.send(r.build(), HttpResponse.BodyHandlers.ofInputStream());
              print(res.statusCode(), res.body());
            } else {
              HttpsURLConnection c = (HttpsURLConnection) new URL(args[1]).openConnection();
              c.setConnectTimeout(30000);
              c.setReadTimeout(30000);
              for (int i = 2; i < args.length; i++) {
                String[] h = args[i].split(": ", 2);
                c.setRequestProperty(h[0], h[1]);
              }
              int status = c.getResponseCode();
              print(status, status < 400 ? c.getInputStream() : c.getErrorStream());
            }
          } catch (Exception e) {
            Throwable t = e;
            for (int i = 0; i < 5 && t != null; i++, t = t.getCause()) {
              System.out.println("failed " + t);
            }
            System.exit(3);
          }
        }

        static void print(int status, InputStream body) throws Exception {
          System.out.println("status " + status);
          if (body != null) {
            try (InputStream in = body) {
              System.out.println(new String(in.readNBytes(65536), StandardCharsets.UTF_8));
            }
          }
        }
      }
      """;

  private JavaGet() {}

  /** Compiles {@link #SOURCE} in {@code dir} and returns {@code Get.class}. */
  static byte[] compile(Path dir) throws IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    if (javac == null) {
      throw new IllegalStateException("the tests run on a JRE: a JDK is needed to compile Get");
    }
    Path src = dir.resolve("Get.java");
    Files.writeString(src, SOURCE, StandardCharsets.UTF_8);
    StringWriter diagnostics = new StringWriter();
    Boolean ok =
        javac
            .getTask(
                diagnostics,
                null,
                null,
                List.of("--release", "17", "-d", dir.toString()),
                null,
                javac
                    .getStandardFileManager(null, null, StandardCharsets.UTF_8)
                    .getJavaFileObjects(src))
            .call();
    if (!Boolean.TRUE.equals(ok)) {
      throw new IllegalStateException("Get.java did not compile: " + diagnostics);
    }
    return Files.readAllBytes(dir.resolve("Get.class"));
  }
}
