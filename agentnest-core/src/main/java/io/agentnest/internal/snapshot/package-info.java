/**
 * Snapshots on the host: the store under {@code AGENTNEST_HOME/snapshots} (save, restore, list,
 * remove, leftovers), the signed manifest and this installation's HMAC key, the signed index of the
 * latest manifest per name, the parts (workspace and /tmp tars, pickled Python sessions) written
 * and read back with their hashes, and a gVisor checkpoint's memory parts. Everything read back is
 * verified before use: the store directory is writable by others than this process.
 */
package io.agentnest.internal.snapshot;
