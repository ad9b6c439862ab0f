/**
 * The host end of the one multiplexed channel to a sandbox's agent: frame codec and limits ({@link
 * io.agentnest.internal.channel.FrameCodec}), call routing ({@link
 * io.agentnest.internal.channel.AgentChannel}), the egress tunnels, and the one selector thread per
 * JVM ({@link io.agentnest.internal.channel.ChannelReactor}) that reads every channel whose backend
 * offers a selectable stream, with its push decoder ({@link
 * io.agentnest.internal.channel.FrameDecoder}).
 *
 * <p>Everything read here comes from the sandbox and is hostile: lengths are checked before
 * allocation and strings are bounded. This package moves bytes; it must not take policy decisions
 * (approvals, audit wording) or know about sandboxes, backends or snapshots.
 */
package io.agentnest.internal.channel;
