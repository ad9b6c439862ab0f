/**
 * The Kubernetes backend's cluster side; every fabric8 type stays in this package. {@code
 * KubeCluster} is the order of a pod's life (refusals, tenant namespace, isolation canary, create,
 * wait, connect, destroy); {@code PodSpecs} writes pods the backend checks against the restricted
 * profile itself ({@code RestrictedProfile}, since the test cluster has no Pod Security admission);
 * {@code Tenants} owns a tenant's namespace, quota, limit range, deny-all NetworkPolicy and RBAC;
 * {@code IsolationCanary} verifies that the cluster enforces that policy; {@code KubeSandbox} is
 * the agent's channel over a pod exec, through the holder that pid 1 runs.
 */
package io.agentnest.kubernetes.internal;
