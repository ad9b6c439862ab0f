/**
 * The web console: sign-in sessions, their CSRF and login-CSRF guards, static pages and the live
 * event stream. Everything else the page does goes through the {@code /v1} routes, so the console
 * needs nothing of the {@code /v1} package itself.
 */
package io.agentnest.server.console;
