package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.model.AccessMode;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.SandboxSpec;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ContainerSpecsTest {
  private static final String PROFILE = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}";

  private static SandboxSpec spec(boolean network, boolean caps, boolean nnp) {
    return SandboxSpec.builder()
        .image("agentnest/python:latest")
        .command("python3", "-c", "pass")
        .env(Map.of("A", "1"))
        .workdir("/workspace")
        .labels(Map.of("io.agentnest.managed", "true"))
        .cpus(1.5)
        .memoryBytes(256L << 20)
        .pidsLimit(128)
        .tmpfs(Map.of("/tmp", 1024L, "/workspace", 2048L))
        .seccompProfileJson(PROFILE)
        .noNewPrivileges(nnp)
        .dropAllCapabilities(caps)
        .networkDisabled(network)
        .openFilesLimit(4096)
        .build();
  }

  @Test
  void aHardenedSpecGetsNoLogDriverNoNetworkNoCapabilitiesAndItsLimits() {
    HostConfig hc = ContainerSpecs.hostConfig(spec(true, true, true), null, null);
    assertThat(hc.getLogConfig().getType()).isEqualTo(LogConfig.LoggingType.NONE);
    assertThat(hc.getNetworkMode()).isEqualTo("none");
    assertThat(hc.getCapDrop()).containsExactly(Capability.ALL);
    assertThat(hc.getSecurityOpts()).contains("no-new-privileges:true", "seccomp=" + PROFILE);
    assertThat(hc.getReadonlyRootfs()).isTrue();
    assertThat(hc.getInit()).isFalse();
    assertThat(hc.getIpcMode()).isEqualTo("private");
    assertThat(hc.getMemory()).isEqualTo(256L << 20);
    assertThat(hc.getMemorySwap()).isEqualTo(256L << 20);
    assertThat(hc.getNanoCPUs()).isEqualTo(1_500_000_000L);
    assertThat(hc.getPidsLimit()).isEqualTo(128L);
    assertThat(hc.getUlimits())
        .singleElement()
        .satisfies(u -> assertThat(u.getSoft()).isEqualTo(4096L));
    assertThat(hc.getRuntime()).isNull();
    assertThat(hc.getBinds()).isNullOrEmpty();
  }

  @Test
  void theBulkDirectoryIsBoundReadOnlyAndTheRuntimeIsNamed() {
    Path bulk = Path.of("/run/agentnest/bulk/" + "0".repeat(32));
    HostConfig hc = ContainerSpecs.hostConfig(spec(true, true, true), "runc", bulk);
    assertThat(hc.getRuntime()).isEqualTo("runc");
    Bind b = hc.getBinds()[0];
    assertThat(b.getPath()).isEqualTo(bulk.toString());
    assertThat(b.getVolume().getPath()).isEqualTo(BulkDirs.MOUNT);
    assertThat(b.getAccessMode()).isEqualTo(AccessMode.ro);
  }

  @Test
  void aCpuWeightIsSetOnlyWhenTheSpecAsksForOne() {
    SandboxSpec plain = spec(true, true, true);
    assertThat(ContainerSpecs.hostConfig(plain, null, null).getCpuShares()).isNull();
    assertThat(
            ContainerSpecs.hostConfig(plain.toBuilder().cpuShares(128).build(), null, null)
                .getCpuShares())
        .isEqualTo(128);
  }

  @Test
  void tmpIsStickyAndOtherScratchMountsBelongToTheSandboxUser() {
    Map<String, String> t = ContainerSpecs.tmpfs(spec(true, true, true));
    assertThat(t.get("/tmp")).isEqualTo("rw,nosuid,nodev,size=1024,mode=1777");
    assertThat(t.get("/workspace"))
        .isEqualTo("rw,nosuid,nodev,size=2048,mode=0755,uid=65534,gid=65534");
  }

  @Test
  void everyWeakenedControlIsNamedInOneRefusal() {
    assertThatThrownBy(() -> ContainerSpecs.refuseWeakened(spec(false, false, false)))
        .isInstanceOf(UnsupportedControlException.class)
        .hasMessageContaining("network")
        .hasMessageContaining("capabilities")
        .hasMessageContaining("no-new-privileges")
        .hasMessageContaining("remove the override");
  }

  @Test
  void aFullyHardenedSpecIsAccepted() {
    ContainerSpecs.refuseWeakened(spec(true, true, true));
    assertThat(ContainerSpecs.env(Map.of("A", "1"))).containsExactly("A=1");
  }
}
