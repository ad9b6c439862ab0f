package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DockerCheckpointsTest {
  @Test
  void onlyTheTwoKnownRacesOfAStartFromACheckpointAreRetried() {
    assertThat(DockerCheckpoints.isTransientStartRefusal("id already in use")).isTrue();
    assertThat(
            DockerCheckpoints.isTransientStartRefusal(
                "failed to upload checkpoint to containerd: content already exists"))
        .isTrue();
    assertThat(DockerCheckpoints.isTransientStartRefusal("failed to upload checkpoint")).isFalse();
    assertThat(DockerCheckpoints.isTransientStartRefusal("no such checkpoint")).isFalse();
  }

  @Test
  void aCheckpointImageIsLinkedFileByFileWithoutFollowingSymlinks(@TempDir Path tmp)
      throws IOException {
    Path from = Files.createDirectories(tmp.resolve("image/sub"));
    Files.writeString(tmp.resolve("image/pages.img"), "memory");
    Files.writeString(from.resolve("meta"), "m");
    Files.createSymbolicLink(tmp.resolve("image/escape"), Path.of("/etc/passwd"));
    Path to = tmp.resolve("copy");
    DockerCheckpoints.linkTree(tmp.resolve("image"), to);
    assertThat(to.resolve("pages.img")).hasContent("memory");
    assertThat(to.resolve("sub/meta")).hasContent("m");
    assertThat(to.resolve("escape")).doesNotExist();
  }
}
