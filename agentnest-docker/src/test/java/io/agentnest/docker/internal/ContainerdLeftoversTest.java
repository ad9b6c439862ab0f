package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ContainerdLeftoversTest {
  @TempDir Path tmp;
  @TempDir Path images;

  private Path image(String name, byte[] content) throws IOException {
    Path dir = Files.createDirectories(images.resolve(name));
    Files.write(dir.resolve("checkpoint.img"), content);
    return dir;
  }

  private Path leftover(String suffix, byte[] content) throws IOException {
    Path dir = Files.createDirectories(tmp.resolve(ContainerdLeftovers.PREFIX + suffix));
    Files.write(dir.resolve("checkpoint.img"), content);
    return dir;
  }

  @Test
  void removesOnlyTheNewCopyOfTheImageItStartedFrom() throws IOException {
    ContainerdLeftovers l = new ContainerdLeftovers(tmp);
    Path older = leftover("1", new byte[] {1, 2, 3});
    Path image = image("a", new byte[] {1, 2, 3});
    Set<String> before = l.enter();
    Path copy = leftover("2", new byte[] {1, 2, 3});
    Path other = leftover("3", new byte[] {1, 2, 4});
    Path unrelated = Files.createDirectories(tmp.resolve("something-else"));
    l.exit(before, image);
    assertThat(copy).doesNotExist();
    // Not from this start, another image, not containerd's: all kept.
    assertThat(older).exists();
    assertThat(other).exists();
    assertThat(unrelated).exists();
    assertThat(image.resolve("checkpoint.img")).exists();
  }

  @Test
  void aCopyStaysWhileAnotherStartFromTheSameImageIsInFlight() throws IOException {
    ContainerdLeftovers l = new ContainerdLeftovers(tmp);
    Path image = image("a", new byte[] {7, 7});
    Set<String> first = l.enter();
    Set<String> second = l.enter();
    Path copyA = leftover("a", new byte[] {7, 7});
    Path copyB = leftover("b", new byte[] {7, 7});
    l.exit(first, image);
    assertThat(copyA).exists();
    assertThat(copyB).exists();
    l.exit(second, image);
    assertThat(copyA).doesNotExist();
    assertThat(copyB).doesNotExist();
  }

  @Test
  void aDirectoryWithMoreThanTheImageOrALinkIsKept() throws IOException {
    ContainerdLeftovers l = new ContainerdLeftovers(tmp);
    Path image = image("a", new byte[] {5});
    Set<String> before = l.enter();
    Path extra = leftover("x", new byte[] {5});
    Files.write(extra.resolve("other"), new byte[] {1});
    Path linked = Files.createDirectories(tmp.resolve(ContainerdLeftovers.PREFIX + "y"));
    Files.createSymbolicLink(linked.resolve("checkpoint.img"), image.resolve("checkpoint.img"));
    l.exit(before, image);
    assertThat(extra).exists();
    assertThat(linked).exists();
  }

  @Test
  void withoutAnImageNothingIsRemoved() throws IOException {
    ContainerdLeftovers l = new ContainerdLeftovers(tmp);
    Set<String> before = l.enter();
    Path copy = leftover("z", new byte[] {1});
    l.exit(before, images.resolve("gone"));
    assertThat(copy).exists();
  }
}
