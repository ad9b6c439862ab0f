package io.agentnest.tck;

/**
 * The whole contract. A backend's test class implements this and {@link #target()}:
 *
 * <pre>{@code
 * class RuncContractIT implements BackendContract {
 *   public BackendUnderTest target() {
 *     return new BackendUnderTest(backend, SandboxConfig.builder().backend("docker").build(),
 *         ForkReport.Mode.STATE_TRANSFER, false, false);
 *   }
 * }
 * }</pre>
 */
public interface BackendContract
    extends LifecycleContract,
        ExecContract,
        SessionContract,
        FilesContract,
        LimitsContract,
        StreamingContract,
        ForkContract,
        SnapshotContract,
        LabelsContract,
        RefusalContract {}
