package io.agentnest.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Key stores for tests that speak TLS to a server they start (shared through the test jar). */
public final class TestKeyStores {
  private TestKeyStores() {}

  /**
   * A PKCS12 store in {@code dir} with one EC key and its self-signed certificate for 127.0.0.1,
   * valid two days, made by the JDK's keytool; the store and the key share {@code password}.
   */
  public static Path selfSigned(Path dir, String password)
      throws IOException, InterruptedException {
    Path ks = dir.resolve("server.p12");
    Process p =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair",
                "-alias",
                "server",
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
                "-dname",
                "CN=127.0.0.1",
                "-ext",
                "san=ip:127.0.0.1",
                "-validity",
                "2",
                "-storetype",
                "PKCS12",
                "-keystore",
                ks.toString(),
                "-storepass",
                password,
                "-keypass",
                password)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("keytool could not make a key store in " + dir);
    }
    return ks;
  }
}
