/// What a member's build can do for members it is not linked to, announced in its signed link-state record
/// (frame 21) so that every member, neighbour or not, knows it.
///
/// A member that announces nothing (its record came as frame 14, from an older build or through one) is treated
/// as able to do none of it. Each capability only makes something cheaper, except `pairingCertificates`: a member
/// that cannot send its certificate end to end cannot be judged by a certificate handler, so where one is installed
/// it is refused (fail closed).
public struct MemberCapabilities: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw 32-bit field of the record (unknown bits are kept: a newer member may announce more).
    public let rawValue: UInt32
    /// Creates a set from the record's raw field.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Opens channel frames sealed with AES-256-GCM (`EndToEndChannel.aesGCMFlag`), which costs a fraction of
    /// ChaCha20-Poly1305 on processors with AES instructions: what relayed traffic mostly pays for.
    public static let aesGCMChannels = MemberCapabilities(rawValue: 1 << 0)

    /// Takes and sends Pairing step 4 (its certificate, carried end to end), so a member reached through relays can
    /// be judged by the certificate handler like a neighbour. Only such members are sent the step.
    public static let pairingCertificates = MemberCapabilities(rawValue: 1 << 1)

    /// Everything this build can do.
    public static let all: MemberCapabilities = [.aesGCMChannels, .pairingCertificates]

    /// Names of the known bits, e.g. `aes-gcm-channels`; unknown bits as hex.
    public var description: String {
        var names: [String] = []
        if contains(.aesGCMChannels) { names.append("aes-gcm-channels") }
        if contains(.pairingCertificates) { names.append("pairing-certificates") }
        let unknown = rawValue & ~MemberCapabilities.all.rawValue
        if unknown != 0 { names.append("0x" + String(unknown, radix: 16)) }
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}
