#!/bin/busybox sh
# AgentNest microVM initramfs: loads the virtio drivers the kernel has as modules, mounts the
# read-only root disk and hands over to the guest init there. Nothing here reads sandbox input.
B=/bin/busybox
$B mount -t devtmpfs -o nosuid,noexec dev /dev
$B mount -t proc -o nosuid,nodev,noexec proc /proc
$B mount -t sysfs -o nosuid,nodev,noexec sys /sys
for m in $($B cat /modules.order); do
  $B insmod "/modules/$m.ko" || echo "agentnest-initramfs: insmod $m failed"
done
if $B grep -qw agentnest.probe /proc/cmdline; then
  echo "agentnest-initramfs: probe boot done"
  $B poweroff -f
fi
n=0
while [ ! -b /dev/vda ] && [ $n -lt 100 ]; do $B sleep 0.05; n=$((n + 1)); done
$B mount -t ext4 -o ro,nosuid,nodev /dev/vda /newroot || { echo "agentnest-initramfs: no root disk"; $B poweroff -f; }
$B mount --move /dev /newroot/dev
$B mount --move /proc /newroot/proc
$B mount --move /sys /newroot/sys
exec $B switch_root /newroot /usr/bin/python3 -I -S /usr/lib/agentnest/vminit.py
