/**
 * The E2B-compatible face (REST lifecycle, envd over Connect JSON, processes, the code
 * interpreter): E2B's wire shapes and protocol stay here, over the same service, tenants and policy
 * as {@code /v1}, so an E2B client gets the same controls without the other faces knowing E2B
 * exists.
 */
package io.agentnest.server.e2b;
