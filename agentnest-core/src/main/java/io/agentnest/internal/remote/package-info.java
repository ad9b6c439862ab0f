/**
 * The remote sandbox: {@code Sandbox} over the HTTP API of {@code agentnest serve}, with the JDK's
 * java.net.http only (no HTTP library in the core).
 */
package io.agentnest.internal.remote;
