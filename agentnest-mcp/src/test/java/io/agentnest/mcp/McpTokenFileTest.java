package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class McpTokenFileTest {

  @Test
  void theFirstStartGeneratesAPrivateTokenAndLaterStartsReuseIt(@TempDir Path home)
      throws Exception {
    Path file = home.resolve("mcp").resolve("http-token");
    McpTokenFile.Token first = McpTokenFile.loadOrCreate(file);
    assertThat(first.created()).isTrue();
    assertThat(first.value()).matches("[0-9a-f]{64}");
    assertThat(first.toString()).doesNotContain(first.value());
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
        .isEqualTo("rw-------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())))
        .isEqualTo("rwx------");
    try (var leftovers = Files.list(file.getParent())) {
      assertThat(leftovers).containsExactly(file);
    }
    McpTokenFile.Token again = McpTokenFile.loadOrCreate(file);
    assertThat(again.created()).isFalse();
    assertThat(again.value()).isEqualTo(first.value());
    assertThat(McpTokenFile.loadOrCreate(home.resolve("other")).value())
        .isNotEqualTo(first.value());
  }

  @Test
  void aTokenFileOthersCouldReadOrSwapIsRefusedWithTheFix(@TempDir Path home) throws Exception {
    Path file = home.resolve("mcp").resolve("http-token");
    McpTokenFile.loadOrCreate(file);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> McpTokenFile.loadOrCreate(file))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("open to other users")
        .hasMessageContaining("chmod 600 " + file);

    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
    Files.setPosixFilePermissions(file.getParent(), PosixFilePermissions.fromString("rwxrwxrwx"));
    assertThatThrownBy(() -> McpTokenFile.loadOrCreate(file))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("chmod go-w");
    Files.setPosixFilePermissions(file.getParent(), PosixFilePermissions.fromString("rwx------"));

    Path elsewhere = home.resolve("planted");
    Files.writeString(elsewhere, "0123456789abcdef0123456789abcdef");
    Files.setPosixFilePermissions(elsewhere, PosixFilePermissions.fromString("rw-------"));
    Path link = home.resolve("mcp").resolve("linked");
    Files.createSymbolicLink(link, elsewhere);
    assertThatThrownBy(() -> McpTokenFile.loadOrCreate(link))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("symlink");

    Path junk = home.resolve("mcp").resolve("junk");
    Files.writeString(junk, "short\n");
    Files.setPosixFilePermissions(junk, PosixFilePermissions.fromString("rw-------"));
    assertThatThrownBy(() -> McpTokenFile.loadOrCreate(junk))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("delete it");
  }
}
