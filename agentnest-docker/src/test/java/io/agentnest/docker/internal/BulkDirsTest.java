package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BulkDirsTest {
  @Test
  void onlyTheOneShapeThisBackendMakesCountsAsABulkDirectory() {
    assertThat(BulkDirs.isBulkPath("/run/agentnest/bulk/" + "ab".repeat(16))).isTrue();
    // A label is set by whoever created the container: never trust it to name what to delete.
    assertThat(BulkDirs.isBulkPath("/run/agentnest/bulk/../../../etc")).isFalse();
    assertThat(BulkDirs.isBulkPath("/run/agentnest/bulk/" + "AB".repeat(16))).isFalse();
    assertThat(BulkDirs.isBulkPath("/run/agentnest/bulk/" + "ab".repeat(16) + "/x")).isFalse();
    assertThat(BulkDirs.isBulkPath("/home/user")).isFalse();
  }
}
