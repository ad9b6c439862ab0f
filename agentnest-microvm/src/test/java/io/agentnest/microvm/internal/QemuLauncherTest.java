package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class QemuLauncherTest {
  private static final GuestImage IMAGE =
      new GuestImage("agentnest/python:latest", Path.of("/img"));

  private static List<String> command(String accel) {
    VmDirectory vm = VmDirectory.of("0123456789abcdef");
    return QemuLauncher.command(
        Path.of("/usr/bin/qemu-system-x86_64"),
        IMAGE,
        vm,
        new QemuLauncher.Machine(accel, 352, 2, ""));
  }

  @Test
  void aGuestHasNoNetworkDeviceAReadOnlyRootAndQemusOwnSeccompFilter() {
    List<String> c = command("tcg");
    String line = String.join(" ", c);
    assertThat(c).contains("-nodefaults", "-no-user-config", "-no-reboot");
    assertThat(line).doesNotContain("-netdev", "-nic ", "virtio-net");
    assertThat(line).contains("id=root,file=/img/root.ext4,format=raw,readonly=on");
    assertThat(line).contains("-sandbox on,obsolete=deny,spawn=deny,resourcecontrol=deny");
    assertThat(line).contains("ringbuf,id=console");
    assertThat(line).contains("virtserialport,chardev=agent,name=agentnest ", "name=agentnest-ctl");
    assertThat(line).contains("-m 352M", "-smp 2", "-machine microvm");
    assertThat(c).doesNotContain("-daemonize");
  }

  @Test
  void rootDropsToNobodyAndOnlyThenMayChangeIds() {
    String line = String.join(" ", command("tcg"));
    if ("root".equals(System.getProperty("user.name"))) {
      assertThat(line).contains("-runas nobody", "elevateprivileges=allow");
    } else {
      assertThat(line).contains("elevateprivileges=deny").doesNotContain("-runas");
    }
  }

  @Test
  void aTcgGuestIsToldTheTscRateAndAKvmGuestIsNot() {
    String tcg = QemuLauncher.kernelArguments(new QemuLauncher.Machine("tcg", 128, 1, ""));
    assertThat(tcg).contains("tsc_early_khz=", "mitigations=off", "panic=-1", "console=ttyS0");
    String kvm = QemuLauncher.kernelArguments(new QemuLauncher.Machine("kvm", 128, 1, "x=1"));
    assertThat(kvm).doesNotContain("tsc_early_khz", "mitigations=off").endsWith(" x=1");
    assertThat(String.join(" ", command("kvm"))).contains("-accel kvm -cpu host");
    assertThat(QemuLauncher.hostTscKhz()).isBetween(100_000L, 100_000_000L);
  }

  @Test
  void aRestoreWaitsForTheStreamWithTheSavedKernelArgumentsAndTheSameMachine() {
    VmDirectory vm = VmDirectory.of("0123456789abcdef");
    QemuLauncher.Machine m = new QemuLauncher.Machine("tcg", 352, 2, "");
    List<String> restore =
        QemuLauncher.command(
            Path.of("/usr/bin/qemu-system-x86_64"), IMAGE, vm, m, "console=ttyS0 saved=1", true);
    String line = String.join(" ", restore);
    assertThat(line)
        .contains("-incoming unix:" + vm.incomingSocket(), "-append console=ttyS0 saved=1");
    assertThat(vm.incomingSocket().getParent()).isEqualTo(vm.dir());
    List<String> boot = command("tcg");
    assertThat(boot).doesNotContain("-incoming");
    // The same machine: only the kernel arguments and the incoming stream differ.
    List<String> same = new ArrayList<>(restore);
    same.removeAll(List.of("-incoming", "unix:" + vm.incomingSocket(), "console=ttyS0 saved=1"));
    List<String> booted = new ArrayList<>(boot);
    booted.remove(QemuLauncher.kernelArguments(m));
    assertThat(same).isEqualTo(booted);
  }

  @Test
  void theWorkspaceDiskIsOpenedRelativeToQemusWorkingDirectory() {
    VmDirectory vm = VmDirectory.of("0123456789abcdef");
    assertThat(vm.workspaceDisk().getParent()).isEqualTo(vm.migrationDir());
    assertThat(vm.migrationDir().getParent()).isEqualTo(vm.dir());
  }
}
