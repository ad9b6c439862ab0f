/**
 * The escape probes of {@code agentnest doctor --escapes} and the escape suites: a {@code
 * Catalogue} of attacks, one file per category (privilege, kernel, namespaces, files, devices,
 * network, resources, secrets, host information), and the judges that decide from the host's side,
 * never from what the sandbox reports, whether each attack was blocked, contained or got through.
 */
package io.agentnest.escapes.internal;
