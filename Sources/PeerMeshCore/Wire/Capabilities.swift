/// Frame families a peer speaks beyond the base protocol (handshake, invitation, data, transfers), offered in
/// its preamble and agreed per link (the intersection of both offers, authenticated by the Hello transcript). A
/// frame of a family the link did not agree on is never sent on it and is a protocol violation when received.
public struct Capabilities: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw 64-bit field of the preamble.
    public let rawValue: UInt64
    /// Creates a set from the preamble's raw field (unknown bits are kept: a newer peer may offer more).
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// LinkState and Routed frames (14, 15): the roster, relaying, and the sequenced channel every data frame
    /// of wire version 2 travels on. Required: a peer without it is refused.
    public static let mesh = Capabilities(rawValue: 1 << 0)
    /// Multicast frames (16): one copy of a message per link for several members.
    public static let multicast = Capabilities(rawValue: 1 << 1)
    /// Datagram and DatagramPort frames (18, 19): unreliable messages as sealed UDP datagrams, or as frames that
    /// are never retained when there is no UDP path.
    public static let datagrams = Capabilities(rawValue: 1 << 2)

    /// Message batches (frame 20, inside routed frames): several small reliable messages in one channel frame.
    public static let batches = Capabilities(rawValue: 1 << 3)

    /// Link-state records that also carry their origin's member capabilities (frame 21): what a member far away
    /// can do, such as opening channel frames sealed with AES-GCM. Without it a link carries records as frame 14,
    /// without capabilities.
    public static let memberCapabilities = Capabilities(rawValue: 1 << 4)

    /// Everything this build speaks.
    public static let all: Capabilities = [.mesh, .multicast, .datagrams, .batches, .memberCapabilities]
    /// What a peer must offer for wire version 2 to work at all.
    public static let required: Capabilities = [.mesh]

    /// Names of the known bits, e.g. `mesh+multicast`; unknown bits as hex.
    public var description: String {
        var names: [String] = []
        if contains(.mesh) { names.append("mesh") }
        if contains(.multicast) { names.append("multicast") }
        if contains(.datagrams) { names.append("datagrams") }
        if contains(.batches) { names.append("batches") }
        if contains(.memberCapabilities) { names.append("member-capabilities") }
        let unknown = rawValue & ~Capabilities.all.rawValue
        if unknown != 0 { names.append("0x" + String(unknown, radix: 16)) }
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}
