/**
 * {@link io.agentnest.Sandbox#browser()}: Chromium started inside the sandbox behind its egress
 * proxy, its DevTools port exposed to the host, and the small DevTools-protocol client (JDK
 * WebSocket, Jackson) that drives it. Everything Chromium sends is the sandbox's and is bounded.
 */
package io.agentnest.internal.browser;
